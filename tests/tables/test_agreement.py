"""Agreement across machines (geneb.tables.agreement): the committed reference of the quickstart's model x regime
means (tests/reference/quickstart_means.json) covers the quickstart's models, regimes and tasks, and the comparison
passes a run within the tolerance and names every mean beyond it, a missing or extra task, model or regime."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from geneb.tables.agreement import (
    TOLERANCE,
    _compare_means,
    _read_reference,
    _regime_means,
    check_against_reference,
    make_reference,
    write_reference,
)
from geneb.tables.scores import REGIMES
from workflow_support import REPO

REFERENCE = REPO / "tests" / "reference" / "quickstart_means.json"


def _rows(values: dict[tuple[str, str, str], list[float]], category: str = "Promoters") -> pd.DataFrame:
    """Score rows {(model, task, regime): one MCC value per seed} of protocol geneb-paper, default view."""
    out = []
    for (model, task, regime), vals in values.items():
        for seed, v in zip([13, 17, 42, 123, 997], vals):
            out.append(
                dict(protocol="geneb-paper", model=model, task=task, category=category, regime=regime, seed=seed,
                     metric="MCC", value=v, view="default", source="geneb")
            )  # fmt: skip
    return pd.DataFrame(out)


def test_a_model_regime_mean_is_the_task_mean_of_seed_means():
    table = _rows({("m", "t1", "full"): [0.5] * 5, ("m", "t2", "full"): [0.1, 0.2, 0.3], ("m", "t1", "1shot"): [0.4]})
    other = _rows({("m", "t1", "full"): [0.9] * 5}).assign(view="L1|mean|rc0")  # another view: left out
    f1 = table.assign(metric="F1")  # another metric: left out
    means = _regime_means(pd.concat([table, other, f1], ignore_index=True), protocol="geneb-paper")
    assert means["m"]["full"] == {"mean": pytest.approx((0.5 + 0.2) / 2), "n_tasks": 2, "tasks": ["t1", "t2"]}
    assert means["m"]["1shot"]["mean"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="geneb-strict"):
        _regime_means(table, protocol="geneb-strict")


def test_the_committed_reference_covers_the_quickstart():
    reference = _read_reference(REFERENCE)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert reference["protocol"] == config["default_protocol"] and reference["metric"] == "MCC"
    assert reference["tolerance"] == TOLERANCE
    assert sorted(reference["means"]) == sorted(config["models"])
    for model, regimes in reference["means"].items():
        assert sorted(regimes) == sorted(REGIMES), model
        for cell in regimes.values():
            assert cell["tasks"] == sorted(config["tasks"]) and np.isfinite(cell["mean"])


def test_a_mean_beyond_the_tolerance_fails_and_one_within_passes():
    reference = _read_reference(REFERENCE)
    found = copy.deepcopy(reference["means"])
    assert _compare_means(found, reference) == []
    model = sorted(found)[0]
    found[model]["1shot"]["mean"] += 0.9 * TOLERANCE  # within: what two machines may give
    assert _compare_means(found, reference) == []
    found[model]["1shot"]["mean"] += 0.2 * TOLERANCE  # 1.1 x the tolerance off
    (problem,) = _compare_means(found, reference)
    assert f"model {model!r}, regime '1shot'" in problem and "beyond the tolerance 0.003" in problem
    assert _compare_means(found, reference, tolerance=0.01) == []
    found[model]["full"]["mean"] = float("nan")
    found[model]["10shot"]["tasks"] = found[model]["10shot"]["tasks"][1:]  # a task missing from the run
    extra = {**found, "another-model": found[model]}
    problems = _compare_means(extra, reference)
    assert len(problems) == 4 and "not in the reference" in problems[0]  # regimes in REGIMES order below
    assert "'full': mean MCC nan" in problems[1] and "'10shot': other tasks (missing [" in problems[2]
    assert "regime '1shot'" in problems[3]


def test_the_tool_writes_a_reference_and_checks_a_run_against_it(tmp_path):
    values = {("m", t, r): [0.3 + 0.01 * i] * 5 for i, t in enumerate(["t1", "t2"]) for r in REGIMES}
    _rows(values).drop(columns="view").to_parquet(tmp_path / "scores.parquet", index=False)  # a run without views
    tool = [sys.executable, str(REPO / "tools" / "quickstart_reference.py")]
    paths = ["--scores", str(tmp_path / "scores.parquet"), "--reference", str(tmp_path / "ref.json")]
    assert subprocess.run([*tool, "write", *paths], capture_output=True, text=True).returncode == 0
    written = json.loads((tmp_path / "ref.json").read_text())
    assert written == make_reference(tmp_path / "scores.parquet", protocol="geneb-paper")
    ok = subprocess.run([*tool, "check", *paths], capture_output=True, text=True)
    assert ok.returncode == 0 and "agrees" in ok.stdout
    moved = {k: [v[0] + (0.01 if k == ("m", "t1", "full") else 0.0)] * 5 for k, v in values.items()}
    _rows(moved).drop(columns="view").to_parquet(
        tmp_path / "scores.parquet", index=False
    )  # one cell +0.01: its mean +0.005
    bad = subprocess.run([*tool, "check", *paths], capture_output=True, text=True)
    assert bad.returncode == 1 and "GENEB ERROR: model 'm', regime 'full'" in bad.stderr
    assert check_against_reference(tmp_path / "scores.parquet", tmp_path / "ref.json", tolerance=0.006) == []
    write_reference({**written, "reference_version": 0}, tmp_path / "old.json")
    with pytest.raises(ValueError, match="regenerate it"):
        _read_reference(tmp_path / "old.json")
