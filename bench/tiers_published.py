"""Measurement: the statistically tied tiers of the paper's published 40 models, per regime and row.

For every (regime, category incl. macro and micro): the number of tiers, the pairs where a better `rank` sits in a
worse tier (inv_pairs) and the rows in such a pair (inv_rows), the blocks (unit and count), the critical difference,
the Friedman p, the rows with a `tier_note`, and the tier_reason of a group without tiers.

`--tiers-module PATH` loads another version of `geneb.analysis.tiers` from a file (for a before/after comparison:
`git show REV:src/geneb/analysis/tiers.py > /tmp/tiers_rev.py`); it is called with the confidence only unless
`--method` or `--category-blocks` are given.

Usage: PYTHONPATH=src python bench/tiers_published.py [--method nemenyi|wilcoxon_holm]
       [--category-blocks tasks|source_benchmarks] [--tiers-module PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pandas as pd

from geneb.analysis import tiers
from geneb.analysis.inputs import cell_scores
from geneb.analysis.published import import_published
from geneb.analysis.ranking import leaderboard

PAPER = Path(__file__).resolve().parents[2] / "shared" / "reference" / "geneb_paper"
TASKS = Path(__file__).resolve().parents[1] / "config" / "tasks.tsv"


def _inversions(g: pd.DataFrame) -> tuple[int, int]:
    """(pairs with a better rank in a worse tier, rows in such a pair) of one group's tiered rows."""
    g = g[g["tier"].notna() & g["rank"].notna()]
    r, t = g["rank"].to_numpy(float), g["tier"].to_numpy(float)
    pairs = [(i, j) for i in range(len(g)) for j in range(len(g)) if r[i] < r[j] and t[i] > t[j]]
    return len(pairs), len({x for p in pairs for x in p})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method")
    ap.add_argument("--category-blocks")
    ap.add_argument("--tiers-module")
    a = ap.parse_args()
    module = tiers
    if a.tiers_module:
        spec = importlib.util.spec_from_file_location("tiers_other", a.tiers_module)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["tiers_other"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    kw: dict[str, object] = {}
    if a.method:
        kw["method"] = a.method
    if a.category_blocks:
        kw["category_blocks"] = a.category_blocks
        kw["sources"] = pd.read_csv(TASKS, sep="\t").set_index("task")["source_benchmark"].fillna("").to_dict()
    cells = cell_scores(import_published(PAPER))
    board = module.add_tiers(leaderboard(cells), cells, 0.95, **kw)
    rows = []
    for (regime, category), g in board.groupby(["regime", "category"], sort=False):
        first = g.iloc[0]
        pairs, inv_rows = _inversions(g)
        rows.append(
            {
                "regime": regime,
                "category": category,
                "n_tiers": g["tier"].max(),
                "inv_pairs": pairs,
                "inv_rows": inv_rows,
                "blocks": first.get("tier_blocks", "tasks"),
                "n_blocks": first.get("tier_n_blocks", first["tier_n_tasks"]),
                "cd": round(float(first["tier_cd"]), 2),
                "friedman_p": f"{first['friedman_p']:.2g}",
                "notes": int((g.get("tier_note", pd.Series("", index=g.index)) != "").sum()),
                "reason": str(first["tier_reason"])[:60],
            }
        )
    with pd.option_context("display.width", 250, "display.max_rows", 200):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
