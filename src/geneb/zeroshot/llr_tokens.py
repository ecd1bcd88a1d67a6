"""Which tokens a single-base variant changes, for any tokenizer: the token span the LLR scorer masks or sums over.

A tokenizer is seen here only as `Tokenize`: window text -> `AlleleTokens` (token ids without special tokens and
each token's character span in the window). Built-in views: one token per base, non-overlapping k-mers
(Nucleotide Transformer: left to right, a short tail and any `N` one base per token), overlapping k-mers (DNABERT-1:
one k-mer starting at every base), and a transformers fast tokenizer with offsets (BPE: DNABERT-2, GENA-LM).

The rule (docs/zeroshot.md, "LLR scorer"): tokenise the window with the reference and with the alternative base;
the changed span is what lies between the longest common prefix and the longest common suffix of the two token
lists (same id and same character span), widened to every token whose characters cover the variant. Then

* one base per token: the one token at the variant;
* non-overlapping k-mers: the one k-mer holding the variant (the two k-mers differ only at that base);
* overlapping k-mers: the k tokens covering the variant (every one of them holds the base);
* BPE: usually the one token holding the variant, but the alternative base can merge differently, so the two
  spans may differ in length or boundaries (`VariantTokens.aligned` is False); the scorer then scores each
  allele's span in its own tokenisation.

Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")


@dataclass(frozen=True)
class AlleleTokens:
    """One window tokenised: `ids` (n,) without special tokens, `spans` (n,) [start, end) characters per token."""

    ids: tuple[int, ...]
    spans: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.spans):
            raise ValueError(f"{len(self.ids)} token ids but {len(self.spans)} character spans")

    def covering(self, pos: int) -> list[int]:
        """Indices of the tokens whose characters include window position `pos`."""
        return [i for i, (start, end) in enumerate(self.spans) if start <= pos < end]

    def bases(self, first: int = 0) -> int:
        """Window characters covered by the tokens from index `first` on (the per-base denominator)."""
        return sum(end - start for start, end in self.spans[first:])


Tokenize = Callable[[str], AlleleTokens]


@dataclass(frozen=True)
class VariantTokens:
    """A variant's two tokenisations and the token spans that change: `ref_span` / `alt_span` are [start, end)
    token indices into `ref.ids` / `alt.ids`. Tokens before `first` are identical in both."""

    ref: AlleleTokens
    alt: AlleleTokens
    ref_span: tuple[int, int]
    alt_span: tuple[int, int]

    @property
    def aligned(self) -> bool:
        """Whether both alleles have the same token count and changed span: masking that span gives one and the
        same input for both, so one forward pass scores both."""
        return self.ref_span == self.alt_span and len(self.ref.ids) == len(self.alt.ids)

    @property
    def first(self) -> int:
        return min(self.ref_span[0], self.alt_span[0])


def variant_tokens(tokenize: Tokenize, sequence: str, pos: int, ref: str, alt: str) -> VariantTokens:
    """The changed token spans of the single-base variant `ref`>`alt` at 0-based `pos` of `sequence`.

    Raises ValueError when `sequence[pos]` is not `ref`, when ref equals alt, or when no token covers `pos` in
    either tokenisation (the tokenizer dropped the base: nothing could score it)."""
    if not 0 <= pos < len(sequence) or sequence[pos].upper() != ref.upper():
        got = sequence[pos] if 0 <= pos < len(sequence) else "outside the window"
        raise ValueError(f"variant at {pos}: reference base {ref!r} but the window has {got!r}")
    if ref.upper() == alt.upper() or len(alt) != 1:
        raise ValueError(f"variant at {pos}: alt {alt!r} must be one base different from ref {ref!r}")
    ref_tokens = tokenize(sequence)
    alt_tokens = tokenize(sequence[:pos] + alt + sequence[pos + 1 :])
    ref_cover, alt_cover = ref_tokens.covering(pos), alt_tokens.covering(pos)
    if not ref_cover or not alt_cover:
        raise ValueError(f"variant at {pos}: no token covers the variant's base (the tokenizer dropped it)")
    a = list(zip(ref_tokens.ids, ref_tokens.spans))
    b = list(zip(alt_tokens.ids, alt_tokens.spans))
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    ref_span = (min(prefix, ref_cover[0]), max(len(a) - suffix, ref_cover[-1] + 1))
    alt_span = (min(prefix, alt_cover[0]), max(len(b) - suffix, alt_cover[-1] + 1))
    return VariantTokens(ref_tokens, alt_tokens, ref_span, alt_span)


def reverse_complement(sequence: str) -> str:
    return sequence.translate(COMPLEMENT)[::-1]


def reverse_variant(sequence: str, pos: int, ref: str, alt: str) -> tuple[str, int, str, str]:
    """The same variant on the reverse strand: (reverse-complemented window, its position, ref, alt complemented)."""
    return reverse_complement(sequence), len(sequence) - 1 - pos, ref.translate(COMPLEMENT), alt.translate(COMPLEMENT)


# ---- tokenizer views ----------------------------------------------------------------------------------------


def one_base_tokenize(vocab: Mapping[str, int]) -> Tokenize:
    """One token per base, `vocab` maps a base letter to its id (case-insensitive for A/C/G/T/N)."""

    def tokenize(text: str) -> AlleleTokens:
        return AlleleTokens(tuple(vocab[c.upper()] for c in text), tuple((i, i + 1) for i in range(len(text))))

    return tokenize


def kmer_tokenize(vocab: Mapping[str, int], k: int) -> Tokenize:
    """Non-overlapping k-mers left to right (the Nucleotide Transformer rule): a k-mer with an `N`, and the tail
    shorter than k, go one base per token. `vocab` maps each k-mer and each single base to its id."""

    def tokenize(text: str) -> AlleleTokens:
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        i, upper = 0, text.upper()
        while i < len(upper):
            word = upper[i : i + k]
            if len(word) == k and "N" not in word:
                ids.append(vocab[word])
                spans.append((i, i + k))
                i += k
            else:
                ids.append(vocab[upper[i]])
                spans.append((i, i + 1))
                i += 1
        return AlleleTokens(tuple(ids), tuple(spans))

    return tokenize


def overlapping_kmer_tokenize(vocab: Mapping[str, int], k: int) -> Tokenize:
    """Overlapping k-mers (DNABERT-1): one token per start 0..len-k, token i covers characters [i, i + k)."""

    def tokenize(text: str) -> AlleleTokens:
        upper = text.upper()
        starts = range(len(upper) - k + 1)
        return AlleleTokens(tuple(vocab[upper[i : i + k]] for i in starts), tuple((i, i + k) for i in starts))

    return tokenize


def hf_tokenize(tokenizer: Any) -> Tokenize:
    """A transformers fast tokenizer (BPE, WordPiece, ...), no special tokens, spans from its offset mapping.
    Raises ValueError for a slow tokenizer (no offsets: the changed span could not be located)."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"tokenizer {type(tokenizer).__name__} gives no character offsets (not a fast tokenizer)")

    def tokenize(text: str) -> AlleleTokens:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return AlleleTokens(tuple(int(i) for i in enc["input_ids"]), tuple(tuple(s) for s in enc["offset_mapping"]))

    return tokenize


def kmer_vocab(k: int, *, first_id: int = 0, bases: Sequence[str] = "ACGT") -> dict[str, int]:
    """Every k-mer over `bases` (lexicographic) then the single bases and N, numbered from `first_id`."""
    import itertools

    words = ["".join(p) for p in itertools.product(bases, repeat=k)]
    words += [b for b in [*bases, "N"] if b not in words]
    return {w: first_id + i for i, w in enumerate(words)}
