"""The alphabet policy: what is allowed, what fails, and that errors name task, split, row and character."""

import pytest

from geneb.tasks.validation import AlphabetPolicy, SequenceError, model_input

DEFAULT = AlphabetPolicy()


def check(policy, seq):
    return policy.apply(seq, task="t1", split="train", row=7)


def test_case_is_kept_and_models_see_uppercase():
    assert check(DEFAULT, "acgTNn") == "acgTNn"
    assert model_input("acgTNn") == "ACGTNN"


@pytest.mark.parametrize("code", list("RYSWKMBDHVryswkmbdhv"))
def test_iupac_codes_allowed_by_default_and_refused_when_off(code):
    assert check(DEFAULT, f"AC{code}GT") == f"AC{code}GT"
    with pytest.raises(SequenceError, match="IUPAC ambiguity code"):
        check(AlphabetPolicy(allow_iupac=False), f"AC{code}GT")


@pytest.mark.parametrize(
    "seq, char, pos",
    [
        ("ACGU", "'U'", 3),
        ("AC-GT", "'-'", 2),
        ("ACG.T", "'.'", 3),
        ("MS ACGTN", "' '", 2),
        ("Eq ACGT", "'E'", 0),
        ("ACG1", "'1'", 3),
        ("ACGTX", "'X'", 4),
    ],
)
def test_other_characters_fail_naming_task_split_row_position_and_character(seq, char, pos):
    with pytest.raises(SequenceError) as err:
        check(DEFAULT, seq)
    msg = str(err.value)
    assert "task 't1'" in msg and "split 'train'" in msg and "row 7" in msg
    assert f"character {char} at position {pos}" in msg


def test_u_is_read_as_t_only_when_configured_and_keeps_case():
    assert check(AlphabetPolicy(u_to_t=True), "ACGUu") == "ACGTt"


@pytest.mark.parametrize("seq", ["ACGT \r", "\tACGT", "ACGT\n"])
def test_whitespace_fails_escaped_unless_strip(seq):
    with pytest.raises(SequenceError, match=r"whitespace"):
        check(DEFAULT, seq)
    assert check(AlphabetPolicy(strip_whitespace=True), seq) == "ACGT"


def test_carriage_return_is_shown_escaped():
    with pytest.raises(SequenceError, match=r"character '\\r'"):
        check(DEFAULT, "ACGT\r")


def test_inner_whitespace_fails_even_with_strip():
    with pytest.raises(SequenceError, match=r"position 2 is not allowed \(whitespace inside a sequence"):
        check(AlphabetPolicy(strip_whitespace=True), "AC GT")
    with pytest.raises(SequenceError, match="whitespace inside a sequence"):
        check(DEFAULT, "AC GT")


@pytest.mark.parametrize("seq", ["", "   ", None, 5])
def test_empty_or_non_text_sequences_fail(seq):
    policy = AlphabetPolicy(strip_whitespace=True)
    with pytest.raises(SequenceError, match="row 7"):
        check(policy, seq)


def test_unknown_policy_key_is_refused():
    with pytest.raises(ValueError, match="unknown alphabet policy keys"):
        AlphabetPolicy.from_config({"lowercase": True})


@pytest.mark.parametrize("char", ["\xa0", "\x1c", "\x1f", "\x85", "\u2028", "\u3000"])
def test_strip_removes_only_space_tab_cr_lf(char):
    """str.strip() would also eat a no-break space or an ASCII separator; the policy strips only ' \\t\\r\\n'."""
    with pytest.raises(SequenceError, match=r"other than space, tab, CR and LF") as err:
        check(AlphabetPolicy(strip_whitespace=True), f"ACGT{char}")
    assert f"character {char!r} at position 4" in str(err.value)
    assert check(AlphabetPolicy(strip_whitespace=True), " \tACGT\r\n") == "ACGT"
