"""A run with random-init twins (config `twins: true`) bundles and merges: the implicit `<model>-twin` entries
come from the registry's reader like every other entry, so the bundle carries the twin's card (`twin: {of, seed}`)
and the merged registry reads back with the twin as the run had it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from geneb.core import integrity
from geneb.pool.bundle import BundleError, read_bundle, write_bundle
from geneb.pool.merge import merge_bundles
from geneb.registry.load import load_registry
from geneb.tables.scores import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]
PARENT = "mistral-dna-1m-ft-prom"
TWIN = f"{PARENT}-twin"


def _run_with_twin(synthetic_run, folder: Path) -> Path:
    """A results folder whose score rows are the synthetic run's first two models, named PARENT and TWIN."""
    scores = integrity.read_parquet(synthetic_run["root"] / "results/tables/scores.parquet")
    first, second = sorted(scores["model"].unique())[:2]
    part = scores[scores["model"].isin([first, second])].copy()
    part["model"] = part["model"].map({first: PARENT, second: TWIN})
    part = part.assign(schema_version=SCHEMA_VERSION, data_hash="d", shots_hash="s", config_hash="c")
    results = folder / "results"
    (results / "tables").mkdir(parents=True)
    integrity.write_parquet(part.reset_index(drop=True), results / "tables/scores.parquet")
    return results


def test_a_twin_run_bundles_with_the_twins_card_and_merges_back(synthetic_run, tmp_path):
    results = _run_with_twin(synthetic_run, tmp_path)
    bundle = tmp_path / "twins.geneb.zip"
    write_bundle(results, bundle, model_sheet=REPO / "config/models.yaml")
    card = read_bundle(bundle).registry[TWIN]
    assert card["twin"] == {"of": PARENT, "seed": 0} and card["pretraining_domain"] == "none"
    merge_bundles([bundle], tmp_path / "merged")
    registry = load_registry(tmp_path / "merged/registry/models.yaml", envs_dir=None)
    assert registry.spec(TWIN).twin == {"of": PARENT, "seed": 0}
    assert registry.spec(PARENT).twin is None


def test_a_model_the_registry_lacks_is_refused_naming_it(synthetic_run, tmp_path):
    results = _run_with_twin(synthetic_run, tmp_path)
    sheet = yaml.safe_load((REPO / "config/models.yaml").read_text())
    del sheet["models"][PARENT]  # and with it its implicit twin
    (tmp_path / "models.yaml").write_text(yaml.safe_dump(sheet))
    with pytest.raises(BundleError, match=rf"model\(s\) \['{PARENT}', '{TWIN}'\] of .* are not in the registry"):
        write_bundle(results, tmp_path / "x.geneb.zip", model_sheet=tmp_path / "models.yaml")
