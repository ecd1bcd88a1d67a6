"""The report's "Statistically tied tiers" section: per regime how many models are a defensible #1 on macro and
in each category, and how many adjacent ranks the tasks separate (`rank_separability.parquet`,
`geneb.analysis.ranking.tiers`; docs/analyses.md, "Statistically tied tiers")."""

from __future__ import annotations

import html
from collections.abc import Callable

import pandas as pd

from geneb.tables.scores import REGIMES

#: the columns of rank_separability the section's table shows
SHOWN = (
    "regime",
    "category",
    "n_models",
    "n_tasks",
    "n_defensible_top",
    "n_separable_adjacent",
    "n_adjacent_pairs",
    "n_tiers",
    "friedman_p",
    "tier_reason",
)
#: the banner of the published report's section: the counts are GENEB's analysis of the published per-task
#: results, not numbers the paper states (they are not among config/paper_claims.yaml's claims)
OWN_FINDING = (
    "GENEB's own finding, not a number the paper states: computed by GENEB from the paper's published per-task "
    "results (the same code as a run's leaderboard); the paper reports no significance tiers."
)


def headline(sep: pd.DataFrame, regime: str) -> str:
    """One sentence for `regime`'s macro row of `sep` (rank_separability rows of one protocol): how many
    defensible #1 models of how many, which, and how many adjacent pairs are separable; the tier_reason when
    the regime has no tiers; "" without a macro row."""
    row = sep[(sep["regime"] == regime) & (sep["category"] == "macro")]
    if row.empty:
        return ""
    r = row.iloc[0]
    if pd.isna(r["n_defensible_top"]):
        return f"{regime}: no tiers ({r['tier_reason']})."
    conf = float(r["tier_confidence"])
    cats = sep[(sep["regime"] == regime) & ~sep["category"].isin(("macro", "micro"))]
    tiered = cats[cats["n_defensible_top"].notna()]
    single = int((tiered["n_defensible_top"] == 1).sum())
    return (
        f"{regime}: {int(r['n_defensible_top'])} of {int(r['n_models'])} models are a defensible #1 on macro "
        f"(tier 1 at {conf:.0%}: {str(r['defensible_top_models']).replace(',', ', ')}); "
        f"{int(r['n_separable_adjacent'])} of {int(r['n_adjacent_pairs'])} adjacent macro ranks are separable; "
        f"{single} of {len(tiered)} tiered categories have a single defensible #1, "
        f"{len(cats) - len(tiered)} have no tiers (fewer than 2 tasks or ranked models)."
    )


def tiers_section(
    sep: pd.DataFrame, protocol: str, table_html: Callable[[pd.DataFrame, int, int], str], *, own_finding: bool
) -> list[str]:
    """HTML of the section for `protocol`: a headline per regime (`headline`) and the rank_separability rows;
    `own_finding` (the published report) adds the OWN_FINDING banner. [] for a table without the protocol's rows."""
    s = sep[sep["protocol"] == protocol] if len(sep) else sep
    if s.empty:
        return []
    order = {r: i for i, r in enumerate(REGIMES)}
    s = s.assign(_o=s["regime"].map(order)).sort_values("_o", kind="stable").drop(columns="_o")
    lines = [h for h in (headline(s, r) for r in REGIMES) if h]
    method = html.escape(str(s["tier_method"].iloc[0]))
    return [
        "<h2 id='tiers'>Statistically tied tiers</h2>",
        *([f"<p class='warn'>{html.escape(OWN_FINDING)}</p>"] if own_finding else []),
        f"<p>{method}: per regime and category a Friedman test over the tasks, then the Nemenyi critical "
        "difference of mean ranks; tier 1 = the models not separable from the best mean rank (each a defensible "
        "#1). Macro uses every task of the regime. The tier of every row is in leaderboard.parquet "
        "(tier, tier_reason, friedman_p).</p>",
        '<ul class="headline">' + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>",
        table_html(s[[c for c in SHOWN if c in s.columns]].reset_index(drop=True), 3, 200),
    ]
