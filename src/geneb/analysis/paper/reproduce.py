"""Reproducing the paper: every headline number the GENEB paper states beside GENEB's value for it.

The claims (`config/paper_claims.yaml`: id, statistic, the paper's value, tolerance, how to compare, source,
note) are data; this module holds one function per claim id (`STATISTICS`) that computes GENEB's value from
the published view's analysis outputs (`results/published/tables/`: the analysis summary, the leaderboard and
the models table, all made from the imported published results by the same code a user's run goes through).
A claim passes when |GENEB - paper| <= tolerance (on log10 of both for `compare: log10`, a p-value stated as an
order of magnitude). Output columns: claim (the id), statistic, paper, geneb, tolerance, passed, note
(docs/analyses.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from geneb.analysis.ranking.leaderboard import AGGREGATES
from geneb.core.paths import load_schema, schema_errors
from geneb.tables.scores import AnalysisInputError

#: the columns of reproduce_paper.parquet
REPRODUCE_COLUMNS = ("claim", "statistic", "paper", "geneb", "tolerance", "passed", "note")
#: pretraining domains of "multi-species and eukaryotic-gene pretraining" (the paper's top-placement claim)
BROAD_DOMAINS = ("multispecies", "eukaryote")


@dataclass(frozen=True)
class Outputs:
    """What the statistics read: the published view's analysis summary (analysis_summary.json, parsed), its
    leaderboard (leaderboard.parquet) and models table (models.parquet), and the protocol of the results."""

    summary: dict[str, Any]
    leaderboard: pd.DataFrame
    models: pd.DataFrame
    protocol: str

    def regime(self, regime: str) -> dict[str, Any]:
        """The summary of one regime; AnalysisInputError when the analyses did not run it."""
        try:
            return self.summary["protocols"][self.protocol]["regimes"][regime]
        except KeyError:
            raise AnalysisInputError(f"analysis summary has no {self.protocol!r} {regime!r} regime") from None


def _spearman(subset: str, key: str) -> Callable[[Outputs], float]:
    def get(o: Outputs) -> float:
        s = o.regime("full").get("spearman") or {}
        if subset not in s:
            raise AnalysisInputError(f"analysis summary has no Spearman rho for subset {subset!r}")
        return s[subset][key]

    return get


def _mean_macro(regime: str) -> Callable[[Outputs], float]:
    return lambda o: o.regime(regime)["mean_macro"]


def _winner_changes(a: str, b: str) -> Callable[[Outputs], float]:
    def get(o: Outputs) -> float:
        pairs = o.summary["protocols"][o.protocol].get("top_model_changes", [])
        for p in pairs:
            if (p["a"], p["b"]) == (a, b):
                return p["changed"]
        raise AnalysisInputError(f"analysis summary has no winner changes between {a} and {b}")

    return get


def _categories(o: Outputs) -> float:
    cats = set(o.leaderboard.loc[o.leaderboard["protocol"] == o.protocol, "category"]) - set(AGGREGATES)
    return len(cats)


def top_placements(o: Outputs, domains: tuple[str, ...] = BROAD_DOMAINS) -> tuple[int, int]:
    """(category winners whose model's pretraining_domain is in `domains`, all category winners), over the 13
    categories x every regime of the protocol; winners among complete models, as the leaderboard ranks them."""
    b = o.leaderboard[(o.leaderboard["protocol"] == o.protocol) & o.leaderboard["complete"]]
    b = b[~b["category"].isin(AGGREGATES)]
    winners = b.loc[b.groupby(["regime", "category"])["value"].idxmax(), "model"]
    domain = o.models.set_index("model")["pretraining_domain"]
    return int(winners.map(domain).isin(domains).sum()), len(winners)


#: claim id -> GENEB's value from the published view's outputs
STATISTICS: dict[str, Callable[[Outputs], float]] = {
    "n_models": lambda o: o.regime("full")["n_models"],
    "n_tasks": lambda o: o.regime("full")["n_tasks"],
    "n_categories": _categories,
    "spearman_rho_all": _spearman("all", "rho"),
    "spearman_p_all": _spearman("all", "p_value"),
    "spearman_rho_excluding": _spearman("excluding", "rho"),
    "mean_macro_full": _mean_macro("full"),
    "mean_macro_10shot": _mean_macro("10shot"),
    "mean_macro_1shot": _mean_macro("1shot"),
    "winner_changes_full_10shot": _winner_changes("full", "10shot"),
    "n_in_domain": lambda o: o.regime("full")["n_in_domain"],
    "n_reversals": lambda o: o.regime("full")["n_reversals"],
    "top_placements_multispecies_eukaryotic": lambda o: top_placements(o)[0],
}


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    """The claims of `path` (config/paper_claims.yaml), validated against paper_claims.schema.yaml, `compare`
    defaulted to "absolute". Raises AnalysisInputError naming the file and the first problem, including a claim
    id without a statistic in STATISTICS and an id listed twice."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise AnalysisInputError(f"{path}: {err}") from err
    errors = schema_errors(data, load_schema("paper_claims"))
    if errors:
        e = errors[0]
        raise AnalysisInputError(f"{path}: {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
    ids = [c["id"] for c in data["claims"]]
    unknown = [i for i in ids if i not in STATISTICS]
    if unknown:
        raise AnalysisInputError(f"{path}: no GENEB statistic for claim ids {unknown}; known: {sorted(STATISTICS)}")
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise AnalysisInputError(f"{path}: claim ids listed twice: {twice}")
    return [{"compare": "absolute", "note": "", **c} for c in data["claims"]]


def reproduce(claims: list[dict[str, Any]], outputs: Outputs) -> pd.DataFrame:
    """One row per claim (REPRODUCE_COLUMNS): the paper's value, GENEB's, the tolerance, whether it passes, the note.

    passed: |geneb - paper| <= tolerance, or for compare log10 |log10(geneb) - log10(paper)| <= tolerance
    (False for a non-positive value). Raises AnalysisInputError when an output lacks what a statistic reads."""
    rows = []
    for c in claims:
        value = float(STATISTICS[c["id"]](outputs))
        if c["compare"] == "log10":
            ok = value > 0 and c["paper"] > 0 and abs(np.log10(value) - np.log10(c["paper"])) <= c["tolerance"]
        else:
            ok = abs(value - c["paper"]) <= c["tolerance"] + 1e-12
        rows.append(
            {
                "claim": c["id"],
                "statistic": c["statistic"],
                "paper": float(c["paper"]),
                "geneb": value,
                "tolerance": float(c["tolerance"]),
                "passed": bool(ok),
                "note": c["note"],
            }
        )
    return pd.DataFrame(rows, columns=list(REPRODUCE_COLUMNS))
