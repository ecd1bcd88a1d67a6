"""The `llr` zero-shot scorer: a language model's log-likelihood ratio, batched (docs/zeroshot.md, "LLR scorer").

Rules (TraitGym / BEND conventions), each strand scored and the two averaged (the reverse strand is the reverse
complement window with the variant complemented):

* variant, masked LM (masked marginal): mask the changed token span (`geneb.zeroshot.llr_tokens`: the token at the
  variant; the k-mer holding it; every overlapping k-mer covering it; for BPE the tokens that differ) and read
  log p(alt tokens) - log p(ref tokens) at the masked positions, summed. When the two alleles' spans do not align
  (BPE merging differently), each allele's span is masked in its own tokenisation and its own tokens' summed
  log-probabilities are compared (two forward passes).
* variant, causal LM: the window's summed next-token log-likelihood with alt minus with ref; tokens before the
  first changed token are identical and predicted from identical context, so only tokens from it on are summed.
  A window's first token has no prediction without a BOS-like prefix token and is not counted.
* score direction (scores.py): larger = stronger effect, so the variant score is
  -(log p(alt) - log p(ref)) = log p(ref) - log p(alt) (`LLR_ref_minus_alt`, nats).
* paired: per-base log-likelihood of a minus that of b (larger = prefers a). Causal: summed next-token
  log-probability of the predicted tokens over the bases they cover; masked: pseudo-log-likelihood (each token
  masked once, every PLL_STRIDE-th token together in one pass, its log-probability summed) over the window's bases.

Every (row, strand, allele) becomes a `Query` (an input and the log-probabilities it adds to its row, with a
weight); identical inputs run once, the rest in length-sorted batches, right-padded where the model allows it
(always for causal models; masked ones with an attention mask), else of equal length only. `score_llr_naive` is the reference: one
forward pass per query and, for causal models, every token of the window summed. Torch-free (the forward pass
is `LanguageModel.log_probs_at`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pandas as pd

from geneb.zeroshot.llr_head import LanguageModel
from geneb.zeroshot.llr_tokens import AlleleTokens, Tokenize, reverse_complement, reverse_variant, variant_tokens
from geneb.zeroshot.scores import LLR, NotApplicable, row_scores
from geneb.zeroshot.task import REQUIRED_COLUMNS, ZeroShotTask

DEFAULT_BATCH_SIZE = 32
#: the masked pseudo-log-likelihood of a paired task masks every PLL_STRIDE-th token together, PLL_STRIDE passes per
#: window (each token masked once, 12.5 % of the window hidden per pass, near the 15 % a BERT-style model is
#: pretrained with) instead of one pass per token (Salazar et al. 2020, "Masked Language Model Scoring"), which costs
#: a forward pass per base; a window of at most PLL_STRIDE tokens gets the exact one-token-at-a-time PLL
PLL_STRIDE = 8


@dataclass(frozen=True)
class Query:
    """One model input and what it adds to its row: score[row] += weight * sum_j log p(targets[j] at cols[j])."""

    row: int
    ids: tuple[int, ...]
    cols: tuple[int, ...]
    targets: tuple[int, ...]
    weight: float


def score_llr(
    model: object, task: ZeroShotTask, *, batch_size: int = DEFAULT_BATCH_SIZE, strands: int = 2
) -> pd.DataFrame | NotApplicable:
    """The `llr` RowScores of `task` under `model` (batched: `batch_size` inputs per forward pass, `run_batched`).

    model: a `LanguageModel` (geneb.zeroshot.llr_load.load_language_model); anything else (an embedding-only
    encoder, a `NoLanguageHead`) gives NotApplicable with its reason. strands: 2 averages both strands, 1 scores
    the given strand only. Returns the RowScores frame (scores in nats; direction of geneb.zeroshot.scores).
    Raises ValueError naming the task and every row concerned (the first five shown) for an input longer than
    the model's `max_tokens`, a variant whose base the tokenizer drops or whose ref is not the window's base."""
    if not isinstance(model, LanguageModel):
        name = str(getattr(model, "model", getattr(model, "name", type(model).__name__)))
        reason = str(getattr(model, "reason", f"{type(model).__name__} has no language-model head"))
        return NotApplicable(model=name, task=task.name, scorer=LLR, reason=reason)
    queries = build_queries(model, task, strands=strands, full_causal=False)
    return row_scores(task, LLR, run_batched(model, queries, task.n, batch_size=batch_size))


def score_llr_naive(model: LanguageModel, task: ZeroShotTask, *, strands: int = 2) -> pd.DataFrame:
    """The reference for `score_llr`: one forward pass per (row, strand, allele) input, causal windows summed
    over every token (no shortcut). Same scores to float rounding; for the speed comparison and the tests."""
    queries = build_queries(model, task, strands=strands, full_causal=True)
    scores = np.zeros(task.n)
    for q in queries:
        values = model.log_probs_at(
            np.asarray([q.ids], dtype=np.int64),
            np.zeros(len(q.cols), dtype=np.int64),
            np.asarray(q.cols),
            np.asarray(q.targets),
            full_logits=True,
        )
        scores[q.row] += q.weight * float(values.sum())
    return row_scores(task, LLR, scores)


def run_batched(model: LanguageModel, queries: list[Query], n_rows: int, *, batch_size: int) -> np.ndarray:
    """Sum every query's weighted log-probabilities into (n_rows,) scores: identical inputs run once, sorted by
    length, `batch_size` per forward pass, padded on the right to the batch's longest where the model allows it
    (`LanguageModel.pads`), else only inputs of one length together (no padding)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    by_input: dict[tuple[int, ...], list[Query]] = defaultdict(list)
    for q in queries:
        by_input[q.ids].append(q)
    inputs = sorted(by_input, key=len, reverse=True)
    if model.pads:
        batches = [inputs[i : i + batch_size] for i in range(0, len(inputs), batch_size)]
    else:
        by_length: dict[int, list[tuple[int, ...]]] = defaultdict(list)
        for ids in inputs:
            by_length[len(ids)].append(ids)
        batches = [group[i : i + batch_size] for group in by_length.values() for i in range(0, len(group), batch_size)]
    scores = np.zeros(n_rows)
    for batch in batches:
        rows: list[int] = []
        cols: list[int] = []
        targets: list[int] = []
        owner: list[int] = []
        weights: list[float] = []
        for b, ids in enumerate(batch):
            for q in by_input[ids]:
                rows += [b] * len(q.cols)
                cols += q.cols
                targets += q.targets
                owner += [q.row] * len(q.cols)
                weights += [q.weight] * len(q.cols)
        lengths = np.asarray([len(ids) for ids in batch])
        padded = np.full((len(batch), int(lengths.max())), model.pad_id, dtype=np.int64)
        for b, ids in enumerate(batch):
            padded[b, : len(ids)] = ids
        values = model.log_probs_at(
            padded,
            np.asarray(rows),
            np.asarray(cols),
            np.asarray(targets),
            lengths=lengths if (lengths != lengths[0]).any() else None,
        )
        np.add.at(scores, np.asarray(owner, dtype=np.int64), np.asarray(weights) * values)
    return scores


def build_queries(model: LanguageModel, task: ZeroShotTask, *, strands: int, full_causal: bool) -> list[Query]:
    """Every query of `task` (see the module docstring). full_causal: sum a causal window over all its tokens
    (the naive reference) instead of from the first changed token on."""
    if strands not in (1, 2):
        raise ValueError(f"strands must be 1 or 2, got {strands}")
    queries: list[Query] = []
    columns = {c: [str(v) for v in task.rows[c]] for c in REQUIRED_COLUMNS[task.kind]}
    bad: list[str] = []
    # a window shared by several variants (and its reverse strand) is tokenised once: the same text always
    # gives the same tokens
    tokenize = _memo(model.tokenize)
    for row in range(task.n):
        try:
            if task.kind == "variant":
                seq, pos = columns["sequence"][row], int(columns["pos"][row])
                ref, alt = columns["ref"][row], columns["alt"][row]
                views = [(seq, pos, ref, alt), reverse_variant(seq, pos, ref, alt)][:strands]
                for view in views:
                    queries += _variant_queries(model, tokenize, row, *view, weight=1.0 / strands, full=full_causal)
            else:
                for column, sign in (("sequence_a", 1.0), ("sequence_b", -1.0)):
                    seq = columns[column][row]
                    for text in [seq, reverse_complement(seq)][:strands]:
                        queries += _likelihood_queries(model, row, tokenize(text), sign / strands)
        except ValueError as err:  # every bad row is reported at once
            bad.append(f"row {row}: {err}")
    if bad:
        raise ValueError(
            f"zero-shot task {task.name}, model {model.name}: {len(bad)} rows cannot be scored: " + "; ".join(bad[:5])
        )
    too_long = sorted({q.row: len(q.ids) for q in queries if len(q.ids) > model.max_tokens}.items())
    if too_long:
        shown = ", ".join(f"row {row}: {tokens} tokens" for row, tokens in too_long[:5])
        raise ValueError(
            f"zero-shot task {task.name}: {len(too_long)} rows need more than model {model.name}'s "
            f"{model.max_tokens} tokens (special tokens included): {shown}; use shorter windows"
        )
    return queries


def _memo(tokenize: Tokenize) -> Tokenize:
    cache: dict[str, AlleleTokens] = {}

    def cached(text: str) -> AlleleTokens:
        if text not in cache:
            cache[text] = tokenize(text)
        return cache[text]

    return cached


def _variant_queries(
    model: LanguageModel,
    tokenize: Tokenize,
    row: int,
    seq: str,
    pos: int,
    ref: str,
    alt: str,
    *,
    weight: float,
    full: bool,
) -> list[Query]:
    """The queries of one strand of a variant: score += weight * (log p(ref) - log p(alt))."""
    vt = variant_tokens(tokenize, seq, pos, ref, alt)
    if model.kind == "causal":
        first = 0 if full else vt.first
        return [
            *_causal_queries(model, row, vt.ref, first, weight),
            *_causal_queries(model, row, vt.alt, first, -weight),
        ]
    if vt.aligned:
        ids = _masked_input(model, vt.ref, *vt.ref_span)
        cols = tuple(len(model.prefix) + i for i in range(*vt.ref_span))
        ref_ids = vt.ref.ids[slice(*vt.ref_span)]
        alt_ids = vt.alt.ids[slice(*vt.alt_span)]
        return [Query(row, ids, cols, ref_ids, weight), Query(row, ids, cols, alt_ids, -weight)]
    return [
        _masked_span_query(model, row, vt.ref, vt.ref_span, weight),
        _masked_span_query(model, row, vt.alt, vt.alt_span, -weight),
    ]


def _masked_input(model: LanguageModel, tokens: AlleleTokens, start: int, end: int) -> tuple[int, ...]:
    assert model.mask_id is not None  # LanguageModel checks it for a masked head
    body = tokens.ids[:start] + (model.mask_id,) * (end - start) + tokens.ids[end:]
    return model.prefix + body + model.suffix


def _masked_span_query(
    model: LanguageModel, row: int, tokens: AlleleTokens, span: tuple[int, int], weight: float
) -> Query:
    cols = tuple(len(model.prefix) + i for i in range(*span))
    return Query(row, _masked_input(model, tokens, *span), cols, tokens.ids[slice(*span)], weight)


def _causal_queries(model: LanguageModel, row: int, tokens: AlleleTokens, first: int, weight: float) -> list[Query]:
    """score += weight * sum of log p(token t | tokens before t) for t >= first that have a prediction."""
    ids = model.prefix + tokens.ids
    lead = len(model.prefix)
    predicted = list(range(max(first, 1 - lead), len(tokens.ids)))
    if not predicted:
        return []
    cols = tuple(lead + t - 1 for t in predicted)
    return [Query(row, ids, cols, tuple(tokens.ids[t] for t in predicted), weight)]


def _likelihood_queries(model: LanguageModel, row: int, tokens: AlleleTokens, weight: float) -> list[Query]:
    """score += weight * per-base log-likelihood of one window (causal: predicted tokens over their bases;
    masked: strided pseudo-log-likelihood, PLL_STRIDE queries, over all bases)."""
    if model.kind == "causal":
        first = max(0, 1 - len(model.prefix))
        bases = tokens.bases(first)
        if bases == 0:
            raise ValueError("a window needs at least two tokens for a causal likelihood")
        return _causal_queries(model, row, tokens, first, weight / bases)
    bases = tokens.bases()
    if bases == 0:
        raise ValueError("empty window")
    return [_strided_mask_query(model, row, tokens, r, weight / bases) for r in range(min(PLL_STRIDE, len(tokens.ids)))]


def _strided_mask_query(model: LanguageModel, row: int, tokens: AlleleTokens, offset: int, weight: float) -> Query:
    """One pass of the strided pseudo-log-likelihood: every token at offset, offset + PLL_STRIDE, ... masked together
    and each read at its own position."""
    assert model.mask_id is not None  # LanguageModel checks it for a masked head
    picked = range(offset, len(tokens.ids), PLL_STRIDE)
    body = list(tokens.ids)
    for i in picked:
        body[i] = model.mask_id
    cols = tuple(len(model.prefix) + i for i in picked)
    return Query(row, model.prefix + tuple(body) + model.suffix, cols, tuple(tokens.ids[i] for i in picked), weight)
