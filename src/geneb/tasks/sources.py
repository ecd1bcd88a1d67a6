"""Task sources: where a task's raw splits come from, and what every source shares.

What every task source shares: the errors, the `TaskSource` protocol, the digests of source files (the task
lock's and `meta.json`'s) and the one CSV reader of a split file (`geneb.tasks.sources` builds the sources on it).

Task sources: where a task's raw splits come from.

Three kinds, chosen by the source string (config key `task_source`, overridden by the environment variable
GENEB_TASK_SOURCE; paper tasks use their catalogue source unless `paper_task_source` /
GENEB_PAPER_TASK_SOURCE says otherwise):

* a mirror folder: `{root}/{task}/{split}.csv.gz` (or `.csv`) plus an optional `{root}/{task}/meta.json`;
* an http(s) base URL with the same layout, downloaded with pooch into a local cache folder, each file within an
  overall deadline (`geneb.core.download`); a file's sha256 is checked where one is known (`meta.json` key
  `sha256`: {file name: hex digest}), on the download and on every later use of the cached copy;
* `hf:<dataset>@<revision>`: a Hugging Face dataset through `datasets` at a pinned 40-hex revision
  (files `tasks/<task>/{train,test}.csv`, the official GENEB layout), or `hf:<local folder>` holding
  `{task}/` folders written by `DatasetDict.save_to_disk` (offline clusters, tests).

Every source returns the raw split untouched (`geneb.tasks.sources`: the protocol, errors, digests and CSV
reader they share) and names the local files it reads for a task (`source_files`, digested by the task lock).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from geneb.core.download import DEFAULT_DEADLINE_S, DEFAULT_READ_TIMEOUT_S, DeadlineDownloader
from geneb.core.provenance import REVISION, file_sha256, stable_hash

#: the splits a task is made of (a mirror's other files, e.g. a `dev` split, are not read)
SPLITS = ("train", "test")
#: a CR not followed by LF
_LONE_CR = re.compile(rb"\r(?!\n)")

_SEQUENCE_COLUMNS = ("sequence", "text", "seq")
#: the endings of a split file (a lock change to one of these is a change of the task's data, not of its notes)
DATA_FILE_SUFFIXES = (".csv.gz", ".csv")


class TaskSourceError(RuntimeError):
    """A task or split that cannot be fetched or read; the message names source, task and split."""


class NotOnServer(TaskSourceError):
    """An http mirror answered 404 for a file (meta.json is optional, a `.csv.gz` split may be a `.csv`)."""


class TaskDigestError(TaskSourceError):
    """A source file whose content is not the one a digest says (meta.json's `sha256`, the task lock); the message
    names task, file, expected and found digests."""


class TaskSource(Protocol):
    """What every source provides."""

    @property
    def description(self) -> str:
        """The source in words, for messages ("mirror folder resources/tasks", ...)."""
        ...

    def read_split(self, task: str, split: str) -> pd.DataFrame:
        """The raw split ("train" or "test"), one row per source line in file order: columns `row` (int,
        0-based line index), `sequence` (str, untouched) and `label` (as given: integer or name). Raises
        TaskSourceError naming source, task and split when the split is missing or unreadable."""
        ...

    def read_meta(self, task: str) -> dict[str, Any]:
        """The task's `meta.json` as a dict ({} where the source has none, e.g. a Hugging Face dataset)."""
        ...

    def source_files(self, task: str, *, fresh: bool = False) -> dict[str, Path]:
        """{name: local path} of every file the source reads for `task` (fetched first where remote; `fresh`:
        a remote source fetches again instead of using its cached copies), the names as the task lock records
        them. Raises TaskSourceError when a split is missing or a file fails a digest the source knows."""
        ...


@lru_cache(maxsize=4096)
def _record(path: str, size: int, mtime_ns: int, inode: int) -> tuple[str, int]:
    return file_sha256(path, length=64), size


def file_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """{"sha256": 64 hex, "size": bytes} of a file, computed once per process for a file whose size, modification
    time and inode are unchanged (planning digests a mirror's files for the rerun key and the lock). Raises
    OSError when the file cannot be read."""
    st = os.stat(path)
    sha, size = _record(os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    return {"sha256": sha, "size": size}


def check_meta_digests(task: str, meta: Mapping[str, Any], files: Mapping[str, Path], where: str) -> None:
    """Check `files` ({name: path}) against `meta.json`'s `sha256` ({file name: hex digest}) where it names them.
    Raises TaskSourceError naming task, file, expected and found digests (`where`: the source)."""
    digests = meta.get("sha256") or {}
    if not isinstance(digests, dict):
        raise TaskSourceError(f"task {task!r}: meta.json of {where}: `sha256` is not a mapping of file name to digest")
    for name, path in files.items():
        expected = digests.get(name)
        if expected is None:
            continue
        found = file_record(path)["sha256"]
        if str(expected).lower() != found:
            raise TaskDigestError(
                f"task {task!r}: {name} of {where} ({path}) fails its sha256 check: meta.json says {expected}, "
                f"the file has {found}"
            )


def _normalise_columns(df: pd.DataFrame, *, where: str) -> pd.DataFrame:
    """Rename the sequence column to `sequence`, keep `label`, add `row`; raise naming the columns found."""
    seq_col = next((c for c in _SEQUENCE_COLUMNS if c in df.columns), None)
    if seq_col is None or "label" not in df.columns:
        raise TaskSourceError(
            f"{where}: expected a sequence column ({' or '.join(_SEQUENCE_COLUMNS)}) and 'label'; found {list(df.columns)}"
        )
    out = pd.DataFrame({"row": range(len(df)), "sequence": df[seq_col].to_numpy(), "label": df["label"].to_numpy()})
    return out


def _read_csv(path: Path, *, where: str) -> pd.DataFrame:
    """A split file (`.csv.gz` or `.csv`) as the raw split (columns row, sequence, label; see TaskSource.read_split),
    every cell text as written. Raises TaskSourceError naming `where`, the file and the line for a file that cannot
    be read."""
    # keep_default_na=False: a sequence "NA" or "N" must stay text, and an empty cell stays "" (an error later);
    # skip_blank_lines=False: a blank line is a row (refused later, by its row id), never silently skipped
    try:
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        _check_line_ends(data, path, where=where)
        df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, skip_blank_lines=False)
    except TaskSourceError:
        raise
    except Exception as exc:  # pandas raises several types for broken files
        raise TaskSourceError(
            f"{where}: cannot read {path}: {str(exc).strip()} (line numbers count file lines from 1, the header being line 1; "
            "GENEB's row ids count data rows from 0)"
        ) from exc
    return _normalise_columns(df, where=where)


def _check_line_ends(data: bytes, path: Path, *, where: str) -> None:
    """Refuse a lone carriage return in a file whose lines end in LF: the CSV reader would take it for a line
    end and split that row in two (a stray CR inside a sequence), shifting every later row id. Files with
    CRLF or CR-only line ends are fine, and so is a CR inside a quoted field (kept as text, then refused by
    the alphabet policy naming its row)."""
    if b"\n" not in data:
        return
    for m in _LONE_CR.finditer(data):
        if data.count(b'"', data.rfind(b"\n", 0, m.start()) + 1, m.start()) % 2:
            continue  # inside a quoted field: the reader keeps it, and the alphabet policy names its row
        line = data.count(b"\n", 0, m.start()) + 1
        raise TaskSourceError(
            f"{where}: a carriage return ('\\r') inside line {line} of {path} (data row {line - 2}), in a file whose "
            "lines end in '\\n'; a sequence or label holds a stray '\\r'"
        )


ENV_TASK_SOURCE = "GENEB_TASK_SOURCE"
ENV_PAPER_TASK_SOURCE = "GENEB_PAPER_TASK_SOURCE"


@dataclass
class MirrorFolder:
    """A local folder in the mirror layout."""

    root: Path

    @property
    def description(self) -> str:
        return f"mirror folder {self.root}"

    def split_file(self, task: str, split: str) -> Path | None:
        """The file `split` of `task` is read from ({split}.csv.gz, else {split}.csv), or None."""
        for ext in (".csv.gz", ".csv"):
            p = self.root / task / f"{split}{ext}"
            if p.exists():
                return p
        return None

    def read_split(self, task: str, split: str) -> pd.DataFrame:
        path = self.split_file(task, split)
        if path is None:
            raise TaskSourceError(
                f"task {task!r}, split {split!r}: no {split}.csv.gz or {split}.csv under {self.root / task}"
            )
        return _read_csv(path, where=f"task {task!r}, split {split!r}")

    def read_meta(self, task: str) -> dict[str, Any]:
        p = self.root / task / "meta.json"
        if not p.exists():
            return {}
        try:
            meta = json.loads(p.read_text())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TaskSourceError(f"task {task!r}: {p} is not JSON ({exc})") from exc
        if not isinstance(meta, dict):
            raise TaskSourceError(f"task {task!r}: {p} is not a JSON object")
        return meta

    def source_files(self, task: str, *, fresh: bool = False) -> dict[str, Path]:
        """The task's split files and its `meta.json` (where present), each split checked against meta.json's
        `sha256` where it has one. See TaskSource.source_files."""
        files: dict[str, Path] = {}
        for split in SPLITS:
            path = self.split_file(task, split)
            if path is None:
                raise TaskSourceError(
                    f"task {task!r}, split {split!r}: no {split}.csv.gz or {split}.csv under {self.root / task}"
                )
            files[path.name] = path
        check_meta_digests(task, self.read_meta(task), files, self.description)
        meta = self.root / task / "meta.json"
        if meta.exists():
            files["meta.json"] = meta
        return files


@dataclass
class HttpMirror:
    """An http(s) base URL in the mirror layout (splits `{split}.csv.gz`, else `.csv`); files are cached by pooch
    under `cache_dir/<url hash>/<task>/` (one folder per base URL: another mirror's files are never reused).

    `meta.json`'s `sha256` digests, where present, check each download (pooch) and each cached copy on every use
    (delete a copy that fails to download it again). Each download has an overall deadline (`deadline_s`, beside
    the per-read `read_timeout_s`; `geneb.core.download`). `meta.json` is fetched afresh once per process, and a
    cached split that cannot be read is deleted, so the next run downloads it again instead of failing forever.
    """

    base_url: str
    cache_dir: Path
    deadline_s: float = DEFAULT_DEADLINE_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    _meta: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def description(self) -> str:
        return f"http mirror {self.base_url}"

    def _url(self, task: str, name: str) -> str:
        return f"{self.base_url.rstrip('/')}/{task}/{name}"

    def _folder(self, task: str) -> Path:
        return self.cache_dir / stable_hash(self.base_url.rstrip("/")) / task

    def _fetch(self, task: str, name: str, known_hash: str | None) -> Path:
        import pooch

        cached = self._folder(task) / name
        if known_hash and cached.exists():
            found = file_record(cached)["sha256"]
            if found != str(known_hash).lower():
                raise TaskDigestError(
                    f"task {task!r}: the cached download {cached} of {self._url(task, name)} fails its sha256 check: "
                    f"meta.json says {known_hash}, the file has {found}; it changed on disk after the download. "
                    "Delete it to download it again"
                )
        try:
            return Path(
                pooch.retrieve(
                    self._url(task, name),
                    known_hash=f"sha256:{known_hash}" if known_hash else None,
                    fname=name,
                    path=self._folder(task),
                    progressbar=False,
                    downloader=DeadlineDownloader(self.deadline_s, self.read_timeout_s),
                )
            )
        except ValueError as exc:  # pooch raises ValueError on a hash mismatch
            raise TaskDigestError(f"task {task!r}: {name} from {self.base_url} failed its sha256 check: {exc}") from exc
        except Exception as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            kind = NotOnServer if status == 404 else TaskSourceError
            raise kind(f"task {task!r}: cannot download {self._url(task, name)}: {exc}") from exc

    def read_meta(self, task: str) -> dict[str, Any]:
        if task not in self._meta:
            (self._folder(task) / "meta.json").unlink(missing_ok=True)  # always the server's current digests
            try:
                path = self._fetch(task, "meta.json", None)
            except NotOnServer:  # meta.json is optional; any other failure is real
                self._meta[task] = {}
                return self._meta[task]
            try:
                meta = json.loads(path.read_text())
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                path.unlink(missing_ok=True)
                raise TaskSourceError(
                    f"task {task!r}: {self._url(task, 'meta.json')} is not JSON ({exc}); "
                    "an error page served with status 200?"
                ) from exc
            if not isinstance(meta, dict):
                raise TaskSourceError(f"task {task!r}: {self._url(task, 'meta.json')} is not a JSON object")
            self._meta[task] = meta
        return self._meta[task]

    def _split_path(self, task: str, split: str) -> Path:
        digests = self.read_meta(task).get("sha256") or {}
        for name in (f"{split}.csv.gz", f"{split}.csv"):
            try:
                return self._fetch(task, name, digests.get(name))
            except NotOnServer:
                if name.endswith(".gz"):
                    continue  # no .csv.gz: try the plain file
                raise
        raise TaskSourceError(
            f"task {task!r}, split {split!r} ({self.base_url}): neither {split}.csv.gz nor {split}.csv on the server"
        )

    def source_files(self, task: str, *, fresh: bool = False) -> dict[str, Path]:
        """The task's `meta.json` (where the server has one) and split files, downloaded now or taken from the
        cache (each checked against meta.json's digests where it has them); `fresh`: the cached copies are deleted
        first, so what is digested is what the server serves now. See TaskSource.source_files."""
        if fresh:
            for old in self._folder(task).glob("*"):
                if old.is_file():
                    old.unlink()
            self._meta.pop(task, None)
        files = {}
        self.read_meta(task)
        if (self._folder(task) / "meta.json").is_file():  # the server has one (a 404 leaves none)
            files["meta.json"] = self._folder(task) / "meta.json"
        for split in SPLITS:
            path = self._split_path(task, split)
            files[path.name] = path
        return files

    def read_split(self, task: str, split: str) -> pd.DataFrame:
        where = f"task {task!r}, split {split!r} ({self.base_url})"
        path = self._split_path(task, split)
        try:
            return _read_csv(path, where=where)
        except TaskSourceError:
            path.unlink(missing_ok=True)  # never trusted again: the next run downloads it afresh
            raise


@dataclass
class HuggingFaceSource:
    """A Hugging Face dataset at a pinned revision, or a local folder of `save_to_disk` DatasetDicts."""

    repo_or_dir: str
    revision: str | None = None

    @property
    def description(self) -> str:
        return f"hf:{self.repo_or_dir}" + (f"@{self.revision}" if self.revision else "")

    def _is_local(self) -> bool:
        return Path(self.repo_or_dir).is_dir()

    def source_files(self, task: str, *, fresh: bool = False) -> dict[str, Path]:
        """A `save_to_disk` folder: every file under `<folder>/<task>/` but `state.json` (it holds a cache
        fingerprint), by path relative to the task folder. A hub dataset: `tasks/<task>/{train,test}.csv` at the
        pinned revision, fetched into the hub cache with `huggingface_hub.hf_hub_download` (offline: from the
        cache; `fresh`: downloaded again). See TaskSource.source_files."""
        if self._is_local():
            folder = Path(self.repo_or_dir) / task
            if not folder.is_dir():
                raise TaskSourceError(f"task {task!r}: no saved dataset folder {folder}")
            return {
                str(p.relative_to(folder)): p
                for p in sorted(folder.rglob("*"))
                if p.is_file() and p.name != "state.json"
            }
        if not self.revision or not REVISION.match(self.revision):
            raise TaskSourceError(
                f"task {task!r}: hf source {self.repo_or_dir!r} needs a pinned 40-hex revision, got {self.revision!r}"
            )
        try:
            from huggingface_hub import hf_hub_download
        except ImportError as exc:  # optional dependency
            raise TaskSourceError(
                f"task {task!r}: the Hugging Face source needs the `huggingface_hub` package (pip install 'geneb[hf]')"
            ) from exc
        files = {}
        for split in SPLITS:
            name = f"tasks/{task}/{split}.csv"
            try:
                path = hf_hub_download(
                    self.repo_or_dir, name, repo_type="dataset", revision=self.revision, force_download=fresh
                )
            except Exception as exc:
                raise TaskSourceError(f"task {task!r}: cannot fetch {name} of {self.description}: {exc}") from exc
            files[name] = Path(path)
        return files

    def _load(self, task: str) -> object:  # a datasets DatasetDict (a saved single Dataset: read_split rejects it)
        try:
            import datasets
        except ImportError as exc:  # optional dependency
            raise TaskSourceError(
                f"task {task!r}: the Hugging Face source needs the `datasets` package (pip install 'geneb[hf]')"
            ) from exc
        if self._is_local():
            folder = Path(self.repo_or_dir) / task
            if not folder.is_dir():
                raise TaskSourceError(f"task {task!r}: no saved dataset folder {folder}")
            return datasets.load_from_disk(str(folder))
        # the files the lock digests (source_files), read by the datasets CSV builder, as load_dataset of the
        # repository with these data files would
        files = self.source_files(task)
        data_files = {split: str(files[f"tasks/{task}/{split}.csv"]) for split in SPLITS}
        try:
            return datasets.load_dataset("csv", data_files=data_files)
        except Exception as exc:
            raise TaskSourceError(f"task {task!r}: cannot load {self.description}: {exc}") from exc

    def read_split(self, task: str, split: str) -> pd.DataFrame:
        """See TaskSource.read_split. A `ClassLabel` label column is read as its names (like named labels in a
        CSV: mapped to class indices in sorted name order, the names recorded in the card); a null label is an
        error naming its row. Raises TaskSourceError for a saved single Dataset (not a DatasetDict)."""
        import datasets

        dd = self._load(task)
        where = f"task {task!r}, split {split!r} ({self.description})"
        if not isinstance(dd, (datasets.DatasetDict, dict)):
            raise TaskSourceError(
                f"{where}: the saved dataset is a single {type(dd).__name__}, not a DatasetDict with "
                "train and test splits"
            )
        if split not in dd:
            raise TaskSourceError(
                f"task {task!r}, split {split!r}: not in {self.description} (has {sorted(dd.keys())})"
            )
        ds = dd[split]
        feature = ds.features.get("label")
        df = ds.to_pandas()
        if "label" in df.columns:
            missing = df["label"].isna().to_numpy()
            if missing.any():
                raise TaskSourceError(f"{where}, row {int(missing.argmax())}: null label")
            if isinstance(feature, datasets.ClassLabel):
                df["label"] = [feature.int2str(int(v)) for v in df["label"]]
            df = df.astype({"label": str})
        return _normalise_columns(df, where=where)

    def read_meta(self, task: str) -> dict[str, Any]:
        return {}


def resolve_source_string(configured: str | None, env_var: str = ENV_TASK_SOURCE) -> str:
    """The source string in force: the environment variable `env_var` wins over the configured value."""
    value = os.environ.get(env_var) or configured
    if not value:
        raise TaskSourceError(f"no task source configured (config key or ${env_var})")
    return value


def source_identity(spec: str, task: str) -> dict[str, Any]:
    """What identifies a task's raw data, for the `prepare_task` rerun key.

    For a mirror folder: the sha256 of each split file the task is read from (`train`/`test`, `.csv.gz` or
    `.csv`; not the folder's path: the same files under another path are the same data, an edited file is new
    data). Other files (`meta.json` notes, a `.DS_Store`, a `dev` split) are not read by `prepare_task`, so they
    are not part of the identity and never rerun the workflow. For an http(s) mirror or a Hugging
    Face dataset on the hub: the source string with the task id (a pinned revision, or a URL whose files
    meta.json checksums). A local folder of `save_to_disk` datasets (`hf:/path`): the sha256 of the task's
    dataset files (`state.json`, which holds a cache fingerprint, excluded). A mirror folder without the task gives the bare spec; preparing it then fails with the missing
    file named.
    """
    if spec.startswith("hf:") and Path(spec[3:]).is_dir():
        # a local folder of save_to_disk datasets: its content, not its path (like a mirror folder)
        folder = Path(spec[3:]) / task
        files = (
            sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "state.json") if folder.is_dir() else []
        )
        if not files:
            return {"kind": "hf-folder", "source": spec, "task": task}
        return {
            "kind": "hf-folder",
            "task": task,
            "files": {str(p.relative_to(folder)): file_record(p)["sha256"] for p in files},
        }
    if spec.startswith(("http://", "https://", "hf:")):
        return {"kind": "remote", "source": spec, "task": task}
    mirror = MirrorFolder(Path(spec))
    files = [p for p in (mirror.split_file(task, split) for split in SPLITS) if p is not None]
    if not files:
        return {"kind": "folder", "source": spec, "task": task}
    return {"kind": "folder", "task": task, "files": {p.name: file_record(p)["sha256"] for p in files}}


def missing_splits(spec: str, task: str) -> list[str]:
    """The splits of `task` a local mirror folder `spec` lacks (checked when the workflow is planned, so a dry
    run names a missing task folder); [] for remote and Hugging Face sources, which are checked when read."""
    if spec.startswith(("http://", "https://", "hf:")):
        return []
    mirror = MirrorFolder(Path(spec))
    return [split for split in SPLITS if mirror.split_file(task, split) is None]


def open_source(
    spec: str,
    *,
    download_dir: str | os.PathLike[str] = "resources/downloads",
    deadline_s: float = DEFAULT_DEADLINE_S,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
) -> TaskSource:
    """Build the source for a source string (see module docstring). deadline_s / read_timeout_s: an http mirror's
    overall limit per file download and per socket read, seconds (config `task_download`). Raises
    TaskSourceError for a bad string."""
    if spec.startswith(("http://", "https://")):
        return HttpMirror(spec, Path(download_dir), deadline_s=deadline_s, read_timeout_s=read_timeout_s)
    if spec.startswith("hf:"):
        body = spec[3:]
        if Path(body).is_dir():
            return HuggingFaceSource(body)
        repo, _, revision = body.partition("@")
        if not REVISION.match(revision):
            raise TaskSourceError(f"hf task source {spec!r} must pin a 40-hex revision: hf:<dataset>@<revision>")
        return HuggingFaceSource(repo, revision)
    root = Path(spec)
    if not root.is_dir():
        raise TaskSourceError(f"task source {spec!r} is neither a folder, an http(s) URL nor hf:<dataset>@<revision>")
    return MirrorFolder(root)
