"""Extraction errors, importable without torch.

Every error names the model and, where one row is at fault, the row id (the task parquet's `row`); the
extraction job (`geneb.extract.step.extract_task`) adds the task and split. None of these is ever
turned into a skipped row: GENEB scores the same rows for every model
(docs/footguns.md, rows skipped for one model only).
"""

from __future__ import annotations


class ExtractionError(RuntimeError):
    """Base class: an extraction that must stop. `rows` holds the offending row ids when known."""

    def __init__(self, message: str, *, rows: list[int] | None = None) -> None:
        super().__init__(message)
        self.rows = list(rows) if rows is not None else []


class EmptyPoolError(ValueError):
    """A row with no position left to pool (e.g. only special tokens, or no valid k-mer); never NaN."""


class LongSequenceError(ValueError):
    """A sequence longer than the model's maximum under `long_policy: error`."""


class NonFiniteEmbeddingError(ExtractionError, FloatingPointError):
    """NaN or inf in hidden states or pooled vectors (fp16 overflow, a broken kernel): never cached."""


class TokenIdRangeError(ExtractionError):
    """A token id >= the rows of the model's embedding table (the real bug behind vocab-size warnings)."""


class LayerNotExposedError(ExtractionError):
    """An intermediate layer was asked for but the model's output has no per-layer hidden states."""


class LooksLikeLogitsError(ExtractionError):
    """The pooled width equals the vocabulary size, not the hidden size: the output is logits."""


class ModelForwardError(ExtractionError):
    """The model's own forward pass raised (an index past a position table, a length rule of its code); the
    message names the model, the batch shape and the rows, and keeps the model's error as the cause."""


class PaddingVarianceError(ExtractionError):
    """A sequence's embedding changes when it is batched with a longer one: the padding (side, mask, position
    ids) is not handled for this model, so results would depend on batch mates."""


class MaxLengthError(ExtractionError):
    """The model fails on an input of the maximum length GENEB resolved for it: its true limit is lower."""


class DroppedInputError(ExtractionError):
    """The tokenizer produced no token for some letters of a row (a vocabulary without an UNK token): the
    embedding would be of a different sequence."""


class UnknownTokenError(ExtractionError):
    """Letters reached the model as UNK tokens under `unk_policy: error` (IUPAC codes for a vocabulary that
    lacks them, a partial k-mer); names the model, the count and the first rows."""


class ItemOutOfMemoryError(ExtractionError, MemoryError):
    """One row (one chunk) does not fit on the device even alone; names the row."""


class MissingPackageError(ImportError):
    """An optional package a model family needs is not installed; the message names model and package."""


class RemoteCodeError(ExtractionError):
    """Remote (hub) code asked for without `trust_remote_code: true` and a pinned revision, or present in a
    checkpoint whose registry entry does not allow it (the DNABERT-S reference defect)."""


class TransformersVersionError(ExtractionError):
    """The installed transformers is outside the range a remote-code model declares."""


class ModelLoadError(ExtractionError):
    """Building the model from its checkpoint failed inside the library (a raw assertion on a config value, a
    pickled weight file that holds more than tensors): the message names the model and the fix
    (`load.config_overrides`, a safetensors conversion), keeping the library's error as the cause."""


class WeightsNotLoadedError(ExtractionError):
    """Checkpoint tensors the model class expects are missing: the model would run with random weights."""
