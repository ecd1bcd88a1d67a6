"""A score_zeroshot job in the model's own env: on the venv route, the real HyenaDNA tiny-1k checkpoint is scored
by `python -m geneb.zeroshot.job` in the hyena venv (transformers 4.39.3, built from envs/hyena.yaml as the
extraction env tests build it), and its scores equal those of this interpreter's default env."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from extraction_support import random_dna
from geneb.core import envs
from geneb.registry.load import extraction_settings, load_registry
from geneb.zeroshot.job import read_score_file, run_score_rule, task_of_rows_file
from geneb.zeroshot.task import write_zeroshot_task

HYENA = "hyenadna-tiny-1k-ft-anticapt"
EXECUTION = {
    "device": "cpu",
    "batch_size": 8,
    "batch_tokens": None,
    "threads": 1,
    "hdf5_locking": "auto",
    "env_dir": None,
    "load_checks": "record",
}


@pytest.fixture(scope="module")
def hyena_python() -> Path:
    return envs.build_env("hyena", say=lambda line: None) / "bin" / "python"


def _sheet(repo: Path, shared: Path, out: Path) -> Path:
    doc = yaml.safe_load((repo / "config/models.yaml").read_text())
    entry = doc["models"][HYENA]
    entry["source"]["path"] = str(shared / "models" / Path(entry["source"]["path"]).name)
    out.write_text(yaml.safe_dump(doc))
    return out


def _rows_file(folder: Path) -> Path:
    seqs = [random_dna(120, 30 + i) for i in range(6)]
    alt = {"A": "C", "C": "G", "G": "T", "T": "A"}
    rows = pd.DataFrame(
        {
            "sequence": seqs,
            "pos": [60] * 6,
            "ref": [s[60] for s in seqs],
            "alt": [alt[s[60]] for s in seqs],
            "label": [0, 1] * 3,
        }
    )
    return write_zeroshot_task(folder / "snvs" / "0123456789ab", rows, {"kind": "variant", "name": "snvs"}) / "rows.tsv"


def _score(tmp_path: Path, sheet: Path, rows: Path, route: str) -> tuple[pd.DataFrame, dict]:
    settings = extraction_settings(load_registry(sheet), HYENA, {})
    out = tmp_path / route / "scores.parquet"
    log = tmp_path / route / "job.log"
    log.parent.mkdir(parents=True)
    run_score_rule(
        settings,
        rows,
        out,
        scoring={"settings_hash": "x", "scorers": ["embedding"], "lm_head": "none"},
        execution={**EXECUTION, "env_route": route},
        threads=1,
        checks_dir=tmp_path / route / "checks",
        config={"model_sheet": str(sheet), "execution": {**EXECUTION, "env_route": route}},
        log_file=str(log),
    )
    scores = read_score_file(out, task_of_rows_file(rows))
    return scores.scores, dict(scores.provenance)


def test_hyena_is_scored_in_its_own_env_on_the_venv_route(hyena_python, tmp_path, repo, shared, caplog):
    assert hyena_python.is_file()
    sheet = _sheet(repo, shared, tmp_path / "models.yaml")
    rows = _rows_file(tmp_path / "tasks")
    with caplog.at_level("INFO", logger="geneb.zeroshot.job"):
        in_env, prov_env = _score(tmp_path, sheet, rows, "venv")
    assert "zero-shot scoring in env hyena" in caplog.text
    here, prov_here = _score(tmp_path, sheet, rows, "conda")  # no --sdm conda: this interpreter, the default env
    assert prov_env["versions"]["transformers"] == "4.39.3"
    assert prov_here["versions"]["transformers"] != "4.39.3"
    assert list(in_env["scorer"].unique()) == list(here["scorer"].unique())
    assert "embedding-cosine-at-variant" in set(here["scorer"])  # one token per base: the variant's own state
    np.testing.assert_allclose(in_env["score"], here["score"], rtol=1e-4, atol=1e-6)
    assert "model hyenadna-tiny-1k-ft-anticapt, zero-shot task snvs" in (tmp_path / "venv" / "job.log").read_text()
