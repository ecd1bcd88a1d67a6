"""What every encoder returns, and the contract it meets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass
class EmbedResult:
    """Pooled embeddings for n sequences: embeddings float32 (n, d); n_tokens int32 (n,) positions pooled;
    n_chunks int32 (n,); truncated bool (n,)."""

    embeddings: np.ndarray
    n_tokens: np.ndarray
    n_chunks: np.ndarray
    truncated: np.ndarray


class Encoder(Protocol):
    """An encoder embeds a list of sequences (never a bare string) in order, one row per sequence."""

    def identity(self) -> dict[str, object]:
        """Everything that defines the embeddings (weights hash, tokenizer, layer, pooling, ...)."""

    def embed(self, sequences: list[str], rows: list[int] | None = None) -> EmbedResult:
        """Embed `sequences` (model-input form, uppercase); `rows` name them in errors."""
