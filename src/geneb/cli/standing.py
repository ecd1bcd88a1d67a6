"""`geneb leaderboard --model ID` and `geneb recommend --model ID`: where one model stands, per category and regime
(rank out of the ranked models, MCC with its CI where the table has one, distance to the best, tier where the
table has a `tier` column), and the answer of `recommend` on a run with a single model.

Reads the same tables as the plain commands: the leaderboard (`tables/leaderboard.parquet`, or the comparison's
`compare_published.parquet`, which carries CIs and rank intervals), and beside it, where present, the
recommendations (role best / tied, with the CI of those models) and the rank intervals (bootstrap over tasks).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.cli.common import CliError
from geneb.core import integrity
from geneb.core.categories import CATEGORIES

#: the order categories are printed in (the 13 categories, then the aggregates)
CATEGORY_ORDER = {c: i for i, c in enumerate((*CATEGORIES, "macro", "micro"))}
#: the regimes in print order
REGIME_ORDER = {"full": 0, "10shot": 1, "1shot": 2}


def check_model(table: pd.DataFrame, model: str, path: str) -> None:
    """Raise CliError when `model` has no row in `table` (read from `path`), naming the closest model ids
    (`difflib.get_close_matches`, cutoff 0.5) or, with none close, how many models the table has."""
    have = sorted(table["model"].dropna().astype(str).unique())
    if model in have:
        return
    close = difflib.get_close_matches(model, have, n=5, cutoff=0.5)
    hint = (
        f"did you mean: {', '.join(close)}?" if close else f"the table has {len(have)} models: {', '.join(have[:12])}"
    )
    raise CliError(f"model {model!r} is not in {path}; {hint}")


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    key = df["regime"].map(REGIME_ORDER).fillna(9) * 100 + df["category"].map(CATEGORY_ORDER).fillna(99)
    return df.assign(_o=key.to_numpy()).sort_values("_o").drop(columns="_o")


def _n_ranked(board: pd.DataFrame) -> pd.Series:
    """The number of ranked models per (regime, category) of `board` (one protocol)."""
    return board[board["rank"].notna()].groupby(["regime", "category"], observed=True)["model"].nunique()


def model_board(
    board: pd.DataFrame, model: str, regime: str | None, intervals: pd.DataFrame | None = None
) -> pd.DataFrame:
    """`model`'s rows of a one-protocol leaderboard, every category (and macro / micro) of `regime` (every regime
    when None): regime, category, value, ci_low / ci_high (where the table has them), rank, of (the number of
    ranked models there), rank_low / rank_high (the table's, else those of `intervals`, the run's rank-interval
    table), tier (where present), n_tasks, complete, incomplete_reason."""
    if regime is not None:
        board = board[board["regime"] == regime]
    of = _n_ranked(board)
    mine = board[board["model"] == model].copy()
    if intervals is not None and "rank_low" not in mine.columns:
        keep = ["protocol", "regime", "category", "rank_low", "rank_high"]
        keep += [c for c in ("ci_low", "ci_high") if c in intervals.columns and c not in mine.columns]
        ri = intervals[intervals["model"] == model][keep]
        mine = mine.merge(ri, on=["protocol", "regime", "category"], how="left")
    idx = pd.MultiIndex.from_frame(mine[["regime", "category"]])
    mine["of"] = of.reindex(idx).fillna(0).astype(int).to_numpy()
    cols = ["regime", "category", "value", "ci_low", "ci_high", "rank", "of", "rank_low", "rank_high", "tier"]
    cols += ["n_tasks", "complete", "incomplete_reason"]
    out = _ordered(mine)[[c for c in cols if c in mine.columns]]
    return out.drop(columns=[c for c in ("incomplete_reason",) if c in out.columns and not out[c].fillna("").any()])


def format_board(rows: pd.DataFrame, model: str, protocol: str) -> str:
    """The text `geneb leaderboard --model` prints for `model_board`'s rows."""
    shown = rows.copy()
    shown["rank"] = [f"{int(r)} of {n}" if pd.notna(r) else f"- of {n}" for r, n in zip(shown["rank"], shown.pop("of"))]
    for c in ("rank_low", "rank_high"):
        if c in shown.columns:
            shown[c] = [str(int(v)) if pd.notna(v) else "-" for v in shown[c]]
    head = f"{model} ({protocol}): MCC per category and regime; rank among the ranked models"
    return head + "\n" + shown.to_string(index=False, float_format=lambda v: f"{v:.4f}", na_rep="-")


def _beside(path: str, name: str) -> pd.DataFrame | None:
    p = Path(path).with_name(name)
    if not p.exists():
        return None
    df = integrity.read_parquet(p)
    return df if len(df) else None


def standing(
    board: pd.DataFrame, recs: pd.DataFrame | None, intervals: pd.DataFrame | None, model: str
) -> pd.DataFrame:
    """Where `model` stands in each (regime, category) of a one-protocol leaderboard `board`: regime, category,
    rank, of, value, ci_low, ci_high (the table's own CI, else the recommendation table's for a best or tied
    model, else the rank-interval table's value interval, else missing), best (the best model's id), to_best (best value minus this value, 0 for the best),
    role (best / tied / "-": `recommendations`; "only model" where it is the single ranked model), rank_low /
    rank_high (the table's, else the rank-interval table's), tier where the board has it."""
    b = model_board(board, model, None)
    ranked = board[board["rank"].notna()].sort_values("rank")
    top = ranked.drop_duplicates(["regime", "category"]).set_index(["regime", "category"])
    rows = []
    for r in b.to_dict("records"):
        key = (r["regime"], r["category"])
        out = {k: r.get(k) for k in ("regime", "category", "rank", "of", "value", "ci_low", "ci_high")}
        best = top.loc[key] if key in top.index else None
        out["best"] = best["model"] if best is not None else None
        out["to_best"] = float(best["value"] - r["value"]) if best is not None and pd.notna(r["value"]) else None
        role = "-"
        if recs is not None:
            hit = recs[(recs["model"] == model) & (recs["regime"] == key[0]) & (recs["category"] == key[1])]
            if len(hit):
                role = str(hit["role"].iloc[0])
                if pd.isna(out.get("ci_low")):
                    out["ci_low"], out["ci_high"] = hit["ci_low"].iloc[0], hit["ci_high"].iloc[0]
        if r["of"] == 1 and pd.notna(r["rank"]):
            role = "only model"
        out["role"] = role
        for c in ("rank_low", "rank_high"):
            out[c] = r.get(c)
        if intervals is not None:
            hit = intervals[(intervals["model"] == model) & (intervals["regime"] == key[0])]
            hit = hit[hit["category"] == key[1]]
            if len(hit) and pd.isna(out.get("rank_low")):
                out["rank_low"], out["rank_high"] = hit["rank_low"].iloc[0], hit["rank_high"].iloc[0]
            if len(hit) and pd.isna(out.get("ci_low")) and "ci_low" in hit.columns:  # the two-level bootstrap's
                out["ci_low"], out["ci_high"] = hit["ci_low"].iloc[0], hit["ci_high"].iloc[0]
        if "tier" in b.columns:
            out["tier"] = r.get("tier")
        rows.append(out)
    return pd.DataFrame(rows)


def format_standing(st: pd.DataFrame, model: str, protocol: str, ci_label: str | None) -> str:
    """The text `geneb recommend --model` prints: one line per (regime, category) of `standing`."""
    lines = [f"{model} ({protocol}): where it stands, per regime and category"]
    for r in st.to_dict("records"):
        if pd.isna(r["rank"]):
            lines.append(f"{r['regime']} {r['category']}: not ranked (MCC {_num(r['value'])})")
            continue
        ci = (
            f"{ci_label or 'CI'} {r['ci_low']:.4f}-{r['ci_high']:.4f}"
            if pd.notna(r.get("ci_low")) and pd.notna(r.get("ci_high"))
            else "no CI recorded for this model"
        )
        text = f"{r['regime']} {r['category']}: rank {int(r['rank'])} of {r['of']}"
        if pd.notna(r.get("rank_low")) and pd.notna(r.get("rank_high")):
            text += f" (rank interval {int(r['rank_low'])}-{int(r['rank_high'])})"
        text += f", MCC {_num(r['value'])} ({ci})"
        if r["role"] == "only model":
            text += ": the only ranked model, so the best by default (nothing to compare with)"
        elif r["best"] == model:
            text += ": the best"
        else:
            text += f", {_num(r['to_best'])} below the best ({r['best']})"
        if r["role"] == "tied":
            text += "; indistinguishable from the best by the tie rule"
        if "tier" in r and pd.notna(r.get("tier")):
            text += f"; tier {r['tier']}"
        lines.append(text)
    return "\n".join(lines)


def _num(v: Any) -> str:
    return "n/a" if v is None or pd.isna(v) else f"{float(v):.4f}"


def single_model_answer(board: pd.DataFrame, category: str, regime: str) -> str | None:
    """The answer of `geneb recommend` where a one-protocol leaderboard ranks a single model in (`category`,
    `regime`): that model is the best by default; None when it ranks more or none."""
    b = board[(board["regime"] == regime) & (board["category"] == category) & board["rank"].notna()]
    if b["model"].nunique() != 1:
        return None
    r = b.iloc[0]
    return (
        f"{category}, {regime}: {r['model']} (MCC {r['value']:.4f}): the only ranked model of this run, so the "
        "best by default; nothing to compare it with (run more models, or compare with the paper's: "
        "snakemake compare_published)"
    )


def beside_tables(path: str) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame | None]:
    """The leaderboard, recommendations and rank-interval tables in the folder of `path` (None for one absent or
    empty)."""
    return tuple(_beside(path, f"{n}.parquet") for n in ("leaderboard", "recommendations", "rank_intervals"))  # type: ignore[return-value]
