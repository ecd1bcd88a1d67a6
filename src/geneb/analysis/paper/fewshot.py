"""Few-shot: how scores and rankings change from the full training split to k = 10 and k = 1 examples per
class (k-shot probes, the paper's `10shot` and `1shot` regimes).

* `drops`: macro MCC per model in each regime, absolute drop (full - k-shot) and relative drop
  ((full - k-shot) / full).
* `inverse_pattern`: Spearman's rho between the full-data level and the drop (`scale.spearman_rho_p`: exact p for small n); a
  positive rho means the strongest models lose the most (the paper's "inverse pattern").
* `regime_changes`: per category (and macro), the top model in each regime, whether it changes, and
  Kendall's tau-b between the regime rankings (scipy.stats.kendalltau).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats

from geneb.analysis.context import ProtocolContext
from geneb.analysis.paper.scale import spearman_rho_p
from geneb.tables.scores import REGIMES, AnalysisInputError

#: the k-shot regimes, in REGIMES order
SHOTS: tuple[str, ...] = tuple(r for r in REGIMES if r != "full")


def drops(board: pd.DataFrame, protocol: str, category: str = "macro") -> pd.DataFrame:
    """Per model: `category` value (default macro) in each regime present, and drops relative to full.

    board: leaderboard table. Returns index model with columns full, 10shot, 1shot (those present),
    abs_drop_{k}, rel_drop_{k} for each k-shot regime present. rel_drop is NaN where full <= 0 (a ratio of
    a non-positive level is meaningless). Raises AnalysisInputError without a full regime.
    """
    b = board[(board["protocol"] == protocol) & (board["category"] == category)]
    wide = b.pivot(index="model", columns="regime", values="value")
    if "full" not in wide.columns:
        raise AnalysisInputError(f"few-shot drops need the full regime (protocol {protocol!r})")
    wide = wide[[r for r in REGIMES if r in wide.columns]]
    for k in SHOTS:
        if k in wide.columns:
            wide[f"abs_drop_{k}"] = wide["full"] - wide[k]
            wide[f"rel_drop_{k}"] = np.where(wide["full"] > 0, wide[f"abs_drop_{k}"] / wide["full"], np.nan)
    return wide.sort_values("full", ascending=False)


def inverse_pattern(table: pd.DataFrame) -> pd.DataFrame:
    """Spearman rho between the full-data level and each drop column of `drops` output.

    Returns rows regime, measure (abs_drop / rel_drop), rho, p_value, n (models with both values); rows with
    fewer than 3 models are left out.
    """
    rows = []
    for k in SHOTS:
        for measure in ("abs_drop", "rel_drop"):
            col = f"{measure}_{k}"
            if col not in table.columns:
                continue
            d = table[["full", col]].dropna()
            if len(d) < 3:
                continue
            rho, p_value = spearman_rho_p(d["full"].to_numpy(), d[col].to_numpy())
            rows.append({"regime": k, "measure": measure, "rho": rho, "p_value": p_value, "n": len(d)})
    return pd.DataFrame(rows, columns=["regime", "measure", "rho", "p_value", "n"])


def regime_changes(board: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """Per category (incl. macro): top model per regime, whether it changes, Kendall tau-b between regimes.

    Returns columns category, top_full, top_10shot, top_1shot (those present), top_changes (bool), and
    tau_{r1}_vs_{r2}, p_{r1}_vs_{r2}, n_{r1}_vs_{r2} for each pair of regimes present (models with a value
    in both; NaN with fewer than 3). Only complete rows count (see `leaderboard.leaderboard`).
    """
    b = board[board["protocol"] == protocol]
    b = b.assign(value=b["value"].where(b["complete"]))  # a model missing some of a category's tasks is not ranked
    rows = []
    for category, c in b.groupby("category", sort=False):
        wide = c.pivot(index="model", columns="regime", values="value")
        regimes = [r for r in REGIMES if r in wide.columns]
        row: dict[str, object] = {"category": category}
        tops = []
        for r in regimes:
            col = wide[r].dropna()
            top = col.idxmax() if len(col) else None
            row[f"top_{r}"] = top
            tops.append(top)
        row["top_changes"] = len(set(tops)) > 1
        for r1, r2 in itertools.combinations(regimes, 2):
            d = wide[[r1, r2]].dropna()
            key = f"{r1}_vs_{r2}"
            if len(d) >= 3:
                res = stats.kendalltau(d[r1], d[r2], variant="b")
                row[f"tau_{key}"], row[f"p_{key}"] = float(res.statistic), float(res.pvalue)
            else:
                row[f"tau_{key}"], row[f"p_{key}"] = np.nan, np.nan
            row[f"n_{key}"] = len(d)
        rows.append(row)
    return pd.DataFrame(rows)


def regime_pairs(regimes: list[str]) -> list[tuple[str, str]]:
    """The regime pairs compared for winner changes, the paper's first: (full, 10shot), (full, 1shot),
    (10shot, 1shot), those whose both regimes are in `regimes`."""
    ordered = [r for r in REGIMES if r in regimes]
    return list(itertools.combinations(ordered, 2))


def winner_changes(changes: pd.DataFrame) -> list[dict[str, object]]:
    """Per regime pair (`regime_pairs` order): in how many of the categories (not macro or micro) the top
    model differs between the two regimes, of how many categories with a top model in both.

    changes: `regime_changes` output. Returns [{a, b, changed, of, categories}] with `categories` the changed
    ones in table order. The paper's "the best model changes in 8 of 13 categories" is the (full, 10shot) pair.
    """
    cats = changes[~changes["category"].isin(["macro", "micro"])]
    present = [r for r in REGIMES if f"top_{r}" in cats.columns]
    out = []
    for a, b in regime_pairs(present):
        both = cats[cats[f"top_{a}"].notna() & cats[f"top_{b}"].notna()]
        changed = both[both[f"top_{a}"] != both[f"top_{b}"]]
        out.append(
            {"a": a, "b": b, "changed": len(changed), "of": len(both), "categories": changed["category"].tolist()}
        )
    return out


def fewshot_tables(ctx: ProtocolContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `fewshot`: drops, the inverse pattern and the regime changes of the protocol's
    leaderboard (none without a full regime or a k-shot one); the summary says why when skipped."""
    board, protocol = ctx.run.board, ctx.protocol
    if "full" not in set(board.loc[board["protocol"] == protocol, "regime"]):
        ctx.summary["fewshot_skipped"] = "no full regime: few-shot drops are relative to it"
        return {}
    fd = drops(board, protocol)
    if not set(SHOTS) & set(fd.columns):
        return {}
    inv = inverse_pattern(fd)
    reg = regime_changes(board, protocol)
    ctx.summary["top_model_changes"] = winner_changes(reg)
    ctx.summary["inverse_pattern"] = inv.to_dict("records")
    return {"fewshot_drops": fd.reset_index(), "fewshot_inverse": inv, "fewshot_regimes": reg}
