"""What an analysis sees: the run, one protocol of it, or one (protocol, regime) of that protocol.

`geneb.analysis.run.run_analyses` builds these and hands one to each registered analysis
(`geneb.analysis.registry`) of the matching scope. Each context has a `summary` dict, the part of
analysis_summary.json for its scope (run: the top level; protocol: `protocols[p]`; regime:
`protocols[p].regimes[r]`), into which an analysis writes its headline numbers. Importing this module loads
nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class RunContext:
    """The whole run: inputs, settings and the cells every analysis reads.

    used: the seed-mean cells left after the contamination policy (`run.prepare_cells`); their CI columns are
    overwritten by the test-row bootstrap as the regimes are analysed, so run-scope analyses (which run last)
    see the bootstrap CIs. board: the leaderboard of `used`. scores and `used` hold each model's reference view
    (`choices.reference_views`); view_scores: every view's rows (None when the run has one view per model), for
    the analyses that compare views; predictions_root: `results/predictions` (None: no per-row predictions).
    """

    scores: pd.DataFrame
    model_meta: pd.DataFrame
    task_meta: pd.DataFrame | None
    declared_pairs: list[dict[str, Any]]
    settings: dict[str, Any]
    used: pd.DataFrame
    contaminated: pd.DataFrame
    board: pd.DataFrame
    view_scores: pd.DataFrame | None = None
    predictions_root: Path | None = None
    summary: dict[str, Any] = field(default_factory=lambda: {"protocols": {}})

    @property
    def confidence(self) -> float:
        """The level of every bootstrap interval (settings.confidence)."""
        return float(self.settings["confidence"])

    @property
    def n_resamples(self) -> int:
        """Bootstrap replicates (settings.bootstrap.n_resamples)."""
        return int(self.settings["bootstrap"]["n_resamples"])

    @property
    def seed(self) -> int:
        """The seed every random draw derives from (settings.bootstrap.seed)."""
        return int(self.settings["bootstrap"]["seed"])


@dataclass
class ProtocolContext:
    """One protocol of the run: its cells and (when there are any) its per-row predictions."""

    run: RunContext
    protocol: str
    cells: pd.DataFrame
    predictions: dict[tuple[str, str], Any]
    summary: dict[str, Any] = field(default_factory=lambda: {"regimes": {}})


@dataclass
class RegimeContext:
    """One (protocol, regime): the model x task matrix and the bootstrap replicates shared by the analyses.

    matrix: model x task cell values; complete: its models without a missing task; rows: test-row replicates
    (B, models, tasks) of `complete`, or None without predictions; replicates: the paired category
    replicates (`bootstrap.category_replicates`) of `complete`, or None with fewer than 2 complete models;
    wide: the leaderboard's model x (categories + macro) view; macro: the models' macro MCC (NaN dropped).
    """

    protocol: ProtocolContext
    regime: str
    matrix: pd.DataFrame
    complete: pd.DataFrame
    rows: Any
    replicates: Any
    wide: pd.DataFrame
    macro: pd.Series
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def run(self) -> RunContext:
        """The run this regime belongs to."""
        return self.protocol.run

    @property
    def tag(self) -> dict[str, str]:
        """{protocol, regime}: the columns every regime-scope table gets."""
        return {"protocol": self.protocol.protocol, "regime": self.regime}
