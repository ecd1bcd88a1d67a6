"""Runs for the site tests: a real small workflow run (`snakemake site`: 2 real ../shared tasks x the 3-mer
model and the GC shortcut, capped small; tables, audit, figures and the site: `workflow_support.site_run`, built
once per test session for every pytest-xdist worker; tests/pool's two runs start from it too), and copies of a
results folder with one table changed (its content digest written again, as the workflow's writers do)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from geneb.core import integrity
from workflow_support import site_run


@pytest.fixture(scope="session")
def real_run(tmp_path_factory, shared) -> Path:
    """The run folder of a finished `snakemake site` (results/tables, results/figures, results/site)."""
    return site_run(tmp_path_factory, shared)


def copy_results(results: Path, dest: Path) -> Path:
    """A copy of the results folder `results` at `dest` (tables and figures; sidecar digests kept)."""
    for sub in ("tables", "figures"):
        if (results / sub).is_dir():
            shutil.copytree(results / sub, dest / sub)
    return dest


def rewrite_table(path: Path, table: pd.DataFrame) -> None:
    """Write `table` to the parquet `path` with its metadata and a fresh content digest."""
    old = integrity.read_parquet(path)
    table.attrs = dict(old.attrs)
    integrity.write_parquet(table, path)


def with_tracks(results: Path, dest: Path, model: str, task: str) -> Path:
    """A copy of `results` with one row per other track's table for (`model`, `task`): zero-shot scores (and the
    zero-shot task's model-free baselines), fine-tuned against probed, the gain over a random-init twin, cost. Small
    stand-ins in each table's real columns: what a run with those overlays writes."""
    out = copy_results(results, dest)
    tables = out / "tables"
    zs = "zs_stop_gain_vs_synonymous"
    integrity.write_parquet(
        pd.DataFrame(
            [
                {
                    "model": model,
                    "scorer": "embedding-cosine",
                    "task": zs,
                    "kind": "variant",
                    "metric": "auroc",
                    "value": 0.61,
                    "ci_low": 0.55,
                    "ci_high": 0.67,
                    "rank": 1,
                    "auprc": 0.58,
                    "auroc_within_strata": 0.6,
                    "reference": "",
                    "twin": f"{model}-twin",
                    "twin_value": 0.52,
                    "gain_over_twin": 0.09,
                    "shortcut_flag": "pass",
                    "incomplete_reason": "",
                }
            ]
        ),  # fmt: skip
        tables / "zeroshot_leaderboard.parquet",
    )
    integrity.write_parquet(
        pd.DataFrame(
            [
                {
                    "task": zs,
                    "baseline": "combined",
                    "metric": "auroc",
                    "value": 0.52,
                    "ci_low": 0.48,
                    "ci_high": 0.56,
                    "shortcut_flag": "pass",
                    "shortcut_reason": "",
                }
            ]
        ),  # fmt: skip
        tables / "zeroshot_shortcuts.parquet",
    )
    integrity.write_parquet(
        pd.DataFrame(
            [
                {
                    "probe_protocol": "geneb-paper",
                    "regime": "full",
                    "kind": "gain",
                    "level": "macro",
                    "category": "macro",
                    "model": model,
                    "mcc_probe": 0.4,
                    "mcc_finetune": 0.5,
                    "gain": 0.1,
                    "gain_ci_low": 0.02,
                    "gain_ci_high": 0.18,
                    "note": "",
                }
            ]
        ),  # fmt: skip
        tables / "finetune_vs_probe.parquet",
    )
    integrity.write_parquet(
        pd.DataFrame(
            [
                {
                    "protocol": "geneb-paper",
                    "regime": "full",
                    "model": model,
                    "twin": f"{model}-twin",
                    "level": "task",
                    "category": "Promoters",
                    "task": task,
                    "mcc_model": 0.5,
                    "mcc_twin": 0.3,
                    "gain": 0.2,
                    "gain_ci_low": 0.1,
                    "gain_ci_high": 0.3,
                    "p_holm": 0.01,
                    "note": "",
                }
            ]
        ),  # fmt: skip
        tables / "pretraining_gain.parquet",
    )
    integrity.write_parquet(
        pd.DataFrame(
            [
                {
                    "model": model,
                    "task": task,
                    "hardware": "CPU (2 threads)",
                    "dtype": "float32",
                    "seconds_load": 1.5,
                    "seconds_compute": 12.25,
                    "sequences": 3000,
                    "bases_per_s": 49000.5,
                    "tokens_per_s": 8000.25,
                    "peak_memory_bytes": 512_000_000,
                    "peak_memory_kind": "process_max_rss",
                }
            ]
        ),  # fmt: skip
        tables / "cost.parquet",
    )
    return out
