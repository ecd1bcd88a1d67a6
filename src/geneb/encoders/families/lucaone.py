"""LucaOne (LucaGPLM; hub LucaGroup/LucaOne-*) behind the transformers adapter, as its authors load it.

Facts used, read in LucaOne/LucaOne branch `huggingface` at 4e05566 (src/lucaone/*.py, the code of PyPI
lucaone 1.1.1, and src/scripts/convert_weights.py, which wrote the hub folders):

* A hub folder is `LucaGPLMForMaskedLM.save_pretrained` output (tensors under `lucaone.`, the MLM head under
  `lm_head.`) with `auto_map` entries to its own copies of configuration_/modeling_/tokenization_lucaone.py,
  so `AutoModel` with `trust_remote_code` (registry.yaml LucaOne loader_notes) builds `LucaGPLMModel` from the
  checkpoint's code and leaves the `lm_head.` head unused (an allowed head, `geneb.encoders.loading`).
  The adapter imports the `lucaone` package first, as the authors' README does (`import lucaone`); the code
  that runs is the checkpoint's, pinned by its revision or, for a local folder, by its content fingerprint.
* `LucaGPLMTokenizer` has one vocabulary for genes and proteins (39 ids): [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3,
  [MASK] 4, then the nucleotides written as digits (`gene_seq_replace`: A -> '1' id 5, T/U -> '2' 6, C -> '3'
  7, G -> '4' 8, every other character -> '5' 9, the unknown nucleotide N), then the amino acids: a plain
  'A' read without `seq_type="gene"` is alanine (id 11), so the adapter always tokenizes with seq_type gene and
  checks these ids at load. A sequence gets [CLS] before and [SEP] after. Its `from_pretrained` ignores the
  folder's tokenizer files (always the gene_prot vocabulary), and a list of texts raises KeyError('text') in
  `batch_encode_plus` (1.1.1): the adapter tokenizes one sequence per call.
* `token_type_ids` select a row of the `embed_type` table: 0 for a gene (DNA/RNA), 1 for a protein; the adapter
  passes 0 explicitly (the model's default is also 0).
* Positions are rotary in every attention layer (`no_position_embeddings: true`); `max_position_embeddings`
  (4096) sizes no table, and the authors' own embedding script caps a sequence at 4094 nt + 2 special tokens
  (LucaOne/LucaOne master src/get_embedding.py, `truncation_seq_length` 4094).
* `forward(input_ids, attention_mask, token_type_ids)`: the mask becomes the attention's key padding mask and
  the embeddings of pad-id positions are zeroed; `last_hidden_state` (B, T, hidden) is the last block's
  output after `last_layer_norm`, with [CLS] and [SEP] at its ends.

Letters outside A/C/G/T/U/N (IUPAC codes) reach the model as the N token, as the authors' `gene_seq_replace`
reads them; they are counted as unknown tokens (`n_unknown_tokens`; refused under `unk_policy: error`), like
a tokenizer's UNK and like Enformer's letters outside A/C/G/T/N (`geneb.encoders.families.enformer`). A character that
is not a letter is refused (the authors' rule would read it as N too).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from geneb.core.errors import ModelLoadError
from geneb.encoders.engine.checks import import_modules, refuse_unknown
from geneb.encoders.engine.chunking import Chunk
from geneb.encoders.engine.tokenmodel import LoadedNetwork
from geneb.encoders.families.hf import HFEncoder
from geneb.registry.spec import ExtractionSettings

_log = logging.getLogger(__name__)

#: the tokenizer's sequence type for DNA and RNA (LucaGPLMTokenizer.__call__ / encode `seq_type`)
_SEQ_TYPE = "gene"
#: the token type id of a gene (tokenization_lucaone.py encode_plus: 0 for gene, 1 for protein)
_GENE_TOKEN_TYPE = 0
#: the gene_prot vocabulary's ids of the nucleotides (tokenization_lucaone.py gene_prot_standard_toks after
#: gene_seq_replace), checked against the loaded tokenizer
_NUCLEOTIDE_IDS = {"A": 5, "T": 6, "U": 6, "C": 7, "G": 8, "N": 9}
#: letters the model reads as themselves; any other letter reaches it as N (gene_seq_replace) and is counted
_KNOWN_LETTERS = frozenset("ACGTUNacgtun")


class LucaOneEncoder(HFEncoder):
    """LucaOne through its checkpoint's own remote code (AutoModel/AutoTokenizer, trust_remote_code), on the
    shared token engine: [CLS] + nucleotide ids + [SEP], token type 0, attention mask, right padding.

    Raises, besides what HFEncoder raises: ModelLoadError when the tokenizer's nucleotide ids are not those of
    the gene_prot vocabulary the checkpoint was trained with (another tokenizer, or a gene-only vocabulary)."""

    #: per text of the last `_tokenize` call: letters read as N that are not N
    _as_n: list[int]

    def _load(self) -> LoadedNetwork:
        import_modules(["lucaone"])  # as the authors' README does; under trust_remote_code the auto_map wins
        loaded = super()._load()
        tokenizer = loaded.tokenizer
        probe = "ACGTUN"
        got = [int(i) for i in tokenizer.encode(probe, seq_type=_SEQ_TYPE, add_special_tokens=False)]
        want = [_NUCLEOTIDE_IDS[ch] for ch in probe]
        if got != want:
            raise ModelLoadError(
                f"model {self.model_id}: its tokenizer ({type(tokenizer).__name__}) reads {probe} as {got}, "
                f"not as the ids of LucaOne's gene_prot vocabulary {want} (tokenization_lucaone.py "
                "gene_seq_replace + gene_prot_standard_toks): another tokenizer or vocabulary would feed the "
                "model other rows of its embedding table"
            )
        # the authors' rule reads every unknown nucleotide as the N token, never as [UNK]: counted per row here
        return replace(loaded, unk_id=None)

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids (no special tokens) of each text, one tokenizer call per text (its list path is broken in
        lucaone 1.1.1). Records per text the letters read as N that are not N (`_as_n`). Raises ValueError for a
        character that is not a letter (the tokenizer would read it as N)."""
        out, as_n = [], []
        for text in texts:
            bad = next((k for k, ch in enumerate(text) if not ch.isalpha()), None)
            if bad is not None:
                raise ValueError(
                    f"model {self.model_id}: character {text[bad]!r} at position {bad} of a sequence is not a "
                    "letter; LucaOne's gene_seq_replace would read it as N (strip or refuse it before extraction)"
                )
            as_n.append(sum(1 for ch in text if ch not in _KNOWN_LETTERS))
            out.append([int(i) for i in self.tokenizer.encode(text, seq_type=_SEQ_TYPE, add_special_tokens=False)])
        self._offsets = None
        self._as_n = as_n
        return out

    def chunks_and_unknowns(
        self, sequences: list[str], rows: list[int]
    ) -> tuple[list[Chunk], np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
        """The engine's chunks (`TokenModelEncoder.chunks_and_unknowns`), with letters outside A/C/G/T/U/N
        (which reach the model as N) as the unknown-token count: (rows with one, letters). Raises
        UnknownTokenError for any such letter under `unk_policy: error`."""
        chunks, n_chunks, truncated, trimmed, _ = super().chunks_and_unknowns(sequences, rows)
        as_n = self._as_n
        counts = (sum(1 for u in as_n if u), sum(as_n))
        if counts[0] and self.extraction.unk_policy == "error":
            refuse_unknown(as_n, rows, model=self.model_id, what="letters outside A/C/G/T/U/N (read as N)")
        if counts[0]:
            _log.warning(
                "model %s: %d letters outside A/C/G/T/U/N in %d rows enter as N (first: row %s)",
                self.model_id,
                counts[1],
                counts[0],
                rows[next(i for i, u in enumerate(as_n) if u)],
            )
        return chunks, n_chunks, truncated, trimmed, counts

    def _call(self, inputs: dict[str, torch.Tensor], want_states: bool) -> Any:
        ids = inputs["input_ids"]
        inputs = {**inputs, "token_type_ids": torch.full_like(ids, _GENE_TOKEN_TYPE)}
        return super()._call(inputs, want_states)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "seq_type": _SEQ_TYPE, "token_type_id": _GENE_TOKEN_TYPE}


def from_settings(settings: ExtractionSettings, **kwargs: Any) -> LucaOneEncoder:
    """Adapter entry point of family `lucaone` (see geneb.registry.families)."""
    return LucaOneEncoder(settings, **kwargs)
