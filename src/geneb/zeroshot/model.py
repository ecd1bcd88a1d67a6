"""The model a zero-shot scorer is handed: a loaded encoder, its name and how it treats the reverse strand.

Torch-free (the encoder is built by `geneb.extract.step`, which imports torch only for a torch family).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from geneb.encoders.protocol import Encoder
    from geneb.registry.spec import ExtractionSettings


@dataclass(frozen=True)
class ZeroShotModel:
    """name: the model's id in the score rows; encoder: the loaded encoder (`geneb.encoders.protocol.Encoder`);
    rc: the registry's reverse-complement mode (`geneb.extract.step.RC_MODES`: none, average, concat), applied to
    every embedded window as extraction applies it; settings: the resolved extraction settings, None for an
    encoder handed over directly. lm_head: the registry's language-model head ("masked", "causal" or "none"), which
    the `llr` scorer loads from the same checkpoint."""

    name: str
    encoder: Encoder
    rc: str = "none"
    settings: ExtractionSettings | None = None
    lm_head: str = "none"
    #: what a scorer loaded once for this model (the llr scorer's language model), reused across tasks
    loaded: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
