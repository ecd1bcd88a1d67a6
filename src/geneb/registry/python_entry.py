"""Entries a user writes without editing GENEB (`family: python`, `precomputed`), the files their options
name, and content hashes of local model folders (torch-free).

Content hashes of local model folders (torch-free, so the registry can fingerprint a local checkpoint
while Snakemake builds the DAG without importing torch).

The files and folders a `python` entry's options name (torch-free, import-free): which option strings name a
path, their content's sha256 (`_path_sha256`, memoised per process), the options with those paths masked for the
settings hash, and the options that end like a model file but name nothing (`geneb.registry.python_entry` says
how the settings hash uses them).

Registry entries a user writes without editing GENEB: `family: python` (their own encoder, a factory in a file,
an importable module or an installed package) and `family: precomputed` (vectors computed elsewhere).

Torch-free and import-free: nothing here imports the user's code (the plan reads these entries while Snakemake
builds the DAG); the factory is imported by the adapter, `geneb.encoders.families.python_encoder`, in the job.

`load.entry` names the factory in one of three forms (docs/adding-a-model.md, "I have my own PyTorch module"):

* `path/to/file.py:factory`: a Python file; a relative path resolves against the directory of the registry file
  that declares the entry (`resolve_entry_paths`, called by `load_registry`);
* `package.module:factory`: an importable module, found on `sys.path` without importing it;
* `name` (no colon): an entry point of the group `geneb.encoders` (`ENTRY_POINT_GROUP`) of an installed package,
  whose value is `module:factory`.

The settings hash sees every file the model reads, by content and never by path (`hash_view`): a moved file is
the same model, an edited one a new one.

* The code: `load.entry_sha256` (set in the extraction settings only, `entry_fingerprint`) covers the factory's
  source file and the Python files it imports from its own folder tree, transitively (`_local_imports`: the
  `import` / `from ... import` statements read with `ast`, anywhere in the file, resolved against the factory's
  folder as the first entry of sys.path, the folder the adapter puts there; site-packages and the standard
  library are not in it). A file of the folder that no import reaches (a script, a notebook export) is not.
* The files the options name: `load.options_sha256` (`option_fingerprints`) maps each option (`weights`,
  `a.b`, `paths[0]`) whose string value names an existing file or folder to its content's sha256 (a folder: its
  files' relative paths and contents, sorted; hidden files and `__pycache__` left out). A relative value is
  looked for in the folder of the registry file (and made absolute there by `resolve_entry_paths`, so the factory
  reads what was hashed), else in the working directory. A value that ends like a model file
  (`files.MODEL_FILE_SUFFIXES`: `.pt`, `.safetensors`, `.json`, ...) and names nothing is an EntryError naming the
  model, the option and the path. Any other string (a hub id, a species) is an option like a number.

`load.cpu_only: true` says the encoder runs on CPU only: its extraction jobs ask for no GPU.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geneb.core.provenance import cached_file_sha256

_WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".ckpt", ".pth"}


def _sha256_files(files: list[Path], root: Path) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(root)).encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def weights_hash(folder: str | os.PathLike[str]) -> str:
    """sha256 over the weight files (*.safetensors, *.bin, *.pt, *.ckpt, *.pth) of a model folder, in name
    order. Raises FileNotFoundError when there are none."""
    root = Path(folder)
    files = sorted(p for p in root.iterdir() if p.suffix in _WEIGHT_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"no weight files in {folder}")
    return _sha256_files(files, root)


#: the files of a model folder that a model reads, by suffix: weights, configs and tokenizers, remote code
_MODEL_FILE_SUFFIXES = _WEIGHT_SUFFIXES | {
    ".h5",
    ".msgpack",
    ".npz",
    ".npy",
    ".onnx",
    ".gguf",
    ".json",
    ".yaml",
    ".yml",
    ".model",
    ".vocab",
    ".tiktoken",
    ".py",
}
#: plain-text files a tokenizer reads (`vocab.txt`, `merges.txt`, `dict.txt`, `tokens.txt`); other .txt files are
#: notes
_TOKENIZER_TEXT = re.compile(r"(vocab|merges|dict|tokens?)", re.IGNORECASE)


def _is_model_file(relative: Path) -> bool:
    """Whether a file of a model folder (`relative` to the folder) is one a model reads: weights, configs,
    tokenizer files or remote code (MODEL_FILE_SUFFIXES, and .txt files named like a vocabulary or merges list).
    Documentation, notes, images, logs and hidden files are not: adding a README.md or NOTES.txt to a checkpoint
    folder leaves its fingerprint, and so its embedding cache, as it was."""
    if any(part.startswith(".") for part in relative.parts):
        return False
    if relative.suffix.lower() == ".txt":
        return bool(_TOKENIZER_TEXT.search(relative.stem))
    return relative.suffix.lower() in _MODEL_FILE_SUFFIXES


_FINGERPRINTS: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """sha256 over the files below `folder` that a model reads (`_is_model_file`: weights, configs, tokenizer,
    remote code), by relative path, memoised per process on (names, sizes, mtimes). Identifies a local checkpoint
    in the extraction settings, so new weights give a new cache path and a note beside them does not. Raises
    FileNotFoundError when the folder does not exist (a folder without model files is refused when its model
    loads, naming what is missing)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"local model folder {folder} does not exist")
    files = sorted(p for p in root.rglob("*") if p.is_file() and _is_model_file(p.relative_to(root)))
    stamp = tuple((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root.resolve()), stamp)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = _sha256_files(files, root)
    return _FINGERPRINTS[key]


def _absolute_options(value: Any, base_dir: Path) -> Any:
    """`value` (an options mapping, list or leaf) with every relative string that names an existing file or folder
    under `base_dir` made absolute there; everything else as it is."""
    if isinstance(value, dict):
        return {k: _absolute_options(v, base_dir) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute_options(v, base_dir) for v in value]
    if isinstance(value, str) and _could_be_path(value):
        path = Path(os.path.expanduser(value))
        if not path.is_absolute() and (base_dir / path).exists():
            return os.path.normpath(base_dir / path)
    return value


def _could_be_path(value: str) -> bool:
    """Whether an option string may name a file: not empty, not only dots (`.`, `..`: a folder of everything),
    not a URL."""
    return bool(value.strip(".")) and "://" not in value and "\n" not in value


#: what `hash_view` puts in place of an option's path (its content is in `load.options_sha256`)
_PATH_PLACEHOLDER = "<path: load.options_sha256>"


def _option_strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(option key, string) of every string leaf of an options mapping: `weights`, `a.b`, `paths[0]`."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _option_strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _option_strings(v, f"{key}[{i}]")
    elif isinstance(value, str):
        yield key, value


def _masked_options(value: Any, paths: Mapping[str, str], key: str = "") -> Any:
    if isinstance(value, Mapping):
        return {k: _masked_options(v, paths, f"{key}.{k}" if key else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_options(v, paths, f"{key}[{i}]") for i, v in enumerate(value)]
    return _PATH_PLACEHOLDER if isinstance(value, str) and key in paths else value


def _path_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of what a path holds: a file's bytes; a folder's files (below it, hidden ones and
    `__pycache__` left out), each as its relative POSIX path and its bytes' sha256, in path order. Memoised per
    process on (resolved path, size, mtime) of each file. Raises FileNotFoundError when nothing is there."""
    root = Path(path)
    if root.is_file():
        return cached_file_sha256(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{path} does not exist")
    h = hashlib.sha256(b"folder")
    files = sorted(
        (p.relative_to(root).as_posix(), p)
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(root).parts)
    )
    for rel, p in files:
        h.update(f"\0{rel}\0{cached_file_sha256(p)}".encode())
    return h.hexdigest()


def _missing_option_files(options: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """[(option key, value)] of the string options that end like a model file (`_MODEL_FILE_SUFFIXES`) and name
    nothing (module docstring)."""
    return [
        (key, value)
        for key, value in _option_strings(options or {})
        if _could_be_path(value)
        and Path(os.path.expanduser(value)).suffix.lower() in _MODEL_FILE_SUFFIXES
        and not Path(os.path.expanduser(value)).exists()
    ]


def _missing_option_message(model: str, missing: list[tuple[str, str]]) -> str:
    """The reason naming the model and each option and path of `_missing_option_files`."""
    named = "; ".join(f"load.options.{key} names {value!r}" for key, value in missing)
    return (
        f"model {model}: {named}, and there is no such file (a relative path is looked for in the folder of the "
        f"registry file, then in the working directory {os.getcwd()})"
    )


PYTHON = "python"
PRECOMPUTED = "precomputed"
#: the families whose entries need nothing but `family` and what they load (display name and facts optional)
USER_FAMILIES = (PYTHON, PRECOMPUTED)
#: the entry-point group pip-installed encoder packages register their factories in
ENTRY_POINT_GROUP = "geneb.encoders"
#: the facts an entry of a user family may leave out, and what they default to (`ModelSpec.from_mapping`)
FACT_DEFAULTS = {
    "architecture_family": "unknown",
    "tokenizer_type": "unknown",
    "pretraining_domain": "unknown",
    "license": "unknown",
}


class EntryError(ValueError):
    """A `load.entry` that cannot be found or read (the message names the model, the entry and the fix)."""


@dataclass(frozen=True)
class EntryRef:
    """Where a python entry's factory is. kind: file | module | entry-point; module: the module name (file: a
    name GENEB gives the loaded file); factory: the attribute called with `load.options`; file: the source file
    whose content identifies it (None: not found); name: the entry point's name (kind entry-point)."""

    kind: str
    module: str
    factory: str
    file: Path | None
    name: str = ""

    @property
    def hash_label(self) -> str:
        """What the settings hash takes of the entry besides the file's content: no path, ever."""
        if self.kind == "file":
            return f"file:{self.factory}"
        return f"{self.kind}:{self.name or self.module}:{self.factory}"


def _is_file_entry(entry: str) -> bool:
    return entry.rsplit(":", 1)[0].endswith(".py")


def resolve_entry_paths(data: Mapping[str, Any], base_dir: str | os.PathLike[str]) -> None:
    """Make the relative file path of every python entry's `load.entry` absolute against `base_dir` (the folder of
    the registry file that declares it), and give a python entry without a source `{kind: builtin}`, in place;
    other entries are left as they are."""
    for spec in (data.get("models") or {}).values():
        if not isinstance(spec, dict) or spec.get("family") != PYTHON:
            continue
        spec.setdefault("source", {"kind": "builtin"})
        load = spec.get("load")
        entry = load.get("entry") if isinstance(load, dict) else None
        if isinstance(load, dict) and isinstance(entry, str) and _is_file_entry(entry):
            file, factory = entry.rsplit(":", 1)
            path = Path(os.path.expanduser(file))
            if not path.is_absolute():
                load["entry"] = f"{os.path.normpath(Path(base_dir).absolute() / path)}:{factory}"
        if isinstance(load, dict) and isinstance(load.get("options"), dict):
            load["options"] = _absolute_options(load["options"], Path(base_dir).absolute())


def _module_file(module: str) -> Path | None:
    """The source file of `module` found on sys.path without importing anything (a package: its __init__)."""
    search: list[str] | None = None
    spec = None
    parts = module.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and os.path.isfile(origin) else None


def parse_entry(entry: str, *, model: str = "?") -> EntryRef:
    """The `EntryRef` of `load.entry` (module docstring). Raises EntryError naming the model for an entry point
    that no installed package provides, or a string of none of the three forms."""
    if ":" not in entry:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == entry]
        if not found:
            known = sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
            raise EntryError(
                f"model {model}: load.entry {entry!r} is no entry point of the group {ENTRY_POINT_GROUP!r} "
                f"(installed: {known or 'none'}); give `<file.py>:<factory>`, `<module>:<factory>`, or install the "
                "package that registers it"
            )
        module, _, factory = found[0].value.partition(":")
        return EntryRef("entry-point", module.strip(), factory.strip(), _module_file(module.strip()), entry)
    target, factory = entry.rsplit(":", 1)
    if not factory.isidentifier() or not target:
        raise EntryError(
            f"model {model}: load.entry {entry!r} must be `<file.py or module>:<factory>` (the factory a Python name)"
        )
    if _is_file_entry(entry):
        path = Path(target)
        return EntryRef("file", f"geneb_user_{path.stem}", factory, path if path.is_file() else None)
    if not all(part.isidentifier() for part in target.split(".")):
        raise EntryError(f"model {model}: load.entry {entry!r}: {target!r} is neither a .py file nor a module name")
    return EntryRef("module", target, factory, _module_file(target))


def entry_problems(model: str, spec: Mapping[str, Any]) -> list[str]:
    """The cross-field problems of a user-family entry (a registry mapping; [] for other families): a python entry
    needs `load.entry` of a valid form; a precomputed one a `source` of kind local with a path. Torch-free."""
    family = spec.get("family")
    if family == PYTHON:
        entry = (spec.get("load") or {}).get("entry")
        if not entry:
            return [f"model {model}: family python needs load.entry (`<file.py or module>:<factory>`)"]
        if ":" in entry:
            try:
                parse_entry(entry, model=model)
            except EntryError as err:
                return [str(err)]
    if family == PRECOMPUTED and (spec.get("source") or {}).get("kind") != "local":
        return [f"model {model}: family precomputed needs source: {{kind: local, path: <folder of vectors>}}"]
    return []


def entry_refusal(model: str, entry: str | None, options: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
    """(short label, full reason) when a python entry's factory cannot be found now, or an option names a model
    file that is not there (`_missing_option_files`), else None."""
    try:
        ref = parse_entry(entry or "", model=model)
    except EntryError as err:
        return ("entry not found", str(err))
    if ref.file is None:
        where = "file" if ref.kind == "file" else "module"
        return (
            f"entry {where} not found",
            f"model {model}: load.entry {entry!r}: the {where} is not there (a relative file path resolves against "
            "the folder of the registry file that declares the entry; a module must be importable here)",
        )
    missing = _missing_option_files(options)
    if missing:
        return ("option file not found", _missing_option_message(model, missing))
    return None


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _module_candidates(name: str, search: Path) -> list[Path]:
    """The files importing dotted `name` from the folder `search` (a sys.path entry) runs: each package's
    `__init__.py` on the way and the module's own `.py` (or `__init__.py`); [] as soon as a part is not there."""
    files: list[Path] = []
    folder = search
    for part in name.split("."):
        if not part.isidentifier():
            return files
        if (folder / part / "__init__.py").is_file():
            files.append(folder / part / "__init__.py")
            folder = folder / part
        elif (folder / f"{part}.py").is_file():
            files.append(folder / f"{part}.py")
            return files
        elif (folder / part).is_dir():  # a namespace package
            folder = folder / part
        else:
            return files
    return files


def _imports_of(file: Path, search: Path) -> list[Path]:
    """The files under `search` that the import statements of `file` name (one step, not transitive)."""
    try:
        tree = ast.parse(file.read_bytes(), filename=str(file))
    except (SyntaxError, ValueError):
        return []  # importing it raises, and says where; nothing more to hash than the file itself
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _module_candidates(alias.name, search)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the file's package, `level - 1` folders up
                base = file.parent
                for _ in range(node.level - 1):
                    base = base.parent
                if not _inside(base, search):
                    continue
                prefix = ".".join(base.relative_to(search).parts)
                module = ".".join(p for p in (prefix, node.module or "") if p)
            else:
                module = node.module or ""
            if module:
                found += _module_candidates(module, search)
            for alias in node.names:  # `from pkg import sub` may name a submodule
                if alias.name != "*":
                    found += _module_candidates(f"{module}.{alias.name}" if module else alias.name, search)
    return found


def _local_imports(
    file: str | os.PathLike[str], search: str | os.PathLike[str], within: str | os.PathLike[str]
) -> list[Path]:
    """The Python files under `within` that `file` imports, transitively, resolved statically: every `import` and
    `from ... import` statement of each file (`ast`, wherever it stands: a function body, a try block), looked up
    from the folder `search` as the first sys.path entry, as the adapter imports the file (`from helpers import x`
    -> `<search>/helpers.py`; `import pkg.sub` -> `pkg/__init__.py` and `pkg/sub.py`; relative imports from a
    package's own folder). Sorted, `file` itself left out. Not seen: imports made by name at run time
    (`importlib.import_module(variable)`), and data files the code opens (name those in `load.options`)."""
    start, search_dir, root = Path(file).resolve(), Path(search).resolve(), Path(within).resolve()
    seen: set[Path] = {start}
    todo = [start]
    while todo:
        for dep in _imports_of(todo.pop(), search_dir):
            dep = dep.resolve()
            if dep not in seen and _inside(dep, root):
                seen.add(dep)
                todo.append(dep)
    return sorted(seen - {start})


def code_folder(ref: EntryRef) -> Path | None:
    """The folder a file entry's factory imports its helpers from (the file's own folder; the adapter puts it on
    sys.path while it imports and calls the code); None for a module or entry point (importable already)."""
    return ref.file.parent.resolve() if ref.kind == "file" and ref.file is not None else None


def _module_roots(ref: EntryRef) -> tuple[Path, Path] | None:
    """(the sys.path entry a module entry is found in, the folder whose files count as its own: the top-level
    package's folder, or for a top-level plain module its folder unless that is a site-packages folder)."""
    assert ref.file is not None
    parts = ref.module.split(".")
    up = len(parts) if ref.file.name == "__init__.py" else len(parts) - 1
    search = ref.file.parent.resolve()
    for _ in range(up):
        search = search.parent
    if len(parts) > 1 or ref.file.name == "__init__.py":
        return search, search / parts[0]
    if search.name in ("site-packages", "dist-packages"):
        return None
    return search, search


def code_files(ref: EntryRef) -> list[Path]:
    """The files of an entry's own code besides `ref.file`: what it imports from its folder tree (`_local_imports`;
    a module entry: from its top-level package). [] when the source file is not found."""
    if ref.file is None:
        return []
    if ref.kind == "file":
        folder = ref.file.parent
        return _local_imports(ref.file, folder, folder)
    roots = _module_roots(ref)
    return _local_imports(ref.file, *roots) if roots else []


def entry_fingerprint(entry: str, *, model: str = "?") -> str:
    """sha256 identifying a python entry's code: its source file's content, the relative path and content of every
    file it imports from its own folder tree (`code_files`; none: the file's content alone, as before helpers were
    hashed) and, for a module of an installed distribution, that distribution's name and version. Raises
    EntryError when the source file is not found."""
    ref = parse_entry(entry, model=model)
    if ref.file is None:
        raise EntryError(f"model {model}: load.entry {entry!r}: its source file is not found")
    h = hashlib.sha256(cached_file_sha256(ref.file).encode())
    base = ref.file.resolve().parent
    for helper in code_files(ref):
        rel = os.path.relpath(helper, base)
        h.update(f"\0{rel}\0{cached_file_sha256(helper)}".encode())
    if ref.kind != "file":
        from importlib.metadata import packages_distributions, version

        for dist in sorted(set(packages_distributions().get(ref.module.split(".")[0], []))):
            h.update(f"{dist}=={version(dist)}".encode())
    return h.hexdigest()


def option_fingerprints(options: Mapping[str, Any] | None, *, model: str = "?") -> dict[str, str]:
    """{option key: sha256 of its content} of every string option (nested ones too, module docstring) that names
    an existing file or folder: absolute, or relative to the working directory (a registry-relative one was made
    absolute by `resolve_entry_paths`). Raises EntryError naming the model, the option and the path for a value
    that ends like a model file (`_MODEL_FILE_SUFFIXES`) but names nothing."""
    missing = _missing_option_files(options)
    if missing:
        raise EntryError(_missing_option_message(model, missing))
    out: dict[str, str] = {}
    for key, value in _option_strings(options or {}):
        path = Path(os.path.expanduser(value))
        if _could_be_path(value) and path.exists():
            out[key] = _path_sha256(path)
    return out


def hash_view(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the settings hash takes of a user-family entry's settings: a python entry's `load.entry` reduced to its
    form and factory (its code's content is `load.entry_sha256`), each option that names a path reduced to
    `_PATH_PLACEHOLDER` (its content is `load.options_sha256`), `load.cpu_only` left out (how it runs, as
    execution.device); a precomputed entry's `source.path` left out (where the vectors are, not what they are:
    each task's files are its extraction job's inputs, so a changed file reruns that task). Other settings as
    they are."""
    family = settings.get("family")
    if family == PYTHON:
        load = dict(settings.get("load") or {})
        if load.get("entry"):
            load["entry"] = parse_entry(load["entry"], model=str(settings.get("model"))).hash_label
        if load.get("options_sha256") and load.get("options") is not None:
            load["options"] = _masked_options(load["options"], load["options_sha256"])
        load.pop("cpu_only", None)
        return {**settings, "load": load}
    if family == PRECOMPUTED:
        return {**settings, "source": {k: v for k, v in (settings.get("source") or {}).items() if k != "path"}}
    return settings


def cpu_only(settings: Mapping[str, Any]) -> bool:
    """Whether resolved settings say the encoder runs on CPU only (`load.cpu_only`; a precomputed entry always)."""
    return settings.get("family") == PRECOMPUTED or bool((settings.get("load") or {}).get("cpu_only"))


def precomputed_inputs(settings: Mapping[str, Any], task: str) -> list[str]:
    """The files of `task` a precomputed entry reads (the extraction job's inputs, so a changed file reruns that
    task): `<folder>/<task>.h5` when it exists, else `<folder>/<task>/{train,test}.npy`."""
    folder = Path((settings.get("source") or {}).get("path") or ".")
    h5 = folder / f"{task}.h5"
    if h5.exists():
        return [str(h5)]
    return [str(folder / task / f"{split}.npy") for split in ("train", "test")]
