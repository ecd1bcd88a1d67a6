"""Fixtures of the fine-tuning tests: one real task (capped tiny) prepared by the project's own steps, its probe
shot file, the real config's recipe with few epochs, and the real Mistral-DNA checkpoint of ../shared."""

from __future__ import annotations

import copy

import pytest
import yaml

from geneb.probe.job import write_shot_indices
from geneb.registry.load import extraction_hash, extraction_settings, load_registry
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import prepare_task
from geneb.tasks.sources import MirrorFolder
from geneb.tasks.validation import AlphabetPolicy

TASK = "gue_prom_core_all"
MODEL = "mistral-dna-1m-ft-tf0"


@pytest.fixture(scope="session")
def config(repo) -> dict:
    """The project's config/config.yaml."""
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())


@pytest.fixture(scope="session")
def ft_stage(tmp_path_factory, shared, repo, config):
    """(root, task dir, shot file) of one real task capped at 40 train / 30 test rows, shots of geneb-paper."""
    root = tmp_path_factory.mktemp("ft")
    task_dir = root / "tasks" / TASK
    row = task_row(read_catalogue(repo / "config" / "tasks.tsv"), TASK)
    prepare_task(
        TASK,
        row,
        MirrorFolder(shared / "data" / "tasks"),
        AlphabetPolicy(),
        {"max_train": 40, "max_test": 30},
        0,
        task_dir,
    )
    shots = root / "shots.json"
    write_shot_indices(
        train=task_dir / "train.parquet",
        card=task_dir / "card.json",
        output=shots,
        task=TASK,
        protocol="geneb-paper",
        settings=config["probe"]["geneb-paper"],
    )
    return root, task_dir, shots


@pytest.fixture(scope="session")
def extraction(repo) -> dict:
    """The resolved extraction settings of the real Mistral-DNA checkpoint."""
    return extraction_settings(load_registry(repo / "config" / "models.yaml"), MODEL, {})


@pytest.fixture
def recipe_settings(config) -> dict:
    """The config's recipe, cut to 2 seeds, the 10-shot regime and 3 epochs (seconds on a CPU)."""
    s = copy.deepcopy(config["finetune"]["finetune-lora"])
    s.update(seeds=[13, 17], few_shot_k=[10], epochs=3, batch_size=8)
    return s


@pytest.fixture
def run_job(ft_stage, extraction, config, tmp_path):
    """run_job(settings, **over) -> scores of `finetune_task` on the staged task."""
    from geneb.finetune.job import finetune_task

    root, task_dir, shots = ft_stage

    def run(settings: dict, **over):
        args = dict(
            train=task_dir / "train.parquet",
            test=task_dir / "test.parquet",
            card=task_dir / "card.json",
            shots=shots,
            scores_out=tmp_path / "scores.parquet",
            predictions_out=tmp_path / "preds.parquet",
            task=TASK,
            model=MODEL,
            settings=settings,
            probe_settings=config["probe"]["geneb-paper"],
            extraction=extraction,
            settings_hash=extraction_hash(extraction),
            scratch=tmp_path / "scratch",
            threads=1,
        )
        args.update(over)
        return finetune_task(**args)

    return run
