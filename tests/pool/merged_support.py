"""A fast merged folder for the report and figure tests of `geneb merge`: the synthetic run's scores split by model
into two results folders (the provenance columns a bundle needs set alike: one task data, one shot draw, one
protocol config), each bundled, the bundles merged with the CLI (tables, figures, report)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from geneb.cli.app import main
from geneb.core import integrity
from geneb.pool.bundle import write_bundle
from geneb.tables.scores import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
#: the models of each bundle (of the synthetic run's six)
HALVES = {"cluster-a": ["enc-small", "enc-small-ms", "kmer"], "cluster-b": ["enc-big", "ssm", "prok"]}


def split_run(root: Path, folder: Path) -> list[Path]:
    """The bundles of the synthetic run `root` split by HALVES, written under `folder`."""
    scores = integrity.read_parquet(root / "results/tables/scores.parquet")
    scores = scores.assign(
        schema_version=SCHEMA_VERSION,
        data_hash="d-" + scores["task"],
        shots_hash="s-" + scores["task"] + "-" + scores["regime"],
        config_hash="c-" + scores["protocol"],
    )
    out = []
    for name, models in HALVES.items():
        results = folder / name / "results"
        (results / "tables").mkdir(parents=True)
        part = scores[scores["model"].isin(models)].reset_index(drop=True)
        integrity.write_parquet(part, results / "tables/scores.parquet")
        out.append(folder / f"{name}.geneb.zip")
        write_bundle(results, out[-1], model_sheet=root / "config/models.yaml")
    return out


@pytest.fixture(scope="module")
def merged(synthetic_run, tmp_path_factory) -> dict[str, Path | list[Path]]:
    """{"out": the merged folder, "bundles": the two bundle paths, "root": the synthetic run} after
    `geneb merge` (tables, figures, report)."""
    root = synthetic_run["root"]
    work = tmp_path_factory.mktemp("merged")
    paths = split_run(root, work)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["analysis"]["bootstrap"]["n_resamples"] = 200  # seconds, not minutes
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    out = work / "pooled"
    args = [*map(str, paths), "--out", str(out), "--config", str(work / "config.yaml")]
    args += ["--task-sheet", str(root / "config/tasks.tsv"), "--captions", str(REPO / "workflow/report")]
    assert main(["merge", *args]) == 0
    return {"out": out, "bundles": paths, "root": root}
