"""Extraction errors, importable without torch."""


class EmptyPoolError(ValueError):
    """A row with no position left to pool (e.g. only special tokens, or no valid k-mer); never NaN."""
