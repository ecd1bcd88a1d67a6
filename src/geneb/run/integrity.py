"""Files a run trusts: which they are, setting aside the ones that fail their checks before the DAG is
built, and `geneb verify`.

The files of a run that a later step trusts, `TrustedFiles` (the run plan's `trusted` part; what it reads of the plan
is `TrustedNeeds`): what the plan checks by content before the DAG is built (`geneb.run.integrity`), `geneb verify`
checks offline, and the default target rebuilds.

Files a run would read that must not be trusted, moved aside before the DAG is built, so Snakemake builds them
again in the same run (a failed or killed job's partial output).

Two kinds, each moved (never deleted) beside itself: a file whose bytes differ from the digest recorded when it
was written (`geneb.core.integrity`) goes to `<folder>/.corrupt-<name>.<n>`; a file its format's reader cannot
read (a partial embedding file without `complete`, a truncated parquet or JSON file, all without a digest) to
`<folder>/.partial-<name>.<n>`. Its digest file goes with it.

Why the same run rebuilds it: Snakemake never reruns a job only because its output is missing; it does when a
target needs that output, or a job that must run does (a missing intermediate file whose consumers are up to date
is "Nothing to be done"). So `workflow/rules/common.smk` adds every file moved aside to the inputs of the default
target (`TrustedFiles.rebuild_targets`): the job that writes it runs, and every job downstream of it (its inputs are
then newer). A dry run moves nothing: it names each file it would move, and the real run rebuilds them.

Checking every file fully on every plan would read every embedding file of a big run; `StampStore` remembers
(size, mtime_ns, inode) of each file and of its digest file when they last matched, and only a file whose stamp
changed is hashed again. Readers (`geneb.core.integrity`) always hash fully. Cost: docs/performance.md.

`geneb verify`: check every content-digested file of a run offline (`geneb.core.integrity`).

The files checked are the run's own (`TrustedFiles.files` of its config: prepared tasks, shot files, embedding
files, probe and prediction tables, result tables) and every other file with a digest file under `resources/` and
the results folder (another config's caches, the published tables). Each is hashed whole (the plan's stamp store is
not used). A file without a digest among the run's own is reported as such (written before GENEB recorded digests);
`adopt` records its digest when its format's reader reads it whole, as the workflow's plan does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from geneb.analysis.registry import all_tables
from geneb.core import integrity
from geneb.core.integrity import write_text_atomic
from geneb.core.logs import ERROR_MARK


class RunFiles(Protocol):
    """The resources/ paths of the run (its `geneb.run.layout.ResourceLayout`) that `TrustedFiles` lists."""

    def task_file(self, task: str, name: str) -> str: ...

    def audit_file(self, task: str) -> str: ...

    def shot_file(self, protocol: str, task: str) -> str: ...

    def embedding_file(self, model: str, task: str) -> str: ...


class ZeroShotFiles(Protocol):
    """The zero-shot stage's files a later step reads back (the run's `geneb.zeroshot.plan.ZeroShotPlan`)."""

    def trusted_files(self) -> list[str]: ...


class TrustedNeeds(Protocol):
    """What `TrustedFiles` reads of the run plan (`geneb.run.plan.RunPlan`): the validated config, the files
    planning set aside, the run's tasks and models, its results folder and probe tables, its layout's paths and the
    zero-shot stage's files."""

    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def bad_files(self) -> tuple[BadFile, ...]: ...
    @property
    def tasks(self) -> list[str]: ...
    @property
    def models(self) -> list[str]: ...
    @property
    def layout(self) -> RunFiles: ...
    @property
    def zeroshot(self) -> ZeroShotFiles: ...
    def results_path(self, path: str) -> str: ...
    def probe_tables(self, tasks: list[str] | None = None, *, kind: str = "probes") -> list[str]: ...


class TrustedFiles:
    """The files of one run plan (`run`) that a later step trusts (`geneb.run.plan.RunPlan.trusted`), built on its
    resources/ layout."""

    def __init__(self, run: TrustedNeeds) -> None:
        self._run = run

    def result_tables(self) -> list[str]:
        """The parquet tables under results_dir/tables that the default targets read back: the score table, the
        leaderboard and analysis tables (`geneb.analysis.registry.all_tables`), the clean leaderboard, the task
        audit table."""
        names = dict.fromkeys(("scores", *all_tables(), "leaderboard_clean", "task_audit"))
        return [self._run.results_path(f"tables/{name}.parquet") for name in names]

    def files(self) -> list[str]:
        """Every file of this run that a later step reads back and that GENEB writes with a content digest
        (`geneb.core.integrity`): the prepared tasks (splits, card, audit), the shot files, the embedding files,
        the probe and prediction tables, the result tables, the zero-shot scores and tables; upstream first."""
        run, layout = self._run, self._run.layout
        tasks = [layout.task_file(t, n) for t in run.tasks for n in ("train.parquet", "test.parquet", "card.json")]
        tasks += [layout.audit_file(t) for t in run.tasks]
        shots = [layout.shot_file(p, t) for p in run.config["protocols"] for t in run.tasks]
        embeddings = [layout.embedding_file(m, t) for m in run.models for t in run.tasks]
        probes = run.probe_tables() + run.probe_tables(kind="predictions")
        return [*tasks, *shots, *embeddings, *probes, *self.result_tables(), *run.zeroshot.trusted_files()]

    def rebuild_targets(self) -> list[str]:
        """The files planning moved aside (bad content, `bad_files`): inputs of the default target, so this run
        builds them again and everything downstream of them (Snakemake alone reruns no job for a missing
        intermediate file; geneb.run.integrity). [] in a dry run, which moves nothing."""
        return [str(b.path) for b in self._run.bad_files if b.aside is not None]


#: the stamp store of a run's working directory (`StampStore`)
_STAMPS_FILE = ".geneb/verified.json"


@dataclass(frozen=True)
class BadFile:
    """A file set aside (or, in a dry run, that would be): `path`, where it went (`aside`; None in a dry run),
    `error`, the reason (an IntegrityError for a digest mismatch, else an OSError / ValueError of its reader)."""

    path: Path
    aside: Path | None
    error: Exception


def _stamp(path: Path) -> list[int] | None:
    try:
        st, side = os.stat(path), os.stat(integrity.digest_path(path))
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, side.st_size, side.st_mtime_ns, side.st_ino]


class StampStore:
    """{path: (size, mtime_ns, inode) of the file and of its digest file} when the file last matched its digest,
    kept in `path` (JSON). A file whose stamp is unchanged is not hashed again while planning (a byte changed in
    place without changing size and mtime, e.g. by a tool that restores mtime, is then found by its reader, which
    always hashes, and by `geneb verify`, which ignores the store)."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else Path(path)
        self.stamps: dict[str, list[int]] = {}
        if self.path is not None and self.path.is_file():
            try:
                self.stamps = dict(json.loads(self.path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                self.stamps = {}  # a damaged store only costs a full check
        self.changed = False

    def fresh(self, path: Path) -> bool:
        """Whether `path` matched its digest when last checked and neither it nor its digest file changed since."""
        stamp = _stamp(path)
        return stamp is not None and self.stamps.get(str(path)) == stamp

    def mark(self, path: Path) -> None:
        """Record `path` as checked now (call after it matched its digest)."""
        stamp = _stamp(path)
        if stamp is not None and self.stamps.get(str(path)) != stamp:
            self.stamps[str(path)] = stamp
            self.changed = True

    def forget(self, path: Path) -> None:
        if self.stamps.pop(str(path), None) is not None:
            self.changed = True

    def save(self) -> None:
        """Write the store (atomically) when anything changed."""
        if self.path is not None and self.changed:
            write_text_atomic(self.path, json.dumps(self.stamps, sort_keys=True, indent=0))
            self.changed = False


def _format_reader(path: Path, hdf5_locking: str = "auto") -> Callable[[], object]:
    """The full read of `path` by its format's reader, for a file without a digest: an embedding file must be
    complete (`geneb.extract.cache.read_key` and every split's arrays), a parquet file must load whole, a JSON file
    must parse (`geneb.extract.cache.read_whole` reads every dataset of an HDF5 file). Raises ValueError for a suffix GENEB writes no trusted file with."""
    if path.suffix == ".h5":
        from geneb.extract.cache import read_whole

        return lambda: read_whole(path, hdf5_locking=hdf5_locking)
    if path.suffix == ".parquet":

        def read_parquet() -> object:
            import pandas as pd

            return pd.read_parquet(path)

        return read_parquet
    if path.suffix == ".json":
        return lambda: json.loads(path.read_text(encoding="utf-8"))
    raise ValueError(f"{path}: no reader for {path.suffix!r} files")


def _check_file(path: Path, store: StampStore, hdf5_locking: str = "auto") -> tuple[str, Exception | None]:
    """("fresh" | "ok" | "adopt" | "bad", error) for one existing file: fresh, its stamp is unchanged; ok, it
    matches its digest; adopt, it has no digest and its format's reader reads it whole (the caller records one);
    bad, it differs from its digest, its digest file is broken, or (without a digest) its reader fails."""
    if store.fresh(path):
        return "fresh", None
    try:
        recorded = integrity.check(path)
    except integrity.IntegrityError as err:
        return "bad", err
    if recorded is not None:
        return "ok", None
    try:
        _format_reader(path, hdf5_locking)()
    except Exception as err:  # noqa: BLE001 - any failure of the format's reader makes the file unusable
        return "bad", err
    return "adopt", None


def _aside_path(path: Path, kind: str) -> Path:
    """The first free `<folder>/.<kind>-<name>.<n>` beside `path` (kind: corrupt | partial)."""
    n = 0
    while (aside := path.with_name(f".{kind}-{path.name}.{n}")).exists():
        n += 1
    return aside


def _move_aside(path: Path, kind: str) -> Path:
    """Move `path` (and its digest file, when any) to `_aside_path(path, kind)`; returns the new path."""
    aside = _aside_path(path, kind)
    try:
        integrity.replace(path, aside)
    except integrity.IntegrityError:  # a broken digest file: moved as it is
        side = integrity.digest_path(path)
        os.replace(path, aside)
        os.replace(side, integrity.digest_path(aside))
    return aside


def set_aside_bad(
    paths: Iterable[str | os.PathLike[str]],
    *,
    store: StampStore,
    dry_run: bool = False,
    hdf5_locking: str = "auto",
) -> tuple[list[BadFile], list[Path]]:
    """Check every existing file among `paths` (`_check_file`) and move the bad ones aside (module docstring);
    record a digest for each file without one that reads whole (adopted once). A dry run moves and records
    nothing. Returns (the bad files, the adopted files); saves `store`."""
    bad: list[BadFile] = []
    adopted: list[Path] = []
    for path in dict.fromkeys(map(Path, paths)):
        if not path.is_file():
            continue
        state, error = _check_file(path, store, hdf5_locking)
        if state == "bad":
            assert error is not None
            kind = "corrupt" if isinstance(error, integrity.IntegrityError) else "partial"
            bad.append(BadFile(path, None if dry_run else _move_aside(path, kind), error))
            store.forget(path)
        elif state == "adopt":
            adopted.append(path)
            if not dry_run:
                integrity.record_digest(path)
                store.mark(path)
        elif state == "ok" and not dry_run:
            store.mark(path)
    if not dry_run:
        store.save()
    return bad, adopted


def _bad_file_line(bad: BadFile) -> str:
    """The one `GENEB ERROR` line of a file planning set aside (or, in a dry run, would)."""
    where = (
        f"moved to {bad.aside.name}; this run builds it again, and everything downstream of it"
        if bad.aside is not None
        else "dry run: nothing moved; a real run moves it aside and builds it again, and everything downstream"
    )
    reason = str(bad.error) if str(bad.path) in str(bad.error) else f"{bad.path}: {bad.error}"
    return f"{ERROR_MARK} (workflow plan): {type(bad.error).__name__}: {reason}; {where}"


def check_before_dag(
    paths: Iterable[str | os.PathLike[str]], *, log: Any, dry_run: bool, hdf5_locking: str = "auto"
) -> tuple[list[BadFile], list[Path]]:
    """What the workflow's plan runs in the main process: `set_aside_bad` with the run folder's stamp store
    (STAMPS_FILE), one `_bad_file_line` per bad file to `log.warning`, one line naming the adopted files to
    `log.info`. Returns (bad files, adopted files)."""
    bad, adopted = set_aside_bad(paths, store=StampStore(_STAMPS_FILE), dry_run=dry_run, hdf5_locking=hdf5_locking)
    for b in bad:
        log.warning(_bad_file_line(b))
    if adopted:
        shown = ", ".join(map(str, adopted[:3])) + (f" and {len(adopted) - 3} more" if len(adopted) > 3 else "")
        verb = "would record" if dry_run else "recorded"
        log.info(
            f"{len(adopted)} file(s) written before GENEB recorded content digests read whole; {verb} their digest "
            f"now: {shown}"
        )
    return bad, adopted


#: the prefixes of files GENEB itself set aside or is writing: never checked
_SKIPPED_PREFIXES = (".corrupt-", ".partial-", ".tmp-")


@dataclass
class VerifyReport:
    """What `verify_files` found: checked (files hashed), n_bytes (their total size), bad ({file: reason}),
    no_digest (files without a digest, not adopted), adopted (files whose digest was recorded now)."""

    checked: int = 0
    n_bytes: int = 0
    bad: dict[Path, str] = field(default_factory=dict)
    no_digest: list[Path] = field(default_factory=list)
    adopted: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No bad file and none without a digest."""
        return not self.bad and not self.no_digest

    def lines(self) -> list[str]:
        """One line per bad or undigested file, then the one-line summary."""
        out = [f"BAD {path}: {reason}" for path, reason in self.bad.items()]
        out += [
            f"NO DIGEST {path}: written before GENEB recorded content digests (`geneb verify --adopt` records one)"
            for path in self.no_digest
        ]
        out += [f"ADOPTED {path}: read whole, digest recorded" for path in self.adopted]
        size = f"{self.n_bytes / 1e6:.1f} MB"
        if self.ok:
            out.append(f"geneb verify: {self.checked} files ({size}) checked, all match their digests")
        else:
            out.append(
                f"geneb verify: {self.checked} files ({size}) checked: {len(self.bad)} bad, "
                f"{len(self.no_digest)} without a digest"
            )
        return out


def _digested_files(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every file under `roots` that has a digest file (`<file>.sha256`), sorted; set-aside and temporary files
    left out."""
    found: set[Path] = set()
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for side in root.rglob("*" + integrity.DIGEST_SUFFIX):
            path = side.with_name(side.name[: -len(integrity.DIGEST_SUFFIX)])
            if not path.name.startswith(_SKIPPED_PREFIXES):
                found.add(path)
    return sorted(found)


def verify_files(
    own: Iterable[str | os.PathLike[str]],
    roots: Iterable[str | os.PathLike[str]] = (),
    *,
    adopt: bool = False,
    hdf5_locking: str = "auto",
) -> VerifyReport:
    """Check the run's own files `own` (the missing ones skipped: not built yet) and every digested file under
    `roots`; see the module docstring."""
    report = VerifyReport()
    store = StampStore(None)  # every file hashed
    own_paths = [Path(p) for p in own]
    for path in dict.fromkeys([*own_paths, *_digested_files(roots)]):
        if not path.is_file():  # not built yet, or removed (a digest file left by a job that failed since)
            continue
        report.checked += 1
        report.n_bytes += path.stat().st_size
        state, error = _check_file(path, store, hdf5_locking)
        if state == "bad":
            report.bad[path] = f"{type(error).__name__}: {error}"
        elif state == "adopt":
            if adopt:
                integrity.record_digest(path)
                report.adopted.append(path)
            else:
                report.no_digest.append(path)
    return report
