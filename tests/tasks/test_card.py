"""The typed task card: `prepare_task` writes it through `write_card`, `read_card` types it, and the JSON on
disk is the layout every card had (indent 1, keys sorted), byte for byte through a read/write round trip."""

from __future__ import annotations

import json

import pytest

from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import (
    Overlap,
    SplitCap,
    SplitSummary,
    TaskCard,
    _card_text,
    _report_lines,
    _write_card,
    prepare_task,
    read_card,
)
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy

TASK = "ienhancer2l_strong_vs_weak"  # 1484 train / 200 test


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, repo, shared):
    """A real mirrored task prepared with a cap on train (so the card has every section)."""
    out = tmp_path_factory.mktemp("card") / TASK
    catalogue = read_catalogue(repo / "config" / "tasks.tsv")
    source = open_source(str(shared / "data" / "tasks"))
    card = prepare_task(TASK, task_row(catalogue, TASK), source, AlphabetPolicy(), {"max_train": 300}, 0, out)
    return card, out / "card.json"


def test_round_trip_of_a_prepared_card_gives_the_same_bytes(prepared, tmp_path):
    card, path = prepared
    on_disk = path.read_bytes()
    # the layout of every card so far: json.dumps(mapping, indent=1, sort_keys=True), UTF-8
    assert on_disk == json.dumps(json.loads(on_disk), indent=1, sort_keys=True).encode()
    again = read_card(path)
    _write_card(tmp_path / "card.json", again)
    assert (tmp_path / "card.json").read_bytes() == on_disk
    assert _card_text(card).encode() == on_disk
    assert again == card and again.as_dict() == json.loads(on_disk)


def test_the_typed_fields_are_the_cards_keys(prepared):
    card, path = prepared
    raw = json.loads(path.read_text())
    assert isinstance(card, TaskCard)
    assert (card.task, card.category, card.data_hash) == (raw["task"], raw["category"], raw["data_hash"])
    assert card.classes == tuple(raw["classes"]) and card.source == raw["source"]
    assert card.label_names is None and raw["label_names"] is None
    for split, s in raw["splits"].items():
        summary = card.split(split)
        assert isinstance(summary, SplitSummary)
        assert (summary.n, summary.n_source, summary.n_duplicate_rows) == (s["n"], s["n_source"], s["n_duplicate_rows"])
        assert summary.class_counts == s["class_counts"] and summary.class_counts_dedup == s["class_counts_dedup"]
        assert list(summary.dedup_drop_rows) == s["dedup_drop_rows"]
        assert list(summary.duplicate_rows) == s["duplicate_rows"]
    assert isinstance(card.overlap, Overlap)
    assert card.overlap.exact == raw["train_test_overlap"]["exact"]
    assert list(card.overlap.exact_rows) == raw["train_test_overlap"]["exact_rows"]
    assert set(card.caps) == {"train"} and isinstance(card.caps["train"], SplitCap)
    assert card.caps["train"].n_kept == 300 and card.caps["train"].n_source == 1484
    assert list(card.capped_splits()) == ["train"]
    assert _report_lines(card)[0].startswith(f"task {TASK} (")
    assert any("train capped to 300 of 1484 rows (seed 0" in line for line in _report_lines(card))


def test_a_card_is_frozen_and_its_mapping_a_copy(prepared):
    card, _ = prepared
    with pytest.raises(AttributeError):
        card.task = "other"  # type: ignore[misc]
    d = card.as_dict()
    d["task"] = "other"
    assert card.as_dict()["task"] == TASK


def test_a_card_without_its_identity_is_refused(tmp_path):
    path = tmp_path / "card.json"
    path.write_text(json.dumps({"task": "t", "category": "Promoters"}))
    with pytest.raises(KeyError, match="data_hash"):
        read_card(path)
    minimal = TaskCard.from_dict({"task": "t", "category": "c", "data_hash": "h"})
    assert minimal.split("test").dedup_drop_rows == () and minimal.caps == {} and minimal.overlap is None
