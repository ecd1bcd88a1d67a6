"""A python entry's cache key sees every file the model reads (geneb.registry.python_entry): the files its options
name and the Python files its factory imports from its own folder, by content, never by path."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from geneb.registry.load import extraction_hash, extraction_settings, load_registry, runnable
from geneb.registry.python_entry import (
    EntryError,
    _local_imports,
    code_files,
    hash_view,
    option_fingerprints,
    parse_entry,
)
from geneb.registry.registry import NotRunnableError

#: the user's folder: a factory that reads its weights from `options["weights"]` and imports a helper, which
#: imports another; `unrelated.py` is imported by nothing
FILES = {
    "my_model.py": """
        import numpy as np

        from helpers import featurize


        class Encoder:
            def __init__(self, weights):
                self.weights = weights

            def embed(self, sequences):
                return featurize(sequences) @ self.weights


        def build(options):
            return Encoder(np.load(options["weights"]))
        """,
    "helpers.py": """
        import numpy as np

        from basis import BASES


        def featurize(sequences):
            return np.array([[s.count(b) / max(len(s), 1) for b in BASES] for s in sequences])
        """,
    "basis.py": 'BASES = "ACGT"\n',
    "unrelated.py": "x = 1\n",
}


def user_folder(folder: Path, weights: np.ndarray | None = None, options: dict | None = None) -> Path:
    """folder/config: the user's files, weights.npy and a registry with the entry `mine`; returns the registry."""
    config = folder / "config"
    config.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (config / name).write_text(textwrap.dedent(text))
    np.save(config / "weights.npy", np.arange(12.0).reshape(4, 3) if weights is None else weights)
    entry = {"entry": "my_model.py:build", "options": options or {"weights": "weights.npy", "species": "human"}}
    sheet = config / "models.yaml"
    sheet.write_text(yaml.safe_dump({"schema_version": 1, "models": {"mine": {"family": "python", "load": entry}}}))
    return sheet


def key(sheet: Path) -> str:
    return extraction_hash(extraction_settings(load_registry(sheet), "mine", {}))


def test_retraining_into_the_same_weights_file_gives_a_new_key_moving_it_does_not(tmp_path):
    sheet = user_folder(tmp_path / "a")
    before = key(sheet)
    settings = extraction_settings(load_registry(sheet), "mine", {})
    assert settings["load"]["options"]["weights"] == str(sheet.parent / "weights.npy")  # absolute: what is hashed
    assert set(settings["load"]["options_sha256"]) == {"weights"}
    np.save(sheet.parent / "weights.npy", np.arange(12.0).reshape(4, 3) + 1)  # retrained, same file
    assert key(sheet) != before
    # the same files in another folder, the weights under another name and path: the same model
    moved = user_folder(tmp_path / "elsewhere", options={"weights": "w/trained.npy", "species": "human"})
    (moved.parent / "w").mkdir()
    (moved.parent / "weights.npy").rename(moved.parent / "w" / "trained.npy")
    np.save(moved.parent / "w" / "trained.npy", np.arange(12.0).reshape(4, 3))
    assert key(moved) == before
    # a string that names nothing (a species) is an option like any other
    other = user_folder(tmp_path / "b", options={"weights": "weights.npy", "species": "mouse"})
    assert key(other) != before


def test_a_weights_folder_is_hashed_by_its_files_relative_paths_and_contents(tmp_path):
    sheet = user_folder(tmp_path / "a", options={"weights": "ckpt", "species": "human"})
    (sheet.parent / "ckpt").mkdir()
    (sheet.parent / "ckpt" / "a.bin").write_bytes(b"1234")
    before = key(sheet)
    (sheet.parent / "ckpt" / ".DS_Store").write_bytes(b"noise")  # hidden: not read by a model
    assert key(sheet) == before
    (sheet.parent / "ckpt" / "a.bin").write_bytes(b"1235")
    assert key(sheet) != before
    (sheet.parent / "ckpt" / "a.bin").write_bytes(b"1234")
    (sheet.parent / "ckpt" / "b.bin").write_bytes(b"")
    assert key(sheet) != before


def test_an_option_that_names_a_missing_file_is_refused_naming_model_option_and_path(tmp_path):
    sheet = user_folder(tmp_path, options={"weights": "retrained/weights.pt", "species": "human"})
    ok, why = runnable(load_registry(sheet).spec("mine"))  # the pre-flight lists it with every other problem
    assert not ok and "load.options.weights names 'retrained/weights.pt', and there is no such file" in why
    with pytest.raises(NotRunnableError, match=r"model mine: load\.options\.weights names 'retrained/weights\.pt'"):
        extraction_settings(load_registry(sheet), "mine", {})
    nested = {"parts": {"heads": ["weights.npy", "gone.safetensors"]}}
    with pytest.raises(EntryError, match=r"load\.options\.parts\.heads\[1\] names 'gone\.safetensors'"):
        option_fingerprints(nested, model="mine")


def test_an_edit_to_an_imported_helper_changes_the_key_a_comment_in_an_unrelated_file_does_not(tmp_path):
    sheet = user_folder(tmp_path)
    ref = parse_entry(extraction_settings(load_registry(sheet), "mine", {})["load"]["entry"])
    assert [p.name for p in code_files(ref)] == ["basis.py", "helpers.py"]
    before = key(sheet)
    (sheet.parent / "unrelated.py").write_text("x = 1  # a comment\n")
    (sheet.parent / "notes.txt").write_text("a note")
    assert key(sheet) == before
    (sheet.parent / "basis.py").write_text('BASES = "ACGTN"\n')  # imported by the helper: transitively
    changed = key(sheet)
    assert changed != before
    (sheet.parent / "helpers.py").write_text((sheet.parent / "helpers.py").read_text() + "# edited\n")
    assert key(sheet) not in (before, changed)


def test_imports_resolve_like_the_interpreter_packages_relative_imports_and_nested_ones(tmp_path):
    root = tmp_path / "code"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "main.py").write_text(
        "import os\nimport numpy as np\nimport pkg.sub.deep\n\ndef build(o):\n    from lazy import f\n    return f\n"
    )
    (root / "lazy.py").write_text("from pkg import tool\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "tool.py").write_text("from . import shared\nfrom .sub import deep\n")
    (root / "pkg" / "shared.py").write_text("")
    (root / "pkg" / "sub" / "__init__.py").write_text("from ..shared import *\n")
    (root / "pkg" / "sub" / "deep.py").write_text("")
    (root / "pkg" / "unused.py").write_text("")
    (root / "broken.py").write_text("def (:\n")
    found = [p.relative_to(root).as_posix() for p in _local_imports(root / "main.py", root, root)]
    assert found == [
        "lazy.py",
        "pkg/__init__.py",
        "pkg/shared.py",
        "pkg/sub/__init__.py",
        "pkg/sub/deep.py",
        "pkg/tool.py",
    ]
    # nothing outside the factory's folder (numpy, os) is followed
    assert all(str(p).startswith(str(root)) for p in _local_imports(root / "main.py", root, root))


def test_the_hash_view_keeps_no_path_of_the_options(tmp_path):
    sheet = user_folder(tmp_path)
    settings = extraction_settings(load_registry(sheet), "mine", {})
    view = hash_view(settings)
    assert str(tmp_path) not in repr(view)
    assert view["load"]["options"]["species"] == "human"


def test_copying_the_whole_folder_elsewhere_keeps_the_key(tmp_path):
    sheet = user_folder(tmp_path / "a")
    copy = tmp_path / "b" / "config"
    shutil.copytree(sheet.parent, copy)
    assert key(copy / "models.yaml") == key(sheet)
