"""Envs tested for real: two non-default envs built from their files (envs/transformers4.yaml, an old
transformers 4.x, and envs/hyena.yaml) run real extraction jobs through the workflow on the venv route, on the
real checkpoints in ../shared/models: Mistral-DNA under transformers 4.57.6 and HyenaDNA tiny-1k under 4.39.3.
The embeddings and probe scores equal those of the default env (transformers 5.24, this interpreter) within
1e-5, the HDF5 records say which transformers made them, and the cache folder (settings hash) is the same: an
env is how a model runs, not what it computes.

The venvs are built once with `geneb env build` (`geneb.core.envs.build_env`) under $GENEB_ENV_DIR (CI:
scripts/test.sh sets /root/.cache/geneb-envs and builds them first, timed) and reused while the env files are
unchanged; a machine without them builds them here (a few minutes, once).
"""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from geneb.core import envs
from geneb.extract.cache import read_embeddings
from workflow_support import run_snakemake, write_run_config

TASK = "gue_prom_core_all"
MISTRAL, HYENA = "mistral-dna-1m-ft-prom", "hyenadna-tiny-1k-ft-anticapt"
WANT = {MISTRAL: ("transformers4", "4.57.6"), HYENA: ("hyena", "4.39.3")}
PROTOCOL = "geneb-paper"


@pytest.fixture(scope="module")
def built():
    """{env: its venv python}: transformers4 and hyena, built (or reused) from their env files."""
    return {env: envs.build_env(env, say=lambda line: None) / "bin" / "python" for env, _ in WANT.values()}


def _registry(repo: Path, shared: Path, out: Path, env_of: dict[str, str | None]) -> Path:
    """config/models.yaml with the two checkpoints' folders absolute (the run folders are elsewhere) and their
    `env:` set as `env_of` says (None: the default env)."""
    doc = yaml.safe_load((repo / "config/models.yaml").read_text())
    for model, env in env_of.items():
        entry = doc["models"][model]
        entry["source"]["path"] = str(shared / "models" / Path(entry["source"]["path"]).name)
        entry.pop("env", None)
        if env:
            entry["env"] = env
    out.write_text(yaml.safe_dump(doc))
    return out


def _run(tmp_path: Path, name: str, mirror: Path, sheet: Path, route: str) -> Path:
    run = tmp_path / name
    write_run_config(run, mirror, [TASK], [MISTRAL, HYENA], n_resamples=100)
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config.update(model_sheet=str(sheet), protocols=[PROTOCOL], default_protocol=PROTOCOL)
    config["caps"]["per_task"] = {TASK: {"max_train": 240, "max_test": 120}}
    config["execution"]["env_route"] = route
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    targets = [f"results/probes/{PROTOCOL}/{m}/{TASK}.parquet" for m in (MISTRAL, HYENA)]
    proc = run_snakemake(run, *targets)
    assert proc.returncode == 0, proc.stdout[-6000:]
    return run


def _embeddings(run: Path, model: str):
    (path,) = (run / "resources/embeddings" / model).glob(f"*/{TASK}/*.h5")  # <settings hash>/<task>/<task hash>.h5
    return path, read_embeddings(path)


@pytest.mark.slow
def test_old_transformers_and_hyena_envs_score_as_the_default_env(built, tmp_path, repo, shared):
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    sheet_envs = _registry(repo, shared, tmp_path / "envs.yaml", {m: env for m, (env, _) in WANT.items()})
    sheet_default = _registry(repo, shared, tmp_path / "default.yaml", {MISTRAL: None, HYENA: None})
    in_envs = _run(tmp_path, "venv-route", mirror, sheet_envs, "venv")
    in_default = _run(tmp_path, "default-env", mirror, sheet_default, "conda")  # no --sdm conda: this interpreter
    for model, (env, version) in WANT.items():
        path_a, a = _embeddings(in_envs, model)
        path_b, b = _embeddings(in_default, model)
        assert a.key["package_versions"]["transformers"] == version, model  # made in its env's venv
        assert b.key["package_versions"]["transformers"] == importlib.metadata.version("transformers"), model
        log = (
            in_envs / "logs/extract_embeddings" / model / path_a.parents[1].name / path_a.stem / f"{TASK}.log"
        ).read_text()
        assert f"extracting in env {env} ({built[env]})" in log
        assert path_a.parents[1].name == path_b.parents[1].name  # the same settings hash: env is not in the key
        for split in ("train", "test"):
            np.testing.assert_array_equal(a.splits[split][1], b.splits[split][1])
            np.testing.assert_allclose(a.splits[split][0], b.splits[split][0], rtol=0, atol=1e-5)
        sa = pd.read_parquet(in_envs / f"results/probes/{PROTOCOL}/{model}/{TASK}.parquet")
        sb = pd.read_parquet(in_default / f"results/probes/{PROTOCOL}/{model}/{TASK}.parquet")
        keys = ["regime", "seed", "metric"]
        sa, sb = sa.sort_values(keys).reset_index(drop=True), sb.sort_values(keys).reset_index(drop=True)
        assert len(sa) == len(sb) > 0 and (sa[keys] == sb[keys]).all().all()
        np.testing.assert_allclose(sa["value"].astype(float), sb["value"].astype(float), rtol=0, atol=1e-5)


def test_a_model_whose_env_is_not_built_stops_the_run_before_any_job(tmp_path, repo, shared, monkeypatch):
    mirror = tmp_path / "mirror"
    shutil.copytree(shared / "data/tasks" / TASK, mirror / TASK)
    sheet = _registry(repo, shared, tmp_path / "envs.yaml", {m: env for m, (env, _) in WANT.items()})
    run = tmp_path / "run"
    write_run_config(run, mirror, [TASK], [MISTRAL, HYENA, "GenomeOcean-4B"])
    config = yaml.safe_load((run / "config/config.yaml").read_text())
    config.update(model_sheet=str(sheet))
    config["execution"].update(env_route="venv", env_dir=str(tmp_path / "no-envs-here"))
    (run / "config/config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(run)
    out = proc.stdout
    assert proc.returncode != 0
    # one report: the model that cannot run at all (no pin, no network) first, then the others' env problems
    assert "1 selected model(s) cannot run, so nothing was planned" in out, out[-3000:]
    assert "need the network once, to pin their hub revision" in out and "GenomeOcean-4B" in out
    assert "pre-flight: 2 problem(s); nothing was submitted" in out, out[-3000:]
    for model, (env, _) in WANT.items():
        assert f"model(s) {model}: env {env} is not built under {tmp_path / 'no-envs-here'}" in out
        assert f"run `geneb env build {env} --prefix {tmp_path / 'no-envs-here'}`" in out
    assert not (run / "resources").exists() and not (run / "logs").exists()  # not even a task was prepared
