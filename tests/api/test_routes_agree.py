"""The three ways to bring one's own vectors give the same scores: a `python` registry entry run by the workflow,
a `precomputed` entry of the same vectors run by the workflow, and `geneb.evaluate` with the encoder object in
process. Real tasks of ../shared, capped so that the precomputed files' rows (the source files' order, before the
cap) must be mapped to the kept rows by their ids; both protocols, every regime and seed.

The encoder is a user's dilated CNN (tests/encoders/families/dilated_cnn.py), declared `cpu_only`, its file named
relative to the registry file that declares it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import geneb
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy, model_input
from workflow_support import dry_run, run_snakemake, write_run_config

REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "tests" / "encoders" / "families" / "dilated_cnn.py"
TASKS = ["idna_ms_4mc_c_equisetifolia", "idna_ms_6ma_r_chinensis"]
PROTOCOLS = ["geneb-paper", "geneb-strict"]
OPTIONS = {"channels": 32, "kernel": 9, "seed": 3, "threads": 1}
KEY = ["protocol", "task", "regime", "seed"]


def write_vectors(folder: Path, mirror: Path, alphabet: dict) -> None:
    """<folder>/<task>/<split>.npy: the CNN's vectors of every source row, in the source file's order."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("user_cnn", CNN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    encoder = module.build(dict(OPTIONS))
    policy = AlphabetPolicy.from_config(alphabet)
    source = open_source(str(mirror))
    for task in TASKS:
        for split in ("train", "test"):
            raw = source.read_split(task, split)
            seqs = [
                model_input(policy.apply(s, task=task, split=split, row=int(r)))
                for r, s in zip(raw["row"], raw["sequence"])
            ]
            (folder / task).mkdir(parents=True, exist_ok=True)
            np.save(folder / task / f"{split}.npy", encoder.embed(seqs))


@pytest.fixture(scope="module")
def routes(tmp_path_factory, shared):
    """A run of its own (the shared finished run has neither user entry nor geneb-strict): the two user entries'
    probe tables only (no score table or analyses), then `geneb.evaluate` of the same encoder in process."""
    run = tmp_path_factory.mktemp("routes")
    mirror = shared / "data" / "tasks"
    write_run_config(run, mirror, TASKS, ["my-cnn", "my-cnn-vectors"])
    shutil.copy(CNN, run / "config" / "dilated_cnn.py")
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    registry["models"]["my-cnn"] = {
        "family": "python",
        "load": {"entry": "dilated_cnn.py:build", "options": dict(OPTIONS), "cpu_only": True},
    }
    registry["models"]["my-cnn-vectors"] = {
        "family": "precomputed",
        "source": {"kind": "local", "path": str(run / "vectors")},
    }
    (run / "config" / "models.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    config_file = run / "config" / "config.yaml"
    config = yaml.safe_load(config_file.read_text())
    config.update(
        model_sheet=str(run / "config" / "models.yaml"),
        protocols=PROTOCOLS,
        caps={"seed": 0, "default": {"max_train": 150, "max_test": 120}, "per_task": {}},
    )
    config_file.write_text(yaml.safe_dump(config))
    write_vectors(run / "vectors", mirror, config["alphabet"])
    targets = [
        f"results/probes/{p}/{m}/{t}.parquet" for p in PROTOCOLS for m in ("my-cnn", "my-cnn-vectors") for t in TASKS
    ]
    res = run_snakemake(run, "--cores", "2", *targets, timeout=1500)
    assert res.returncode == 0, res.stdout[-4000:]
    module_spec = __import__("importlib.util").util.spec_from_file_location("user_cnn2", CNN)
    module = __import__("importlib.util").util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    evaluated = geneb.evaluate(
        module.build(dict(OPTIONS)), TASKS, PROTOCOLS, config_file, name="my-cnn", workdir=run / "evaluate"
    )
    return run, evaluated


def _mcc(frame: pd.DataFrame) -> pd.Series:
    rows = frame[frame["metric"] == "MCC"]
    return rows.set_index(KEY)["value"].sort_index()


def test_python_entry_precomputed_entry_and_evaluate_give_identical_mcc(routes):
    run, evaluated = routes
    tables = {
        m: pd.concat(pd.read_parquet(p) for p in sorted((run / "results" / "probes").glob(f"*/{m}/*.parquet")))
        for m in ("my-cnn", "my-cnn-vectors")
    }
    python, vectors, inproc = _mcc(tables["my-cnn"]), _mcc(tables["my-cnn-vectors"]), _mcc(evaluated)
    probe = yaml.safe_load((run / "config" / "config.yaml").read_text())["probe"]
    for proto in PROTOCOLS:  # every regime of both protocols, every seed of the k-shot draws
        for regime in ("full", "10shot", "1shot"):
            seeds = set(python.loc[(proto, slice(None), regime)].index.get_level_values("seed"))
            assert seeds if regime == "full" else seeds == set(probe[proto]["seeds"])
    assert python.index.equals(vectors.index) and python.index.equals(inproc.index)
    np.testing.assert_array_equal(python.to_numpy(), vectors.to_numpy())
    np.testing.assert_array_equal(python.to_numpy(), inproc.to_numpy())
    assert python.std() > 0  # not a constant: the vectors carry signal the probes use


def test_the_caps_were_applied_and_the_rows_mapped(routes):
    run, evaluated = routes
    import h5py

    for task in TASKS:
        (card_path,) = (run / "resources" / "tasks" / task).glob("*/card.json")  # <task>/<task hash>/card.json
        card = yaml.safe_load(card_path.read_text())
        assert card["splits"]["train"]["n"] == 150 < card["splits"]["train"]["n_source"]
        (h5,) = (run / "resources" / "embeddings" / "my-cnn-vectors").glob(f"*/{task}/*.h5")
        with h5py.File(h5) as f:
            rows = f["train"]["row"][:]
            stored = f["train"]["embeddings"][:]
            key = yaml.safe_load(f.attrs["extraction_key"])
        assert key["encoder"]["encoder"] == "precomputed" and len(key["encoder"]["files"]["train"]["sha256"]) == 64
        source = np.load(run / "vectors" / task / "train.npy")
        np.testing.assert_array_equal(stored, source[rows])
        assert not np.array_equal(rows, np.arange(len(rows)))  # the cap kept rows out of order of position
    assert set(evaluated["model"]) == {"my-cnn"} and not evaluated["value"].isna().all()


def test_a_changed_vector_file_reruns_its_task_only(routes):
    """Planned in process (`dry_run`, what `snakemake -n <both tasks' probe tables>` would run)."""
    run, _ = routes
    np.save(run / "vectors" / TASKS[0] / "test.npy", np.load(run / "vectors" / TASKS[0] / "test.npy") * 2)
    jobs = dry_run(
        run,
        f"results/probes/geneb-paper/my-cnn-vectors/{TASKS[0]}.parquet",
        f"results/probes/geneb-paper/my-cnn-vectors/{TASKS[1]}.parquet",
    )
    planned = "\n".join(f for job in jobs for f in [*job["output"], job["reason"]])
    h5 = r"/{}/[0-9a-f]{{12}}\.h5"  # resources/embeddings/<model>/<xhash>/<task>/<task hash>.h5
    assert re.search(h5.format(TASKS[0]), planned)
    assert f"results/probes/geneb-paper/my-cnn-vectors/{TASKS[0]}" in planned
    assert not re.search(h5.format(TASKS[1]), planned)  # the other task's import and probes stand
    assert {job["wildcards"].get("task") for job in jobs} == {TASKS[0]}
