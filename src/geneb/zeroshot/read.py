"""Read, check and write a zero-shot task folder (`rows.tsv` + `meta.json`, see `geneb.zeroshot.task`).

Every problem of a folder is found in one pass and reported together in one `ZeroShotTaskError`, each naming the
task, the row id (0-based data rows: row 0 is file line 2, the header being line 1) and the value. Nothing is
dropped, clipped, upper-cased or otherwise coerced: a soft-masked (lower-case) base is a problem, not a fix.

Canonical rows (what `data_sha256` digests): the task's columns in the fixed order of its kind
(`REQUIRED_COLUMNS[kind]`, then `group` when present), a header line, then one line per row in row-id order,
fields joined by a tab and lines ended by `\\n`, every value as its text (`pos` and `label` in decimal). This is
exactly the `rows.tsv` that `write_zeroshot_task` writes, so for a folder GENEB wrote, `data_sha256` is the
sha256 of its `rows.tsv`; a hand-written file with the same rows (another column order, CRLF line ends) has the
same `data_sha256`. Torch-free.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.core.integrity import write_text_atomic
from geneb.tasks.sources import check_meta_digests
from geneb.zeroshot.task import (
    GROUP_COLUMN,
    META_FILE,
    REQUIRED_COLUMNS,
    ROWS_FILE,
    ZEROSHOT_KINDS,
    ZeroShotKind,
    ZeroShotTask,
)

#: letters a sequence may hold (upper case only: nothing is upper-cased for the user)
SEQUENCE_LETTERS = frozenset("ACGTN")
#: letters `ref` and `alt` may be
BASES = frozenset("ACGT")
#: an integer as text (no sign, no decimals: a position or label written 3.0 is refused, never rounded)
INTEGER = re.compile(r"^[0-9]+$")
#: problems quoted in the error message (the error's `problems` keeps all)
SHOWN = 50
#: what makes two rows the same scored item (a duplicate): the variant, or the pair, whatever its label or group
ITEM_COLUMNS: dict[ZeroShotKind, tuple[str, ...]] = {
    "variant": ("sequence", "pos", "ref", "alt"),
    "paired": ("sequence_a", "sequence_b"),
}
ROW_NUMBERING = "rows are 0-based data rows of rows.tsv: row 0 is file line 2, the header being line 1"


class ZeroShotTaskError(ValueError):
    """A zero-shot task folder or row set with problems; `problems` holds every one (task, row and value named)."""

    def __init__(self, task: str, problems: Sequence[str]) -> None:
        self.task = task
        self.problems = tuple(problems)
        lines = [f"zero-shot task {task!r}: {len(self.problems)} problem(s); {ROW_NUMBERING}"]
        lines.extend(f"  {p}" for p in self.problems[:SHOWN])
        if len(self.problems) > SHOWN:
            lines.append(f"  ... and {len(self.problems) - SHOWN} more")
        super().__init__("\n".join(lines))


def task_columns(kind: ZeroShotKind, has_group: bool) -> list[str]:
    """The columns of a task of `kind`, in canonical order."""
    return [*REQUIRED_COLUMNS[kind], *([GROUP_COLUMN] if has_group else [])]


def check_kind(meta: Mapping[str, Any], task: str) -> list[str]:
    """Problems of meta.json's `kind` ([] when it is one of ZEROSHOT_KINDS)."""
    if "kind" not in meta:
        return [f"task {task!r}: meta.json has no `kind` (one of {', '.join(ZEROSHOT_KINDS)})"]
    if meta["kind"] not in ZEROSHOT_KINDS:
        return [f"task {task!r}: meta.json kind {meta['kind']!r} is not one of {', '.join(ZEROSHOT_KINDS)}"]
    return []


def _sequence_problems(task: str, row: int, column: str, seq: str) -> list[str]:
    if seq == "":
        return [f"task {task!r}, row {row}: empty {column}"]
    bad = sorted(set(seq) - SEQUENCE_LETTERS)
    if bad:
        at = next(i for i, c in enumerate(seq) if c not in SEQUENCE_LETTERS)
        return [
            f"task {task!r}, row {row}: {column} has letters outside A/C/G/T/N: {''.join(bad)!r} "
            f"(first at position {at}; lower case is not upper-cased for you)"
        ]
    return []


def _variant_row_problems(task: str, row: int, values: Mapping[str, str]) -> list[str]:
    seq, pos_text, ref, alt, label = (values[c] for c in REQUIRED_COLUMNS["variant"])
    problems = _sequence_problems(task, row, "sequence", seq)
    if ref not in BASES:
        problems.append(f"task {task!r}, row {row}: ref {ref!r} is not one of A/C/G/T")
    if alt not in BASES:
        problems.append(f"task {task!r}, row {row}: alt {alt!r} is not one of A/C/G/T")
    if ref in BASES and ref == alt:
        problems.append(f"task {task!r}, row {row}: alt {alt!r} equals ref")
    if label not in ("0", "1"):
        problems.append(f"task {task!r}, row {row}: label {label!r} is not 0 or 1")
    if not INTEGER.match(pos_text):
        problems.append(f"task {task!r}, row {row}: pos {pos_text!r} is not a non-negative integer")
    elif seq:
        pos = int(pos_text)
        if pos >= len(seq):
            problems.append(
                f"task {task!r}, row {row}: pos {pos} is outside the window (length {len(seq)}, positions 0..{len(seq) - 1})"
            )
        elif ref in BASES and seq[pos] != ref:
            problems.append(
                f"task {task!r}, row {row}: ref {ref!r} does not match the window at pos {pos}, which has "
                f"{seq[pos]!r} (context {seq[max(0, pos - 5) : pos]}[{seq[pos]}]{seq[pos + 1 : pos + 6]})"
            )
    return problems


def _paired_row_problems(task: str, row: int, values: Mapping[str, str]) -> list[str]:
    a, b = values["sequence_a"], values["sequence_b"]
    problems = _sequence_problems(task, row, "sequence_a", a) + _sequence_problems(task, row, "sequence_b", b)
    if a and a == b:
        problems.append(f"task {task!r}, row {row}: sequence_a equals sequence_b ({len(a)} bases): nothing to prefer")
    return problems


def row_problems(rows: pd.DataFrame, kind: ZeroShotKind, task: str) -> list[str]:
    """Every problem of `rows` (text cells, one row per data row, RangeIndex = row ids) for a task of `kind`:
    missing columns, columns the kind does not have, and per row the value rules (module docstring), empty
    `group` values and duplicated rows: the same item (`ITEM_COLUMNS`: a variant, a pair) again, whatever its label
    or group, naming the row it repeats."""
    problems: list[str] = []
    required = REQUIRED_COLUMNS[kind]
    missing = [c for c in required if c not in rows.columns]
    if missing:
        problems.append(
            f"task {task!r}: rows.tsv lacks column(s) {', '.join(missing)} (a {kind} task has "
            f"{', '.join(required)} and optionally {GROUP_COLUMN}; found {', '.join(map(str, rows.columns))})"
        )
    unknown = [c for c in rows.columns if c not in (*required, GROUP_COLUMN)]
    if unknown:
        problems.append(
            f"task {task!r}: rows.tsv has column(s) {', '.join(map(str, unknown))} that a {kind} task does not have "
            f"(allowed: {', '.join(required)}, {GROUP_COLUMN}); remove them or keep them in a side file"
        )
    if missing:
        return problems
    if rows.empty:
        return [*problems, f"task {task!r}: rows.tsv has no data rows"]
    check = _variant_row_problems if kind == "variant" else _paired_row_problems
    columns = task_columns(kind, GROUP_COLUMN in rows.columns)
    item = ITEM_COLUMNS[kind]
    seen: dict[tuple[str, ...], int] = {}
    for row, values in enumerate(rows[columns].itertuples(index=False, name=None)):
        record = dict(zip(columns, values))
        problems.extend(check(task, row, record))
        if GROUP_COLUMN in record and record[GROUP_COLUMN] == "":
            problems.append(f"task {task!r}, row {row}: empty {GROUP_COLUMN} value")
        key = tuple(record[c] for c in item)
        if key in seen:
            problems.append(
                f"task {task!r}, row {row}: duplicates row {seen[key]} (same {', '.join(item)}"
                + ("" if record == dict(zip(columns, rows[columns].iloc[seen[key]])) else "; other columns differ")
                + ")"
            )
        else:
            seen[key] = row
    return problems


def canonical_rows_text(rows: pd.DataFrame, kind: ZeroShotKind) -> str:
    """The canonical rows.tsv text of checked `rows` (module docstring)."""
    columns = task_columns(kind, GROUP_COLUMN in rows.columns)
    lines = ["\t".join(columns)]
    lines.extend("\t".join(str(v) for v in values) for values in rows[columns].itertuples(index=False, name=None))
    return "\n".join(lines) + "\n"


def rows_sha256(rows: pd.DataFrame, kind: ZeroShotKind) -> str:
    """sha256 (64 hex) of the canonical rows text: the task's `data_sha256`."""
    return hashlib.sha256(canonical_rows_text(rows, kind).encode("utf-8")).hexdigest()


def _as_text(rows: pd.DataFrame) -> pd.DataFrame:
    """Cells as the file writes them (ints as decimal text); anything else is left for the checks to name."""

    def text(v: object) -> str:
        if isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return str(v)
        return repr(v)  # a float, bool or missing value: refused by the checks, named as written

    return rows.map(text)


def _typed(rows: pd.DataFrame, kind: ZeroShotKind) -> pd.DataFrame:
    """Checked text rows as the task object holds them: `pos` and `label` as int64, the rest str."""
    out = rows[task_columns(kind, GROUP_COLUMN in rows.columns)].copy().reset_index(drop=True)
    if kind == "variant":
        out["pos"] = out["pos"].astype("int64")
        out["label"] = out["label"].astype("int64")
    return out


def _read_rows(path: Path, task: str) -> pd.DataFrame:
    """rows.tsv as text cells, split by hand: no NA guessing ("NA" stays text), no quoting, a blank line is a
    row; a line with another field count than the header is a problem naming its row (pandas would shift it
    into an index or pad it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ZeroShotTaskError(task, [f"task {task!r}: {path} is not UTF-8 text ({exc})"]) from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the end of the last line
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not lines:
        raise ZeroShotTaskError(task, [f"task {task!r}: {path} is empty (no header)"])
    header = lines[0].split("\t")
    cells = [line.split("\t") for line in lines[1:]]
    ragged = [
        f"task {task!r}, row {row}: {len(fields)} tab-separated field(s), the header has {len(header)}"
        for row, fields in enumerate(cells)
        if len(fields) != len(header)
    ]
    if len(set(header)) != len(header):
        ragged.insert(0, f"task {task!r}: rows.tsv's header names a column twice: {header}")
    if ragged:
        raise ZeroShotTaskError(task, ragged)
    return pd.DataFrame(cells, columns=header, dtype=object) if cells else pd.DataFrame(columns=header)


def read_meta(folder: Path, task: str) -> dict[str, Any]:
    """meta.json of a task folder as a dict; ZeroShotTaskError when it is missing, not JSON or not an object."""
    path = folder / META_FILE
    if not path.is_file():
        raise ZeroShotTaskError(task, [f"task {task!r}: no {META_FILE} in {folder}"])
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZeroShotTaskError(task, [f"task {task!r}: {path} is not JSON ({exc})"]) from exc
    if not isinstance(meta, dict):
        raise ZeroShotTaskError(task, [f"task {task!r}: {path} is not a JSON object"])
    return meta


def source_task_names(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The names in meta.json's `provenance.source_tasks` (a list of {"task": name, ...} or of names)."""
    entries = (meta.get("provenance") or {}).get("source_tasks") or []
    return tuple(str(e["task"]) if isinstance(e, Mapping) else str(e) for e in entries)


def read_zeroshot_task(folder: str | Path, name: str | None = None) -> ZeroShotTask:
    """The checked task of a folder holding `rows.tsv` and `meta.json`.

    name: the task's name (default: meta.json's `name`, else the folder's name). meta.json's `sha256`
    ({"rows.tsv": hex}), where present, is checked first (`geneb.tasks.sources.TaskDigestError` on a
    mismatch). Raises ZeroShotTaskError listing every problem (module docstring) of the folder at once.
    """
    folder = Path(folder)
    task = name or folder.name
    meta = read_meta(folder, task)
    task = name or str(meta.get("name") or folder.name)
    rows_path = folder / ROWS_FILE
    if not rows_path.is_file():
        raise ZeroShotTaskError(task, [f"task {task!r}: no {ROWS_FILE} in {folder}", *check_kind(meta, task)])
    check_meta_digests(task, meta, {ROWS_FILE: rows_path}, f"folder {folder}")
    problems = check_kind(meta, task)
    rows = _read_rows(rows_path, task)
    if not problems:
        problems = row_problems(rows, meta["kind"], task)
    if problems:
        raise ZeroShotTaskError(task, problems)
    kind: ZeroShotKind = meta["kind"]
    return ZeroShotTask(
        name=task,
        kind=kind,
        rows=_typed(rows, kind),
        data_sha256=rows_sha256(rows, kind),
        source_tasks=source_task_names(meta),
        meta=meta,
    )


def write_zeroshot_task(folder: str | Path, rows: pd.DataFrame, meta: Mapping[str, Any]) -> Path:
    """Check `rows` (columns of meta's kind; str/int cells) and write the task folder; returns the folder.

    `rows.tsv` is the canonical text and meta.json gets `data_sha256` and `sha256: {"rows.tsv": ...}` added
    (so that a changed copy on a mirror is refused). Each file is written atomically, rows.tsv first: a folder
    whose meta.json is older than its rows fails the digest check instead of being read. Raises
    ZeroShotTaskError with every problem before anything is written.
    """
    folder = Path(folder)
    task = str(meta.get("name") or folder.name)
    problems = check_kind(meta, task)
    text_rows = _as_text(rows.reset_index(drop=True))
    if not problems:
        problems = row_problems(text_rows, meta["kind"], task)
    if problems:
        raise ZeroShotTaskError(task, problems)
    kind: ZeroShotKind = meta["kind"]
    text = canonical_rows_text(text_rows, kind)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    full_meta = {**meta, "name": task, "n_rows": len(text_rows), "data_sha256": digest, "sha256": {ROWS_FILE: digest}}
    write_text_atomic(folder / ROWS_FILE, text)
    write_text_atomic(folder / META_FILE, json.dumps(full_meta, indent=1, sort_keys=True) + "\n")
    return folder
