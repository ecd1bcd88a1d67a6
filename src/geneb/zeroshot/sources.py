"""Where a zero-shot task folder comes from: the probing tasks' three sources (`geneb.tasks.sources`; the http mirror through a subclass), read for
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

import os
from pathlib import Path

from geneb.core.provenance import REVISION
from geneb.tasks.sources import HttpMirror, NotOnServer, TaskSourceError, file_record
from geneb.zeroshot.read import read_zeroshot_task
from geneb.zeroshot.task import META_FILE, ROWS_FILE, ZeroShotTask

#: the folder of a Hugging Face dataset that holds zero-shot tasks
HF_ZEROSHOT_FOLDER = "zeroshot"


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
    for name in (META_FILE, ROWS_FILE):
        filename = f"{HF_ZEROSHOT_FOLDER}/{task}/{name}"
        try:
            paths.append(Path(hf_hub_download(repo, filename, repo_type="dataset", revision=revision)))
        except Exception as exc:
            raise TaskSourceError(f"task {task!r}: cannot fetch {filename} of hf:{repo}@{revision}: {exc}") from exc
    if paths[0].parent != paths[1].parent:  # the hub cache keeps one snapshot folder per revision
        raise TaskSourceError(f"task {task!r}: hf:{repo}@{revision} gave its two files in different folders {paths}")
    return paths[0].parent


def zeroshot_task_folder(spec: str, task: str, *, download_dir: str | os.PathLike[str] = "resources/downloads") -> Path:
    """The local folder holding `task`'s rows.tsv and meta.json from the source string `spec` (module
    docstring), fetched first where remote. Raises TaskSourceError naming source and task (a file missing,
    a download failing), TaskDigestError when a download fails meta.json's sha256."""
    if spec.startswith(("http://", "https://")):
        mirror = ZeroShotHttpMirror(spec, Path(download_dir))
        try:
            rows = mirror.fetch(task, ROWS_FILE)
        except NotOnServer as exc:
            raise TaskSourceError(f"task {task!r}: {spec} has no {task}/{ROWS_FILE}") from exc
        if not (rows.parent / META_FILE).is_file():  # read_meta takes a 404 for "no meta.json"
            raise TaskSourceError(f"task {task!r}: {spec} has no {task}/{META_FILE}")
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
    """`task` from the source `spec`, fetched (`zeroshot_task_folder`) and checked (`read_zeroshot_task`)."""
    return read_zeroshot_task(zeroshot_task_folder(spec, task, download_dir=download_dir), name=task)


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
    files = [folder / name for name in (ROWS_FILE, META_FILE) if (folder / name).is_file()]
    if not files:
        return {"kind": "folder", "source": spec, "task": task}
    return {"kind": "folder", "task": task, "files": {p.name: file_record(p)["sha256"] for p in files}}
