"""The env files under envs/ and the registry's `env:` field ("Environments"): every env file parses
and pins transformers, every registry entry runs in an env whose pin fits its range and which installs its
packages (errors name model, env and fix), `env` stays out of the extraction key, and the venv cache is atomic
(a killed or failed build is never trusted). Fast: no env is built here (tests/workflow/test_env_workflow.py builds
two and runs the workflow in them), and the failed build's pip is offline (`_offline_pip`)."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from geneb.cli import main as cli_main
from geneb.core import envs
from geneb.registry.load import check_envs, extraction_hash, extraction_settings, load_registry
from geneb.registry.registry import RegistryError
from geneb.run.checks import _fit_problems, _preflight, _probe_interpreter

REPO = Path(__file__).resolve().parents[2]


def test_every_env_file_parses_pins_transformers_and_installs_geneb_and_torch():
    names = envs.env_names()
    assert {"geneb", "transformers4", "hyena", "dnabert2", "lucaone", "mamba", "evo", "enformer", "gpn"} <= set(names)
    for name in names:
        env = envs.read_env(name)
        assert env.transformers, name  # the registry checks ranges against an exact pin
        assert env.provides("torch") and "torch>=2.2,<2.15" in env.pip, name  # a range 2.13.0 satisfies
        assert [p.resolve() for p in env.editable_paths()] == [REPO], name  # GENEB itself, -e relative to the file
        assert env.python, name
    assert envs.read_env("hyena").transformers == "4.39.3"
    assert envs.read_env("transformers4").transformers.startswith("4.")
    assert envs.read_env("mamba").provides("mamba_ssm") and envs.read_env("mamba").provides("causal-conv1d")


def test_an_unknown_env_names_the_known_ones():
    with pytest.raises(envs.EnvError, match=r"env 'nope' has no file .*envs/nope.yaml; known envs: dnabert2"):
        envs.read_env("nope")


def test_pinned_version():
    assert envs._pinned_version("transformers==4.39.3") == "4.39.3"
    assert envs._pinned_version("transformers[torch] == 4.56.2") == "4.56.2"
    assert envs._pinned_version("transformers>=4.39") is None
    assert envs._pinned_version(None) is None


def test_the_committed_registry_runs_every_entry_in_a_fitting_env(repo):
    reg = load_registry(repo / "config/models.yaml")
    assert not check_envs(reg)
    want = {
        "hyenadna-large-1m-seqlen-hf": "hyena",
        "hyenadna-medium-160k-seqlen-hf": "hyena",
        "hyenadna-tiny-1k-ft-anticapt": "hyena",
        "DNABERT-S": "dnabert2",
        "dnabert2-no-flashattention": "dnabert2",
        "LucaOne-default-step36M": "lucaone",
        "GenomeOcean-4B": "transformers4",
        "caduceus-ps_seqlen-131k_d_model-256_n_layer-16": "mamba",
        "eccdnamamba_weights": "mamba",
        "evo-1-131k-base": "evo",
        "enformer-official-rough": "enformer",
        "mistral-dna-1m-ft-prom": "geneb",
        "kmer-3": "geneb",
    }
    assert {m: reg.spec(m).env_name for m in want} == want


def _sheet(tmp_path: Path, repo: Path, edit) -> Path:
    doc = yaml.safe_load((repo / "config/models.yaml").read_text())
    edit(doc["models"])
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _refusal(tmp_path: Path, repo: Path, edit) -> str:
    """The RegistryError text of the committed registry with `edit` applied to its models."""
    with pytest.raises(RegistryError) as err:
        load_registry(_sheet(tmp_path, repo, edit))
    return str(err.value)


def test_a_range_outside_the_env_pin_names_model_env_and_the_fitting_envs(tmp_path, repo):
    def edit(models):
        del models["GenomeOcean-4B"]["env"]  # <5 in the default env (transformers 5)
        models["DNABERT-S"]["env"] = "hyena"  # >=4.28,<4.30 against 4.39.3

    text = _refusal(tmp_path, repo, edit)
    assert (
        "model GenomeOcean-4B: cannot run in env geneb: load.transformers '<5' excludes transformers 5.24.0 pinned in "
        "geneb.yaml; set env: transformers4" in text
    )
    assert (
        "model DNABERT-S: cannot run in env hyena: load.transformers '>=4.28,<4.30' excludes transformers 4.39.3"
        in text
    )
    assert "set env: dnabert2" in text


def test_a_missing_package_or_an_unknown_env_is_refused(tmp_path, repo):
    def edit(models):
        models["PlantCaduceus_l32"]["env"] = "transformers4"  # caduceus needs mamba-ssm
        models["kmer-3"]["env"] = "no-such-env"

    text = _refusal(tmp_path, repo, edit)
    assert (
        "model PlantCaduceus_l32: cannot run in env transformers4: needs mamba-ssm, which transformers4.yaml does not "
        "install; set env: mamba" in text
    )
    assert "model kmer-3: env 'no-such-env' has no file" in text and "set env: to one of dnabert2, enformer" in text


def test_env_is_not_part_of_the_extraction_key(tmp_path, repo):
    def edit(models):
        models["mistral-dna-1m-ft-prom"]["env"] = "transformers4"
        models["hyenadna-tiny-1k-ft-anticapt"].pop("env")
        models["hyenadna-tiny-1k-ft-anticapt"]["load"]["transformers"] = ">=4.39.3,<6"

    base = load_registry(repo / "config/models.yaml")
    moved = load_registry(_sheet(tmp_path, repo, edit))
    for model in ("mistral-dna-1m-ft-prom", "hyenadna-tiny-1k-ft-anticapt", "kmer-3"):
        assert base.spec(model).env_name != moved.spec(model).env_name or model == "kmer-3"
        a, b = extraction_settings(base, model, {}), extraction_settings(moved, model, {})
        assert a == b and extraction_hash(a) == extraction_hash(b), model


def _env_dir(tmp_path: Path, pip: list[str], python: str = "3.11") -> Path:
    folder = tmp_path / "envs"
    folder.mkdir(exist_ok=True)
    doc = {"channels": ["conda-forge"], "dependencies": [f"python={python}", "pip", {"pip": pip}]}
    (folder / "t.yaml").write_text(yaml.safe_dump(doc))
    return folder


def test_a_venv_is_trusted_only_with_its_record_and_for_the_current_file(tmp_path):
    folder = _env_dir(tmp_path, ["transformers==4.57.6"])
    cache = tmp_path / "cache"
    env = envs.read_env("t", folder)
    final = envs._env_prefix(env, cache)
    # what a killed build leaves: a .tmp folder, or a folder with a python but no record
    (cache / f".tmp-{final.name}-123/bin").mkdir(parents=True)
    (final / "bin").mkdir(parents=True)
    (final / "bin/python").symlink_to(sys.executable)
    with pytest.raises(envs.EnvError, match=r"env t is not built under .*; run `geneb env build t --prefix "):
        envs.python_for_env("t", envs_dir=folder, prefix=cache)
    (final / envs._RECORD).write_text(json.dumps({"env": "t"}))
    assert envs.python_for_env("t", envs_dir=folder, prefix=cache) == final / "bin/python"
    # the env file changes: a new digest, so the old venv is not used (and the error says so)
    _env_dir(tmp_path, ["transformers==4.57.5"])
    with pytest.raises(envs.EnvError, match=r"only for an older t.yaml: t-"):
        envs.python_for_env("t", envs_dir=folder, prefix=cache)


def _offline_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip, in every venv `build_env` makes, with no index and no config file: PIP_CONFIG_FILE=os.devnull (none of
    the machine's pip.conf indexes), PIP_NO_INDEX=1 and PIP_FIND_LINKS=a folder of tmp_path (returned) that holds
    only a stand-in `torch==2.13.0` wheel (an empty `torch` package), so the torch step installs it in a moment
    and every other requirement is looked up in that folder alone."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    info = "torch-2.13.0.dist-info"
    files = {
        "torch/__init__.py": b"",
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: geneb-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for name, data in files.items()
    )
    with zipfile.ZipFile(wheels / "torch-2.13.0-py3-none-any.whl", "w") as whl:
        for name, data in {**files, f"{info}/RECORD": f"{record}{info}/RECORD,,\n".encode()}.items():
            whl.writestr(name, data)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return wheels


def test_a_failed_build_leaves_nothing_that_is_trusted(tmp_path, monkeypatch):
    """A build whose pip section step fails (a distribution no index has) leaves neither its .tmp folder nor a
    final one, and the error names the step; `python_for_env` then names `geneb env build`.

    Stubbed: pip's index (`_offline_pip`: no index, no config, a find-links folder with only a stand-in torch
    wheel), so the torch step installs the stand-in and the pip section fails at once, where the real index took
    about a minute to answer (and the real torch wheel as long to install). The venv, both pip steps, the failure
    and the clean-up are `build_env`'s own, as in a build against the real index: a requirement pip cannot install
    fails the step the same way, whichever index it was looked up in."""
    _offline_pip(tmp_path, monkeypatch)
    folder = _env_dir(tmp_path, ["geneb-no-such-distribution==0.0.1"])
    cache = tmp_path / "cache"
    with pytest.raises(envs.EnvError, match=r"env t: the pip section step failed") as err:
        envs.build_env("t", envs_dir=folder, prefix=cache, say=lambda line: None)
    assert "geneb-no-such-distribution" in str(err.value)  # pip's own reason, not a failure of the stub
    assert list(cache.iterdir()) == []  # neither the .tmp folder nor a final one
    with pytest.raises(envs.EnvError, match="run `geneb env build t"):
        envs.python_for_env("t", envs_dir=folder, prefix=cache)


def test_a_build_with_the_wrong_python_names_the_fix(tmp_path):
    folder = _env_dir(tmp_path, ["transformers==5.15.0"], python="3.13")
    if sys.version_info[:2] == (3, 13):
        pytest.skip("this interpreter is the env's python")
    with pytest.raises(envs.EnvError, match=r"asks for python 3.13.*run `geneb env build t --python <a python 3.13"):
        envs.build_env("t", envs_dir=folder, prefix=tmp_path / "cache", say=lambda line: None)


def test_env_list_shows_each_env_its_models_and_whether_built(tmp_path, capsys):
    assert cli_main(["env", "list", "--prefix", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "hyena: transformers 4.39.3; not built (`geneb env build hyena`); " + str(tmp_path) in out
    assert "hyenadna-tiny-1k-ft-anticapt" in out.split("hyena: ")[1].split("\n")[1]
    assert "geneb (default): transformers 5.24.0" in out
    assert cli_main(["env", "build", "nope", "--prefix", str(tmp_path)]) == 2
    assert "geneb: error: env 'nope' has no file" in capsys.readouterr().err


# ---- pre-flight -----------------------------------------------------------------------------------------------


def test_preflight_lists_every_problem_with_its_fix(tmp_path, repo):
    reg = load_registry(repo / "config/models.yaml")
    models = ["kmer-3", "GenomeOcean-4B", "hyenadna-tiny-1k-ft-anticapt", "DNABERT-S", "mistral-dna-1m-ft-prom"]
    problems = sum(_preflight(reg, models, env_route="venv", conda_deploys=False, env_cache=tmp_path), [])
    assert len(problems) == 3, problems
    assert problems[0].startswith("model GenomeOcean-4B is in the registry but not runnable: hub id")
    assert problems[1].startswith("model DNABERT-S is in the registry but not runnable")
    assert "model(s) hyenadna-tiny-1k-ft-anticapt: env hyena is not built" in problems[2]
    assert "run `geneb env build hyena --prefix" in problems[2]
    # with --sdm conda, Snakemake makes the env from its file: only what no env can fix is left
    assert len(sum(_preflight(reg, models, env_route="conda", conda_deploys=True), [])) == 2


def test_preflight_on_the_conda_route_without_conda_checks_this_interpreter(tmp_path, repo):
    def edit(models):
        models["mistral-dna-1m-ft-prom"]["env"] = "transformers4"
        models["mistral-dna-1m-ft-prom"]["load"] = {"transformers": "<5"}

    reg = load_registry(_sheet(tmp_path, repo, edit))
    blocking, problems = _preflight(reg, ["mistral-dna-1m-ft-prom", "kmer-3"], env_route="conda", conda_deploys=False)
    assert blocking == [] and len(problems) == 1
    assert problems[0].startswith("model mistral-dna-1m-ft-prom (env transformers4): load.transformers '<5', but this ")
    here = importlib.metadata.version("transformers")
    assert f"has transformers {here}; run with --sdm conda, or set execution.env_route: venv" in problems[0]


def test_fit_problems_names_a_missing_module(repo):
    reg = load_registry(repo / "config/models.yaml")
    spec = reg.spec("PlantCaduceus_l32")
    probe = _probe_interpreter(sys.executable, ["mamba_ssm"])
    here = importlib.metadata.version("transformers")
    assert probe["modules"] == {"mamba_ssm": False} and probe["transformers"] == here
    problems = _fit_problems(spec, probe, "here", "build the mamba env")
    assert any("here cannot import mamba_ssm (pip mamba-ssm); build the mamba env" in p for p in problems)
    assert any(f"load.transformers '<5', but here has transformers {here}" in p for p in problems)
