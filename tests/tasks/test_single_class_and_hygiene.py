"""A one-class test split is refused at preparation, or kept (task_checks.single_class_test: keep), flagged in
the card and the score rows and left out of category means; the score rows carry each split's letter counts
and each model's unknown-token counts; the report shows them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from geneb.analysis import run
from geneb.extract.cache import read_embeddings
from geneb.extract.step import extract_task
from geneb.probe.job import _unknown_token_columns
from geneb.report.html import _hygiene_table
from geneb.tables.aggregate import _join_columns
from geneb.tables.scores import check_scores
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import TaskValidationError, prepare_task
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy
from synth import analysis_config, grid, meta, scores_from_values, write_mirror_task

TASK = "ienhancer2l_strong_vs_weak"


@pytest.fixture(scope="module")
def catalogue(repo):
    return read_catalogue(repo / "config" / "tasks.tsv")


def _task(root: Path, train, test) -> Path:
    return write_mirror_task(root, TASK, {"train": train, "test": test})


TRAIN = [("ACGTACGTAC", 0), ("GGGCCCGGGC", 1), ("ACGTTCGTAC", 0), ("GGGCCAGGGC", 1)]


def test_a_one_class_test_split_is_refused_with_a_clear_message(tmp_path, catalogue):
    root = _task(tmp_path / "m", TRAIN, [("ACGTACGTAA", 1), ("GGGCCCGGGA", 1)])
    with pytest.raises(TaskValidationError, match=r"split 'test': only one label, '1' \(all 2 rows\); MCC would be 0"):
        prepare_task(TASK, task_row(catalogue, TASK), open_source(str(root)), AlphabetPolicy(), {}, 0, tmp_path / "o")
    assert not (tmp_path / "o/card.json").exists()


def test_kept_one_class_test_is_flagged_and_left_out_of_category_means(tmp_path, catalogue):
    root = _task(tmp_path / "m", TRAIN, [("ACGTACGTAA", 1), ("GGGCCCGGGA", 1)])
    out = tmp_path / "o"
    card = prepare_task(
        TASK,
        task_row(catalogue, TASK),
        open_source(str(root)),
        AlphabetPolicy(),
        {},
        0,
        out,
        {"single_class_test": "keep"},
    )
    assert card.test_single_class and card.as_dict()["flags"] == {
        "test_single_class": True,
        "test_missing_classes": [0],
    }
    # the flag reaches the score rows (joined from the card) ...
    cats = {TASK: "Enhancers", "e2": "Enhancers", "p1": "Promoters"}
    scores = scores_from_values(grid(["a", "b"], list(cats), lambda m, t, r: 0.0 if t == TASK else 0.5), cats)
    flagged = _join_columns(scores[scores["task"] == TASK], [out / "card.json"])
    assert flagged["test_single_class"].all()
    scores["test_single_class"] = scores["task"] == TASK
    # ... and the category mean is that of the other task only (0.5), not pulled to 0.25
    settings = run.resolve_settings(analysis_config(), "geneb")
    board = run.leaderboard_tables(check_scores(scores), meta({"a": {}, "b": {}}), None, settings)["leaderboard"]
    enh = board[(board["category"] == "Enhancers")].set_index("model")
    assert enh["value"].tolist() == pytest.approx([0.5, 0.5]) and enh["n_tasks"].tolist() == [1, 1]


def test_score_rows_carry_letter_counts_and_unknown_tokens(tmp_path, catalogue, zoo):
    """IUPAC codes reach a character-vocabulary model as UNK: counted per split in the score rows and marked in
    the report's data-hygiene table; soft-masked rows counted too."""
    rng = np.random.default_rng(0)
    train = [("".join(rng.choice(list("ACGT"), 30)) + ("gggg" if y else "aaaa"), y) for y in [0, 1] * 4]
    test = [("ACGRYACGTACGTACGT", 0), ("GGGGCCCCGGGGCCCC", 1)]
    root = _task(tmp_path / "m", train, test)
    out = tmp_path / "tasks" / TASK
    prepare_task(TASK, task_row(catalogue, TASK), open_source(str(root)), AlphabetPolicy(), {}, 0, out)
    settings = zoo.settings("bert")
    h5 = tmp_path / "emb" / settings["model"] / "000000000000" / f"{TASK}.h5"
    h5.parent.mkdir(parents=True)
    extract_task(settings, out, h5, progress=False)
    cats = {TASK: "Enhancers"}
    scores = scores_from_values(grid([settings["model"]], [TASK], lambda m, t, r: 0.3), cats)
    cache = read_embeddings(h5)  # the probe rows carry the file's unknown-token counts (geneb.probe.job)
    scores = scores.assign(**_unknown_token_columns(cache.split_attrs, len(scores)))
    joined = _join_columns(scores, [out / "card.json"])
    assert len(joined) == len(scores) and list(joined.columns[: len(scores.columns)]) == list(scores.columns)
    assert (joined["test_rows_iupac"] == 1).all() and (joined["train_rows_lowercase"] == 8).all()
    assert (joined["n_unknown_tokens_test"] >= 2).all() and (joined["n_unknown_tokens_train"] == 0).all()
    assert not joined["test_single_class"].any()
    table = _hygiene_table(joined)
    assert table.loc[0, "unknown tokens"].startswith(f"⚠ {settings['model']}: train 0 / test ")
    assert _hygiene_table(scores).empty  # a score table without the columns (published results): no section
