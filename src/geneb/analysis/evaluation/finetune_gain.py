"""Does the probe ranking survive fine-tuning? Each probe protocol against `finetune-lora` on the same models,
tasks, regimes and shot draws (docs/analyses.md, "Probe vs fine-tune").

Two kinds of rows, per (probe protocol, regime) and per category and "macro" (all tasks):

* `kind = "ranking"`: Kendall's tau-b between the models' probe and fine-tune scores (the mean seed-mean MCC over
  the category's tasks; `scipy.stats.kendalltau`), with a task-bootstrap interval: in each of B replicates the
  category's tasks are drawn with replacement (`default_rng([seed, 7, crc32(protocol), crc32(regime),
  crc32(category)])`), both protocols' category means recomputed on the drawn tasks and tau taken again
  (percentile interval; a category of one task has no task variation: NA with a note). `winner_probe` /
  `winner_finetune`: the top model of each (ties to the first in model order), `winner_changed` whether they differ.
* `kind = "gain"`: each model's fine-tune gain, mean over the category's tasks of MCC(finetune) - MCC(probe), with
  a paired interval: per task the paired bootstrap over its test rows (`paired.paired_draws`, the same row draws
  for both cells), and across the category's tasks the two-level bootstrap of `geneb.analysis.controls.pretraining`
  (tasks drawn within the category, each drawn task's own row replicate; Davison & Hinkley 1997, sec. 3.8).
  Without per-row predictions the interval is NA with the reason in `note`.

Only models with both protocols on every task of the category are compared (n_models); an empty table when the run
has no finetune-lora rows.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from geneb.analysis.context import RunContext
from geneb.analysis.stats.paired import paired_draws, read_cell
from geneb.tables.scores import REGIMES, AnalysisInputError

FINETUNE = "finetune-lora"
FINETUNE_GAIN_COLUMNS = (
    "probe_protocol",
    "regime",
    "kind",
    "level",
    "category",
    "model",
    "n_models",
    "n_tasks",
    "kendall_tau",
    "tau_ci_low",
    "tau_ci_high",
    "winner_probe",
    "winner_finetune",
    "winner_changed",
    "mcc_probe",
    "mcc_finetune",
    "gain",
    "gain_ci_low",
    "gain_ci_high",
    "confidence",
    "n_resamples",
    "seed",
    "note",
)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two score vectors (NaN when either is constant)."""
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(kendalltau(a, b).statistic)


def _tau_interval(ctx: RunContext, probe: pd.DataFrame, ft: pd.DataFrame, seed_key: list[int]) -> tuple[float, float]:
    """Task-bootstrap percentile interval of tau (probe, ft: task x model matrices of one category)."""
    n_tasks = probe.shape[0]
    rng = np.random.default_rng(seed_key)
    picks = rng.integers(0, n_tasks, size=(ctx.n_resamples, n_tasks))
    p, f = probe.to_numpy(), ft.to_numpy()
    taus = np.array([_tau(p[i].mean(axis=0), f[i].mean(axis=0)) for i in picks])
    taus = taus[np.isfinite(taus)]
    if not len(taus):
        return float("nan"), float("nan")
    a = (1 - ctx.confidence) / 2
    return float(np.quantile(taus, a)), float(np.quantile(taus, 1 - a))


def _gain_draws(ctx: RunContext, protocol: str, regime: str, model: str, task: str, files: dict) -> Any:
    """(row-bootstrap draws (B,) of MCC(finetune) - MCC(probe) on `task`, "") or (None, why not)."""
    if ctx.predictions_root is None:
        return None, "no per-row predictions in this run"
    try:
        ft, pr = (
            read_cell(ctx.predictions_root, protocol=p, model=model, task=task, view=None, regime=regime, cache=files)
            for p in (FINETUNE, protocol)
        )
        return paired_draws(ft, pr, task=task, n_resamples=ctx.n_resamples, seed=ctx.seed).draws, ""
    except AnalysisInputError as err:
        return None, str(err)


def _two_level(ctx: RunContext, draws: list[np.ndarray], key: list[int]) -> tuple[float, float]:
    """The two-level bootstrap interval of the mean over tasks of per-task replicates `draws` (tasks x B)."""
    d = np.stack(draws)
    n_tasks, n_draws = d.shape
    if n_tasks > 1:
        picks = np.random.default_rng(key).integers(0, n_tasks, size=(n_draws, n_tasks))
        means = d[picks, np.arange(n_draws)[:, None]].mean(axis=1)
    else:
        means = d[0]
    a = (1 - ctx.confidence) / 2
    return float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def _crc(s: str) -> int:
    return zlib.crc32(s.encode())


def _rows(ctx: RunContext, protocol: str, regime: str, files: dict) -> list[dict[str, Any]]:
    """The ranking and gain rows of one (probe protocol, regime)."""
    used = ctx.used[ctx.used["regime"] == regime]
    probe = used[used["protocol"] == protocol].pivot_table(index="task", columns="model", values="value")
    ft = used[used["protocol"] == FINETUNE].pivot_table(index="task", columns="model", values="value")
    tasks = sorted(set(probe.index) & set(ft.index))
    models = sorted(set(probe.columns) & set(ft.columns))
    if not tasks or not models:
        return []
    probe, ft = probe.loc[tasks, models], ft.loc[tasks, models]
    cats = used.drop_duplicates("task").set_index("task")["category"]
    groups = {c: [t for t in tasks if cats[t] == c] for c in sorted({cats[t] for t in tasks})}
    groups["macro"] = tasks
    out: list[dict[str, Any]] = []
    for category, members in groups.items():
        keep = [m for m in models if probe.loc[members, m].notna().all() and ft.loc[members, m].notna().all()]
        p, f = probe.loc[members, keep], ft.loc[members, keep]
        pm, fm = p.mean(axis=0), f.mean(axis=0)
        level = "macro" if category == "macro" else "category"
        base = {"probe_protocol": protocol, "regime": regime, "level": level, "category": category}
        key = [ctx.seed, 7, _crc(protocol), _crc(regime), _crc(category)]
        lo, hi = _tau_interval(ctx, p, f, key) if len(members) > 1 and len(keep) > 1 else (np.nan, np.nan)
        note = "" if len(members) > 1 else "one task: no task-bootstrap interval"
        if len(keep) < 2:
            note = "fewer than 2 models with both protocols on every task"
        out.append(
            {
                **base,
                "kind": "ranking",
                "model": pd.NA,
                "n_models": len(keep),
                "n_tasks": len(members),
                "kendall_tau": _tau(pm.to_numpy(), fm.to_numpy()) if len(keep) > 1 else np.nan,
                "tau_ci_low": lo,
                "tau_ci_high": hi,
                "winner_probe": str(pm.idxmax()) if len(keep) else pd.NA,
                "winner_finetune": str(fm.idxmax()) if len(keep) else pd.NA,
                "winner_changed": bool(pm.idxmax() != fm.idxmax()) if len(keep) else pd.NA,
                "note": note,
            }
        )
        for model in keep:
            got = [_gain_draws(ctx, protocol, regime, model, t, files) for t in members]
            complete = all(d is not None for d, _ in got)
            glo, ghi = _two_level(ctx, [d for d, _ in got], [*key, _crc(model)]) if complete else (np.nan, np.nan)
            out.append(
                {
                    **base,
                    "kind": "gain",
                    "model": model,
                    "n_models": len(keep),
                    "n_tasks": len(members),
                    "mcc_probe": float(pm[model]),
                    "mcc_finetune": float(fm[model]),
                    "gain": float(fm[model] - pm[model]),
                    "gain_ci_low": glo,
                    "gain_ci_high": ghi,
                    "note": "" if complete else next(w for d, w in got if d is None),
                }
            )
    return out


def finetune_vs_probe_tables(ctx: RunContext) -> dict[str, pd.DataFrame]:
    """The run-scope analysis `finetune_vs_probe` (module docstring): {"finetune_vs_probe": ranking and gain rows
    per (probe protocol, regime, category | macro)}; empty without finetune-lora rows. The summary gets the macro
    tau and winner change per (probe protocol, regime) (`finetune_vs_probe.headlines`)."""
    protocols = sorted(set(ctx.used["protocol"]) - {FINETUNE}) if FINETUNE in set(ctx.used["protocol"]) else []
    rows: list[dict[str, Any]] = []
    files: dict = {}
    for protocol in protocols:
        for regime in [r for r in REGIMES if r in set(ctx.used["regime"])]:
            rows += _rows(ctx, protocol, regime, files)
    out = pd.DataFrame(rows, columns=list(FINETUNE_GAIN_COLUMNS)).assign(
        confidence=ctx.confidence, n_resamples=ctx.n_resamples, seed=ctx.seed
    )
    for col in ("n_models", "n_tasks"):
        out[col] = out[col].astype("Int64")
    for col in ("model", "winner_probe", "winner_finetune", "note"):
        out[col] = out[col].astype("string")
    out["winner_changed"] = out["winner_changed"].astype("boolean")
    macro = out[(out["kind"] == "ranking") & (out["level"] == "macro")]
    ctx.summary["finetune_vs_probe"] = {
        "headlines": [
            {
                "probe_protocol": r.probe_protocol,
                "regime": r.regime,
                "kendall_tau": None if pd.isna(r.kendall_tau) else float(r.kendall_tau),
                "winner_probe": r.winner_probe,
                "winner_finetune": r.winner_finetune,
                "winner_changed": bool(r.winner_changed),
            }
            for r in macro.itertuples()
        ]
        if len(macro)
        else [],
        "note": "" if len(out) else "no finetune-lora rows in this run (config/finetune.yaml)",
    }
    return {"finetune_vs_probe": out}
