"""From zero-shot scores to results: metrics with seeded bootstrap uncertainty, the zero-shot leaderboard
beside the probe leaderboard, and the zero-shot tables.

Metrics of zero-shot scores, with seeded bootstrap uncertainty: one long table per (task, scorer).

* variant tasks: AUROC (`sklearn.metrics.roc_auc_score`) and AUPRC (`average_precision_score`) of `score` against
  `label`, over all rows (group "all"), by `group` where the task has groups, and the count-weighted mean over the
  groups (group "weighted-mean", as TraitGym averages AUPRC over chromosomes weighted by their variant counts);
  each with a percentile bootstrap CI from stratified resamples (positives and controls resampled separately, so
  every resample has both classes; the resamples' AUROC and AUPRC are computed vectorised, checked equal to
  sklearn's in the tests);
* paired tasks: paired accuracy, the share of rows with score > 0, a tie (score exactly 0) counting 0.5; the
  exact two-sided sign test (`scipy.stats.binomtest` of #(score > 0) in #(score != 0) at p = 0.5: ties dropped for
  the test, as a sign test does) as `p_value`; a percentile bootstrap CI of rows resampled; by group and the
  count-weighted group mean as for variant tasks.

A degenerate case (a group with one class only, a paired group whose rows are all ties) gives its row with value
NaN and a `note` saying why, never a crash or a dropped row; the weighted mean leaves such groups out and names
them in its note. The bootstrap draws `n_boot` resamples from `numpy.random.default_rng([seed, crc32(group)])`: the
same resamples for every scorer of a task (common random numbers), independent of the order of the groups.

Torch-free.

The zero-shot leaderboard and how its ranking relates to the probe leaderboard's.

* `_zeroshot_leaderboard`: per (model, scorer), each task's primary metric (AUROC for a variant task, paired
  accuracy for a paired one: both 0.5 at chance, so a mean over tasks of both kinds is meaningful) and a `macro`
  row, the mean over the configured zero-shot tasks of the kinds the scorer applies to (its `scope`:
  `geneb.zeroshot.task.scorer_kinds`; the embedding distances score variant tasks only, by construction). A
  (model, scorer) that lacks a task of its scope, or for which the scorer does not apply to one (a model without a
  language-model head for `llr`), is incomplete: its macro value is NaN and it is not ranked, and
  `incomplete_reason` names the tasks and why (a not-applicable reason is shown as given), so a model never wins on
  the tasks it happens to have. Macro rows are ranked among the entries of the same scope (their means cover the
  same tasks), task rows among the entries of the task; 1 = best, ties sharing the lowest rank.
* `_zeroshot_vs_probe`: Kendall's tau-b (scipy.stats.kendalltau) between each scorer's macro zero-shot ranking
  and the probe leaderboard's macro ranking of the same models, per (protocol, regime), with a seeded percentile
  bootstrap CI over models (models resampled with replacement; resamples with fewer than 3 distinct models or a
  constant side are skipped and counted).

Torch-free.

The zero-shot tables (rule zeroshot_tables): every score file of the run -> metrics, per-row scores, the
leaderboard, the rank correlation with the probe leaderboard and the not-applicable list (docs/zeroshot.md).

* `zeroshot_scores.parquet`: one row per (model, task, scorer, metric, group): `geneb.zeroshot.tables` columns
  (value, ci_low, ci_high, n, p_value, n_boot, seed, note, ...) plus provenance: the score file's sha256
  (`scores_sha256`), the task's `data_sha256`, the model's `settings_hash`, `geneb_version`;
* `zeroshot_row_scores.parquet`: model, task, row, scorer, score (every score the metrics were computed from);
* `zeroshot_leaderboard.parquet`, `zeroshot_vs_probe.parquet`: `geneb.zeroshot.tables`;
* `zeroshot_not_applicable.parquet`: model, task, scorer, reason.

The Markov baselines enter every table as entries of their own: model `markov-<order>`, scorer `markov-<order>`.
Torch-free.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.stats import binomtest
from sklearn.metrics import average_precision_score, roc_auc_score

from geneb.analysis.ranking import rank_desc
from geneb.core import integrity
from geneb.zeroshot.job import BASELINE_MODEL, read_score_file
from geneb.zeroshot.resampling import (
    auroc_parts,
    draw_counts,
    percentile_interval,
    weighted_auprc,
    weighted_auroc,
    weighted_paired_accuracy,
)
from geneb.zeroshot.task import GROUP_COLUMN, ZeroShotTask, check_row_scores, scorer_kinds

METRIC_COLUMNS: tuple[str, ...] = (
    "task", "scorer", "metric", "group", "value", "ci_low", "ci_high", "n", "n_positive", "p_value", "n_boot",
    "seed", "ci_level", "note", "resample_unit",
)  # fmt: skip
_ALL = "all"
_WEIGHTED_MEAN = "weighted-mean"
N_BOOT = 1000
_CI_LEVEL = 0.95

_Metric = Callable[[np.ndarray, np.ndarray], float]
#: variant metrics: (labels int (n,), scores float (n,)) -> value, the point estimates
_VARIANT_METRICS: dict[str, _Metric] = {
    "auroc": lambda y, s: float(roc_auc_score(y, s)),
    "auprc": lambda y, s: float(average_precision_score(y, s)),
}


#: the same metrics over weighted rows: (labels int (n,), scores (n,), weights (b, n)) -> (b,)
_RESAMPLED_METRICS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    "auroc": weighted_auroc,
    "auprc": weighted_auprc,
}
_PAIRED_ACCURACY = "paired_accuracy"


def _paired_accuracy(scores: np.ndarray) -> np.ndarray:
    """Share of rows with score > 0, a tie (score == 0) counting 0.5, along the last axis: (n,) -> scalar array,
    (b, n) -> (b,)."""
    return np.asarray(((scores > 0) + 0.5 * (scores == 0)).mean(axis=-1), dtype=np.float64)


def _sign_test(scores: np.ndarray) -> float:
    """Exact two-sided sign test p-value of #(score > 0) among the rows with score != 0 (ties dropped), p = 0.5;
    NaN when every row is a tie."""
    nonzero = scores[scores != 0]
    if len(nonzero) == 0:
        return float("nan")
    return float(binomtest(int((nonzero > 0).sum()), len(nonzero), 0.5, alternative="two-sided").pvalue)


def _rng(seed: int, group: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(group.encode())])


def _stratified_resamples(strata: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap row indices int (n_boot, n): each stratum (a label) resampled with replacement to its own size."""
    out = np.empty((n_boot, len(strata)), dtype=np.int64)
    start = 0
    for value in np.unique(strata):
        members = np.flatnonzero(strata == value)
        out[:, start : start + len(members)] = rng.choice(members, size=(n_boot, len(members)), replace=True)
        start += len(members)
    return out


#: `resample_unit` of a metric row: what its bootstrap resamples
_UNIT_ROWS = "rows"
_UNIT_GROUPS = "groups"
_UNIT_WITHIN_GROUPS = "rows within each group"


def _resample_weights(strata: np.ndarray, groups: np.ndarray | None, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, str]:  # fmt: skip
    """(weights float (n_boot, n), unit): each row's count in each bootstrap resample. groups (n,) given: a cluster
    bootstrap, the groups (transcripts, loci: rows that share a source sequence are not independent) drawn with
    replacement and every row of a drawn group counted; else the rows drawn with replacement within each stratum
    (the label), so every resample keeps both classes."""
    if groups is None:
        return draw_counts(_stratified_resamples(strata, n_boot, rng), len(strata)), _UNIT_ROWS
    names, codes = np.unique(groups, return_inverse=True)
    drawn = draw_counts(rng.integers(0, len(names), size=(n_boot, len(names))), len(names))
    return drawn[:, codes], _UNIT_GROUPS


def _finite(reps: np.ndarray, unit: str) -> tuple[np.ndarray, str]:
    """The replicates with a value, and a note counting the left-out resamples (a group resample with one class)."""
    keep = np.isfinite(reps)
    if keep.all():
        return reps, ""
    return reps[keep], f"{int((~keep).sum())} of {len(reps)} {unit} resamples left one class only and were left out"


def _row(task: str, scorer: str, metric: str, group: str, value: float, reps: np.ndarray, n: int, **kw: object) -> dict[str, object]:  # fmt: skip
    low, high = percentile_interval(reps, _CI_LEVEL) if np.isfinite(value) else (float("nan"), float("nan"))
    return {"task": task, "scorer": scorer, "metric": metric, "group": group, "value": value, "ci_low": low,
            "ci_high": high, "n": n, "n_positive": kw.get("n_positive", np.nan), "p_value": kw.get("p_value", np.nan),
            "note": kw.get("note", ""), "resample_unit": kw.get("unit", _UNIT_ROWS)}  # fmt: skip


def _groups(task: ZeroShotTask) -> list[tuple[str, np.ndarray]]:
    """(group name, row positions) of every group of the task, in sorted order; [] without groups."""
    if not task.has_groups:
        return []
    labels = task.rows[GROUP_COLUMN].astype(str).to_numpy()
    reserved = sorted({_ALL, _WEIGHTED_MEAN} & set(labels))
    if reserved:
        raise ValueError(f"zero-shot task {task.name}: group name(s) {reserved} are reserved for the summary rows")
    return [(str(g), np.flatnonzero(labels == g)) for g in sorted(set(labels))]


def _weighted_mean(
    task: str, scorer: str, metric: str, parts: list[tuple[str, int, float, np.ndarray]]
) -> dict[str, object]:
    """The count-weighted mean of the groups' values, and its CI from the groups' replicates (resample b of every
    group together). parts: (group, n, value, replicates (n_boot,)); NaN-valued groups are left out, named."""
    used = [p for p in parts if np.isfinite(p[2])]
    left_out = [p[0] for p in parts if not np.isfinite(p[2])]
    note = f"groups left out (no value): {', '.join(left_out)}" if left_out else ""
    n = sum(p[1] for p in used)
    unit = _UNIT_WITHIN_GROUPS
    if not used:
        return _row(task, scorer, metric, _WEIGHTED_MEAN, float("nan"), np.array([]), 0, note=note or "no groups", unit=unit)  # fmt: skip
    weights = np.array([p[1] for p in used], dtype=np.float64) / n
    value = float(np.dot(weights, [p[2] for p in used]))
    reps = np.stack([p[3] for p in used]).T @ weights
    return _row(task, scorer, metric, _WEIGHTED_MEAN, value, reps, n, note=note, unit=unit)


#: AUROC over the (effect, control) pairs that share a stratum (`_strata`)
_AUROC_WITHIN_STRATA = "auroc_within_strata"


def _strata(task: ZeroShotTask) -> tuple[np.ndarray, str]:
    """(stratum code int (n,), what the strata are) of a variant task: the substitution (ref>alt), and the position
    in the codon where the task has a reading frame (`ZeroShotTask.codon_positions`)."""
    keys = (task.rows["ref"].astype(str) + ">" + task.rows["alt"].astype(str)).to_numpy()
    what = "substitution"
    codon = task.codon_positions
    if codon is not None:
        keys = keys + ":" + codon.astype(str)
        what = "substitution x codon position"
    return np.unique(keys, return_inverse=True)[1], what


def _auroc_within_strata(label: np.ndarray, score: np.ndarray, strata: np.ndarray, weights: np.ndarray) -> np.ndarray:  # fmt: skip
    """The AUROC of the (effect, control) pairs in the same stratum, float64 (b,) (NaN where no stratum holds both
    classes): the pair-weighted mean of the strata's AUROCs, so a score that only tells substitutions or codon
    positions apart earns nothing (the stratified AUROC of matched designs; cf. the per-stratum evaluation of
    variant-effect predictors in TraitGym, Benegas et al. 2025)."""
    numerator = np.zeros(len(weights))
    pairs = np.zeros(len(weights))
    for code in np.unique(strata):
        members = np.flatnonzero(strata == code)
        num, pair = auroc_parts(label[members], score[members], weights[:, members])
        numerator += num
        pairs += pair
    return np.divide(numerator, pairs, out=np.full(len(pairs), np.nan), where=pairs > 0)


def _strata_row(task: ZeroShotTask, scorer: str, label: np.ndarray, score: np.ndarray, weights: np.ndarray, unit: str) -> dict[str, object]:  # fmt: skip
    """The `auroc_within_strata` row of a variant task (all rows), its CI from the same resamples as its AUROC."""
    strata, what = _strata(task)
    both = [c for c in np.unique(strata) if 0 < label[strata == c].sum() < (strata == c).sum()]
    note = f"strata: {what}; {len(both)} of {len(np.unique(strata))} hold both classes"
    value = float(_auroc_within_strata(label, score, strata, np.ones((1, len(label))))[0])
    if not np.isfinite(value):
        note = f"no stratum ({what}) holds both classes: they alone separate effects from controls"
        return _row(task.name, scorer, _AUROC_WITHIN_STRATA, _ALL, value, np.array([]), len(label),
                    n_positive=int(label.sum()), note=note, unit=unit)  # fmt: skip
    reps, left_out = _finite(_auroc_within_strata(label, score, strata, weights), unit)
    return _row(task.name, scorer, _AUROC_WITHIN_STRATA, _ALL, value, reps, len(label), n_positive=int(label.sum()),
                note="; ".join(x for x in (note, left_out) if x), unit=unit)  # fmt: skip


def _group_labels(task: ZeroShotTask) -> np.ndarray | None:
    return task.rows[GROUP_COLUMN].astype(str).to_numpy() if task.has_groups else None


def _variant_rows(task: ZeroShotTask, scorer: str, score: np.ndarray, n_boot: int, seed: int) -> list[dict[str, object]]:  # fmt: skip
    """The variant metrics of all rows (CI: a bootstrap over groups where the task has them, else over rows within
    each class), of each group (over its rows) and their count-weighted mean, plus `auroc_within_strata`."""
    label = task.rows["label"].to_numpy()
    bad = sorted(set(np.unique(label).tolist()) - {0, 1})
    if bad:
        raise ValueError(f"zero-shot task {task.name}: labels must be 0 or 1, got {bad}")
    label = label.astype(np.int64)
    rows: list[dict[str, object]] = []
    parts: dict[str, list[tuple[str, int, float, np.ndarray]]] = {m: [] for m in _VARIANT_METRICS}
    for group, members in [(_ALL, np.arange(task.n)), *_groups(task)]:
        y, s = label[members], score[members]
        n_pos = int(y.sum())
        if n_pos in (0, len(y)):
            what = "no effect rows (label 1)" if n_pos == 0 else "no control rows (label 0)"
            for metric in _VARIANT_METRICS:
                rows.append(_row(task.name, scorer, metric, group, float("nan"), np.array([]), len(y),
                                 n_positive=n_pos, note=f"one class only: {what}"))  # fmt: skip
                if group != _ALL:
                    parts[metric].append((group, len(y), float("nan"), np.full(n_boot, np.nan)))
            continue
        clusters = _group_labels(task) if group == _ALL else None
        weights, unit = _resample_weights(y, clusters, n_boot, _rng(seed, group))
        for metric, fn in _VARIANT_METRICS.items():
            value = fn(y, s)
            reps, left_out = _finite(_RESAMPLED_METRICS[metric](y, s, weights), unit)
            rows.append(_row(task.name, scorer, metric, group, value, reps, len(y), n_positive=n_pos, note=left_out,
                             unit=unit))  # fmt: skip
            if group != _ALL:
                parts[metric].append((group, len(y), value, reps))
        if group == _ALL:
            rows.append(_strata_row(task, scorer, y, s, weights, unit))
    if task.has_groups:
        rows += [_weighted_mean(task.name, scorer, metric, parts[metric]) for metric in _VARIANT_METRICS]
    return rows


def _paired_rows(task: ZeroShotTask, scorer: str, score: np.ndarray, n_boot: int, seed: int) -> list[dict[str, object]]:  # fmt: skip
    """Paired accuracy of all rows (CI over groups where the task has them, else over rows), of each group and
    their count-weighted mean, each with its sign test."""
    rows: list[dict[str, object]] = []
    parts: list[tuple[str, int, float, np.ndarray]] = []
    for group, members in [(_ALL, np.arange(task.n)), *_groups(task)]:
        s = score[members]
        p_value = _sign_test(s)
        note = "every row a tie (score 0): no sign test" if not np.isfinite(p_value) else ""
        clusters = _group_labels(task) if group == _ALL else None
        weights, unit = _resample_weights(np.zeros(len(s), np.int64), clusters, n_boot, _rng(seed, group))
        value = float(_paired_accuracy(s))
        reps = weighted_paired_accuracy(s, weights)
        rows.append(_row(task.name, scorer, _PAIRED_ACCURACY, group, value, reps, len(s), p_value=p_value, note=note,
                         unit=unit))  # fmt: skip
        if group != _ALL:
            parts.append((group, len(s), value, reps))
    if task.has_groups:
        rows.append(_weighted_mean(task.name, scorer, _PAIRED_ACCURACY, parts))
    return rows


def score_metrics(task: ZeroShotTask, scores: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """The metric rows (`METRIC_COLUMNS`) of one `RowScores` frame of `task` (module docstring).

    value: the metric on all rows of the group; ci_low/ci_high: the percentile CI (`_CI_LEVEL`) of `n_boot`
    seeded resamples; n: rows in the group; n_positive: label-1 rows (variant; NaN for paired); p_value: the sign
    test (paired; NaN for variant); note: why a value is NaN, or which groups a weighted mean left out.
    Raises ZeroShotScoreError for a frame that breaks the RowScores contract, ValueError for n_boot < 1, a
    variant label other than 0/1, or a group named `all` or `weighted-mean` (the summary rows' names).
    """
    check_row_scores(task, scores)
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    scorer = str(scores["scorer"].iloc[0])
    score = scores["score"].to_numpy(dtype=np.float64)
    build = _variant_rows if task.kind == "variant" else _paired_rows
    frame = pd.DataFrame(build(task, scorer, score, n_boot, seed))
    frame["n_boot"], frame["seed"], frame["ci_level"] = n_boot, seed, _CI_LEVEL
    return frame[list(METRIC_COLUMNS)]


#: the metric that ranks a task of each kind (geneb.zeroshot.tables)
_PRIMARY_METRIC: Mapping[str, str] = {"variant": "auroc", "paired": "paired_accuracy"}
MACRO = "macro"
#: how many tasks an `incomplete_reason` names before "and N more"
_MAX_NAMED = 5

_LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "model",
    "scorer",
    "task",
    "kind",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_tasks",
    "n_tasks_expected",
    "scope",
    "complete",
    "rank",
    "incomplete_reason",
    "auprc",
    "auroc_within_strata",
    "reference",
    "twin",
    "twin_value",
    "gain_over_twin",
)


def _with_variant_metrics(board: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with `auprc` and `auroc_within_strata` of all rows beside a variant task row's AUROC (NaN on
    paired and macro rows): what the field reports beside AUROC, and what survives matching on substitution and
    codon position."""
    out = board.copy()
    for metric in ("auprc", _AUROC_WITHIN_STRATA):
        part = metrics[(metrics["group"] == _ALL) & (metrics["metric"] == metric)]
        values = {(r.model, r.scorer, r.task): float(r.value) for r in part.itertuples(index=False)}
        keys = zip(out["model"], out["scorer"], out["task"])
        out[metric] = [values.get(k, np.nan) for k in keys]
    return out


def _with_references(board: pd.DataFrame, twins: Mapping[str, str]) -> pd.DataFrame:
    """The leaderboard with its reference rows named and each model beside its random-init twin.

    reference: "markov baseline" for the k-mer Markov entries, "random-init twin of <model>" for a twin, "" for a
    model; twin / twin_value / gain_over_twin: on a model's row whose twin has a row of the same scorer and task,
    the twin's id, its value and value - twin's value (what pretraining adds to this score), else "" / NaN.
    twins: {twin id: the model it is the twin of} (registry `twin.of`)."""
    out = board.copy()
    twin_of = {of: twin for twin, of in twins.items()}
    value = {(r.model, r.scorer, r.task): float(r.value) for r in out.itertuples(index=False)}
    out["reference"] = [
        "markov baseline"
        if model == scorer and model.startswith(f"{BASELINE_MODEL}-")
        else (f"random-init twin of {twins[model]}" if model in twins else "")
        for model, scorer in zip(out["model"], out["scorer"])
    ]
    out["twin"] = [twin_of.get(m, "") if (twin_of.get(m), s, t) in value else "" for m, s, t in zip(out["model"], out["scorer"], out["task"])]  # fmt: skip
    out["twin_value"] = [value[(w, s, t)] if w else np.nan for w, s, t in zip(out["twin"], out["scorer"], out["task"])]  # fmt: skip
    out["gain_over_twin"] = out["value"] - out["twin_value"]
    return out


def _zeroshot_leaderboard(
    metrics: pd.DataFrame,
    task_kinds: Mapping[str, str],
    not_applicable: pd.DataFrame | None = None,
    twins: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The zero-shot leaderboard (module docstring) from the metrics table.

    metrics: `zeroshot_scores.parquet` rows (columns model, task, scorer, metric, value, ci_low, ci_high, n, group);
    only the `group == "all"` rows are read (each task's primary metric ranks; `auprc` and `auroc_within_strata`
    stand beside it). task_kinds: {task: kind} of every
    configured zero-shot task (what a complete entry must have). not_applicable: rows model, task, scorer, reason
    (`geneb.zeroshot.task.NotApplicable`); None = none. twins: {twin id: its model} of the run's random-init twins
    (`_with_references`). Returns LEADERBOARD_COLUMNS, per-task rows then the
    macro row of each (model, scorer), sorted by scorer, rank. Raises ValueError for a task of unknown kind or a
    metrics row of a task not in `task_kinds` (its kind decides the metric, so it cannot be guessed).
    """
    unknown_kinds = {t: k for t, k in task_kinds.items() if k not in _PRIMARY_METRIC}
    if unknown_kinds:
        raise ValueError(
            f"zero-shot leaderboard: tasks of unknown kind {unknown_kinds} (kinds: {list(_PRIMARY_METRIC)})"
        )
    stray = sorted(set(metrics["task"]) - set(task_kinds))
    if stray:
        raise ValueError(f"zero-shot leaderboard: metrics for tasks that are not configured: {stray}")
    na = not_applicable if not_applicable is not None else pd.DataFrame(columns=["model", "task", "scorer", "reason"])
    primary = metrics[
        (metrics["group"] == "all")
        & (metrics["metric"] == metrics["task"].map(lambda t: _PRIMARY_METRIC[task_kinds[t]]))
    ]
    entries = sorted(
        {(m, s) for m, s in zip(primary["model"], primary["scorer"])}
        | {(m, s) for m, s in zip(na["model"], na["scorer"])}
    )
    reasons = {(m, t, s): r for m, t, s, r in zip(na["model"], na["task"], na["scorer"], na["reason"])}
    by_key = {(r.model, r.scorer, r.task): r for r in primary.itertuples(index=False)}
    rows: list[dict[str, object]] = []
    for model, scorer in entries:
        values, lacks = [], []
        kinds = scorer_kinds(scorer)
        scope = "+".join(k for k in ("variant", "paired") if k in kinds and k in task_kinds.values())
        for task, kind in task_kinds.items():
            if kind not in kinds:
                continue  # out of the scorer's scope by construction (listed in not_applicable, not held against it)
            hit = by_key.get((model, scorer, task))
            if hit is None:
                lacks.append(f"{task} ({reasons.get((model, task, scorer), 'not scored')})")
                continue
            values.append(float(hit.value))
            rows.append(
                {
                    "model": model,
                    "scorer": scorer,
                    "task": task,
                    "kind": kind,
                    "metric": _PRIMARY_METRIC[kind],
                    "value": float(hit.value),
                    "ci_low": float(hit.ci_low),
                    "ci_high": float(hit.ci_high),
                    "n": int(hit.n),
                    "n_tasks": 1,
                    "n_tasks_expected": 1,
                    "scope": kind,
                    "complete": bool(np.isfinite(hit.value)),
                    "incomplete_reason": "" if np.isfinite(hit.value) else "metric undefined (see the metrics note)",
                }
            )
        expected = sum(1 for k in task_kinds.values() if k in kinds)
        complete = bool(values) and not lacks and all(np.isfinite(values))
        reason = ""
        if lacks:
            named = "; ".join(lacks[:_MAX_NAMED]) + (
                f"; and {len(lacks) - _MAX_NAMED} more" if len(lacks) > _MAX_NAMED else ""
            )
            reason = f"lacks {len(lacks)} of {expected} tasks: {named}"
        elif not values:
            reason = "no configured task is of a kind this scorer applies to"
        rows.append(
            {
                "model": model,
                "scorer": scorer,
                "task": MACRO,
                "kind": MACRO,
                "metric": "mean_primary",
                "value": float(np.mean(values)) if complete else np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "n": len(values),
                "n_tasks": len(values),
                "n_tasks_expected": expected,
                "scope": scope,
                "complete": complete,
                "incomplete_reason": reason,
            }
        )
    board = pd.DataFrame(rows, columns=[c for c in _LEADERBOARD_COLUMNS if c != "rank"])
    board["rank"] = pd.Series(pd.NA, index=board.index, dtype="Int64")
    for _, part in board[board["complete"]].groupby(["task", "scope"]):
        board.loc[part.index, "rank"] = rank_desc(part["value"])
    board = _with_references(_with_variant_metrics(board, metrics), twins or {})[list(_LEADERBOARD_COLUMNS)]
    order = board.assign(_macro=board["task"] == MACRO).sort_values(
        ["_macro", "task", "rank", "model", "scorer"], na_position="last", kind="mergesort"
    )
    return order.drop(columns="_macro").reset_index(drop=True)


def _zeroshot_vs_probe(
    board: pd.DataFrame,
    probe_leaderboard: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Kendall's tau-b between each scorer's zero-shot macro ranking and the probe macro ranking, per protocol and
    regime, over the models complete in both.

    board: `_zeroshot_leaderboard` output; probe_leaderboard: `leaderboard.parquet` rows (protocol, regime, model,
    category, value, complete). Returns columns scorer, protocol, regime, tau, p_value, ci_low, ci_high, n_models,
    models, n_boot, n_boot_used, seed. Fewer than 3 shared models give NaN tau with n_models saying why.
    """
    zs = board[(board["task"] == MACRO) & board["complete"]]
    probe = probe_leaderboard[(probe_leaderboard["category"] == MACRO) & probe_leaderboard["complete"].astype(bool)]
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for scorer, zpart in zs.groupby("scorer", sort=True):
        zvals = dict(zip(zpart["model"], zpart["value"]))
        for (protocol, regime), ppart in probe.groupby(["protocol", "regime"], sort=True):
            pvals = dict(zip(ppart["model"], ppart["value"]))
            models = sorted(set(zvals) & set(pvals))
            x = np.array([zvals[m] for m in models], dtype=float)
            y = np.array([pvals[m] for m in models], dtype=float)
            tau, p, lo, hi, used = np.nan, np.nan, np.nan, np.nan, 0
            if len(models) >= 3:
                res = stats.kendalltau(x, y, variant="b")
                tau, p = float(res.statistic), float(res.pvalue)
                lo, hi, used = _bootstrap_tau(x, y, rng, n_boot, ci)
            out.append(
                {
                    "scorer": scorer,
                    "protocol": protocol,
                    "regime": regime,
                    "tau": tau,
                    "p_value": p,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n_models": len(models),
                    "models": ",".join(models),
                    "n_boot": n_boot,
                    "n_boot_used": used,
                    "seed": seed,
                }
            )
    return pd.DataFrame(out, columns=_VS_COLUMNS)


_VS_COLUMNS: list[str] = [
    "scorer",
    "protocol",
    "regime",
    "tau",
    "p_value",
    "ci_low",
    "ci_high",
    "n_models",
    "models",
    "n_boot",
    "n_boot_used",
    "seed",
]


def _bootstrap_tau(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_boot: int, ci: float
) -> tuple[float, float, int]:
    """Percentile CI of tau-b over models resampled with replacement; skipped resamples are not counted."""
    taus = []
    n = len(x)
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        if len(set(idx.tolist())) < 3 or np.ptp(x[idx]) == 0 or np.ptp(y[idx]) == 0:
            continue
        taus.append(float(stats.kendalltau(x[idx], y[idx], variant="b").statistic))
    if not taus:
        return np.nan, np.nan, 0
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(taus, [alpha, 1 - alpha])
    return float(lo), float(hi), len(taus)


_NOT_APPLICABLE_COLUMNS = ("model", "task", "scorer", "reason")
_PROVENANCE_COLUMNS = ("scores_sha256", "data_sha256", "settings_hash", "geneb_version")


@dataclass(frozen=True)
class ZeroShotTables:
    """The five tables of one run (module docstring)."""

    scores: pd.DataFrame
    row_scores: pd.DataFrame
    leaderboard: pd.DataFrame
    vs_probe: pd.DataFrame
    not_applicable: pd.DataFrame


def _zeroshot_tables(
    tasks: Sequence[ZeroShotTask],
    score_files: Sequence[str | Path],
    probe_leaderboard: pd.DataFrame,
    *,
    n_boot: int,
    seed: int,
    twins: Mapping[str, str] | None = None,
) -> ZeroShotTables:
    """Read every score file (each checked against its task: `read_score_file`) and compute the tables.

    tasks: the configured zero-shot tasks (each score file names one of them); score_files: the models' and the
    baselines' files; probe_leaderboard: leaderboard.parquet. Raises ValueError naming a score file of a task that
    is not configured, and what `read_score_file` raises.
    """
    by_name = {t.name: t for t in tasks}
    metrics, rows, declined = [], [], []
    for path in score_files:
        meta_task = _task_of(path)
        if meta_task not in by_name:
            raise ValueError(f"{path}: scores of zero-shot task {meta_task!r}, which this run does not configure")
        task = by_name[meta_task]
        read = read_score_file(path, task)
        provenance = {
            "scores_sha256": integrity.recorded_digest(path) or integrity.sha256_file(path),
            "data_sha256": task.data_sha256,
            "settings_hash": str(read.provenance.get("settings_hash", "")),
            "geneb_version": str(read.provenance.get("geneb_version", "")),
        }
        for scorer, part in read.scores.groupby("scorer", sort=True):
            model = str(scorer) if read.model == BASELINE_MODEL else read.model
            frame = part.reset_index(drop=True)
            metrics.append(score_metrics(task, frame, n_boot=n_boot, seed=seed).assign(model=model, **provenance))
            rows.append(frame.assign(model=model, task=task.name))
        declined += [asdict(n) for n in read.not_applicable]
    metric_table = (
        pd.concat(metrics, ignore_index=True)
        if metrics
        else pd.DataFrame(columns=["model", *METRIC_COLUMNS, *_PROVENANCE_COLUMNS])
    )
    metric_table = metric_table[["model", *METRIC_COLUMNS, *_PROVENANCE_COLUMNS]]
    row_table = (
        pd.concat(rows, ignore_index=True)[["model", "task", "row", "scorer", "score"]]
        if rows
        else pd.DataFrame(columns=["model", "task", "row", "scorer", "score"])
    )
    na = pd.DataFrame(declined, columns=list(_NOT_APPLICABLE_COLUMNS))
    board = _zeroshot_leaderboard(metric_table, {t.name: t.kind for t in tasks}, na, twins)
    vs = _zeroshot_vs_probe(board, probe_leaderboard, n_boot=n_boot, seed=seed)
    return ZeroShotTables(metric_table, row_table, board, vs, na)


def _task_of(path: str | Path) -> str:
    """The task a score file is for: resources/zeroshot/{scores/<model>/<xhash>|baselines}/<task>/<hash>.parquet."""
    return Path(path).parent.name


def _write_zeroshot_tables(tables: ZeroShotTables, outputs: Mapping[str, str | Path]) -> None:
    """Write each table to outputs[name] (names: scores, row_scores, leaderboard, vs_probe, not_applicable)."""
    for name in ("scores", "row_scores", "leaderboard", "vs_probe", "not_applicable"):
        integrity.write_parquet(getattr(tables, name).reset_index(drop=True), outputs[name])


def run_tables_rule(
    *,
    rows: Sequence[str | Path],
    score_files: Sequence[str | Path],
    leaderboard: str | Path,
    outputs: Mapping[str, str | Path],
    bootstrap: Mapping[str, int],
    twins: Mapping[str, str] | None = None,
) -> None:
    """Rule zeroshot_tables: read the tasks (their rows.tsv under resources/zeroshot/tasks/{zstask}/{zthash}/),
    every score file and the probe leaderboard, and write the five tables (`_write_zeroshot_tables`). twins: {twin
    id: its model} of the run's random-init twins (the rule's params)."""
    from geneb.zeroshot.job import task_of_rows_file

    tasks = [task_of_rows_file(r) for r in rows]
    probe = integrity.read_parquet(leaderboard)
    tables = _zeroshot_tables(
        tasks, score_files, probe, n_boot=int(bootstrap["n_boot"]), seed=int(bootstrap["seed"]), twins=twins
    )
    if "shortcuts" in outputs:  # the model-free baselines, and their flag on the leaderboard's rows
        from dataclasses import replace

        from geneb.zeroshot.shortcuts import write_shortcuts

        board = write_shortcuts(tables.leaderboard, tasks, outputs["shortcuts"], bootstrap, macro=MACRO)
        tables = replace(tables, leaderboard=board)
    _write_zeroshot_tables(tables, outputs)
