"""Errors raised by the probing stage: bad input is named precisely (task, split or regime, seed, row, value)."""

from __future__ import annotations


class ProbeInputError(ValueError):
    """Input the probe refuses to use: a missing class, an unknown row id, mismatched arrays or hashes.

    The message always names the task and, where they apply, the split or regime, the seed, the row id and
    the offending value, so the user can find the record without a debugger.
    """


class ProtocolConfigError(ValueError):
    """A probing protocol's settings are missing, unknown or inconsistent (e.g. an unsorted C grid)."""
