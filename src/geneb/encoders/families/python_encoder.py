"""Family `python`: the user's own encoder and the loading of its code.

Loading a `python` entry's own code: its factory imported with its folder importable, and what its code raises
named by the user's file and line (`geneb.encoders.families.python_encoder` is the family that uses it).

A file entry's folder is importable: while GENEB imports the file, calls the factory and calls `embed`, the folder
is the first entry of sys.path (`_user_code`), so `from helpers import x` finds `<folder>/helpers.py`; the modules
loaded from the folder are kept per folder and code fingerprint, so two entries' `helpers.py` never mix in one
process (`geneb.evaluate` in a notebook). An exception raised in the user's code (import, factory, `embed`) is
re-raised as `UserCodeError` (the original chained), whose message names the innermost frame in the user's
code: `model m: in /path/my_model.py:42, in embed: ValueError: ...` (`_user_frame`); a MemoryError passes as it is.

Family `python`: the user's own encoder, without editing GENEB (docs/adding-a-model.md, "I have my own PyTorch
module").

The registry entry's `load.entry` names a factory (`geneb.registry.python_entry`), called once with the mapping
`load.options`; it returns any object with `embed(sequences: list[str]) -> array (n, d)`: float32 or float64, one
finite row per sequence, in order. Optional attributes: `max_length` (nucleotides; a longer row is cut into
ceil(len / max_length) pieces of as equal a length as possible, each embedded, and the pieces' vectors averaged
weighted by their length, i.e. the mean over every position when each vector is a mean over its piece) and `device`
(recorded). GENEB calls `embed` with at most `batch_size` pieces at a time, in row order.

`PythonEncoder` meets `geneb.encoders.protocol.Encoder`. Its load-time checks (`_LOAD_CHECK_NAMES`): `output` (an
array of one finite float row per sequence, one width, the entry's `extraction.embedding_dim` when set), `determinism`
(the same call twice gives the same vectors) and `batch_invariance` (each probe embedded alone equals it embedded
with its batch mates), each to a relative 1e-5; a failure is `EncoderContractError` naming the model, the check, the
difference and the fix. `wrap_callable` wraps a bare `list[str] -> array` function (`geneb.evaluate`).

A file entry's folder is importable: while GENEB imports the file, calls the factory and calls `embed`, the folder
is the first entry of sys.path (`_user_code`), so `from helpers import x` finds `<folder>/helpers.py`; the modules
loaded from the folder are kept per folder and code fingerprint, so two entries' `helpers.py` never mix in one
process (`geneb.evaluate` in a notebook). An exception raised in the user's code (import, factory, `embed`) is
re-raised as `UserCodeError` (the original chained), whose message names the innermost frame in the user's
code: `model m: in /path/my_model.py:42, in embed: ValueError: ...` (`_user_frame`), so the step's one-line
`GENEB ERROR` and its log say where; a MemoryError passes as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from geneb.core.errors import ExtractionError
from geneb.core.paths import PACKAGE_DIR
from geneb.encoders.engine.batching import split_progress
from geneb.encoders.protocol import EmbedResult, checks_deferred, sequence_batch
from geneb.registry.python_entry import (
    ENTRY_POINT_GROUP,
    EntryRef,
    code_files,
    code_folder,
    entry_fingerprint,
    option_fingerprints,
    parse_entry,
)
from geneb.registry.spec import Extraction, ExtractionSettings


class EncoderContractError(ExtractionError):
    """A python entry's object does not keep the encoder contract (output shape, dtype, finiteness, width,
    determinism, batch-mate invariance); the message names the model, the check, the row and the fix."""


class UserCodeError(ExtractionError):
    """An exception raised in the user's own code (importing the entry's file, its factory, `embed`); the message
    names the model and the innermost frame in the user's code, the original is its `__cause__`."""


#: folders whose frames are never the user's: GENEB's package, the standard library, site-packages
_NOT_USER = tuple(
    {str(PACKAGE_DIR)} | {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def _within(filename: str, folder: str) -> bool:
    return filename == folder or filename.startswith(folder.rstrip(os.sep) + os.sep)


def _is_user_file(filename: str) -> bool:
    """Not GENEB's, the standard library's or an installed package's (any `site-packages` / `dist-packages`)."""
    if filename.startswith("<frozen"):
        return False
    path = os.path.abspath(filename)
    parts = Path(path).parts
    return (
        "site-packages" not in parts and "dist-packages" not in parts and not any(_within(path, d) for d in _NOT_USER)
    )


def _user_frame(err: BaseException, folder: Path | None = None) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost frame of `err`'s traceback in the user's code (`_is_user_file`):
    under `folder` when there is one there (a file entry's folder), else anywhere; a SyntaxError: where the parser
    stopped. None when no frame is the user's (a built-in function handed to geneb.evaluate)."""
    if isinstance(err, SyntaxError) and err.filename:
        return (str(err.filename), int(err.lineno or 0), "<module>")
    # a folder holding GENEB or a venv (a factory at a checkout's root) still names only the user's frames
    frames = [fr for fr in traceback.extract_tb(err.__traceback__) if _is_user_file(fr.filename)]
    for want_folder in ([str(folder)] if folder is not None else []) + [None]:
        for fr in reversed(frames):
            if want_folder is None or _within(os.path.abspath(fr.filename), want_folder):
                return (fr.filename, int(fr.lineno or 0), fr.name)
    return None


def _user_error(err: Exception, model: str, folder: Path | None = None) -> Exception:
    """`err` as a `UserCodeError` naming the model and `_user_frame`, to raise `from err`; a MemoryError, or an
    error GENEB itself raised (ExtractionError), as it is."""
    if isinstance(err, (MemoryError, ExtractionError)):
        return err
    where = _user_frame(err, folder)
    at = f"in {where[0]}:{where[1]}, in {where[2]}: " if where else ""
    text = str(err).strip() or repr(err)
    return UserCodeError(f"model {model}: {at}{type(err).__name__}: {text}")


#: modules loaded from a user's folder, by (folder, code fingerprint), out of sys.modules between calls
_FOLDER_MODULES: dict[tuple[str, str], dict[str, ModuleType]] = {}
#: the module names of the files a file entry imports from its folder (`code_files`), by (folder, fingerprint)
_FOLDER_NAMES: dict[tuple[str, str], frozenset[str]] = {}


def _local_names(ref: EntryRef, root: Path) -> frozenset[str]:
    """Module names of the files `ref`'s code imports from its folder (`pkg/sub.py` -> `pkg.sub`, `pkg/__init__.py`
    -> `pkg`)."""
    names = set()
    for file in code_files(ref):
        parts = file.relative_to(root).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return frozenset(names)


@contextmanager
def _user_code(ref: EntryRef | None, fingerprint: str = "", *, fresh: bool = False) -> Iterator[None]:
    """While the block runs: a file entry's folder (`code_folder`) first on sys.path, the modules loaded from it
    before (under this code fingerprint) in sys.modules, and any other module of a name its code imports from the
    folder (a notebook's own `helpers`) out of the way; afterwards the modules loaded from the folder taken out
    again (kept for the next block) and the others put back. fresh: drop the import system's directory caches
    first (before importing the file). Nothing for a module or entry point (None, or no folder)."""
    folder = code_folder(ref) if ref is not None else None
    if ref is None or folder is None:
        yield
        return
    root = str(folder)
    key = (root, fingerprint)
    if key not in _FOLDER_NAMES:
        _FOLDER_NAMES[key] = _local_names(ref, folder)
    kept = _FOLDER_MODULES.setdefault(key, {})
    saved = {
        name: sys.modules.pop(name)
        for name in set(kept) | _FOLDER_NAMES[key]
        if name in sys.modules and sys.modules[name] is not kept.get(name)
    }
    sys.modules.update(kept)
    before = set(sys.modules)
    sys.path.insert(0, root)
    if fresh:
        importlib.invalidate_caches()
    try:
        yield
    finally:
        if root in sys.path:
            sys.path.remove(root)
        for name in (set(sys.modules) - before) | set(kept):
            if _found_in(name, sys.modules.get(name), folder):
                kept[name] = sys.modules.pop(name)
        sys.modules.update(saved)


def _found_in(name: str, module: ModuleType | None, folder: Path) -> bool:
    """Whether `module` was imported under `name` from `folder` as a sys.path entry (`<folder>/a/b.py` as `a.b`),
    not merely from a file below it (a venv inside the folder: `torch` is not `.venv.lib....torch`)."""
    file = getattr(module, "__file__", None)
    if not file:
        return False
    try:
        parts = Path(os.path.abspath(file)).relative_to(folder).with_suffix("").parts
    except ValueError:
        return False
    return ".".join(parts[:-1] if parts and parts[-1] == "__init__" else parts) == name


def _load_factory(entry: str, *, model: str, expected_sha256: str | None = None) -> Callable[..., Any]:
    """The factory `load.entry` names, imported now: a .py file (loaded under a module name of its own, its folder
    on sys.path while it is imported: `_user_code`), a module, or an entry point of the group geneb.encoders.
    expected_sha256: the fingerprint the plan saw (`python_entry.entry_fingerprint`: the file and the helpers it
    imports from its folder); code edited since is refused. Raises EncoderContractError naming the model for a
    missing factory or changed code, and UserCodeError (naming the user's file and line) for what importing the
    code raises."""
    ref = parse_entry(entry, model=model)
    if ref.kind == "file":
        if ref.file is None:
            raise EncoderContractError(f"model {model}: load.entry file {entry.rsplit(':', 1)[0]} does not exist")
        fingerprint = entry_fingerprint(entry, model=model)
        if expected_sha256 is not None and fingerprint != expected_sha256:
            raise EncoderContractError(
                f"model {model}: {ref.file} or a file it imports from its folder changed after the run was planned "
                f"(fingerprint now {fingerprint[:12]}, planned {expected_sha256[:12]}); run again so that its new "
                "content gets its own cache"
            )
        name = f"geneb_user_{fingerprint[:12]}_{ref.file.stem}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, ref.file)
            if spec is None or spec.loader is None:
                raise EncoderContractError(f"model {model}: cannot load {ref.file} as Python code")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                with _user_code(ref, fingerprint, fresh=True):
                    spec.loader.exec_module(module)
            except Exception as err:
                sys.modules.pop(name, None)
                raise _user_error(err, model, code_folder(ref)) from err
    else:
        try:
            module = importlib.import_module(ref.module)
        except Exception as err:
            if isinstance(err, ModuleNotFoundError) and err.name == ref.module:
                raise  # the module itself is not there: no user frame to name
            raise _user_error(err, model) from err
    factory = getattr(module, ref.factory, None)
    if not callable(factory):
        where = ref.file if ref.kind == "file" else ref.module
        raise EncoderContractError(
            f"model {model}: {where} has no callable {ref.factory!r}"
            + (f" (entry point {ref.name!r} of {ENTRY_POINT_GROUP})" if ref.name else "")
        )
    return factory


#: the load-time checks, in the order they run
_LOAD_CHECK_NAMES = ("output", "determinism", "batch_invariance")
#: relative tolerance of the determinism and batch-mate checks (to the largest |value| of the probe vectors)
_CHECK_RTOL = 1e-5
#: the probe sequences of the load-time checks: different lengths, one with N
_PROBES = ("ACGT" * 10, "GATTACA" * 20, "NNNNN" + "ACGGTTCA" * 12, "TTGACA" * 3)


class _CallableModel:
    """A bare function `list[str] -> array (n, d)` seen as an object with `embed`."""

    def __init__(self, fn: Callable[[list[str]], Any]) -> None:
        self.embed = fn


def wrap_callable(model: Any) -> Any:
    """`model` itself when it has a callable `embed`, a wrapper when it is a callable `list[str] -> array`.
    Raises TypeError naming what was given and what is expected."""
    if callable(getattr(model, "embed", None)):
        return model
    if callable(model):
        return _CallableModel(model)
    raise TypeError(
        f"a model must be a registry id, a callable list[str] -> array (n, d), or an object with embed(); "
        f"got {type(model).__name__}"
    )


def _piece_bounds(length: int, max_length: int | None) -> list[tuple[int, int]]:
    """[(start, end)] of the pieces a row of `length` nucleotides is cut into: one piece when it fits, else
    ceil(length / max_length) pieces whose lengths differ by at most one."""
    if not max_length or length <= max_length:
        return [(0, length)]
    n = math.ceil(length / max_length)
    edges = [round(i * length / n) for i in range(n + 1)]
    return list(zip(edges[:-1], edges[1:]))


class PythonEncoder:
    """The encoder of a python entry, or of an object/callable handed to `geneb.evaluate`.

    obj: the object with `embed`; model: the id named in errors; batch_size: pieces per `embed` call;
    embedding_dim: the width the vectors must have (None: any, one width for every call); identity_extra: what
    identifies the code (entry, fingerprint, options) in `identity()`; code, fingerprint: the entry and its code
    fingerprint, whose folder is on sys.path during each `embed` call (`_user_code`; None: nothing added). An
    exception from the object's `embed` is raised as UserCodeError naming the user's file and line. Runs its
    load-time checks on construction unless they are deferred (`geneb.encoders.protocol.deferred_load_checks`).
    progress: log rows done, rate and time left of a long call (geneb.encoders.engine.batching)."""

    load_check_names: ClassVar[tuple[str, ...]] = _LOAD_CHECK_NAMES

    def __init__(
        self,
        obj: Any,
        *,
        model: str,
        batch_size: int = 64,
        embedding_dim: int | None = None,
        identity_extra: Mapping[str, Any] | None = None,
        progress: bool = True,
        code: EntryRef | None = None,
        fingerprint: str = "",
    ) -> None:
        self.obj = wrap_callable(obj)
        self.code = code
        self.code_dir = code_folder(code) if code is not None else None
        self._fingerprint = fingerprint
        self.model_id = model
        self.batch_size = int(batch_size)
        self.progress = progress  # log rows done, rate and time left of a long call (geneb.encoders.engine.batching)
        self.embedding_dim = embedding_dim
        self.extraction: Extraction | None = None  # no token options: GENEB cuts rows by nucleotides
        self._identity_extra = dict(identity_extra or {})
        self._width: int | None = embedding_dim
        max_length = getattr(self.obj, "max_length", None)
        if max_length is not None and (
            not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1
        ):
            raise EncoderContractError(
                f"model {model}: max_length must be a positive int (nucleotides), got {max_length!r}"
            )
        self.max_length: int | None = max_length
        if not checks_deferred():
            self.run_load_checks()

    def identity(self) -> dict[str, Any]:
        """What defines the vectors beyond the registry settings: the object's class, max_length, device, and the
        entry's fingerprint and options."""
        cls = type(self.obj)
        return {
            "encoder": "python",
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "max_length": self.max_length,
            "device": str(getattr(self.obj, "device", "n/a")),
            **self._identity_extra,
        }

    def _call(self, batch: list[str], rows: list[int]) -> np.ndarray:
        """One `embed` call, its output checked: (len(batch), d) float32/float64, finite, the model's width."""
        try:
            with _user_code(self.code, self._fingerprint):
                out = self.obj.embed(list(batch))
        except Exception as err:
            raise _user_error(err, self.model_id, self.code_dir) from err
        if hasattr(out, "detach"):  # a torch tensor: the contract asks for numpy, but say it plainly if not on CPU
            out = out.detach().cpu().numpy()
        arr = np.asarray(out)
        where = f"model {self.model_id}"
        if arr.dtype not in (np.float32, np.float64):
            raise EncoderContractError(
                f"{where}: embed() returned dtype {arr.dtype}; return float32 or float64 (n, d) (rows {rows[:3]} ...)"
            )
        if arr.ndim != 2 or arr.shape[0] != len(batch):
            raise EncoderContractError(
                f"{where}: embed() of {len(batch)} sequences returned shape {arr.shape}; expected ({len(batch)}, d), "
                "one row per sequence in order"
            )
        bad = ~np.isfinite(arr)
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise EncoderContractError(
                f"{where}, row {rows[i]}: embed() returned {arr[i, j]} at column {j}; every value must be finite"
            )
        if self._width is None:
            self._width = int(arr.shape[1])
        elif arr.shape[1] != self._width:
            what = "extraction.embedding_dim" if self.embedding_dim is not None else "earlier calls"
            raise EncoderContractError(
                f"{where}: embed() returned width {arr.shape[1]}, {what} gave {self._width} (rows {rows[:3]} ...)"
            )
        return arr.astype(np.float64)

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """float32 (n, d) vectors of `sequences` in order (`desc` names the call's progress lines). Rows over `max_length` are cut and
        their pieces' vectors averaged by length (module docstring). Raises TypeError for a bare string and
        EncoderContractError for output that breaks the contract, naming the row."""
        sequences, rows = sequence_batch(sequences, rows, model=self.model_id)
        pieces: list[str] = []
        owner: list[int] = []
        weight: list[int] = []
        n_chunks = np.zeros(len(sequences), np.int32)
        for i, seq in enumerate(sequences):
            bounds = _piece_bounds(len(seq), self.max_length)
            n_chunks[i] = len(bounds)
            for a, b in bounds:
                pieces.append(seq[a:b])
                owner.append(i)
                weight.append(b - a)
        bar = split_progress(desc or f"model {self.model_id}", owner, weight, enabled=self.progress)
        parts = []
        try:
            for s in range(0, len(pieces), self.batch_size):
                parts.append(
                    self._call(pieces[s : s + self.batch_size], [rows[o] for o in owner[s : s + self.batch_size]])
                )
                bar.done(range(s, min(s + self.batch_size, len(pieces))))
        finally:
            bar.close()
        vectors = np.concatenate(parts)
        if (n_chunks == 1).all():
            out = vectors
        else:
            out = np.zeros((len(sequences), vectors.shape[1]))
            np.add.at(out, owner, vectors * np.asarray(weight, float)[:, None])
            out /= np.asarray([len(s) for s in sequences], float)[:, None]
        n = len(sequences)
        lengths = np.asarray([len(s) for s in sequences], np.int32)
        return EmbedResult(out.astype(np.float32), lengths, n_chunks, np.zeros(n, bool))

    def _check(self, name: str, a: np.ndarray, b: np.ndarray, fix: str) -> None:
        scale = max(float(np.abs(a).max(initial=0.0)), 1e-12)
        diff = float(np.abs(a - b).max(initial=0.0)) / scale
        if not diff <= _CHECK_RTOL:
            raise EncoderContractError(
                f"model {self.model_id}: load-time check {name} failed: vectors differ by {diff:.3g} (relative to "
                f"the largest value; limit {_CHECK_RTOL:g}). {fix}"
            )

    def run_load_checks(self) -> tuple[str, ...]:
        """Run `_LOAD_CHECK_NAMES` on `_PROBES`; returns their names, raises EncoderContractError at the first that
        fails (the `output` check raises from `embed` itself)."""
        probes = list(_PROBES)
        first = self.embed(probes).embeddings  # output: shape, dtype, finite, width
        self._check(
            "determinism",
            first,
            self.embed(probes).embeddings,
            "The same sequences must give the same vectors: switch the module to eval mode (dropout off), seed "
            "any randomness, and keep no state between calls.",
        )
        alone = np.concatenate([self.embed([p]).embeddings for p in probes])
        self._check(
            "batch_invariance",
            alone,
            first,
            "A sequence's vector must not depend on its batch mates: mask the padding you add (or embed one "
            "sequence at a time), and use no batch statistics (BatchNorm in eval mode).",
        )
        return _LOAD_CHECK_NAMES


def from_settings(
    settings: ExtractionSettings, *, device: str = "cpu", batch_size: int = 64, progress: bool = True, **_: Any
) -> PythonEncoder:
    """Adapter entry point (geneb.registry.families): import the entry's factory, call it with `load.options`
    (the file's folder on sys.path) and wrap the object. `device` is not passed to the factory (put it in
    `load.options` if the code takes one). Raises EncoderContractError naming the model for a missing factory,
    changed code, a file or folder an option names whose content changed after the run was planned
    (`load.options_sha256`), or an object without `embed`; UserCodeError for what the factory raises."""
    load = settings.load
    factory = _load_factory(str(load.entry), model=settings.model, expected_sha256=load.entry_sha256)
    if load.entry_sha256 is not None:  # planned settings: the files the options name are what the plan hashed
        now = option_fingerprints(load.options, model=settings.model)
        for key, want in (load.options_sha256 or {}).items():
            if now.get(key) != want:
                raise EncoderContractError(
                    f"model {settings.model}: the file or folder load.options.{key} names changed after the run was "
                    f"planned (sha256 now {str(now.get(key))[:12]}, planned {want[:12]}); run again so that its new "
                    "content gets its own cache"
                )
    ref = parse_entry(str(load.entry), model=settings.model)
    folder, fingerprint = code_folder(ref), load.entry_sha256 or ""
    if folder is not None and not fingerprint:
        fingerprint = entry_fingerprint(str(load.entry), model=settings.model)
    try:
        with _user_code(ref, fingerprint):
            obj = factory(dict(load.options or {}))
    except Exception as err:
        raise _user_error(err, settings.model, folder) from err
    if not callable(getattr(obj, "embed", None)):
        raise EncoderContractError(
            f"model {settings.model}: the factory of {load.entry!r} returned a {type(obj).__name__} without an "
            "embed(list[str]) method; return an object with one (docs/adding-a-model.md)"
        )
    return PythonEncoder(
        obj,
        model=settings.model,
        batch_size=batch_size,
        embedding_dim=settings.extraction.embedding_dim,
        identity_extra={
            "entry_sha256": load.entry_sha256,
            "options": dict(load.options or {}),
            **({"options_sha256": dict(load.options_sha256)} if load.options_sha256 else {}),
        },
        code=ref,
        fingerprint=fingerprint,
        progress=progress,
    )
