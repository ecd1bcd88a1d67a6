"""Fixtures for the probing tests: real tasks from ../shared with k-mer frequency features, the real config."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from threadpoolctl import threadpool_limits

from geneb.encoders.families.kmer import KmerEncoder
from geneb.extract.step import extract_task
from geneb.probe.fit import TaskArrays
from geneb.probe.protocols import Protocol, from_config
from geneb.registry.load import extraction_settings, load_registry
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import prepare_task, stratified_cap
from geneb.tasks.sources import MirrorFolder
from geneb.tasks.validation import AlphabetPolicy


@pytest.fixture(autouse=True, scope="session")
def one_blas_thread():
    """Probes run single-threaded, as the workflow's default `threads: 1` (fast and steady on shared CPUs)."""
    with threadpool_limits(1):
        yield


@functools.cache
def _load(shared: Path, task: str, k: int, max_train: int | None) -> TaskArrays:
    folder = shared / "data" / "tasks" / task
    tr = pd.read_csv(folder / "train.csv.gz")
    te = pd.read_csv(folder / "test.csv.gz")
    if max_train is not None:  # the project's seeded stratified cap, as a task cap would apply it
        tr = tr.iloc[stratified_cap(tr["label"].to_numpy(), max_train, 0)]
    enc = KmerEncoder(k)
    return TaskArrays(
        task,
        enc.embed(tr["sequence"].tolist()).embeddings,
        tr["label"].to_numpy(),
        np.arange(len(tr), dtype=np.int64),
        enc.embed(te["sequence"].tolist()).embeddings,
        te["label"].to_numpy(),
        np.arange(len(te), dtype=np.int64),
    )


@pytest.fixture(scope="session")
def real_task(shared):
    """real_task(name, k=3, max_train=None) -> TaskArrays with k-mer frequency embeddings (float32, 4^k wide);
    max_train caps the training split (stratified, seed 0)."""

    def get(task: str, k: int = 3, max_train: int | None = None) -> TaskArrays:
        return _load(shared, task, k, max_train)

    return get


@pytest.fixture(scope="session")
def probe_config(repo) -> dict:
    """The `probe:` section of the project's config/config.yaml."""
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())["probe"]


@pytest.fixture(scope="session")
def train_labels(shared):
    """train_labels(name) -> the real training labels (n,) of a mirrored task."""

    def get(task: str) -> np.ndarray:
        return pd.read_csv(shared / "data" / "tasks" / task / "train.csv.gz", usecols=["label"])["label"].to_numpy()

    return get


@pytest.fixture(scope="session")
def protocols(probe_config) -> dict[str, Protocol]:
    return {name: from_config(name, s) for name, s in probe_config.items()}


#: the task of the `stage` fixture
STAGE_TASK = "gue_emp_h3__devtrain"


@pytest.fixture(scope="module")
def stage(tmp_path_factory, shared, repo):
    """resources/ for one real task (capped 600/300) and the kmer-3 model, made by the project's own steps."""
    root = tmp_path_factory.mktemp("run")
    row = task_row(read_catalogue(repo / "config" / "tasks.tsv"), STAGE_TASK)
    task_dir = root / "tasks" / STAGE_TASK
    prepare_task(
        STAGE_TASK,
        row,
        MirrorFolder(shared / "data" / "tasks"),
        AlphabetPolicy(),
        {"max_train": 600, "max_test": 300},
        0,
        task_dir,
    )
    settings = extraction_settings(load_registry(repo / "config" / "models.yaml"), "kmer-3", {})
    extract_task(settings, task_dir, root / "kmer-3.h5")
    return root, task_dir
