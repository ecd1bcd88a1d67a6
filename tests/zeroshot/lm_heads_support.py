"""Closed-form language-model heads for the LLR tests: an order-k Markov chain over one-base tokens, exposed as a
causal head (next-token logits) and as a masked head (the exact conditional of a masked base given the rest),
plus the chain's log-likelihood in numpy, computed independently of the torch heads.

Tokens: A C G T = 0 1 2 3, MASK = 4, BOS/CLS = 5, SEP = 6. A base whose k preceding tokens are not all bases
(the window's first k bases, or a special token in the context) has the uniform probability 1/4.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from geneb.zeroshot.llr import AlleleTokens, LanguageModel, _Tokenize


def one_base_tokenize(vocab: Mapping[str, int]) -> _Tokenize:
    """One token per base, `vocab` maps a base letter to its id (case-insensitive for A/C/G/T/N)."""

    def tokenize(text: str) -> AlleleTokens:
        return AlleleTokens(tuple(vocab[c.upper()] for c in text), tuple((i, i + 1) for i in range(len(text))))

    return tokenize


def kmer_tokenize(vocab: Mapping[str, int], k: int) -> _Tokenize:
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


def kmer_vocab(k: int, *, first_id: int = 0, bases: Sequence[str] = "ACGT") -> dict[str, int]:
    """Every k-mer over `bases` (lexicographic) then the single bases and N, numbered from `first_id`."""
    words = ["".join(p) for p in itertools.product(bases, repeat=k)]
    words += [b for b in [*bases, "N"] if b not in words]
    return {w: first_id + i for i, w in enumerate(words)}


VOCAB = {"A": 0, "C": 1, "G": 2, "T": 3}
MASK, CLS, SEP = 4, 5, 6
N_TOKENS = 7


def chain_table(order: int, seed: int) -> np.ndarray:
    """(4**order, 4) transition probabilities, rows seeded Dirichlet draws."""
    return np.random.default_rng(seed).dirichlet(np.ones(4), size=4**order)


def _base_log_probs(ids: torch.Tensor, log_table: torch.Tensor, order: int) -> torch.Tensor:
    """(B, T) log p(token t | k tokens before it) for base tokens; 0 for special tokens."""
    _, width = ids.shape
    index = torch.zeros_like(ids)
    valid = ids < 4
    for m in range(1, order + 1):
        shifted = torch.full_like(ids, CLS)
        shifted[:, m:] = ids[:, : width - m]
        valid = valid & (shifted < 4)
        index = index + shifted.clamp(max=3) * 4 ** (m - 1)
    table_lp = log_table[index, ids.clamp(max=3)]
    uniform = torch.full_like(table_lp, float(np.log(0.25)))
    out = torch.where(valid, table_lp, uniform)
    return torch.where(ids < 4, out, torch.zeros_like(out))


class CausalMarkovHead(torch.nn.Module):
    """Logits at t = log p(token t+1 | the k tokens up to t); uniform when those are not all bases."""

    def __init__(self, table: np.ndarray, order: int) -> None:
        super().__init__()
        self.order = order
        self.log_table = torch.as_tensor(np.log(table))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        batch, width = ids.shape
        index = torch.zeros_like(ids)
        valid = torch.ones_like(ids, dtype=torch.bool)
        for m in range(1, self.order + 1):
            # context token m of the next base (t + 1) is token t + 1 - m
            back = torch.full_like(ids, CLS)
            back[:, m - 1 :] = ids[:, : width - m + 1]
            valid = valid & (back < 4)
            index = index + back.clamp(max=3) * 4 ** (m - 1)
        logits = torch.full((batch, width, N_TOKENS), -1e9, dtype=torch.float64)
        table = self.log_table[index]  # (B, T, 4)
        logits[:, :, :4] = torch.where(valid.unsqueeze(-1), table, torch.full_like(table, float(np.log(0.25))))
        return logits


class MaskedMarkovHead(torch.nn.Module):
    """Logits at a masked position i: log p(whole input with base b at i) for b in ACGT, every other masked position
    filled with A. With the masks more than `order` tokens apart (the strided PLL masks every 8th), the other
    masks lie outside i's Markov blanket, so their terms cancel in the softmax over b: the exact conditional of a
    base given the unmasked rest, as with one mask per row."""

    def __init__(self, table: np.ndarray, order: int) -> None:
        super().__init__()
        self.order = order
        self.log_table = torch.as_tensor(np.log(table))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        ids = input_ids
        if attention_mask is not None:  # a padded position is no base: it adds no term
            ids = torch.where(attention_mask.bool(), ids, torch.full_like(ids, SEP))
        batch, width = ids.shape
        masked = ids == MASK
        logits = torch.full((batch, width, N_TOKENS), -1e9, dtype=torch.float64)
        for row, col in masked.nonzero().tolist():
            near = masked[row, max(0, col - self.order) : col + self.order + 1].sum()
            if near > 1:
                raise ValueError("the Markov masked head takes masks more than `order` tokens apart")
            base = torch.where(masked[row], torch.zeros_like(ids[row]), ids[row])
            for b in range(4):
                filled = base.clone()
                filled[col] = b
                logits[row, col, b] = _base_log_probs(filled.unsqueeze(0), self.log_table, self.order).sum()
        if not masked.any():
            for b in range(4):
                logits[:, :, b] = _base_log_probs(ids, self.log_table, self.order).sum(dim=1).unsqueeze(1)
        return logits


def markov_model(
    kind: str,
    table: np.ndarray,
    order: int,
    *,
    prefix: tuple[int, ...] = (),
    suffix: tuple[int, ...] = (),
    takes_attention_mask: bool = False,
) -> LanguageModel:
    network = CausalMarkovHead(table, order) if kind == "causal" else MaskedMarkovHead(table, order)
    return LanguageModel(
        name=f"markov-{kind}",
        kind=kind,  # type: ignore[arg-type]
        network=network,
        tokenize=one_base_tokenize(VOCAB),
        prefix=prefix,
        suffix=suffix,
        mask_id=MASK if kind == "masked" else None,
        pad_id=0,  # a base id: padding that leaked into a real position would change the scores
        takes_attention_mask=takes_attention_mask,
    )


def chain_log_likelihood(seq: str, table: np.ndarray, order: int, *, first: int = 0) -> float:
    """Numpy: sum over bases t >= first of log p(x_t | x_{t-k..t-1}); the first k bases are uniform."""
    x = [VOCAB[c] for c in seq]
    total = 0.0
    for t in range(first, len(x)):
        if t < order:
            total += np.log(0.25)
        else:
            ctx = sum(x[t - m] * 4 ** (m - 1) for m in range(1, order + 1))
            total += np.log(table[ctx, x[t]])
    return total
