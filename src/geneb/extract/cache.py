"""The HDF5 embedding cache: one file per (model, task), written atomically, read only when complete.

Layout (see docs/data-dictionary.md): per split a group with `embeddings` (n, d), `row` (n,), `n_tokens`,
`n_chunks`, `truncated`; root attributes `extraction_key` (JSON), `key_hash`, and `complete`, which is written
last, after every array has been checked finite. The file is built under a temporary name and renamed, so a
killed job never leaves a file under the final name; a file without `complete`, or whose key differs from
the one expected, raises instead of being read.

HDF5 >= 1.10 takes flock() locks that NFS/Lustre refuse (errno 37/524/11). `hdf5_locking` = "auto" | "on" |
"off" (config key `extraction.hdf5_locking`): "off" opens with `locking=False` (h5py >= 3.5) and also sets
HDF5_USE_FILE_LOCKING=FALSE for libraries that open files themselves; "auto" leaves the library default unless
the environment already says FALSE.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from geneb.core import integrity
from geneb.core.provenance import canonical_json, stable_hash

_SCHEMA_VERSION = "1"
_LOCKING_CHOICES = ("auto", "on", "off")


class CacheError(RuntimeError):
    """An embedding cache file that must not be used (incomplete, wrong key, bad content)."""


class IncompleteCacheError(CacheError):
    """The file lacks the `complete` attribute: a partial write or a foreign file."""


class CorruptCacheError(CacheError, integrity.IntegrityError):
    """The file's bytes differ from the digest recorded when it was written (`geneb.core.integrity`)."""


class CacheKeyMismatchError(CacheError):
    """The file's extraction key differs from the one the caller expects."""


def configure_hdf5_locking(hdf5_locking: str) -> dict[str, Any]:
    """Apply the `hdf5_locking` switch ("auto" | "on" | "off") and return the h5py.File keyword arguments.

    "off" sets HDF5_USE_FILE_LOCKING=FALSE in this process (call it before anything imports h5py; the
    extraction and probe scripts do so first) and returns {"locking": False} (h5py >= 3.5); "on" returns
    {"locking": True}; "auto" follows an HDF5_USE_FILE_LOCKING=FALSE already in the environment, else the
    library default. Raises ValueError for another value.
    """
    return _locking_kwargs(hdf5_locking)


def _locking_kwargs(hdf5_locking: str) -> dict[str, Any]:
    if hdf5_locking not in _LOCKING_CHOICES:
        raise ValueError(f"hdf5_locking must be one of {_LOCKING_CHOICES}, got {hdf5_locking!r}")
    if hdf5_locking == "off":
        os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"
        return {"locking": False}
    if hdf5_locking == "on":
        return {"locking": True}
    if os.environ.get("HDF5_USE_FILE_LOCKING", "").upper() == "FALSE":
        return {"locking": False}
    return {}


def _is_lock_error(err: BaseException) -> bool:
    """Whether an HDF5 open failed because the file system refused a lock ("unable to lock file, errno = 37"
    on NFS/Lustre), not because of the file's content (a truncated file's message mentions "sblock", not a lock)."""
    return isinstance(err, OSError) and re.search(r"\block(s|ing)?\b", str(err), re.IGNORECASE) is not None


def _h5py() -> ModuleType:
    import h5py  # imported late so HDF5_USE_FILE_LOCKING set by _locking_kwargs is seen

    return h5py


@dataclass
class SplitEmbeddings:
    """Pooled embeddings of one split.

    embeddings: float array (n, d); row: int64 (n,) task-parquet row ids in the same order; n_tokens, n_chunks:
    int (n,); truncated: bool (n,); trimmed_bases: int (n,) bases dropped by a length_multiple rule; empty:
    bool (n,) rows an encoder had nothing to pool for (k-mer zero blocks; n_tokens may be 0 only there); attrs:
    per-split HDF5 attributes (counts of truncated/chunked rows and pooled positions).
    """

    embeddings: np.ndarray
    row: np.ndarray
    n_tokens: np.ndarray
    n_chunks: np.ndarray | None = None
    truncated: np.ndarray | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    trimmed_bases: np.ndarray | None = None
    empty: np.ndarray | None = None

    def validate(self, split: str, where: str) -> None:
        """Raise CacheError naming `where`, the split and the first bad row if shapes or values are wrong."""
        x = self.embeddings
        n = len(self.row)
        if x.ndim != 2 or x.shape[0] != n:
            raise CacheError(f"{where} [{split}]: embeddings shape {x.shape} does not match {n} rows")
        bad = ~np.isfinite(x).all(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CacheError(
                f"{where} [{split}]: non-finite embedding at row index {i} (row id {int(self.row[i])}); "
                "refusing to cache it"
            )
        empty = np.zeros(n, bool) if self.empty is None else np.asarray(self.empty, bool)
        if len(empty) != n:
            raise CacheError(f"{where} [{split}]: empty flags ({len(empty)}) do not match {n} rows")
        if len(self.n_tokens) != n or ((np.asarray(self.n_tokens) <= 0) & ~empty).any():
            bad = (np.asarray(self.n_tokens) <= 0) & ~empty
            i = int(np.flatnonzero(bad)[0]) if len(self.n_tokens) == n else 0
            raise CacheError(f"{where} [{split}]: row index {i} pooled zero tokens (or n_tokens has wrong length)")


@dataclass
class ViewArrays:
    """One view of a views file (`geneb.registry.spec`): attrs, its HDF5 group attributes (view id, layer,
    pooling, rc, `view_key`; `geneb.extract.step.view_attrs`); splits, {split: float (n, d)} in the split's row
    order (the rows, n_tokens, ... of the split group are every view's)."""

    attrs: dict[str, Any]
    splits: dict[str, np.ndarray]


#: the group that holds the views of a views file, one subgroup per view id, each with one dataset per split
_VIEWS_GROUP = "views"


def key_hash(key: dict[str, Any]) -> str:
    """Short, stable hash of an extraction key (see provenance.stable_hash)."""
    return stable_hash(key)


def write_embeddings(
    path: str | os.PathLike[str],
    splits: dict[str, SplitEmbeddings],
    key: dict[str, Any],
    *,
    storage_dtype: str = "float32",
    hdf5_locking: str = "auto",
    attrs: dict[str, Any] | None = None,
    views: dict[str, ViewArrays] | None = None,
) -> None:
    """Write all splits of one (model, task) to `path` atomically; `complete` is set last.

    views: {view id: ViewArrays} of a run with `views:` (the split groups then hold (n, 0) `embeddings` and the
    per-row arrays every view shares); each view is group `views/<view id>` with its attributes and one dataset per
    split, checked finite like the splits. The root attribute `views` lists the ids (JSON; absent without views).

    storage_dtype: "float32" or "float16" (halves the file; values are checked finite after the cast too,
    so an overflow to inf in float16 is refused). attrs: flat root attributes (policy and run facts; not
    part of the key). Raises CacheError (file untouched) when any split is malformed or non-finite.
    """
    if storage_dtype not in ("float32", "float16"):
        raise ValueError(f"storage_dtype must be float32 or float16, got {storage_dtype!r}")
    where = f"{key.get('model', '?')}/{key.get('task', '?')}"
    for split, emb in splits.items():
        emb.validate(split, where)
        if storage_dtype == "float16":
            with np.errstate(over="ignore"):  # an overflow to inf is reported by validate, as an error
                half = emb.embeddings.astype(np.float16)
            SplitEmbeddings(half, emb.row, emb.n_tokens, empty=emb.empty).validate(split, where + " (float16)")
    kwargs = _locking_kwargs(hdf5_locking)
    h5py = _h5py()
    with integrity.sealed_path(path) as tmp, h5py.File(tmp, "w", **kwargs) as f:
        f.attrs["schema_version"] = _SCHEMA_VERSION
        f.attrs["extraction_key"] = canonical_json(key)
        f.attrs["key_hash"] = key_hash(key)
        f.attrs["storage_dtype"] = storage_dtype
        for name, value in (attrs or {}).items():
            f.attrs[name] = value if isinstance(value, (int, float, str, bool)) else json.dumps(value)
        for split, emb in splits.items():
            g = f.create_group(split)
            g.create_dataset("embeddings", data=emb.embeddings.astype(storage_dtype))
            g.create_dataset("row", data=np.asarray(emb.row, dtype=np.int64))
            g.create_dataset("n_tokens", data=np.asarray(emb.n_tokens, dtype=np.int32))
            n = len(emb.row)
            chunks = emb.n_chunks if emb.n_chunks is not None else np.ones(n, dtype=np.int32)
            trunc = emb.truncated if emb.truncated is not None else np.zeros(n, dtype=bool)
            g.create_dataset("n_chunks", data=np.asarray(chunks, dtype=np.int32))
            g.create_dataset("truncated", data=np.asarray(trunc, dtype=bool))
            trim = emb.trimmed_bases if emb.trimmed_bases is not None else np.zeros(n, dtype=np.int32)
            g.create_dataset("trimmed_bases", data=np.asarray(trim, dtype=np.int32))
            empty = emb.empty if emb.empty is not None else np.zeros(n, dtype=bool)
            g.create_dataset("empty", data=np.asarray(empty, dtype=bool))
            for name, value in emb.attrs.items():
                g.attrs[name] = value if isinstance(value, (int, float, str, bool)) else json.dumps(value)
        if views:
            _write_views(f, views, splits, where, storage_dtype)
        # re-read before declaring the file complete: what is on disk must be finite
        for split in splits:
            if not np.isfinite(f[split]["embeddings"][:]).all():
                raise CacheError(f"{where} [{split}]: non-finite values on disk after writing")
        f.attrs["complete"] = True


def _write_views(
    f: Any, views: dict[str, ViewArrays], splits: dict[str, SplitEmbeddings], where: str, dtype: str
) -> None:
    f.attrs["views"] = json.dumps(list(views))
    group = f.create_group(_VIEWS_GROUP)
    for vid, view in views.items():
        g = group.create_group(vid)
        for name, value in view.attrs.items():
            g.attrs[name] = value if isinstance(value, (int, float, str, bool)) else canonical_json(value)
        for split, x in view.splits.items():
            SplitEmbeddings(x, splits[split].row, splits[split].n_tokens, empty=splits[split].empty).validate(
                split, f"{where} view {vid}"
            )
            g.create_dataset(split, data=np.asarray(x).astype(dtype))
            if not np.isfinite(g[split][:]).all():
                raise CacheError(f"{where} view {vid} [{split}]: non-finite values on disk after writing ({dtype})")


def list_views(path: str | os.PathLike[str], *, hdf5_locking: str = "auto") -> list[str]:
    """The view ids of a complete cache file, in the order written ([] for a file of the registry's single view).
    Raises what `read_key` raises."""
    path = Path(path)
    with _open_for_reading(path, hdf5_locking) as f:
        _read_key_attr(f, path)
        return list(json.loads(f.attrs["views"])) if "views" in f.attrs else []


def read_view(
    path: str | os.PathLike[str], view: str, splits: tuple[str, ...] = ("train", "test"), *, hdf5_locking: str = "auto"
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(attributes, {split: float32 (n, d)}) of one view of a complete cache file; `view_key` parsed from JSON.
    Raises CacheError naming the file for a view or split it lacks."""
    path = Path(path)
    with _open_for_reading(path, hdf5_locking) as f:
        _read_key_attr(f, path)
        if _VIEWS_GROUP not in f or view not in f[_VIEWS_GROUP]:
            raise CacheError(f"{path}: no view {view!r} (views: {list_views(path, hdf5_locking=hdf5_locking)})")
        g = f[_VIEWS_GROUP][view]
        attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in g.attrs.items()}
        attrs["view_key"] = json.loads(attrs["view_key"])
        missing = [s for s in splits if s not in g]
        if missing:
            raise CacheError(f"{path}: view {view!r} lacks split(s) {missing}; rerun extraction")
        return attrs, {s: g[s][:].astype(np.float32) for s in splits}


@dataclass
class CachedTask:
    """What `read_embeddings` returns: the key and, per split, (embeddings float32 (n, d), row int64 (n,)), the
    pooled positions per row, and the split's attributes (n_unknown_tokens, n_chunked, ...)."""

    key: dict[str, Any]
    key_hash: str
    splits: dict[str, tuple[np.ndarray, np.ndarray]]
    n_tokens: dict[str, np.ndarray]
    split_attrs: dict[str, dict[str, Any]] = field(default_factory=dict)


def _open_for_reading(path: Path, hdf5_locking: str) -> Any:
    """h5py.File(path, "r") of a file matching its recorded digest (`geneb.core.integrity.verify` hashes it whole
    first), or CacheError naming the file: CorruptCacheError (changed, truncated, or replaced while checked),
    IncompleteCacheError (HDF5 cannot read it), a plain CacheError with the NFS advice when the lock is refused."""
    h5py = _h5py()
    try:
        before = integrity.identity(path)
        integrity.verify(path)
        f = h5py.File(path, "r", **_locking_kwargs(hdf5_locking))
    except FileNotFoundError:
        raise
    except integrity.IntegrityError as err:
        raise CorruptCacheError(f"{err}; rerun extraction", path) from err
    except OSError as err:
        if _is_lock_error(err):
            raise CacheError(
                f"{path}: cannot lock the file ({err}); on NFS/Lustre set execution.hdf5_locking: off"
            ) from err
        raise IncompleteCacheError(
            f"{path}: not a readable HDF5 embedding file (empty, truncated or foreign: {err}); rerun extraction"
        ) from err
    if integrity.identity(path) != before:
        f.close()
        raise CorruptCacheError(f"{path}: replaced while it was being checked; read it again", path)
    return f


def _read_key_attr(f: Any, path: Path) -> dict[str, Any]:
    if not bool(f.attrs.get("complete", False)):
        raise IncompleteCacheError(f"{path}: embedding cache is incomplete (no 'complete' attribute); rerun extraction")
    try:
        key = json.loads(f.attrs["extraction_key"])
    except (KeyError, TypeError, ValueError) as err:
        raise CacheError(
            f"{path}: the extraction key attribute is missing or not JSON ({err!r}); rerun extraction"
        ) from err
    if not isinstance(key, dict):
        raise CacheError(f"{path}: the extraction key is not a mapping; rerun extraction")
    return key


def _open_lock_tolerant(path: str | os.PathLike[str], hdf5_locking: str) -> Any:
    """h5py.File(path, "r"), retried without locking when the file system refuses the lock (NFS/Lustre)."""
    try:
        return _h5py().File(path, "r", **_locking_kwargs(hdf5_locking))
    except OSError as err:
        if not _is_lock_error(err):
            raise
        return _h5py().File(path, "r", locking=False)


def is_complete_file(path: str | os.PathLike[str], *, hdf5_locking: str = "auto") -> bool:
    """Whether `path` is an HDF5 file with GENEB's `complete` attribute set (`write_embeddings` sets it last).
    False for a missing, truncated or foreign file, or one a writer left half done; never raises. Only the
    attribute is checked (`read_key` and `read_embeddings` also check the key and the arrays).

    hdf5_locking: as `execution.hdf5_locking`. A file system without locks (NFS/Lustre: errno 37/524/11)
    makes the open fail although the file is fine, so a failure that names locking is retried without
    it: only the file's content decides, never the file system.
    """
    try:
        with _open_lock_tolerant(path, hdf5_locking) as f:
            return bool(f.attrs.get("complete", False))
    except (OSError, ValueError, KeyError):
        return False


def read_whole(path: str | os.PathLike[str], *, hdf5_locking: str = "auto") -> int:
    """Read every dataset of a complete cache file without a digest check (a file written before digests, which the
    plan adopts only when this succeeds); returns the bytes of array data read. Raises IncompleteCacheError or
    CacheError naming the file. A refused lock (NFS/Lustre) is retried without locking, as in `is_complete_file`."""
    path, sizes = Path(path), []
    try:
        f = _open_lock_tolerant(path, hdf5_locking)
    except OSError as err:
        raise IncompleteCacheError(f"{path}: not a readable HDF5 embedding file ({err}); rerun extraction") from err
    with f:
        _read_key_attr(f, path)
        try:  # every dataset read whole
            f.visititems(lambda _, obj: sizes.append(obj[()].nbytes) if isinstance(obj, _h5py().Dataset) else None)
        except (OSError, ValueError, KeyError) as err:
            raise CacheError(f"{path}: a dataset cannot be read ({err}); rerun extraction") from err
    return int(sum(sizes))


def read_key(path: str | os.PathLike[str], *, hdf5_locking: str = "auto") -> dict[str, Any]:
    """The extraction key of a complete cache file. Raises IncompleteCacheError if `complete` is missing or
    the file is not readable HDF5, CacheError for a missing or broken key."""
    path = Path(path)
    with _open_for_reading(path, hdf5_locking) as f:
        return _read_key_attr(f, path)


def read_embeddings(
    path: str | os.PathLike[str],
    splits: tuple[str, ...] = ("train", "test"),
    *,
    expected: dict[str, Any] | None = None,
    hdf5_locking: str = "auto",
) -> CachedTask:
    """Read a complete cache file.

    expected: key items that must match (e.g. {"task_data_hash": ..., "model": ...}); a mismatch raises
    CacheKeyMismatchError naming the differing items. Raises IncompleteCacheError for partial, empty or
    truncated files and CacheError for a missing split or key (each naming the file). Embeddings are returned as float32.
    """
    path = Path(path)
    with _open_for_reading(path, hdf5_locking) as f:
        key = _read_key_attr(f, path)
        if expected:
            diff = {k: (key.get(k), v) for k, v in expected.items() if key.get(k) != v}
            if diff:
                detail = "; ".join(f"{k}: file has {a!r}, expected {b!r}" for k, (a, b) in diff.items())
                raise CacheKeyMismatchError(f"{path}: extraction key differs ({detail}); rerun extraction")
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        ntok: dict[str, np.ndarray] = {}
        attrs: dict[str, dict[str, Any]] = {}
        for split in splits:
            if split not in f:
                raise CacheError(f"{path}: split {split!r} missing from embedding cache")
            g = f[split]
            try:
                out[split] = (g["embeddings"][:].astype(np.float32), g["row"][:])
                ntok[split] = g["n_tokens"][:]
                attrs[split] = dict(g.attrs)
            except KeyError as err:
                raise CacheError(f"{path}: split {split!r} lacks a dataset ({err}); rerun extraction") from err
            if len(out[split][0]) != len(out[split][1]):
                raise CacheError(
                    f"{path}: split {split!r} has {len(out[split][0])} embeddings for {len(out[split][1])} row ids"
                )
        if "key_hash" not in f.attrs:
            raise CacheError(f"{path}: no key_hash attribute; rerun extraction")
        return CachedTask(key=key, key_hash=str(f.attrs["key_hash"]), splits=out, n_tokens=ntok, split_attrs=attrs)
