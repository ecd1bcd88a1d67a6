"""The models analysed: their registry metadata as the analyses used it (the `models` table)."""

from __future__ import annotations

import pandas as pd

from geneb.analysis.context import RunContext


def models_table(model_meta: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The metadata of `models` as analysed (a model missing from the registry keeps its id as display name
    and unknown fields); `trained_on_tasks` joined with ';'."""
    rows = []
    for m in models:
        r = model_meta.loc[m].to_dict() if m in model_meta.index else {"display": m}
        r["trained_on_tasks"] = ";".join(r.get("trained_on_tasks", ()) or ())
        rows.append({"model": m, **r})
    return pd.DataFrame(rows)


def models_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """Registered analysis `models`: the metadata of every model of the score table."""
    return {"models": models_table(ctx.model_meta, sorted(ctx.scores["model"].unique()))}
