"""Loading a `python` entry's own code: its factory imported with its folder importable, and what its code raises
named by the user's file and line (`geneb.encoders.families.python_encoder` is the family that uses it).

A file entry's folder is importable: while GENEB imports the file, calls the factory and calls `embed`, the folder
is the first entry of sys.path (`user_code`), so `from helpers import x` finds `<folder>/helpers.py`; the modules
loaded from the folder are kept per folder and code fingerprint, so two entries' `helpers.py` never mix in one
process (`geneb.evaluate` in a notebook). An exception raised in the user's code (import, factory, `embed`) is
re-raised as `UserCodeError` (the original chained), whose message names the innermost frame in the user's
code: `model m: in /path/my_model.py:42, in embed: ValueError: ...` (`user_frame`); a MemoryError passes as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from geneb.core.errors import ExtractionError
from geneb.core.paths import PACKAGE_DIR
from geneb.registry.python_entry import (
    ENTRY_POINT_GROUP,
    EntryRef,
    code_files,
    code_folder,
    entry_fingerprint,
    parse_entry,
)


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


def user_frame(err: BaseException, folder: Path | None = None) -> tuple[str, int, str] | None:
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


def user_error(err: Exception, model: str, folder: Path | None = None) -> Exception:
    """`err` as a `UserCodeError` naming the model and `user_frame`, to raise `from err`; a MemoryError, or an
    error GENEB itself raised (ExtractionError), as it is."""
    if isinstance(err, (MemoryError, ExtractionError)):
        return err
    where = user_frame(err, folder)
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
def user_code(ref: EntryRef | None, fingerprint: str = "", *, fresh: bool = False) -> Iterator[None]:
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


def load_factory(entry: str, *, model: str, expected_sha256: str | None = None) -> Callable[..., Any]:
    """The factory `load.entry` names, imported now: a .py file (loaded under a module name of its own, its folder
    on sys.path while it is imported: `user_code`), a module, or an entry point of the group geneb.encoders.
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
                with user_code(ref, fingerprint, fresh=True):
                    spec.loader.exec_module(module)
            except Exception as err:
                sys.modules.pop(name, None)
                raise user_error(err, model, code_folder(ref)) from err
    else:
        try:
            module = importlib.import_module(ref.module)
        except Exception as err:
            if isinstance(err, ModuleNotFoundError) and err.name == ref.module:
                raise  # the module itself is not there: no user frame to name
            raise user_error(err, model) from err
    factory = getattr(module, ref.factory, None)
    if not callable(factory):
        where = ref.file if ref.kind == "file" else ref.module
        raise EncoderContractError(
            f"model {model}: {where} has no callable {ref.factory!r}"
            + (f" (entry point {ref.name!r} of {ENTRY_POINT_GROUP})" if ref.name else "")
        )
    return factory
