"""GENEB: a benchmark harness for genomic (DNA) foundation models.

Frozen embeddings from each model, a logistic-regression probe on top, scored by the Matthews correlation
coefficient (MCC) on labelled DNA tasks in 13 functional categories (the GENEB paper, arXiv 2606.04525).

The Python API, for a notebook: `geneb.evaluate(model, tasks, protocol="geneb-paper", config=None, **overrides)`
returns the score rows the workflow writes; `geneb.leaderboard(scores)` the leaderboard frame of such rows
(`geneb.api.evaluate`); `geneb.evaluate_zeroshot(model, tasks, ...)` the zero-shot scores and metrics
(`geneb.api.zeroshot`). `import geneb` stays light: both import what they need (torch only for a torch model) when
called.
"""

from __future__ import annotations

import importlib
from typing import Any

#: where the API lives, imported by name when called, so `import geneb` imports nothing else (and the package's
#: root imports no module of its own: geneb.core.paths imports it)
API = "geneb.api.evaluate"
ZEROSHOT_API = "geneb.api.zeroshot"

__version__ = "0.1.0"
__all__ = ["__version__", "evaluate", "evaluate_zeroshot", "leaderboard"]


def evaluate(model: Any, tasks: Any, protocol: Any = "geneb-paper", config: Any = None, **overrides: Any) -> Any:
    """Score `model` on `tasks` as the workflow does, in process; a pandas DataFrame of score rows
    (`geneb.api.evaluate.evaluate`, where the arguments and errors are described)."""
    return importlib.import_module(API).evaluate(model, tasks, protocol, config, **overrides)


def leaderboard(scores: Any, config: Any = None) -> Any:
    """The leaderboard frame of score rows (`geneb.api.evaluate.leaderboard`)."""
    return importlib.import_module(API).leaderboard(scores, config)


def evaluate_zeroshot(model: Any, tasks: Any, **options: Any) -> Any:
    """Zero-shot scores, metrics and the scorers that did not apply, of `model` on zero-shot tasks, in process
    (`geneb.api.zeroshot.evaluate_zeroshot`, where the arguments and errors are described)."""
    return importlib.import_module(ZEROSHOT_API).evaluate_zeroshot(model, tasks, **options)
