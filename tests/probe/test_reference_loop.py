"""geneb-paper equals the official reference's probing loop on GENEB's own stored embeddings, in every cell.

The reference (../shared/reference/geneb_paper/README.md, "Probe" and "Regimes") is written out here, as its
authors wrote it: `LogisticRegression(max_iter=1000, random_state=seed)` on the raw embeddings of the training
split in its own row order, `numpy.random.RandomState(seed).choice` per class in sorted label order for k-shot,
scored on the whole test split. The case is the one cell that once differed (kmer-3to6 on the 5-class species
task, the quickstart's 2,000/1,000 cap): float32 lbfgs follows the BLAS reduction order, so the job's `threads`
knob changed its MCC by 0.0013 until the probe fits ran on one BLAS thread whatever the knob says.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import matthews_corrcoef
from threadpoolctl import threadpool_limits

from geneb.extract.cache import read_embeddings
from geneb.extract.step import extract_task
from geneb.probe.job import fit_probes, write_shot_indices
from geneb.registry.load import extraction_settings, load_registry
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import prepare_task
from geneb.tasks.sources import MirrorFolder
from geneb.tasks.validation import AlphabetPolicy

TASK = "derived_plant_species_of_origin_5class"
MODEL = "kmer-3to6"


def reference_loop(X_train, y_train, X_test, y_test, seeds, ks):
    """The official loop, verbatim in what it computes: {(regime, seed): MCC}."""
    out = {}
    for seed in seeds:
        for regime in ["full", *(f"{k}shot" for k in ks)]:
            if regime == "full":
                idx = np.arange(len(y_train))
            else:
                k = int(regime.removesuffix("shot"))
                rng = np.random.RandomState(seed)
                idx = np.concatenate(
                    [
                        rng.choice(np.where(y_train == c)[0], size=min(k, int((y_train == c).sum())), replace=False)
                        for c in np.unique(y_train)
                    ]
                )
            clf = LogisticRegression(max_iter=1000, random_state=seed).fit(X_train[idx], y_train[idx])
            out[(regime, seed)] = matthews_corrcoef(y_test, clf.predict(X_test))
    return out


@pytest.fixture(scope="module")
def stored(tmp_path_factory, shared, repo):
    """The quickstart's prepared task (capped 2000/1000) and its kmer-3to6 embeddings, by the project's steps."""
    root = tmp_path_factory.mktemp("reference")
    row = task_row(read_catalogue(repo / "config" / "tasks.tsv"), TASK)
    task_dir = root / "tasks" / TASK
    caps = {"max_train": 2000, "max_test": 1000}
    prepare_task(TASK, row, MirrorFolder(shared / "data" / "tasks"), AlphabetPolicy(), caps, 0, task_dir)
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), MODEL, {})
    extract_task(settings, task_dir, root / f"{MODEL}.h5")
    return root, task_dir


@pytest.mark.parametrize("threads", [1, 2])
def test_geneb_paper_equals_the_reference_loop_in_every_cell_whatever_the_threads(stored, probe_config, threads):
    root, task_dir = stored
    settings = probe_config["geneb-paper"]
    shots = root / "shots.json"
    if not shots.exists():
        write_shot_indices(
            train=task_dir / "train.parquet",
            card=task_dir / "card.json",
            output=shots,
            task=TASK,
            protocol="geneb-paper",
            settings=settings,
        )
    scores = fit_probes(
        train=task_dir / "train.parquet",
        test=task_dir / "test.parquet",
        card=task_dir / "card.json",
        embeddings=root / f"{MODEL}.h5",
        shots=shots,
        scores_out=root / f"scores_{threads}.parquet",
        predictions_out=root / f"predictions_{threads}.parquet",
        task=TASK,
        model=MODEL,
        protocol="geneb-paper",
        settings=settings,
        threads=threads,
    )
    # the reference reads the stored vectors and the task files, nothing of GENEB's probe code
    cache = read_embeddings(root / f"{MODEL}.h5")
    X_train, X_test = cache.splits["train"][0], cache.splits["test"][0]
    y_train = pd.read_parquet(task_dir / "train.parquet")["label"].to_numpy()
    y_test = pd.read_parquet(task_dir / "test.parquet")["label"].to_numpy()
    with threadpool_limits(1):
        ref = reference_loop(X_train, y_train, X_test, y_test, settings["seeds"], settings["few_shot_k"])
    ours = scores[scores["metric"] == "MCC"].set_index(["regime", "seed"])["value"]
    assert len(ours) == len(ref) == 15
    for cell, value in ref.items():
        assert ours[cell] == value, cell
