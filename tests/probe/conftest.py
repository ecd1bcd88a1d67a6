"""Fixtures for the probing tests: real tasks from ../shared with k-mer frequency features, the real config."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from geneb.models.kmer import KmerEncoder
from geneb.probe.fit import TaskArrays
from geneb.probe.protocols import Protocol, from_config


@functools.cache
def _load(shared: Path, task: str, k: int, max_train: int | None) -> TaskArrays:
    folder = shared / "data" / "tasks" / task
    tr = pd.read_csv(folder / "train.csv.gz")
    te = pd.read_csv(folder / "test.csv.gz")
    if max_train is not None and len(tr) > max_train:
        tr = tr.iloc[:max_train]
    enc = KmerEncoder(k)
    return TaskArrays(
        task,
        enc.embed(tr["sequence"].tolist()).embeddings, tr["label"].to_numpy(), np.arange(len(tr), dtype=np.int64),
        enc.embed(te["sequence"].tolist()).embeddings, te["label"].to_numpy(), np.arange(len(te), dtype=np.int64),
    )  # fmt: skip


@pytest.fixture(scope="session")
def real_task(shared):
    """real_task(name, k=3, max_train=None) -> TaskArrays with k-mer frequency embeddings (float32, 4^k wide)."""

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
