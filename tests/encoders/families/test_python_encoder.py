"""Family `python` (geneb.encoders.families.python_encoder, geneb.registry.python_entry): a user's encoder from a
file, a module or an entry point, without editing GENEB; its contract checked at load; its identity in the hash."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from geneb.encoders.families.python_encoder import EncoderContractError, PythonEncoder, _piece_bounds
from geneb.extract.step import build_encoder
from geneb.registry.load import extraction_hash, extraction_settings, load_registry, runnable
from geneb.registry.registry import RegistryError
from geneb.run.layout import _extraction_gpus

HERE = Path(__file__).parent
CNN = HERE / "dilated_cnn.py"


def registry_with(tmp_path: Path, repo: Path, **entries) -> Path:
    """A copy of config/models.yaml with `entries` appended, written at tmp_path/config/models.yaml."""
    data = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    data["models"].update(entries)
    path = tmp_path / "config" / "models.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


CNN_ENTRY = {"family": "python", "load": {"entry": "dilated_cnn.py:build", "options": {"channels": 16, "threads": 1}}}


def test_a_minimal_entry_resolves_its_file_against_the_registry_folder_and_embeds(tmp_path, repo):
    sheet = registry_with(tmp_path, repo, **{"my-cnn": CNN_ENTRY})
    shutil.copy(CNN, sheet.parent / "dilated_cnn.py")
    registry = load_registry(sheet)
    spec = registry.spec("my-cnn")
    assert spec.display == "my-cnn" and spec.pretraining_domain == "unknown" and spec.params is None
    assert runnable(spec)[0]
    settings = extraction_settings(registry, "my-cnn", {})
    assert settings["load"]["entry"] == f"{sheet.parent / 'dilated_cnn.py'}:build"
    encoder = build_encoder(settings)
    res = encoder.embed(["ACGT" * 20, "GATTACANN"], [7, 9])
    assert res.embeddings.shape == (2, 16) and res.embeddings.dtype == np.float32
    assert encoder.run_load_checks() == ("output", "determinism", "batch_invariance")


def test_the_hash_takes_the_code_and_options_never_the_path(tmp_path, repo):
    def hash_of(folder: Path, options: dict, edit: str = "") -> str:
        entry = {"family": "python", "load": {"entry": "dilated_cnn.py:build", "options": options}}
        sheet = registry_with(folder, repo, **{"my-cnn": entry})
        (sheet.parent / "dilated_cnn.py").write_text(CNN.read_text() + edit)
        s = extraction_settings(load_registry(sheet), "my-cnn", {})
        return extraction_hash(s)

    base = hash_of(tmp_path / "a", {"channels": 16})
    assert hash_of(tmp_path / "elsewhere", {"channels": 16}) == base  # moved: the same model
    assert hash_of(tmp_path / "b", {"channels": 32}) != base  # other options
    assert hash_of(tmp_path / "c", {"channels": 16}, edit="\n# an edit\n") != base  # other code


def test_a_missing_file_or_entry_is_refused_by_name(tmp_path, repo):
    sheet = registry_with(tmp_path, repo, **{"my-cnn": CNN_ENTRY})  # the file was not copied
    ok, why = runnable(load_registry(sheet).spec("my-cnn"))
    assert not ok and "dilated_cnn.py" in why and "relative file path resolves" in why
    bad = registry_with(tmp_path / "b", repo, **{"my-cnn": {"family": "python", "load": {"entry": "x.py:not a name"}}})
    with pytest.raises(RegistryError, match="my-cnn.*<factory>"):
        load_registry(bad)
    none = registry_with(tmp_path / "c", repo, **{"my-cnn": {"family": "python"}})
    with pytest.raises(RegistryError, match="my-cnn|entry"):
        load_registry(none)


def test_a_module_and_an_entry_point_of_an_installed_package_are_found(tmp_path, repo, monkeypatch):
    site = tmp_path / "site"
    (site / "usercnn").mkdir(parents=True)
    shutil.copy(CNN, site / "usercnn" / "__init__.py")
    dist = site / "usercnn-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: usercnn\nVersion: 1.2\n")
    (dist / "entry_points.txt").write_text("[geneb.encoders]\nuser-cnn = usercnn:build\n")
    (dist / "top_level.txt").write_text("usercnn\n")
    monkeypatch.syspath_prepend(str(site))
    options = {"channels": 8, "threads": 1}
    sheet = registry_with(
        tmp_path,
        repo,
        **{
            "by-module": {"family": "python", "load": {"entry": "usercnn:build", "options": options}},
            "by-entry-point": {"family": "python", "load": {"entry": "user-cnn", "options": options}},
        },
    )
    registry = load_registry(sheet)
    vectors = []
    for model in ("by-module", "by-entry-point"):
        settings = extraction_settings(registry, model, {})
        assert len(settings["load"]["entry_sha256"]) == 64
        vectors.append(build_encoder(settings).embed(["ACGTACGTTTGA"]).embeddings)
    np.testing.assert_array_equal(*vectors)
    sys.modules.pop("usercnn", None)


class Broken:
    """An encoder that breaks the contract in one way, named by `how`."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.calls = 0

    def embed(self, sequences):
        self.calls += 1
        x = np.asarray([[len(s), s.count("A"), 1.0] for s in sequences], np.float64)
        if self.how == "int":
            return x.astype(np.int64)
        if self.how == "shape":
            return x[:-1]
        if self.how == "nan":
            x[-1, 2] = np.nan
        if self.how == "random":
            x = x + np.random.default_rng(self.calls).normal(size=x.shape)
        if self.how == "batch":
            x = x + len(sequences)
        if self.how == "width" and self.calls > 1:
            x = x[:, :2]
        return x


@pytest.mark.parametrize(
    "how, message",
    [
        ("int", "dtype int64; return float32 or float64"),
        ("shape", r"returned shape \(\d+, 3\); expected"),
        ("nan", "row .*: embed\\(\\) returned nan at column 2"),
        ("random", "determinism failed.*eval mode"),
        ("batch", "batch_invariance failed.*batch mates"),
        ("width", "returned width 2, earlier calls gave 3"),
    ],
)
def test_the_load_time_checks_name_what_is_wrong_and_the_fix(how, message):
    with pytest.raises(EncoderContractError, match=f"model mine.*{message}"):
        PythonEncoder(Broken(how), model="mine")


def test_rows_over_max_length_are_cut_into_balanced_pieces_and_averaged_by_length():
    assert _piece_bounds(10, None) == [(0, 10)] and _piece_bounds(10, 4) == [(0, 3), (3, 7), (7, 10)]

    class Counts:
        max_length = 4

        def embed(self, sequences):
            assert all(len(s) <= 4 for s in sequences)
            return np.asarray([[s.count("A") / len(s), 1.0] for s in sequences])

    res = PythonEncoder(Counts(), model="m").embed(["AAAAACCCCC", "AC"])
    np.testing.assert_allclose(res.embeddings, [[0.5, 1.0], [0.5, 1.0]], rtol=1e-6)  # the mean over every position
    assert res.n_chunks.tolist() == [3, 1] and res.n_tokens.tolist() == [10, 2]


def test_a_cpu_only_entry_asks_for_no_gpu(tmp_path, repo):
    from geneb.registry.python_entry import cpu_only

    entry = {**CNN_ENTRY, "load": {**CNN_ENTRY["load"], "cpu_only": True}}
    sheet = registry_with(tmp_path, repo, **{"my-cnn": entry, "my-gpu-cnn": CNN_ENTRY})
    shutil.copy(CNN, sheet.parent / "dilated_cnn.py")
    registry = load_registry(sheet)
    settings = {m: extraction_settings(registry, m, {}, device="cuda") for m in ("my-cnn", "my-gpu-cnn")}
    same_id = {**settings["my-gpu-cnn"], "model": "my-cnn"}
    assert extraction_hash(settings["my-cnn"]) == extraction_hash(same_id)  # how it runs, not what it computes
    assert cpu_only(settings["my-cnn"]) and not cpu_only(settings["my-gpu-cnn"])
    assert [_extraction_gpus(not cpu_only(s), "cuda") for s in settings.values()] == [0, 1]


def test_evaluate_refuses_what_is_not_a_model():
    import geneb

    with pytest.raises(TypeError, match="a callable list\\[str\\] -> array"):
        geneb.evaluate(42, ["idna_ms_4mc_c_equisetifolia"])


def test_import_geneb_is_light():
    import subprocess

    code = textwrap.dedent(
        """
        import sys, geneb
        assert callable(geneb.evaluate) and callable(geneb.leaderboard)
        assert 'torch' not in sys.modules and 'sklearn' not in sys.modules and 'pandas' not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- the factory's folder: importable, and errors that name the user's file and line ----------------------------


def user_entry(folder: Path, helper: str = "SCALE = 1.0\n", model: str = "", embed: str = "") -> Path:
    """folder/config: `model.py` (a factory importing `helpers` from its own folder, at import time and inside
    embed) and `helpers.py`; returns its registry with the entry `mine`."""
    config = folder / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "helpers.py").write_text(helper)
    body = textwrap.dedent(
        """\
        import numpy as np

        from helpers import SCALE


        class Counts:
            def embed(self, sequences):
                from helpers import SCALE as now  # a lazy import, at call time
        {embed}
                return np.array([[SCALE * now * s.count(b) for b in "ACGT"] for s in sequences])


        def build(options):
            return Counts()
        """
    ).format(embed=textwrap.indent(embed, " " * 8))
    (config / "model.py").write_text(model or body)
    sheet = config / "models.yaml"
    entry = {"family": "python", "load": {"entry": "model.py:build", "options": {"n": 1}}}
    sheet.write_text(yaml.safe_dump({"schema_version": 1, "models": {"mine": entry}}))
    return sheet


def encoder_of(sheet: Path):
    return build_encoder(extraction_settings(load_registry(sheet), "mine", {}))


def test_a_factory_imports_a_sibling_module_and_two_folders_helpers_never_mix(tmp_path):
    one = encoder_of(user_entry(tmp_path / "one"))
    two = encoder_of(user_entry(tmp_path / "two", helper="SCALE = 2.0\n"))
    np.testing.assert_array_equal(one.embed(["AACG"]).embeddings, [[2, 1, 1, 0]])
    np.testing.assert_array_equal(two.embed(["AACG"]).embeddings, [[8, 4, 4, 0]])  # its own helpers, at both imports
    np.testing.assert_array_equal(one.embed(["AACG"]).embeddings, [[2, 1, 1, 0]])
    assert "helpers" not in sys.modules and str(tmp_path / "one" / "config") not in sys.path


def test_an_error_in_user_code_names_the_users_file_and_line(tmp_path):
    from geneb.encoders.families.python_encoder import UserCodeError

    sheet = user_entry(tmp_path / "embed", embed='raise ValueError("weights do not fit")\n')
    model = sheet.parent / "model.py"
    line = model.read_text().splitlines().index('        raise ValueError("weights do not fit")') + 1
    with pytest.raises(UserCodeError, match=rf"model mine: in {model}:{line}, in embed: ValueError: weights do not f"):
        encoder_of(sheet)  # the load-time checks call embed
    missing = user_entry(tmp_path / "import", model="import numpy\nfrom helperz import SCALE\n")
    with pytest.raises(
        UserCodeError, match=r"model\.py:2, in <module>: ModuleNotFoundError: No module named 'helperz'"
    ):
        encoder_of(missing)
    helper = user_entry(tmp_path / "helper", helper="def boom():\n    return 1 / 0\n\nSCALE = boom()\n")
    with pytest.raises(UserCodeError, match=r"config/helpers\.py:2, in boom: ZeroDivisionError"):
        encoder_of(helper)
    syntax = user_entry(tmp_path / "syntax", model="def build(options:\n    pass\n")
    with pytest.raises(UserCodeError, match=r"model\.py:1, in <module>: SyntaxError"):
        encoder_of(syntax)


def test_the_one_line_error_of_a_step_names_the_users_file_and_line(tmp_path):
    from geneb.core.logs import _error_line as error_line
    from geneb.encoders.families.python_encoder import PythonEncoder

    def embed(sequences):
        return np.asarray([[len(s) / 0.0 if not s else 1.0] for s in sequences]) + np.asarray(sequences[5])

    with pytest.raises(Exception) as info:
        PythonEncoder(embed, model="notebook")
    line = error_line(info.value, "log.txt")
    assert f"model notebook: in {__file__}:" in line and ", in embed: IndexError: list index out of range" in line


def test_weights_retrained_after_the_plan_are_refused_by_the_job(tmp_path):
    from geneb.encoders.families.python_encoder import EncoderContractError

    sheet = user_entry(tmp_path)
    data = yaml.safe_load(sheet.read_text())
    data["models"]["mine"]["load"]["options"] = {"table": "table.npy"}
    sheet.write_text(yaml.safe_dump(data))
    np.save(sheet.parent / "table.npy", np.ones(3))
    settings = extraction_settings(load_registry(sheet), "mine", {})
    np.save(sheet.parent / "table.npy", np.zeros(3))
    with pytest.raises(
        EncoderContractError, match=r"model mine: the file or folder load\.options\.table names changed"
    ):
        build_encoder(settings)


def test_a_module_of_the_same_name_already_imported_elsewhere_does_not_shadow_the_folders(tmp_path, monkeypatch):
    other = tmp_path / "notebook"
    other.mkdir()
    (other / "helpers.py").write_text("SCALE = 100.0\n")
    monkeypatch.syspath_prepend(str(other))
    import helpers  # the notebook's own helpers, imported before the entry

    encoder = encoder_of(user_entry(tmp_path / "entry", helper="SCALE = 3.0\n"))
    np.testing.assert_array_equal(encoder.embed(["AC"]).embeddings, [[9, 9, 0, 0]])
    assert sys.modules["helpers"] is helpers and helpers.SCALE == 100.0
    sys.modules.pop("helpers")


def test_a_package_installed_below_the_factorys_folder_stays_imported(tmp_path, monkeypatch):
    """A factory at a checkout's root, beside its .venv: what it imports from the venv is no module of the folder
    (it stays in sys.modules, as torch must), and frames in the venv are not the user's."""
    from geneb.encoders.families.python_encoder import UserCodeError

    sheet = user_entry(tmp_path, embed="import venvpkg\nvenvpkg.fail()\n")
    site = sheet.parent / ".venv" / "lib" / "site-packages"
    (site / "venvpkg").mkdir(parents=True)
    (site / "venvpkg" / "__init__.py").write_text("def fail():\n    raise KeyError('inside the package')\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(UserCodeError, match=r"model\.py:\d+, in embed: KeyError"):
        encoder_of(sheet)
    assert "venvpkg" in sys.modules
    sys.modules.pop("venvpkg")
