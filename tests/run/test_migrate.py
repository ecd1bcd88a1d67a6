"""geneb.run.migrate._legacy_card_problem: a legacy task card is moved into this config's folder only when nothing
it records differs from what the config would prepare (the whole workflow: tests/workflow/test_runs_apart.py)."""

from __future__ import annotations

import copy

from geneb.run.migrate import _legacy_card_problem
from geneb.tasks.validation import AlphabetPolicy

ALPHABET = {"allow_iupac": True, "strip_whitespace": False, "u_to_t": False}
PARAMS = {
    "catalogue_row": {"task_set": "GUE", "taxon_group": "human"},
    "alphabet": ALPHABET,
    "caps": {"max_train": 300, "max_test": 1000},
    "cap_seed": 0,
}
CARD = {
    "task": "t",
    "task_set": "GUE",
    "taxon_group": "human",
    "alphabet_policy": AlphabetPolicy.from_config(ALPHABET).as_dict(),
    "caps": {"train": {"cap": 300, "seed": 0, "n_source": 900, "n_kept": 300}},
    "splits": {"train": {"n": 300, "n_source": 900}, "test": {"n": 400, "n_source": 400}},
}


def card(**changes):
    out = copy.deepcopy(CARD)
    out.update(changes)
    return out


def params(**changes):
    out = copy.deepcopy(PARAMS)
    out.update(changes)
    return out


def test_a_card_of_the_same_preparation_matches():
    assert _legacy_card_problem(card(), params(), "t") is None
    # a test split below its cap is the same data with or without the cap
    assert _legacy_card_problem(card(), params(caps={"max_train": 300, "max_test": None}), "t") is None


def test_every_recorded_difference_is_named():
    assert _legacy_card_problem(card(), params(), "other") == "the card is of task 't'"
    assert "taxon_group" in _legacy_card_problem(card(taxon_group="plant"), params(), "t")
    other_alphabet = params(alphabet={**ALPHABET, "u_to_t": True})
    assert _legacy_card_problem(card(), other_alphabet, "t").startswith("the card records alphabet policy")
    assert _legacy_card_problem(card(), params(caps={"max_train": 400, "max_test": 1000}), "t") == (
        "the card records train capped to 300 (seed 0), this config max_train 400 (seed 0)"
    )
    assert "(seed 0), this config max_train 300 (seed 1)" in _legacy_card_problem(card(), params(cap_seed=1), "t")
    assert _legacy_card_problem(card(), params(caps={"max_train": 300, "max_test": 100}), "t") == (
        "the card records test uncapped (400 rows), this config max_test 100"
    )
    flagged = card(flags={"no_base_rows": {"train": [3]}})
    assert _legacy_card_problem(flagged, params(), "t") == "the card flags rows, which this config's task_checks decide"


def test_legacy_embeddings_follow_their_task_into_the_layout_even_after_it_moved(shared, tmp_path, monkeypatch):
    """migrate_legacy on real files: the legacy task folder and its kmer-3 file move (mtime kept); a kmer-4 file
    of the same data found later moves beside the already moved task; a file made from other data (other caps)
    stays; a dry run moves nothing."""
    import logging
    import os
    from pathlib import Path

    import yaml

    from geneb.extract.step import extract_task
    from geneb.run.migrate import _legacy_embedding_path as legacy_embedding_path
    from geneb.run.migrate import legacy_task_dir, migrate_legacy
    from geneb.run.plan import plan_run
    from geneb.tasks.catalogue import source_string, task_row
    from geneb.tasks.prepare import prepare_from_params

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GENEB_TASK_SOURCE", raising=False)
    task = "ienhancer2l_strong_vs_weak"
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    config.update(
        task_source=str(shared / "data/tasks"),
        task_sheet=str(repo / "config/tasks.tsv"),
        model_sheet=str(repo / "config/models.yaml"),
        model_revisions=str(repo / "config/model_revisions.yaml"),
        tasks=[task],
        caps={"seed": 0, "default": {"max_train": 200, "max_test": 100}, "per_task": {}},
    )

    def plan(models, **caps):
        cfg = {**config, "models": models}
        if caps:
            cfg["caps"] = {**config["caps"], "default": caps}
        return plan_run(cfg, main_process=False, conda_deploys=False, partial_file=None, log=logging.getLogger())

    def legacy(made, model, folder):
        """A complete legacy embedding file of `model` made from the prepared task in `folder`."""
        path = legacy_embedding_path(model, made.extraction_hashes[model], task)
        path.parent.mkdir(parents=True, exist_ok=True)
        extract_task(made.extraction_settings[model], folder, path, progress=False)
        return path, path.stat().st_mtime_ns

    one = plan(["kmer-3"])
    old_dir = legacy_task_dir(task)
    old_dir.mkdir(parents=True)
    prepare_from_params(
        task, one.task_params(task), source_string(task_row(one.task_sheet, task), one.config), old_dir / "card.json"
    )
    h5_3, mtime_3 = legacy(one, "kmer-3", old_dir)

    lines: list[str] = []
    log = type("Log", (), {"info": lambda self, m: lines.append(m), "warning": lambda self, m: lines.append(m)})()
    assert len(migrate_legacy(one, dry_run=True, log=log)) == 5 and h5_3.exists() and "would move" in lines[-1]
    moved = migrate_legacy(one, dry_run=False, log=log)
    assert (h5_3, Path(one.embedding_file("kmer-3", task))) in moved and not old_dir.joinpath("card.json").exists()
    assert os.stat(one.embedding_file("kmer-3", task)).st_mtime_ns == mtime_3

    two = plan(["kmer-3", "kmer-4"])
    h5_4, mtime_4 = legacy(two, "kmer-4", Path(two.task_dir(task)))
    other = plan(["kmer-3", "kmer-4"], max_train=150, max_test=100)
    other_dir = Path("elsewhere")
    other_dir.mkdir()
    prepare_from_params(
        task,
        other.task_params(task),
        source_string(task_row(other.task_sheet, task), other.config),
        other_dir / "card.json",
    )
    assert migrate_legacy(two, dry_run=False, log=log) == [(h5_4, Path(two.embedding_file("kmer-4", task)))]
    assert lines[-1].startswith(f"task {task}: 1 legacy embedding file(s) moved beside {two.task_dir(task)}/")
    assert os.stat(two.embedding_file("kmer-4", task)).st_mtime_ns == mtime_4
    # a legacy file made from other data (caps 150) is not this task's: it stays
    stray, _ = legacy(two, "kmer-4", other_dir)
    Path(two.embedding_file("kmer-4", task)).unlink()
    assert migrate_legacy(two, dry_run=False, log=log) == [] and stray.exists()
