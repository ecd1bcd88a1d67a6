"""Messages that say what is at hand: the padding error names the setting that fixes the case (not one already
set), and letters that become UNK are named as N or as IUPAC codes (geneb.encoders.engine)."""

from __future__ import annotations

import pytest

from geneb.core.errors import UnknownTokenError
from geneb.encoders.engine.checks import _padding_fix, _unknown_letters, count_unknown


def test_padding_fix_names_the_setting_for_the_case_at_hand():
    assert "padding_side: right" in _padding_fix("left", True, False)
    right_masked = _padding_fix("right", True, False)  # a CNN wrapped as a transformers model: the mask is ignored
    assert "attention_mask: false" in right_masked and "Set extraction.padding_side" not in right_masked
    assert "causal: false" in _padding_fix("right", False, True)
    assert "bucket_by_length: true" in _padding_fix("right", False, False)


@pytest.mark.parametrize(
    "texts, words",
    [
        (["ACGTNNNN"], "N"),
        (["ACGTRY"], "IUPAC codes R, Y"),
        (["ANCGW"], "N and IUPAC codes W"),
        (["ACGTA"], "letters or k-mers outside the model's vocabulary"),
    ],
)
def test_unknown_letters_are_named_as_they_are(texts, words):
    assert _unknown_letters(texts) == words


def test_the_unk_error_says_n_not_iupac(caplog):
    encoded, rows = [[5, 0, 0], [5, 6]], [11, 12]
    with pytest.raises(UnknownTokenError, match=r"rows 11\); N would reach it as UNK") as err:
        count_unknown(encoded, rows, model="m", unk_id=0, policy="error", texts=["ACNN", "ACGT"])
    assert "IUPAC" not in str(err.value)
    count_unknown(encoded, rows, model="m", unk_id=0, policy="count", texts=["ACRY", "ACGT"])
    assert "IUPAC codes R, Y reach it as UNK" in caplog.text
