"""Letters a tokenizer loses: dropped without a token or read as UNK.

A vocabulary without UNK deletes letters it cannot spell (N, IUPAC codes), so the embedding would be of
another sequence: an error naming the row. A vocabulary with UNK keeps their place: the UNK tokens are
counted (a warning, and `n_unknown_tokens` in the file), and a row that is nothing but UNK is an error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from geneb.core.errors import DroppedInputError, UnknownTokenError

log = logging.getLogger(__name__)


def check_dropped(
    texts: list[str],
    rows: list[int],
    *,
    model: str,
    offsets: list[list[tuple[int, int]]] | None,
    unk_id: int | None,
    encoded: list[list[int]] | None,
    token_texts: Callable[[list[int]], list[str] | None],
) -> None:
    """Raise DroppedInputError for the first row with a non-whitespace character that no token stands for
    (a vocabulary without UNK deletes letters it cannot spell, e.g. N or IUPAC codes).

    Needs the character spans of the tokenizer call (`offsets`, set by fast tokenizers); without them the
    tokens' text is counted instead (`check_dropped_by_token_text`). With an UNK token in the vocabulary the
    spans are exact, and a run of one repeated letter whose neighbour (the same letter) has a token is a run
    the tokenizer's normalizer collapsed on purpose (GENA-LM maps an N run to one token), not a
    drop. Without one, a model that drops letters reports the spans as if they had never been there (the gap
    shows at the end of the row), so any uncovered letter is an error and no position is claimed."""
    if offsets is None:
        check_dropped_by_token_text(texts, rows, model=model, unk_id=unk_id, encoded=encoded, token_texts=token_texts)
        return
    exact_spans = unk_id is not None
    for i, (text, spans) in enumerate(zip(texts, offsets)):
        covered = bytearray(len(text))
        for a, b in spans:
            covered[a:b] = b"\x01" * (b - a)
        gaps = []
        j = covered.find(0)
        while j != -1:
            end = covered.find(1, j)
            end = len(text) if end == -1 else end
            if text[j:end].strip() and not (exact_spans and _collapsed_run(text, covered, j, end)):
                gaps.append((j, end))
            j = covered.find(0, end)
        if gaps:
            n = sum(len(text[a:b].strip()) for a, b in gaps)
            k = gaps[0][0] + next(m for m, ch in enumerate(text[gaps[0][0] : gaps[0][1]]) if not ch.isspace())
            where = (
                f"the first: {text[k]!r} at position {k}"
                if exact_spans
                else "its vocabulary has no UNK token, so its character spans cannot place them"
            )
            raise DroppedInputError(
                f"model {model}, row {rows[i]}: {n} letters have no token ({where}; a tokenizer drops "
                "what it cannot spell, e.g. N or IUPAC codes), so the embedding would be of another sequence; "
                "use a task without such letters or a model whose vocabulary spells them",
                rows=[rows[i]],
            )


def check_dropped_by_token_text(
    texts: list[str],
    rows: list[int],
    *,
    model: str,
    unk_id: int | None,
    encoded: list[list[int]] | None,
    token_texts: Callable[[list[int]], list[str] | None],
) -> None:
    """The dropped-letter check for tokenizers without character spans (slow, Python tokenizers): in a row
    with no UNK token, the tokens' letters (word-piece markers `##`, `▁`, `Ġ` removed) must add up to the
    row's letters; fewer means letters were skipped. Rows with an UNK token cannot be counted (one UNK may
    stand for several letters) and rely on the UNK count instead. `token_texts(ids)` gives each token's text,
    or None when the tokenizer cannot say (then nothing is checked)."""
    if encoded is None:
        return
    for i, (text, ids) in enumerate(zip(texts, encoded)):
        if unk_id is not None and unk_id in ids:
            continue
        pieces = token_texts(list(ids))
        if pieces is None:
            return
        have = sum(len(t.replace("##", "").replace("\u2581", "").replace("\u0120", "").strip()) for t in pieces)
        want = sum(1 for ch in text if not ch.isspace())
        if have < want:
            raise DroppedInputError(
                f"model {model}, row {rows[i]}: its tokens spell {have} of its {want} letters (the tokenizer "
                "skips what it cannot spell, e.g. N or IUPAC codes), so the embedding would be of another sequence; "
                "use a task without such letters or a model whose vocabulary spells them",
                rows=[rows[i]],
            )


#: what the messages call letters they cannot name
OUTSIDE = "letters outside the model's vocabulary"
#: the IUPAC ambiguity codes besides N (docs/alphabet.md)
IUPAC_CODES = frozenset("RYSWKMBDHV")


def unknown_letters(texts: Sequence[str] | None) -> str:
    """What the letters of `texts` (the rows with an UNK token) are, beyond A/C/G/T, in words: "N" (plain N is no
    IUPAC code of interest: an unknown base), "IUPAC codes R, Y" (the ambiguity codes), both, or, when the rows hold
    neither, "letters or k-mers outside the model's vocabulary" (a partial k-mer, a letter case the vocabulary lacks)."""
    letters = {ch for text in texts or () for ch in text.upper()} - set("ACGT")
    parts = (["N"] if "N" in letters else []) + (
        [f"IUPAC codes {', '.join(sorted(letters & IUPAC_CODES))}"] if letters & IUPAC_CODES else []
    )
    return " and ".join(parts) if parts else "letters or k-mers outside the model's vocabulary"


def count_unknown(
    encoded: Sequence[Sequence[int]],
    rows: list[int],
    *,
    model: str,
    unk_id: int | None,
    policy: str = "count",
    texts: Sequence[str] | None = None,
) -> tuple[int, int]:
    """(rows with an unknown token, unknown tokens) of one tokenizer call; (0, 0) without an UNK id. Logs a
    warning when there are any (`policy` count), or raises UnknownTokenError naming the count and the first
    rows (`policy` error); raises DroppedInputError naming every row of the call whose every token is UNK
    (nothing of the sequence would reach the model), all at once, with the row ids in its `rows`. texts: the rows'
    model-input texts, to name the letters that became UNK (N, IUPAC codes: `unknown_letters`)."""
    if unk_id is None:
        return 0, 0
    unk = [sum(1 for t in ids if t == unk_id) for ids in encoded]
    counts = (sum(1 for u in unk if u), sum(unk))
    blind = [i for i, (u, ids) in enumerate(zip(unk, encoded)) if ids and u == len(ids)]
    if blind:  # every such row of the call at once, so one run names them all (e.g. all-N rows for a BPE vocabulary)
        named = [rows[i] for i in blind]
        shown = ", ".join(map(str, named[:50])) + (f" ... ({len(named) - 50} more)" if len(named) > 50 else "")
        raise DroppedInputError(
            f"model {model}, {len(named)} row(s) ({shown}): every token of each is UNK, so nothing of the "
            "sequence reaches the model (an all-N row for a vocabulary without N, a vocabulary that cannot spell "
            "it, a lowercasing normalizer, a word longer than the tokenizer's limit?)",
            rows=named,
        )
    seen = unknown_letters([t for t, u in zip(texts, unk) if u]) if texts is not None else None
    if counts[0] and policy == "error":
        refuse_unknown(unk, rows, model=model, letters=seen)
    if counts[0]:
        first = next(i for i, u in enumerate(unk) if u)
        log.warning(
            "model %s: %d unknown-token ids in %d rows (first: row %s); %s reach it as UNK",
            model,
            counts[1],
            counts[0],
            rows[first],
            seen or OUTSIDE,
        )
    return counts


def refuse_unknown(
    per_row: Sequence[int],
    rows: list[int],
    *,
    model: str,
    what: str = "unknown-token ids",
    letters: str | None = None,
) -> None:
    """Raise UnknownTokenError (`unk_policy: error`) for the rows with a nonzero count in `per_row`, naming the
    model, the total, the first rows and the letters (`unknown_letters`; default: letters outside the model's
    vocabulary); return when there are none."""
    named = [rows[i] for i, u in enumerate(per_row) if u]
    if not named:
        return
    raise UnknownTokenError(
        f"model {model}: {sum(per_row)} {what} in {len(named)} rows (rows "
        + ", ".join(map(str, named[:5]))
        + (" ..." if len(named) > 5 else "")
        + f"); {letters or OUTSIDE} would reach it as UNK, refused under "
        "unk_policy: error (use a task without them, or unk_policy: count)",
        rows=named,
    )


def _collapsed_run(text: str, covered: bytearray, start: int, end: int) -> bool:
    """Whether the uncovered span text[start:end] is one repeated letter next to a covered copy of it."""
    letters = set(text[start:end])
    if len(letters) != 1:
        return False
    letter = letters.pop()
    after = end < len(text) and covered[end] and text[end] == letter
    before = start > 0 and covered[start - 1] and text[start - 1] == letter
    return bool(after or before)
