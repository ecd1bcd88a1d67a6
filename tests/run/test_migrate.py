"""geneb.run.migrate.legacy_card_problem: a legacy task card is moved into this config's folder only when nothing
it records differs from what the config would prepare (the whole workflow: tests/workflow/test_runs_apart.py)."""

from __future__ import annotations

import copy

from geneb.run.migrate import legacy_card_problem
from geneb.tasks.alphabet import AlphabetPolicy

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
    assert legacy_card_problem(card(), params(), "t") is None
    # a test split below its cap is the same data with or without the cap
    assert legacy_card_problem(card(), params(caps={"max_train": 300, "max_test": None}), "t") is None


def test_every_recorded_difference_is_named():
    assert legacy_card_problem(card(), params(), "other") == "the card is of task 't'"
    assert "taxon_group" in legacy_card_problem(card(taxon_group="plant"), params(), "t")
    other_alphabet = params(alphabet={**ALPHABET, "u_to_t": True})
    assert legacy_card_problem(card(), other_alphabet, "t").startswith("the card records alphabet policy")
    assert legacy_card_problem(card(), params(caps={"max_train": 400, "max_test": 1000}), "t") == (
        "the card records train capped to 300 (seed 0), this config max_train 400 (seed 0)"
    )
    assert "(seed 0), this config max_train 300 (seed 1)" in legacy_card_problem(card(), params(cap_seed=1), "t")
    assert legacy_card_problem(card(), params(caps={"max_train": 300, "max_test": 100}), "t") == (
        "the card records test uncapped (400 rows), this config max_test 100"
    )
    flagged = card(flags={"no_base_rows": {"train": [3]}})
    assert legacy_card_problem(flagged, params(), "t") == "the card flags rows, which this config's task_checks decide"
