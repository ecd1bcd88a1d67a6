"""Errors of the fine-tuning stage, each naming the model, task, regime and seed where they apply."""

from __future__ import annotations


class FineTuneInputError(ValueError):
    """Input the fine-tune job refuses: a model without a torch network, an unknown row, mismatched hashes."""


class NonFiniteLossError(RuntimeError):
    """The training loss of one (model, task, regime, seed) cell became NaN or infinite: that cell stops, the
    job's other cells go on (the message names the cell, the epoch and the step)."""
