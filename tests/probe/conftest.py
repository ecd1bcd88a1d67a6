"""Fixtures for the probing tests: real tasks from ../shared with k-mer frequency features, the real config."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from threadpoolctl import threadpool_limits

from geneb.models.kmer import KmerEncoder
from geneb.probe.fit import TaskArrays
from geneb.probe.protocols import Protocol, from_config
from geneb.tasks.caps import stratified_cap


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
