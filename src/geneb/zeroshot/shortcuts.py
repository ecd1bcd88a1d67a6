"""Model-free baselines of zero-shot tasks: can a rule that never reads the sequence as DNA solve the task?

The zero-shot counterpart of the probes' shortcut baselines (`geneb.tasks.audit`): features computed from the
task's rows alone, turned into a score by a grouped cross-validated logistic regression, and scored with the
task's primary metric beside the models (`zeroshot_shortcuts.parquet`, docs/zeroshot.md, "Model-free baselines").

Features (`variant_features`, `paired_features`):

| kind | baseline | columns | what |
|---|---|---|---|
| variant | `substitution` | 12 | one-hot of ref>alt (A>C ... T>G) |
| variant | `transition` | 1 | 1 for a transition (A<->G, C<->T), 0 for a transversion |
| variant | `cpg` | 2 | ref in a CpG of the reference window; alt makes a CpG with a neighbour |
| variant | `codon_position` | 3 | one-hot of the variant's position in its codon (only where the task has a reading frame: meta.json's `reading_frame`, or a stop-gain task) |
| variant | `window_position` | 3 | pos / (window length - 1), distance to the nearer window end (bases), window length (bases) |
| variant | `local_gc` | 1 | GC fraction of the `LOCAL_FLANK` bases on each side of the variant, the variant's own base left out |
| paired | `length`, `gc`, `mono`, `di`, `tri`, `cpg_oe` | 1, 1, 4, 16, 64, 1 | each member's composition (`geneb.tasks.audit.feature_matrix`) |
| both | `combined` | all | every feature above together |

How a baseline scores a task (`shortcut_baselines`): a standardised L2 logistic regression (scikit-learn,
`LogisticRegression(C=1)`) is fitted on the training folds of `GroupKFold` over the task's `group` column (every row
its own group when the task has none; at most `MAX_FOLDS` folds), and each row is scored by the fold that did not
see its group, so rows of one transcript or source sequence never inform each other's score. Variant tasks: the
out-of-fold P(label 1) is scored by AUROC against `label`. Paired tasks: each member is a row (`sequence_a` label 1,
`sequence_b` label 0, a pair's two members in the same fold), and the pair's score is f(a) - f(b), scored by paired
accuracy (ties 0.5), the task's own metric: 0.5 is chance for both. The direction is learned on the training folds,
never folded afterwards, so a baseline below 0.5 is a fold that learned the wrong way, not a hidden shortcut.

Interval: a 95 % percentile bootstrap of `n_boot` resamples (`numpy.random.default_rng(seed)`) of the resampling
unit, the `group` when the task has at least `MIN_GROUPS_TO_RESAMPLE` groups (rows of one group are not
independent), else the row; the out-of-fold scores are kept, the metric recomputed with the resample's counts as
weights.

Flag (`shortcut_flags`): a task whose best baseline reaches `FLAG_AT` (0.60) with its interval's lower end above 0.5
is `fail` (`shortcut_flag`, the task audit's word) with the reason naming the baseline, its value and interval;
else `pass`; `unknown` when no baseline could be computed (the reason says why). The threshold is the task audit's
`pass` ceiling (genomic-benchmarks-qc, 0.6), with the interval required so that 150 pairs of noise do not flag.
`attach_shortcut_flags` copies a task's flag onto every leaderboard row of the task, and onto a macro row when any
task it averages is flagged. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from geneb.zeroshot.resampling import draw_counts, percentile_interval, weighted_auroc, weighted_paired_accuracy
from geneb.zeroshot.task import GROUP_COLUMN, ZeroShotTask

#: bases on each side of a variant whose GC fraction is `local_gc` (a 50-base neighbourhood, the variant left out)
LOCAL_FLANK = 25
#: the most folds of the grouped cross-validation (fewer when the task has fewer groups)
MAX_FOLDS = 5
#: groups a task needs before the bootstrap resamples groups instead of rows
MIN_GROUPS_TO_RESAMPLE = 20
#: the best baseline at or above this value, with its interval above 0.5, flags the task
FLAG_AT = 0.60
N_BOOT = 1000
_CI_LEVEL = 0.95
COMBINED = "combined"
_PRIMARY = {"variant": "auroc", "paired": "paired_accuracy"}
_BASES = "ACGT"
_SUBSTITUTIONS = tuple(f"{r}>{a}" for r in _BASES for a in _BASES if r != a)
_TRANSITIONS = frozenset({"A>G", "G>A", "C>T", "T>C"})
_PAIRED_GROUPS = ("length", "gc", "mono", "di", "tri", "cpg_oe")

SHORTCUT_COLUMNS: tuple[str, ...] = (
    "task", "kind", "baseline", "n_features", "metric", "value", "ci_low", "ci_high", "n", "n_groups", "cv_folds",
    "resample_unit", "n_boot", "seed", "ci_level", "note",
)  # fmt: skip
FLAG_COLUMNS: tuple[str, ...] = (
    "task", "shortcut_flag", "shortcut_best_baseline", "shortcut_best_value", "shortcut_best_ci_low", "shortcut_reason",
)  # fmt: skip


def variant_features(task: ZeroShotTask) -> dict[str, np.ndarray]:
    """{baseline: float64 (n, d)} of a variant task's rows (module docstring), `combined` last; `codon_position`
    only when the task has a reading frame. Raises ValueError naming the task when it is not a variant task."""
    if task.kind != "variant":
        raise ValueError(f"zero-shot task {task.name}: variant features need a variant task, not {task.kind!r}")
    seqs = task.rows["sequence"].astype(str).tolist()
    pos = task.rows["pos"].to_numpy(dtype=np.int64)
    ref = task.rows["ref"].astype(str).tolist()
    alt = task.rows["alt"].astype(str).tolist()
    sub = [f"{r}>{a}" for r, a in zip(ref, alt)]
    out: dict[str, np.ndarray] = {
        "substitution": np.array([[s == t for t in _SUBSTITUTIONS] for s in sub], dtype=np.float64),
        "transition": np.array([[s in _TRANSITIONS] for s in sub], dtype=np.float64),
    }
    cpg = np.zeros((task.n, 2))
    gc = np.full((task.n, 1), 0.5)
    place = np.zeros((task.n, 3))
    for i, (s, p, r, a) in enumerate(zip(seqs, pos.tolist(), ref, alt)):
        before, after = s[p - 1] if p > 0 else "", s[p + 1] if p + 1 < len(s) else ""
        cpg[i] = [(r == "C" and after == "G") or (r == "G" and before == "C"),
                  (a == "C" and after == "G") or (a == "G" and before == "C")]  # fmt: skip
        flank = (s[max(0, p - LOCAL_FLANK) : p] + s[p + 1 : p + 1 + LOCAL_FLANK]).replace("N", "")
        if flank:
            gc[i, 0] = (flank.count("G") + flank.count("C")) / len(flank)
        place[i] = [p / max(len(s) - 1, 1), min(p, len(s) - 1 - p), len(s)]
    out["cpg"] = cpg
    codon = task.codon_positions
    if codon is not None:
        out["codon_position"] = np.eye(3)[codon]
    out["window_position"] = place
    out["local_gc"] = gc
    out[COMBINED] = np.hstack(list(out.values()))
    return out


def paired_features(task: ZeroShotTask) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{baseline: (features of sequence_a, features of sequence_b)}, each float64 (n, d), of a paired task: the
    composition groups of `geneb.tasks.audit.feature_matrix` (N and other letters left out of the denominators; an
    undefined value, e.g. CpG o/e without C, is 0), `combined` last. Raises ValueError for a task of another kind."""
    from geneb.tasks.audit import feature_matrix, feature_names

    if task.kind != "paired":
        raise ValueError(f"zero-shot task {task.name}: paired features need a paired task, not {task.kind!r}")
    members = []
    for column in ("sequence_a", "sequence_b"):
        matrix, _ = feature_matrix(task.rows[column].astype(str).tolist(), _PAIRED_GROUPS, where=f"task {task.name}, {column}, ")  # fmt: skip
        members.append(np.nan_to_num(matrix, nan=0.0))
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    start = 0
    for group in _PAIRED_GROUPS:
        width = len(feature_names(group))
        out[group] = (members[0][:, start : start + width], members[1][:, start : start + width])
        start += width
    out[COMBINED] = (members[0], members[1])
    return out


def _out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int) -> np.ndarray:
    """Out-of-fold P(label 1) float64 (n,) of a standardised logistic regression, GroupKFold over `groups`; 0.5 for
    a fold whose training part holds one class only (nothing to learn)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    out = np.full(len(y), 0.5)
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        if len(np.unique(y[train])) < 2:
            continue
        model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        model.fit(x[train], y[train])
        out[test] = model.predict_proba(x[test])[:, 1]
    return out


def _units(task: ZeroShotTask, groups: np.ndarray) -> tuple[np.ndarray, str]:
    """(unit index per row int (n,), "group" or "row"): what the bootstrap resamples."""
    if task.has_groups and len(np.unique(groups)) >= MIN_GROUPS_TO_RESAMPLE:
        return np.unique(groups, return_inverse=True)[1], "group"
    return np.arange(task.n), "row"


def _resample_weights(units: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Row weights float64 (n_boot, n): how often each row's unit is drawn in each resample of the units."""
    n_units = int(units.max()) + 1
    return draw_counts(rng.integers(0, n_units, size=(n_boot, n_units)), n_units)[:, units]


def shortcut_baselines(task: ZeroShotTask, *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Every model-free baseline of `task` scored with its primary metric (module docstring): one row per baseline,
    columns SHORTCUT_COLUMNS (`value` in [0, 1], 0.5 = chance; `ci_low`/`ci_high` the 95 % percentile interval;
    `n` rows; `cv_folds` the GroupKFold folds; `resample_unit` group or row; `note` why a value is NaN). All
    baselines of a task share the same resamples. Raises ValueError naming the task when it has fewer than two
    groups (rows) to cross-validate over, or a variant task with one class only."""
    groups = task.rows[GROUP_COLUMN].astype(str).to_numpy() if task.has_groups else np.arange(task.n).astype(str)
    n_groups = len(np.unique(groups))
    if n_groups < 2:
        raise ValueError(f"zero-shot task {task.name}: {n_groups} group(s); cross-validation needs at least two")
    folds = min(MAX_FOLDS, n_groups)
    units, unit_name = _units(task, groups)
    weights = _resample_weights(units, n_boot, np.random.default_rng(seed))
    rows = []
    if task.kind == "variant":
        y = task.rows["label"].to_numpy(dtype=np.int64)
        if len(np.unique(y)) < 2:
            raise ValueError(f"zero-shot task {task.name}: labels {np.unique(y).tolist()}, a single class")
        for name, x in variant_features(task).items():
            s = _out_of_fold(x, y, groups, folds)
            value = float(weighted_auroc(y, s, np.ones((1, task.n)))[0])
            rows.append((name, x.shape[1], value, percentile_interval(weighted_auroc(y, s, weights), _CI_LEVEL)))
    else:
        y = np.r_[np.ones(task.n, dtype=np.int64), np.zeros(task.n, dtype=np.int64)]
        for name, (a, b) in paired_features(task).items():
            s = _out_of_fold(np.vstack([a, b]), y, np.r_[groups, groups], folds)
            diff = s[: task.n] - s[task.n :]
            value = float(weighted_paired_accuracy(diff, np.ones((1, task.n)))[0])
            rows.append(
                (name, a.shape[1], value, percentile_interval(weighted_paired_accuracy(diff, weights), _CI_LEVEL))
            )
    return pd.DataFrame(
        [
            {
                "task": task.name,
                "kind": task.kind,
                "baseline": name,
                "n_features": width,
                "metric": _PRIMARY[task.kind],
                "value": value,
                "ci_low": ci[0],
                "ci_high": ci[1],
                "n": task.n,
                "n_groups": n_groups,
                "cv_folds": folds,
                "resample_unit": unit_name,
                "n_boot": n_boot,
                "seed": seed,
                "ci_level": _CI_LEVEL,
                "note": "" if np.isfinite(value) else "metric undefined",
            }
            for name, width, value, ci in rows
        ],
        columns=list(SHORTCUT_COLUMNS),
    )


def shortcut_table(tasks: Sequence[ZeroShotTask], *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """`shortcut_baselines` of every task, concatenated (SHORTCUT_COLUMNS), in task order."""
    frames = [shortcut_baselines(t, n_boot=n_boot, seed=seed) for t in tasks]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(SHORTCUT_COLUMNS))


def shortcut_flags(table: pd.DataFrame) -> pd.DataFrame:
    """One row per task of a `shortcut_table` (FLAG_COLUMNS): the best baseline (largest value), its value and
    interval's lower end, `shortcut_flag` (fail: value >= FLAG_AT and ci_low > 0.5; pass; unknown: no finite value)
    and `shortcut_reason` (says which baseline and why, for every flag)."""
    out = []
    for task, part in table.groupby("task", sort=False):
        finite = part[np.isfinite(part["value"].to_numpy(dtype=float))]
        if finite.empty:
            out.append({"task": task, "shortcut_flag": "unknown", "shortcut_best_baseline": "",
                        "shortcut_best_value": np.nan, "shortcut_best_ci_low": np.nan,
                        "shortcut_reason": "no model-free baseline could be computed"})  # fmt: skip
            continue
        best = finite.loc[finite["value"].idxmax()]
        value, low, high = float(best["value"]), float(best["ci_low"]), float(best["ci_high"])
        failed = value >= FLAG_AT and low > 0.5
        said = f"model-free baseline {best['baseline']}: {best['metric']} {value:.3f} (95% CI {low:.3f}-{high:.3f})"
        reason = (
            f"{said} >= {FLAG_AT:.2f} with its interval above 0.5: a rule that does not read the sequence as DNA "
            "solves this task"
            if failed
            else f"best {said}: below {FLAG_AT:.2f} or its interval reaches 0.5"
        )
        out.append(
            {
                "task": task,
                "shortcut_flag": "fail" if failed else "pass",
                "shortcut_best_baseline": str(best["baseline"]),
                "shortcut_best_value": value,
                "shortcut_best_ci_low": low,
                "shortcut_reason": reason,
            }
        )
    return pd.DataFrame(out, columns=list(FLAG_COLUMNS))


def attach_shortcut_flags(board: pd.DataFrame, flags: pd.DataFrame, macro: str = "macro") -> pd.DataFrame:
    """`board` (the zero-shot leaderboard: columns task, kind, scope) with `shortcut_flag` and `shortcut_reason`
    added: a task row gets its task's flag (`unknown`, "no model-free baseline for this task" when `flags` lacks
    it); a macro row gets `fail` when any task of its scope is flagged, the reason naming them, else `pass`."""
    by_task: Mapping[str, tuple[str, str]] = {
        str(t): (str(f), str(r)) for t, f, r in zip(flags["task"], flags["shortcut_flag"], flags["shortcut_reason"])
    }
    task_kinds = dict(zip(board.loc[board["task"] != macro, "task"], board.loc[board["task"] != macro, "kind"]))
    flag_col, reason_col = [], []
    for task, scope in zip(board["task"], board["scope"]):
        if task != macro:
            flag, reason = by_task.get(str(task), ("unknown", "no model-free baseline for this task"))
        else:
            failed = [t for t, k in task_kinds.items() if k in str(scope).split("+") and by_task.get(t, ("",))[0] == "fail"]  # fmt: skip
            flag = "fail" if failed else "pass"
            reason = f"averages tasks a model-free baseline solves: {', '.join(sorted(failed))}" if failed else ""
        flag_col.append(flag)
        reason_col.append(reason)
    return board.assign(shortcut_flag=flag_col, shortcut_reason=reason_col)


def write_shortcuts(
    board: pd.DataFrame,
    tasks: Sequence[ZeroShotTask],
    out: str | Path,
    bootstrap: Mapping[str, int],
    macro: str = "macro",
) -> pd.DataFrame:
    """Rule zeroshot_tables' part: write `zeroshot_shortcuts.parquet` to `out` (SHORTCUT_COLUMNS, then the task's
    FLAG_COLUMNS on each of its rows; bootstrap: {"n_boot", "seed"} of the run) and return the leaderboard `board`
    with `shortcut_flag` and `shortcut_reason` (`attach_shortcut_flags`)."""
    from geneb.core import integrity

    table = shortcut_table(tasks, n_boot=int(bootstrap["n_boot"]), seed=int(bootstrap["seed"]))
    flags = shortcut_flags(table)
    integrity.write_parquet(table.merge(flags, on="task", how="left").reset_index(drop=True), out)
    return attach_shortcut_flags(board, flags, macro=macro)
