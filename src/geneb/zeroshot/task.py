"""A zero-shot task: its kinds, its folder (`rows.tsv` + `meta.json`) read, checked and written, where it
comes from, the catalogue, the model a scorer is handed and what a scorer returns.

What a zero-shot task is: its two kinds, its on-disk folder and the typed object every zero-shot step reads.

A zero-shot task folder holds two files:

* `rows.tsv`: tab-separated with a header, one row per scored item. Row ids are the 0-based data rows in file
  order (the header is not a row). Columns:

  - kind `variant`: `sequence` (the reference window, A/C/G/T/N), `pos` (0-based position of the variant in the
    window), `ref` (one base, must equal `sequence[pos]`), `alt` (one base, different from `ref`), `label`
    (1 = effect, 0 = control), optional `group` (a matched set or a chromosome; metrics are also given by group);
  - kind `paired`: `sequence_a`, `sequence_b` (the model should prefer `a`), optional `group`.

* `meta.json`: `{"kind": "variant" | "paired", "name": ..., "description": ..., "provenance": {...}}`; a
  built task's `provenance` names its builder, seed, source tasks (with their data hashes) and parameters, so a
  scorer can refuse a background drawn from a task the rows were built from.

Torch-free.

The model a zero-shot scorer is handed: a loaded encoder, its name and how it treats the reverse strand.

Torch-free (the encoder is built by `geneb.extract.step`, which imports torch only for a torch family).

What a zero-shot scorer returns: one score per task row, and the reason a scorer does not apply.

Every scorer (the language-model LLR, the embedding distances, the k-mer Markov baselines) returns a
`RowScores` frame, the one table the metrics, the cache and the workflow read:

* `row`: int64, the task's row id (0..n-1, `ZeroShotTask.rows.index`), every row exactly once, in order;
* `scorer`: str, one of the scorer names below (the same on every row);
* `score`: float64, finite. Direction is fixed across scorers so that metrics never flip a sign:
  for a variant task, larger = stronger predicted effect (AUROC of `score` against `label`); for a paired task,
  larger = the model prefers `sequence_a` (paired accuracy = share of rows with score > 0).

A scorer that cannot score a (model, task) pair (a paired task needs a likelihood; a model without a language-model
head has none) returns `NotApplicable` with the reason, never a made-up score.

Torch-free.

The catalogue of zero-shot tasks, `config/zeroshot_tasks.tsv`: one row per task with its kind, the
builder that makes it (`geneb.zeroshot.build`; `source` for a task read as it is from config zeroshot.task_source,
e.g. a user's own variant set), the real tasks it is built from (`-`: none) and a description. Torch-free.

Read, check and write a zero-shot task folder (`rows.tsv` + `meta.json`, see `geneb.zeroshot.task`).

Every problem of a folder is found in one pass and reported together in one `ZeroShotTaskError`, each naming the
task, the row id (0-based data rows: row 0 is file line 2, the header being line 1) and the value. Nothing is
dropped, clipped, upper-cased or otherwise coerced: a soft-masked (lower-case) base is a problem, not a fix.

Canonical rows (what `data_sha256` digests): the task's columns in the fixed order of its kind
(`REQUIRED_COLUMNS[kind]`, then `group` when present), a header line, then one line per row in row-id order,
fields joined by a tab and lines ended by `\\n`, every value as its text (`pos` and `label` in decimal). This is
exactly the `rows.tsv` that `write_zeroshot_task` writes, so for a folder GENEB wrote, `data_sha256` is the
sha256 of its `rows.tsv`; a hand-written file with the same rows (another column order, CRLF line ends) has the
same `data_sha256`. Torch-free.

Where a zero-shot task folder comes from: the probing tasks' three sources (`geneb.tasks.sources`; the http mirror through a subclass), read for
a zero-shot task's two files instead of a task's splits.

* a local folder `{root}/{task}/{rows.tsv, meta.json}`;
* an http(s) base URL with the same layout (`HttpMirror`: pooch downloads cached under
  `download_dir/<url hash>/<task>/`, each within its deadline); meta.json is fetched afresh once per process and
  its `sha256` of `rows.tsv` checks the download and every later use of the cached copy;
* `hf:<dataset>@<40-hex revision>`: files `zeroshot/<task>/{rows.tsv, meta.json}` of a Hugging Face dataset at a
  pinned revision through `huggingface_hub.hf_hub_download` (offline: from the hub cache), or `hf:<local folder>`
  laid out like a local folder.

Every route ends in `read_zeroshot_task` on the local folder, so the same checks and digests apply. Torch-free.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from geneb.core.integrity import write_text_atomic
from geneb.core.provenance import REVISION
from geneb.tasks.sources import HttpMirror, NotOnServer, TaskSourceError, check_meta_digests, file_record

_ZeroShotKind = Literal["variant", "paired"]
_ZEROSHOT_KINDS: tuple[_ZeroShotKind, ...] = ("variant", "paired")

_ROWS_FILE = "rows.tsv"
_META_FILE = "meta.json"

_VARIANT_COLUMNS: tuple[str, ...] = ("sequence", "pos", "ref", "alt", "label")
_PAIRED_COLUMNS: tuple[str, ...] = ("sequence_a", "sequence_b")
GROUP_COLUMN = "group"

REQUIRED_COLUMNS: Mapping[_ZeroShotKind, tuple[str, ...]] = {"variant": _VARIANT_COLUMNS, "paired": _PAIRED_COLUMNS}


@dataclass(frozen=True)
class ZeroShotTask:
    """One validated zero-shot task.

    `rows` has the kind's columns (`REQUIRED_COLUMNS[kind]`, plus `group` when the task has groups) and a
    RangeIndex of row ids (0..n-1, the file's data rows). `data_sha256` is the sha256 of the task's canonical
    rows (what a cached score is keyed on); `source_tasks` names the tasks its rows were built from (empty for a
    user's own set), which a background for a baseline must not include.
    """

    name: str
    kind: _ZeroShotKind
    rows: pd.DataFrame
    data_sha256: str
    source_tasks: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def has_groups(self) -> bool:
        return GROUP_COLUMN in self.rows.columns

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def codon_positions(self) -> np.ndarray | None:
        """Position of each variant in its codon, int (n,) in 0..2, for a variant task whose windows start in a
        reading frame; None for any other task. The frame (the offset of the first codon in every window) is
        meta.json's or its provenance's `reading_frame`, else 0 for a task of the stop-gain builder (its windows
        start in the ORF's frame at every version, geneb.zeroshot.build.stop_gain). What the within-strata AUROC
        (geneb.zeroshot.tables) and the codon-position baseline (geneb.zeroshot.shortcuts) both read."""
        if self.kind != "variant":
            return None
        provenance = self.meta.get("provenance") or {}
        frame = next(
            (f for f in (self.meta.get("reading_frame"), provenance.get("reading_frame")) if f is not None), None
        )
        if frame is None and provenance.get("builder") == "stop_gain":
            frame = 0
        if frame is None:
            return None
        return np.asarray((self.rows["pos"].to_numpy(dtype=np.int64) - int(frame)) % 3, dtype=np.int64)


if TYPE_CHECKING:
    from geneb.encoders.protocol import Encoder
    from geneb.registry.spec import ExtractionSettings


@dataclass(frozen=True)
class ZeroShotModel:
    """name: the model's id in the score rows; encoder: the loaded encoder (`geneb.encoders.protocol.Encoder`);
    rc: the registry's reverse-complement mode (`geneb.extract.step.RC_MODES`: none, average, concat), applied to
    every embedded window as extraction applies it; settings: the resolved extraction settings, None for an
    encoder handed over directly. lm_head: the registry's language-model head ("masked", "causal" or "none"), which
    the `llr` scorer loads from the same checkpoint."""

    name: str
    encoder: Encoder
    rc: str = "none"
    settings: ExtractionSettings | None = None
    lm_head: str = "none"
    #: what a scorer loaded once for this model (the llr scorer's language model), reused across tasks
    loaded: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


ROW_SCORE_COLUMNS: tuple[str, ...] = ("row", "scorer", "score")
#: the format version of a score file of RowScores rows (geneb.zeroshot.job; a new one reruns every score_zeroshot
#: job: it is in the rule's params)
SCORE_FILE_VERSION = "3"

#: the language model's log-likelihood ratio (masked marginal or causal; docs/zeroshot.md)
LLR = "llr"
#: distance between the pooled ref and alt embeddings (every model, variant tasks only)
EMBEDDING_COSINE = "embedding-cosine"
EMBEDDING_EUCLIDEAN = "embedding-euclidean"
#: the same distances between the states at the variant's position (models with per-token states)
EMBEDDING_COSINE_AT_VARIANT = "embedding-cosine-at-variant"
EMBEDDING_EUCLIDEAN_AT_VARIANT = "embedding-euclidean-at-variant"
#: every output of the embedding scorer
EMBEDDING_SCORERS: tuple[str, ...] = (
    EMBEDDING_COSINE,
    EMBEDDING_EUCLIDEAN,
    EMBEDDING_COSINE_AT_VARIANT,
    EMBEDDING_EUCLIDEAN_AT_VARIANT,
)
#: prefix of the k-mer Markov chain baselines: `markov-<order>`
MARKOV_PREFIX = "markov-"


#: the task kinds each scorer applies to by construction (a distance between two embeddings gives no preference
#: between two sequences); the leaderboard's macro of an entry covers the tasks of its scorer's kinds
_EMBEDDING_KINDS: tuple[str, ...] = ("variant",)
_ALL_KINDS: tuple[str, ...] = ("variant", "paired")


def scorer_kinds(scorer: str) -> tuple[str, ...]:
    """The task kinds `scorer` applies to: variant only for the embedding distances, both for `llr` and the
    Markov baselines (and any other scorer)."""
    return _EMBEDDING_KINDS if scorer in EMBEDDING_SCORERS else _ALL_KINDS


def markov_scorer(order: int) -> str:
    """The scorer name of the order-`order` k-mer Markov chain baseline (`markov-<order>`)."""
    if order < 0:
        raise ValueError(f"a Markov chain's order is >= 0, got {order}")
    return f"{MARKOV_PREFIX}{order}"


class ZeroShotScoreError(ValueError):
    """A scorer's output breaks the `RowScores` contract (missing or repeated rows, a non-finite score)."""


@dataclass(frozen=True)
class NotApplicable:
    """A scorer that does not apply to a (model, task) pair, and why (shown in the tables as not applicable)."""

    model: str
    task: str
    scorer: str
    reason: str


def row_scores(task: ZeroShotTask, scorer: str, scores: np.ndarray) -> pd.DataFrame:
    """Wrap one score per row of `task` into a checked `RowScores` frame.

    scores: float (n,), in row order. Raises ZeroShotScoreError naming the task, scorer and the first rows
    where the count differs from the task's or a score is NaN or infinite.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.shape != (task.n,):
        raise ZeroShotScoreError(
            f"zero-shot task {task.name}, scorer {scorer}: {values.shape} scores for {task.n} rows"
        )
    frame = pd.DataFrame({"row": task.rows.index.to_numpy(dtype=np.int64), "scorer": scorer, "score": values})
    check_row_scores(task, frame)
    return frame


def check_row_scores(task: ZeroShotTask, frame: pd.DataFrame) -> None:
    """Raise ZeroShotScoreError unless `frame` is a `RowScores` frame for every row of `task`, in order."""
    missing = [c for c in ROW_SCORE_COLUMNS if c not in frame.columns]
    if missing:
        raise ZeroShotScoreError(f"zero-shot task {task.name}: score table lacks columns {missing}")
    scorers = sorted(set(frame["scorer"]))
    where = f"zero-shot task {task.name}, scorer {','.join(map(str, scorers))}"
    if len(scorers) != 1:
        raise ZeroShotScoreError(f"{where}: one scorer per table, got {scorers}")
    rows = frame["row"].to_numpy()
    expected = task.rows.index.to_numpy()
    if len(rows) != len(expected) or not np.array_equal(rows, expected):
        raise ZeroShotScoreError(
            f"{where}: rows must be the task's {len(expected)} row ids in order, got {len(rows)} "
            f"(first differences: {_first_differences(rows, expected)})"
        )
    score = frame["score"].to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(score))
    if len(bad):
        shown = ", ".join(f"row {int(rows[i])}: {score[i]}" for i in bad[:5])
        raise ZeroShotScoreError(f"{where}: {len(bad)} non-finite scores ({shown})")


def _first_differences(rows: np.ndarray, expected: np.ndarray, limit: int = 5) -> str:
    got, want = set(rows.tolist()), set(expected.tolist())
    missing = sorted(want - got)[:limit]
    extra = sorted(got - want)[:limit]
    repeated = sorted(pd.Series(rows).value_counts().loc[lambda s: s > 1].index.tolist())[:limit]
    parts = [f"missing {missing}" if missing else "", f"unknown {extra}" if extra else ""]
    parts.append(f"repeated {repeated}" if repeated else "")
    return "; ".join(p for p in parts if p) or "same ids, different order"


_CATALOGUE_COLUMNS = ("task", "kind", "builder", "source_tasks", "description")
DEFAULT_CATALOGUE = Path("config/zeroshot_tasks.tsv")
#: the `builder` of a task that is not built but read from a source (config zeroshot.task_source)
SOURCE_BUILDER = "source"
#: the `source_tasks` cell of a task built from no catalogued task
_NO_SOURCE_TASKS = "-"


class ZeroShotCatalogueError(ValueError):
    """A catalogue with problems; the message names the file, each row (0-based data row) and value."""


@dataclass(frozen=True)
class CatalogueEntry:
    """One catalogued task: `source_tasks` are real task ids (comma-separated in the file)."""

    task: str
    kind: _ZeroShotKind
    builder: str
    source_tasks: tuple[str, ...]
    description: str


def read_zeroshot_catalogue(path: str | Path = DEFAULT_CATALOGUE) -> list[CatalogueEntry]:
    """The entries of a catalogue file in file order. Raises ZeroShotCatalogueError listing every problem: a
    missing column, an empty cell, an unknown kind, a task listed twice."""
    path = Path(path)
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE)
    missing = [c for c in _CATALOGUE_COLUMNS if c not in df.columns]
    if missing:
        raise ZeroShotCatalogueError(f"{path}: lacks column(s) {', '.join(missing)} (has {', '.join(df.columns)})")
    problems: list[str] = []
    seen: dict[str, int] = {}
    entries = []
    for row, rec in enumerate(df[list(_CATALOGUE_COLUMNS)].itertuples(index=False)):
        for column in _CATALOGUE_COLUMNS:
            if not str(getattr(rec, column)).strip():
                problems.append(f"row {row}: empty {column}")
        if rec.kind not in _ZEROSHOT_KINDS:
            problems.append(f"row {row}: kind {rec.kind!r} is not one of {', '.join(_ZEROSHOT_KINDS)}")
        if rec.task in seen:
            problems.append(f"row {row}: task {rec.task!r} is listed already in row {seen[rec.task]}")
        seen.setdefault(rec.task, row)
        cell = str(rec.source_tasks).strip()
        sources = () if cell == _NO_SOURCE_TASKS else tuple(t.strip() for t in cell.split(",") if t.strip())
        if not sources and rec.builder != SOURCE_BUILDER and cell:
            problems.append(f"row {row}: builder {rec.builder!r} needs source_tasks (only a `source` task may have -)")
        entries.append(CatalogueEntry(rec.task, rec.kind, rec.builder, sources, rec.description))
    if problems:
        raise ZeroShotCatalogueError(
            f"{path}: {len(problems)} problem(s) (rows are 0-based data rows)\n  " + "\n  ".join(problems)
        )
    return entries


@functools.lru_cache(maxsize=8)
def _entries(path: str, mtime_ns: int) -> dict[str, CatalogueEntry]:
    return {e.task: e for e in read_zeroshot_catalogue(path)}


def catalogue_entry(path: str | Path, task: str) -> CatalogueEntry:
    """The entry of `task` in the catalogue at `path` (read once per file version). Raises ZeroShotCatalogueError
    naming the task and the catalogued ids when it is not there."""
    entries = _entries(str(path), Path(path).stat().st_mtime_ns)
    if task not in entries:
        raise ZeroShotCatalogueError(
            f"zero-shot task {task!r} is not in {path} (catalogued: {', '.join(entries) or 'none'}); add a row"
        )
    return entries[task]


#: letters a sequence may hold (upper case only: nothing is upper-cased for the user)
_SEQUENCE_LETTERS = frozenset("ACGTN")
#: letters `ref` and `alt` may be
_BASES = frozenset("ACGT")
#: an integer as text (no sign, no decimals: a position or label written 3.0 is refused, never rounded)
_INTEGER = re.compile(r"^[0-9]+$")
#: problems quoted in the error message (the error's `problems` keeps all)
_SHOWN = 50
#: what makes two rows the same scored item (a duplicate): the variant, or the pair, whatever its label or group
_ITEM_COLUMNS: dict[_ZeroShotKind, tuple[str, ...]] = {
    "variant": ("sequence", "pos", "ref", "alt"),
    "paired": ("sequence_a", "sequence_b"),
}
_ROW_NUMBERING = "rows are 0-based data rows of rows.tsv: row 0 is file line 2, the header being line 1"


class ZeroShotTaskError(ValueError):
    """A zero-shot task folder or row set with problems; `problems` holds every one (task, row and value named)."""

    def __init__(self, task: str, problems: Sequence[str]) -> None:
        self.task = task
        self.problems = tuple(problems)
        lines = [f"zero-shot task {task!r}: {len(self.problems)} problem(s); {_ROW_NUMBERING}"]
        lines.extend(f"  {p}" for p in self.problems[:_SHOWN])
        if len(self.problems) > _SHOWN:
            lines.append(f"  ... and {len(self.problems) - _SHOWN} more")
        super().__init__("\n".join(lines))


def _task_columns(kind: _ZeroShotKind, has_group: bool) -> list[str]:
    """The columns of a task of `kind`, in canonical order."""
    return [*REQUIRED_COLUMNS[kind], *([GROUP_COLUMN] if has_group else [])]


def _check_kind(meta: Mapping[str, Any], task: str) -> list[str]:
    """Problems of meta.json's `kind` ([] when it is one of ZEROSHOT_KINDS)."""
    if "kind" not in meta:
        return [f"task {task!r}: meta.json has no `kind` (one of {', '.join(_ZEROSHOT_KINDS)})"]
    if meta["kind"] not in _ZEROSHOT_KINDS:
        return [f"task {task!r}: meta.json kind {meta['kind']!r} is not one of {', '.join(_ZEROSHOT_KINDS)}"]
    return []


def _sequence_problems(task: str, row: int, column: str, seq: str) -> list[str]:
    if seq == "":
        return [f"task {task!r}, row {row}: empty {column}"]
    bad = sorted(set(seq) - _SEQUENCE_LETTERS)
    if bad:
        at = next(i for i, c in enumerate(seq) if c not in _SEQUENCE_LETTERS)
        return [
            f"task {task!r}, row {row}: {column} has letters outside A/C/G/T/N: {''.join(bad)!r} "
            f"(first at position {at}; lower case is not upper-cased for you)"
        ]
    return []


def _variant_row_problems(task: str, row: int, values: Mapping[str, str]) -> list[str]:
    seq, pos_text, ref, alt, label = (values[c] for c in REQUIRED_COLUMNS["variant"])
    problems = _sequence_problems(task, row, "sequence", seq)
    if ref not in _BASES:
        problems.append(f"task {task!r}, row {row}: ref {ref!r} is not one of A/C/G/T")
    if alt not in _BASES:
        problems.append(f"task {task!r}, row {row}: alt {alt!r} is not one of A/C/G/T")
    if ref in _BASES and ref == alt:
        problems.append(f"task {task!r}, row {row}: alt {alt!r} equals ref")
    if label not in ("0", "1"):
        problems.append(f"task {task!r}, row {row}: label {label!r} is not 0 or 1")
    if not _INTEGER.match(pos_text):
        problems.append(f"task {task!r}, row {row}: pos {pos_text!r} is not a non-negative integer")
    elif seq:
        pos = int(pos_text)
        if pos >= len(seq):
            problems.append(
                f"task {task!r}, row {row}: pos {pos} is outside the window (length {len(seq)}, positions 0..{len(seq) - 1})"
            )
        elif ref in _BASES and seq[pos] != ref:
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


def _row_problems(rows: pd.DataFrame, kind: _ZeroShotKind, task: str) -> list[str]:
    """Every problem of `rows` (text cells, one row per data row, RangeIndex = row ids) for a task of `kind`:
    missing columns, columns the kind does not have, and per row the value rules (module docstring), empty
    `group` values and duplicated rows: the same item (`_ITEM_COLUMNS`: a variant, a pair) again, whatever its label
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
    columns = _task_columns(kind, GROUP_COLUMN in rows.columns)
    item = _ITEM_COLUMNS[kind]
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


def _canonical_rows_text(rows: pd.DataFrame, kind: _ZeroShotKind) -> str:
    """The canonical rows.tsv text of checked `rows` (module docstring)."""
    columns = _task_columns(kind, GROUP_COLUMN in rows.columns)
    lines = ["\t".join(columns)]
    lines.extend("\t".join(str(v) for v in values) for values in rows[columns].itertuples(index=False, name=None))
    return "\n".join(lines) + "\n"


def _rows_sha256(rows: pd.DataFrame, kind: _ZeroShotKind) -> str:
    """sha256 (64 hex) of the canonical rows text: the task's `data_sha256`."""
    return hashlib.sha256(_canonical_rows_text(rows, kind).encode("utf-8")).hexdigest()


def _as_text(rows: pd.DataFrame) -> pd.DataFrame:
    """Cells as the file writes them (ints as decimal text); anything else is left for the checks to name."""

    def text(v: object) -> str:
        if isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            return str(v)
        return repr(v)  # a float, bool or missing value: refused by the checks, named as written

    return rows.map(text)


def _typed(rows: pd.DataFrame, kind: _ZeroShotKind) -> pd.DataFrame:
    """Checked text rows as the task object holds them: `pos` and `label` as int64, the rest str."""
    out = rows[_task_columns(kind, GROUP_COLUMN in rows.columns)].copy().reset_index(drop=True)
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


def _read_meta(folder: Path, task: str) -> dict[str, Any]:
    """meta.json of a task folder as a dict; ZeroShotTaskError when it is missing, not JSON or not an object."""
    path = folder / _META_FILE
    if not path.is_file():
        raise ZeroShotTaskError(task, [f"task {task!r}: no {_META_FILE} in {folder}"])
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZeroShotTaskError(task, [f"task {task!r}: {path} is not JSON ({exc})"]) from exc
    if not isinstance(meta, dict):
        raise ZeroShotTaskError(task, [f"task {task!r}: {path} is not a JSON object"])
    return meta


def _source_task_names(meta: Mapping[str, Any]) -> tuple[str, ...]:
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
    meta = _read_meta(folder, task)
    task = name or str(meta.get("name") or folder.name)
    rows_path = folder / _ROWS_FILE
    if not rows_path.is_file():
        raise ZeroShotTaskError(task, [f"task {task!r}: no {_ROWS_FILE} in {folder}", *_check_kind(meta, task)])
    check_meta_digests(task, meta, {_ROWS_FILE: rows_path}, f"folder {folder}")
    problems = _check_kind(meta, task)
    rows = _read_rows(rows_path, task)
    if not problems:
        problems = _row_problems(rows, meta["kind"], task)
    if problems:
        raise ZeroShotTaskError(task, problems)
    kind: _ZeroShotKind = meta["kind"]
    return ZeroShotTask(
        name=task,
        kind=kind,
        rows=_typed(rows, kind),
        data_sha256=_rows_sha256(rows, kind),
        source_tasks=_source_task_names(meta),
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
    problems = _check_kind(meta, task)
    text_rows = _as_text(rows.reset_index(drop=True))
    if not problems:
        problems = _row_problems(text_rows, meta["kind"], task)
    if problems:
        raise ZeroShotTaskError(task, problems)
    kind: _ZeroShotKind = meta["kind"]
    text = _canonical_rows_text(text_rows, kind)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    full_meta = {**meta, "name": task, "n_rows": len(text_rows), "data_sha256": digest, "sha256": {_ROWS_FILE: digest}}
    write_text_atomic(folder / _ROWS_FILE, text)
    write_text_atomic(folder / _META_FILE, json.dumps(full_meta, indent=1, sort_keys=True) + "\n")
    return folder


#: the folder of a Hugging Face dataset that holds zero-shot tasks
_HF_ZEROSHOT_FOLDER = "zeroshot"


class ZeroShotHttpMirror(HttpMirror):
    """An http mirror read for a task folder's named files instead of a task's splits."""

    def fetch(self, task: str, name: str) -> Path:
        """One named file of the task's folder on the server, downloaded or taken from the cache, checked against
        meta.json's `sha256` where it names the file. Raises NotOnServer (404), TaskDigestError or
        TaskSourceError."""
        digests = self.read_meta(task).get("sha256") or {}
        return self._fetch(task, name, digests.get(name))


def _hf_folder(repo: str, revision: str, task: str) -> Path:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:  # optional dependency
        raise TaskSourceError(
            f"task {task!r}: the Hugging Face source needs the `huggingface_hub` package (pip install 'geneb[hf]')"
        ) from exc
    paths = []
    for name in (_META_FILE, _ROWS_FILE):
        filename = f"{_HF_ZEROSHOT_FOLDER}/{task}/{name}"
        try:
            paths.append(Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision)))
        except Exception as exc:
            raise TaskSourceError(f"task {task!r}: cannot fetch {filename} of hf:{repo}@{revision}: {exc}") from exc
    if paths[0].parent != paths[1].parent:  # the hub cache keeps one snapshot folder per revision
        raise TaskSourceError(f"task {task!r}: hf:{repo}@{revision} gave its two files in different folders {paths}")
    return paths[0].parent


def _zeroshot_task_folder(
    spec: str, task: str, *, download_dir: str | os.PathLike[str] = "resources/downloads"
) -> Path:
    """The local folder holding `task`'s rows.tsv and meta.json from the source string `spec` (module
    docstring), fetched first where remote. Raises TaskSourceError naming source and task (a file missing,
    a download failing), TaskDigestError when a download fails meta.json's sha256."""
    if spec.startswith(("http://", "https://")):
        mirror = ZeroShotHttpMirror(spec, Path(download_dir))
        try:
            rows = mirror.fetch(task, _ROWS_FILE)
        except NotOnServer as exc:
            raise TaskSourceError(f"task {task!r}: {spec} has no {task}/{_ROWS_FILE}") from exc
        if not (rows.parent / _META_FILE).is_file():  # read_meta takes a 404 for "no meta.json"
            raise TaskSourceError(f"task {task!r}: {spec} has no {task}/{_META_FILE}")
        return rows.parent
    if spec.startswith("hf:") and not Path(spec[3:]).is_dir():
        repo, _, revision = spec[3:].partition("@")
        if not REVISION.match(revision):
            raise TaskSourceError(f"hf zero-shot source {spec!r} must pin a 40-hex revision: hf:<dataset>@<revision>")
        return _hf_folder(repo, revision, task)
    root = Path(spec[3:] if spec.startswith("hf:") else spec)
    if not root.is_dir():
        raise TaskSourceError(
            f"zero-shot source {spec!r} is neither a folder, an http(s) URL nor hf:<dataset>@<revision>"
        )
    folder = root / task
    if not folder.is_dir():
        raise TaskSourceError(f"task {task!r}: no folder {folder}")
    return folder


def load_zeroshot_task(
    spec: str, task: str, *, download_dir: str | os.PathLike[str] = "resources/downloads"
) -> ZeroShotTask:
    """`task` from the source `spec`, fetched (`_zeroshot_task_folder`) and checked (`read_zeroshot_task`)."""
    return read_zeroshot_task(_zeroshot_task_folder(spec, task, download_dir=download_dir), name=task)


def zeroshot_source_identity(spec: str | None, task: str) -> dict[str, str | dict[str, str]]:
    """What identifies a source task's data, for the build_zeroshot_task rerun key: for a local folder the sha256
    of its rows.tsv and meta.json (not the path: the same files elsewhere are the same data, an edited file is new
    data); for an http(s) or hub source the source string with the task (a pinned revision, or a mirror whose
    meta.json checksums rows.tsv). Raises TaskSourceError when no source is configured."""
    if not spec:
        raise TaskSourceError(
            f"zero-shot task {task!r} is read from a source, but config zeroshot.task_source is not set"
        )
    if spec.startswith(("http://", "https://")) or (spec.startswith("hf:") and not Path(spec[3:]).is_dir()):
        return {"kind": "remote", "source": spec, "task": task}
    folder = Path(spec[3:] if spec.startswith("hf:") else spec) / task
    files = [folder / name for name in (_ROWS_FILE, _META_FILE) if (folder / name).is_file()]
    if not files:
        return {"kind": "folder", "source": spec, "task": task}
    return {"kind": "folder", "task": task, "files": {p.name: file_record(p)["sha256"] for p in files}}
