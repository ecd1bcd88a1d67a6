"""Evo 1 / 1.5 (package evo-model) and Evo 2 (package evo2) behind the shared token-model engine.

Facts used (registry.yaml loader notes; evo-design/evo #32; the evo2 README): `Evo(name)` gives `.model`
(StripedHyena) and `.tokenizer` (byte-level, `tokenize(seq) -> ids`, no special tokens); `model(ids)`
returns `(logits, cache)`, so the final hidden states are read by replacing `model.unembed` with the identity.
Without that the pooled width is the 512-token vocabulary, which `check_pooled_width` refuses as "looks like
logits". Evo 2's `Evo2(name)` wraps a Vortex model whose blocks are addressed by module name
(e.g. `blocks.28.mlp.l3` for 7B); GENEB reads that module's output with a forward hook, so the registry's
`layer` for Evo 2 must be a module name. Both are causal with no attention mask: batches are padded on the
right, which no real position can see, and pooled over real positions only.

The packages pick weights by model name from the hub; their revision cannot be pinned through this API, so
registry entries of these families stay not runnable until a pinned local snapshot (`source.kind: local`)
is provided (no unpinned hub revisions).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from geneb.encoders.engine.checks import resolve_max_tokens
from geneb.encoders.engine.tokenmodel import LoadedNetwork, TokenModelEncoder
from geneb.registry.spec import ExtractionSettings

_log = logging.getLogger(__name__)


class _IdentityUnembed(nn.Module):
    """Stands in for StripedHyena's unembedding module: `unembed(u)` returns the hidden states unchanged."""

    def unembed(self, u: torch.Tensor) -> torch.Tensor:
        return u

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return u


class EvoEncoder(TokenModelEncoder):
    """Evo 1 / 1.5 through `evo.Evo`. `settings.load.package_model_name` names the checkpoint for the
    package (e.g. "evo-1-131k-base"); `extraction.max_tokens` is required (the context: 8192 or 131072)."""

    package = "evo"

    def _load(self) -> LoadedNetwork:
        name = self.settings.load.package_model_name
        if not name:
            raise ValueError(
                f"model {self.model_id}: load.package_model_name is required for family {self.settings.family}"
            )
        model, tokenizer = self._open(name)
        model = self._as_weights_dtype(model).eval().to(self.device)
        cfg = getattr(model, "config", None)
        return LoadedNetwork(
            model=model,
            tokenizer=tokenizer,
            max_tokens=resolve_max_tokens(None, None, self.extraction.max_tokens, model=self.model_id),
            pad_id=int(getattr(tokenizer, "pad_id", 1) or 1),
            hidden_size=_cfg_int(cfg, "hidden_size"),
            vocab_size=_cfg_int(cfg, "vocab_size"),
            uses_attention_mask=False,
        )

    def _as_weights_dtype(self, model: Any) -> Any:
        """The package's model in GENEB's weights dtype, so the recorded `compute_dtype` is what runs: evo-model
        loads Evo in bfloat16 (except its filter poles and residues) whatever the device, while GENEB's `dtype:
        auto` means float32 on CPU. A bfloat16 target uses the package's own `to_bfloat16_except_poles_residues`
        where it has one."""
        floats = [p.dtype for p in model.parameters() if p.is_floating_point()]
        if not floats:
            return model
        actual = max(set(floats), key=floats.count)
        want = getattr(torch, self.weights_dtype)
        if actual == want:
            return model
        _log.info(
            "model %s: the package loaded %s weights; cast to %s (GENEB's dtype policy)",
            self.model_id,
            str(actual).removeprefix("torch."),
            self.weights_dtype,
        )
        if want == torch.bfloat16 and hasattr(model, "to_bfloat16_except_poles_residues"):
            model.to_bfloat16_except_poles_residues()
            return model
        return model.to(want)

    def _open(self, name: str) -> tuple[Any, Any]:
        from evo import Evo

        wrapper = Evo(name)
        model = wrapper.model
        if self.extraction.layer == -1:
            model.unembed = _IdentityUnembed()  # logits -> final hidden states
        return model, wrapper.tokenizer

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return [[int(t) for t in self.tokenizer.tokenize(text)] for text in texts]

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        if want_states:
            raise ValueError(
                f"model {self.model_id}: Evo exposes no per-layer hidden states; use layer -1 or a module name"
            )
        out = self.model(inputs["input_ids"])
        return out[0] if isinstance(out, (tuple, list)) else out

    def identity(self) -> dict[str, Any]:
        return {
            **super().identity(),
            "package": self.package,
            "package_model_name": self.settings.load.package_model_name,
        }


class Evo2Encoder(EvoEncoder):
    """Evo 2 through `evo2.Evo2`; `layer` must be a module name of the Vortex model (read with a hook)."""

    package = "evo2"

    def _open(self, name: str) -> tuple[Any, Any]:
        if not isinstance(self.extraction.layer, str):
            raise ValueError(
                f"model {self.model_id}: Evo 2 embeddings come from a named block; set layer to a module "
                "name such as 'blocks.28.mlp.l3'"
            )
        from evo2 import Evo2

        wrapper = Evo2(name)
        return wrapper.model, wrapper.tokenizer


def _cfg_int(cfg: Any, key: str) -> int | None:
    if cfg is None:
        return None
    value = cfg.get(key) if isinstance(cfg, dict) else getattr(cfg, key, None)
    return int(value) if isinstance(value, int) else None


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> EvoEncoder:
    """Adapter entry point of family `evo`."""
    return EvoEncoder(settings, **kwargs)


def from_settings_evo2(settings: ExtractionSettings, **kwargs: Any) -> Evo2Encoder:
    """Adapter entry point of family `evo2`."""
    return Evo2Encoder(settings, **kwargs)
