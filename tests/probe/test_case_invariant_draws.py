"""Draws are invariant to letter case: a soft-masked task and its upper-case copy get the same rows drawn
and the same scores under both protocols. The geneb-strict nested draw used to be seeded from the
card's data hash, which keeps case."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from geneb.extract.step import extract_task
from geneb.probe.job import fit_probes, write_shot_indices
from geneb.probe.shots import draw_identity
from geneb.registry.load import extraction_settings, load_registry
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import prepare_task
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy
from synth import write_mirror_task

TASK = "ienhancer2l_strong_vs_weak"


def soft_mask(seq: str, rng: np.random.Generator) -> str:
    """Lower-case a random stretch, as repeat masking does."""
    a = int(rng.integers(0, len(seq) // 2))
    return seq[:a] + seq[a : a + 20].lower() + seq[a + 20 :]


def run_task(tmp_path, repo, name, train, test, protocol):
    src = write_mirror_task(tmp_path / name / "m", TASK, {"train": train, "test": test}) / TASK
    catalogue = read_catalogue(repo / "config/tasks.tsv")
    out = tmp_path / name / "tasks" / TASK
    prepare_task(TASK, task_row(catalogue, TASK), open_source(str(src.parent)), AlphabetPolicy(), {}, 0, out)
    settings = extraction_settings(load_registry(repo / "config/models.yaml"), "kmer-3", {})
    emb = tmp_path / name / "emb.h5"
    extract_task(settings, out, emb, progress=False)
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    probe = {**config["probe"][protocol], "seeds": [0, 1]}
    shots = tmp_path / name / f"{protocol}.json"
    write_shot_indices(
        train=out / "train.parquet",
        card=out / "card.json",
        output=shots,
        task=TASK,
        protocol=protocol,
        settings=probe,
    )
    scores = fit_probes(
        train=out / "train.parquet",
        test=out / "test.parquet",
        card=out / "card.json",
        embeddings=emb,
        shots=shots,
        scores_out=tmp_path / name / "s.parquet",
        predictions_out=tmp_path / name / "p.parquet",
        task=TASK,
        model="kmer-3",
        protocol=protocol,
        settings=probe,
    )
    draws = [(d["regime"], d["seed"], d["rows"]) for d in json.loads(shots.read_text())["draws"]]
    return draws, scores


@pytest.mark.parametrize("protocol", ["geneb-paper", "geneb-strict"])
def test_soft_masked_copy_draws_and_scores_like_its_upper_case_twin(tmp_path, repo, protocol):
    rng = np.random.default_rng(3)
    train = [("".join(rng.choice(list("ACGT"), 60)) + ("GGGGCC" if y else "ATATAT") * 4, y) for y in [0, 1] * 20]
    test = [("".join(rng.choice(list("ACGT"), 60)) + ("GGGGCC" if y else "ATATAT") * 4, y) for y in [0, 1] * 8]
    masked = [(soft_mask(s, rng), y) for s, y in train], [(soft_mask(s, rng), y) for s, y in test]
    d_up, s_up = run_task(tmp_path, repo, "upper", train, test, protocol)
    d_sm, s_sm = run_task(tmp_path, repo, "masked", *masked, protocol)
    assert d_up == d_sm
    keys = ["regime", "seed", "metric"]
    cols = keys + ["value"]
    pd.testing.assert_frame_equal(
        s_up[cols].sort_values(keys).reset_index(drop=True), s_sm[cols].sort_values(keys).reset_index(drop=True)
    )


def test_draw_identity_folds_case_and_nothing_else():
    rows, y = np.arange(3), np.array([0, 1, 0])
    base = draw_identity(rows, y, ["ACGT", "GGCC", "TTAA"])
    assert draw_identity(rows, y, ["acGT", "GGCC", "ttaa"]) == base
    assert draw_identity(rows, np.array([0, 1, 1]), ["ACGT", "GGCC", "TTAA"]) != base
    assert draw_identity(rows, y, ["ACGT", "GGCC", "TTAC"]) != base
