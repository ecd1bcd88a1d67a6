"""The score-table contract: one home for its schema version, regimes, columns, checks and reader.

A score table is long format, one row per (protocol, model, task, regime, seed, metric): the probe jobs write
one per (protocol, model, task) (`results/probes/...`, stamped with SCHEMA_VERSION), aggregation concatenates
them into `results/tables/scores.parquet`, and the analyses read it back through `load_scores`. Published results
(`source = "published"`) arrive already averaged over the paper's five seeds and carry `seed = PUBLISHED_SEED`.
Columns: docs/data-dictionary.md (stage 4).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.core.categories import CATEGORIES
from geneb.core.provenance import CodeRevision, code_revision

#: the version stamped on every probe row; aggregation refuses rows of another version (rerun that job). It is
#: also in the fit_probes rule's params, so a new version reruns every probe job once. 2: the code-revision
#: columns (`geneb_commit`, `geneb_dirty`) were added; 3: the clean-subset columns (`value_clean`, `ci_low_clean`,
#: `ci_high_clean`, `n_test_clean`; geneb.probe.metrics); 4: the view columns (_VIEW_COLUMNS).
SCHEMA_VERSION = "4"
REGIMES: tuple[str, ...] = ("full", "10shot", "1shot")
#: the protocol of the GENEB paper's published scores (the `protocol` of every imported published row, and of the
#: published chain's figures; geneb.analysis.published)
PUBLISHED_PROTOCOL = "geneb-paper"
#: columns every score table must have
_REQUIRED_COLUMNS: tuple[str, ...] = ("protocol", "model", "task", "category", "regime", "seed", "metric", "value")
#: the view columns every probe row carries (`geneb.probe.views`; docs/data-dictionary.md): view (str: "default" for
#: a run without `views:`, else "L<layer>|<pooling>|rc<0|1>", "Lcv|..." for the inner-CV rule's rows), layer (Int64:
#: absolute 0-based hidden-state index, never -1; NA without layers), layer_depth (Float64 layer / n_layers in [0, 1];
#: NA without layers), pooling (str), reverse_complement (bool), layer_rule (str, one of _LAYER_RULES)
_VIEW_COLUMNS: tuple[str, ...] = ("view", "layer", "layer_depth", "pooling", "reverse_complement", "layer_rule")
#: registry: the registry's layer (a run without views); fixed: a layer requested in `views:`; inner_cv: chosen
#: per (model, task, regime, seed) by inner CV on that fit's training labels (docs/protocols.md, "Views")
_LAYER_RULES: tuple[str, ...] = ("registry", "fixed", "inner_cv")
#: seed value meaning "the mean over the paper's seeds, as published"
PUBLISHED_SEED = -1
#: the keys of one cell
CELL_KEYS: tuple[str, ...] = ("protocol", "model", "task", "category", "regime")
# the code-revision columns every table GENEB writes carries (`geneb.core.provenance.code_revision`, CODE_REVISION_KEYS):
# `geneb_commit` (40-hex, or "unknown" for a copy that is not a git checkout) and `geneb_dirty` (nullable boolean; NA
# unknown)


def with_code_revision(table: pd.DataFrame, revision: CodeRevision | None = None) -> pd.DataFrame:
    """`table` with the code-revision columns set on every row (added, or replaced where present): the commit
    and dirty-tree flag of the running code (`revision`, default `code_revision()`), `geneb_dirty` as a
    nullable boolean so that "unknown" stays NA instead of becoming False."""
    rev = code_revision() if revision is None else revision
    out = table.copy()
    out["geneb_commit"] = str(rev["geneb_commit"])
    out["geneb_dirty"] = pd.array([rev["geneb_dirty"]] * len(out), dtype="boolean")
    return out


#: the parquet metadata key (pandas `attrs`) of every probe table and of scores.parquet that records the thread
#: pools the probe fits ran with (geneb.probe.fit.thread_record: {"limit": 1, "pools": [{user_api, internal_api,
#: version, architecture, threading_layer, num_threads}, ...]}); in scores.parquet the distinct records with
#: the number of probe tables of each ("files"), and {"files": n} for tables written before it was recorded.
#: Metadata, not a column: recording it changes no row, so SCHEMA_VERSION (which reruns every probe) stays.
PROBE_THREADS_ATTR = "geneb_probe_threads"


def probe_threads(path: str) -> list[dict]:
    """The thread-pool records of a probe table or scores.parquet (`PROBE_THREADS_ATTR`; [] when absent): a probe
    table's one record as a one-item list, scores.parquet's distinct records."""
    found = integrity.read_parquet(path).attrs.get(PROBE_THREADS_ATTR)
    if not found:
        return []
    return list(found) if isinstance(found, list) else [dict(found)]


#: the parquet metadata key (pandas `attrs`) of scores.parquet and leaderboard.parquet that lists the tasks
#: which failed in a partial run, {task: {"category", "error"}} (geneb.run.partial); absent or {} when none did
FAILED_TASKS_ATTR = "geneb_failed_tasks"


#: the parquet metadata key of scores.parquet and leaderboard.parquet that lists the (model, task) cells which
#: failed while other models completed the task, {model: {task: {"category", "error"}}} (geneb.run.partial)
FAILED_CELLS_ATTR = "geneb_failed_cells"
#: how a category mean treats a missing or failed cell (stated in the leaderboard's metadata, CLI and report)
MISSING_CELL_RULE = (
    "a category value is the mean over the tasks the model has; a model missing a task of the category (failed, "
    "contaminated or not run) is shown there but not ranked (rank NA), and its macro and micro are NaN"
)
MISSING_CELL_RULE_ATTR = "geneb_missing_cell_rule"
#: the parquet metadata key of leaderboard.parquet listing the models a protocol of the run skips, with the reason,
#: {protocol: {model: reason}} (finetune-lora: models without a torch network; geneb.finetune.plan)
COVERAGE_NOTES_ATTR = "geneb_coverage_notes"


def failed_cells(path: str) -> dict[str, dict[str, dict[str, str]]]:
    """The failed (model, task) cells recorded in a score or leaderboard table's metadata ({} when none)."""
    return dict(integrity.read_parquet(path).attrs.get(FAILED_CELLS_ATTR) or {})


def failed_tasks(path: str) -> dict[str, dict[str, str]]:
    """The failed tasks recorded in a score or leaderboard table's metadata ({} when none)."""
    return dict(integrity.read_parquet(path).attrs.get(FAILED_TASKS_ATTR) or {})


class AnalysisInputError(ValueError):
    """A score table (or another input or setting of the analyses) that cannot be used; the message names the
    table, column and value."""


def check_scores(scores: pd.DataFrame, what: str = "score table") -> pd.DataFrame:
    """Validate a score table and return a copy with a `source` column (default "geneb").

    Checks: the required columns exist; categories are the 13 official ones; regimes are full/10shot/1shot;
    no (protocol, model, task, regime, seed, metric[, view]) appears twice; MCC values are finite and within [-1, 1].
    Raises AnalysisInputError naming `what`, the column and the first offending value.
    """
    missing = [c for c in _REQUIRED_COLUMNS if c not in scores.columns]
    if missing:
        raise AnalysisInputError(f"{what}: missing columns {missing}; have {list(scores.columns)}")
    df = scores.copy()
    if "source" not in df.columns:
        df["source"] = "geneb"
    bad = sorted(set(df["category"]) - set(CATEGORIES))
    if bad:
        raise AnalysisInputError(f"{what}: unknown categories {bad}; expected one of {list(CATEGORIES)}")
    bad = sorted(set(df["regime"]) - set(REGIMES))
    if bad:
        raise AnalysisInputError(f"{what}: unknown regimes {bad}; expected one of {list(REGIMES)}")
    key = ["protocol", "model", "task", "regime", "seed", "metric"]
    if "view" in df.columns:  # one row per view (probe rows carry every view column, `_check_view_columns`)
        _check_view_columns(df[df["source"] == "geneb"], what)
        key.append("view")
    dup = df.duplicated(key, keep=False)
    if dup.any():
        first = df.loc[dup, key].iloc[0].to_dict()
        raise AnalysisInputError(f"{what}: {int(dup.sum())} duplicated rows, e.g. {first}")
    mcc = df.loc[df["metric"] == "MCC", "value"].astype(float)
    bad_mcc = ~np.isfinite(mcc) | (mcc < -1 - 1e-9) | (mcc > 1 + 1e-9)
    if bad_mcc.any():
        row = df.loc[mcc.index[bad_mcc][0], list(CELL_KEYS) + ["seed", "value"]].to_dict()
        raise AnalysisInputError(f"{what}: MCC must be finite and within [-1, 1]; first bad row {row}")
    per_task = df.groupby(["task"])["category"].nunique()
    if (per_task > 1).any():
        raise AnalysisInputError(f"{what}: task {per_task.index[per_task > 1][0]!r} appears under two categories")
    return df


def _check_view_columns(df: pd.DataFrame, what: str = "score table") -> None:
    """Raise AnalysisInputError naming `what`, the column and the first offending value when a view column is
    missing, a layer is negative, a layer_depth lies outside [0, 1], or a layer_rule is not one of _LAYER_RULES."""
    missing = [c for c in _VIEW_COLUMNS if c not in df.columns]
    if missing:
        raise AnalysisInputError(f"{what}: missing view columns {missing}")
    layer = pd.to_numeric(df["layer"], errors="coerce")
    if (layer < 0).any():
        raise AnalysisInputError(f"{what}: layer must be an absolute index >= 0; found {int(layer[layer < 0].iloc[0])}")
    depth = pd.to_numeric(df["layer_depth"], errors="coerce")
    if ((depth < 0) | (depth > 1)).any():
        raise AnalysisInputError(
            f"{what}: layer_depth must lie in [0, 1]; found {float(depth[(depth < 0) | (depth > 1)].iloc[0])}"
        )
    bad = sorted(set(df["layer_rule"].astype(str)) - set(_LAYER_RULES))
    if bad:
        raise AnalysisInputError(f"{what}: unknown layer_rule {bad}; expected one of {list(_LAYER_RULES)}")


def load_scores(path: str) -> pd.DataFrame:
    """Read and validate a score-table parquet file (see `check_scores`), checked against the digest recorded when
    it was written (`geneb.core.integrity.read_parquet`; IntegrityError naming the file on a mismatch)."""
    return check_scores(integrity.read_parquet(path), what=str(path))
