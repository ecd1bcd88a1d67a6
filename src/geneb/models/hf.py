"""The transformers adapter: any `AutoModel` checkpoint (hub id at a pinned revision, or a local folder in
hub-snapshot layout, through the same `from_pretrained` path), plus the seeded random-init NT/ESM-style
baseline built from a config.

Extraction policy (docs/footguns.md): the tokenizer never pads or truncates (settings in the tokenizer files
are overridden); GENEB pads on the right itself and passes the attention mask; positions pooled are the real
tokens, minus the special tokens when `exclude_special_tokens`; sequences longer than the model's true
maximum are split at token level into chunks that each carry the special tokens, and pooled across chunks
(token-weighted mean = mean over every pooled token) unless `long_policy` says truncate or error; batches are
built from chunks sorted by length (dynamic padding, little waste) and results are put back in input order.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from geneb.embeddings.pooling import pool
from geneb.models.base import EmbedResult

log = logging.getLogger(__name__)

#: tokenizers report this (or similar huge values) when no maximum is set: not a real limit (case B14)
SENTINEL_MAX_LENGTH = 10**9


class LongSequenceError(ValueError):
    """A sequence longer than the model's maximum under `long_policy: error`."""


def resolve_max_tokens(tokenizer_max: int | None, config_max: int | None, registry_max: int | None, *, model: str) -> int:
    """The model's usable maximum input length in tokens (special tokens included).

    A registry value wins (a warning is logged where it disagrees with tokenizer or config); otherwise the
    smaller of the tokenizer's `model_max_length` and the config's `max_position_embeddings`, ignoring the
    tokenizer's "not set" sentinel (>= 1e9). Raises ValueError "no usable max length for model X" when
    nothing usable is known. Source of the pitfall: NT's config vs paper length, HF's sentinel (case B14).
    """
    usable_tok = tokenizer_max if tokenizer_max is not None and tokenizer_max < SENTINEL_MAX_LENGTH else None
    if registry_max is not None:
        for name, value in (("tokenizer", usable_tok), ("config", config_max)):
            if value is not None and value != registry_max:
                log.warning("model %s: registry max_tokens %d differs from the %s's %d; using the registry", model, registry_max, name, value)
        return int(registry_max)
    candidates = [v for v in (usable_tok, config_max) if v is not None]
    if not candidates:
        raise ValueError(f"no usable max length for model {model}: set extraction.max_tokens in the registry")
    return int(min(candidates))


def special_affixes(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Ids the tokenizer adds before and after a sequence (e.g. [CLS] and [SEP]), found by encoding a probe
    sequence with and without special tokens."""
    probe = "ACGTACGTAC"
    bare = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return list(full[:start]), list(full[start + len(bare) :])
    raise ValueError("cannot locate the sequence tokens inside the tokenizer's special-token template")


def weights_hash(folder: str | os.PathLike[str]) -> str:
    """sha256 over the weight files (*.safetensors, *.bin, *.pt) of a model folder, in name order."""
    h = hashlib.sha256()
    files = sorted(p for p in Path(folder).iterdir() if p.suffix in {".safetensors", ".bin", ".pt"})
    if not files:
        raise FileNotFoundError(f"no weight files in {folder}")
    for p in files:
        h.update(p.name.encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


@dataclass
class _Chunk:
    seq_index: int
    ids: list[int]
    pool_mask: list[int]


@dataclass
class HFEncoder:
    """Embeds sequences with a transformers model. See the module docstring for the policy.

    name_or_path: hub id or local folder; revision: 40-hex commit for hub ids; extraction: resolved settings
    (pooling, layer, exclude_special_tokens, max_tokens, long_policy); device: "cpu" or "cuda" (cuda never
    falls back); batch_size: sequences (chunks) per forward pass (execution knob).
    """

    name_or_path: str
    extraction: dict[str, Any]
    model_id: str = "?"
    revision: str | None = None
    trust_remote_code: bool = False
    device: str = "cpu"
    batch_size: int = 64
    _state: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"model {self.model_id}: device=cuda was configured but CUDA is not available; not falling back to CPU")
        kwargs = {"revision": self.revision, "trust_remote_code": self.trust_remote_code}
        self.tokenizer = AutoTokenizer.from_pretrained(self.name_or_path, **kwargs)
        dtype = self.compute_dtype()
        self.model = AutoModel.from_pretrained(self.name_or_path, dtype=dtype, **kwargs).eval().to(self.device)
        config_max = getattr(self.model.config, "max_position_embeddings", None)
        self.max_tokens = resolve_max_tokens(
            getattr(self.tokenizer, "model_max_length", None), config_max, self.extraction.get("max_tokens"), model=self.model_id
        )
        self.prefix, self.suffix = special_affixes(self.tokenizer)
        if self.max_tokens <= len(self.prefix) + len(self.suffix):
            raise ValueError(f"model {self.model_id}: max_tokens {self.max_tokens} leaves no room for sequence tokens")
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else 0
        local = Path(self.name_or_path)
        self.weights_sha256 = weights_hash(local) if local.is_dir() else None

    def compute_dtype(self) -> torch.dtype:
        want = self.extraction.get("dtype", "auto")
        if want == "auto":
            return torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        return getattr(torch, want)

    def identity(self) -> dict[str, Any]:
        return {
            "name_or_path": str(self.name_or_path),
            "revision": self.revision,
            "weights_sha256": self.weights_sha256,
            "tokenizer": type(self.tokenizer).__name__,
            "tokenizer_vocab_size": len(self.tokenizer),
            "special_prefix": self.prefix,
            "special_suffix": self.suffix,
            "max_tokens": self.max_tokens,
            "compute_dtype": str(self.compute_dtype()).replace("torch.", ""),
            "padding": "right, dynamic (longest in a length-sorted batch), attention mask passed",
            "model_class": type(self.model).__name__,
        }

    def _chunks(self, sequences: list[str], rows: list[int]) -> tuple[list[_Chunk], np.ndarray, np.ndarray]:
        body_cap = self.max_tokens - len(self.prefix) - len(self.suffix)
        policy = self.extraction.get("long_policy", "chunk_mean")
        exclude = bool(self.extraction.get("exclude_special_tokens", True))
        encoded = self.tokenizer(sequences, add_special_tokens=False, padding=False, truncation=False)["input_ids"]
        chunks: list[_Chunk] = []
        n_chunks = np.zeros(len(sequences), np.int32)
        truncated = np.zeros(len(sequences), bool)
        for i, ids in enumerate(encoded):
            pieces = [ids[s : s + body_cap] for s in range(0, max(len(ids), 1), body_cap)]
            if len(pieces) > 1 and policy == "error":
                raise LongSequenceError(f"model {self.model_id}, row {rows[i]}: {len(ids)} tokens > {body_cap} (long_policy: error)")
            if len(pieces) > 1 and policy == "truncate":
                pieces, truncated[i] = pieces[:1], True
            if len(pieces) > 1 and self.extraction.get("pooling", "mean") in ("cls", "last"):
                raise ValueError(f"model {self.model_id}, row {rows[i]}: pooling {self.extraction['pooling']!r} is undefined across chunks; use long_policy truncate")
            for piece in pieces:
                special = [0 if exclude else 1]
                mask = special * len(self.prefix) + [1] * len(piece) + special * len(self.suffix)
                chunks.append(_Chunk(i, self.prefix + piece + self.suffix, mask))
            n_chunks[i] = len(pieces)
        return chunks, n_chunks, truncated

    def _forward(self, batch: list[_Chunk], rows: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(c.ids) for c in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(batch), width), dtype=torch.long)
        pmask = torch.zeros((len(batch), width), dtype=torch.long)
        for b, c in enumerate(batch):
            ids[b, : len(c.ids)] = torch.tensor(c.ids)
            attn[b, : len(c.ids)] = 1
            pmask[b, : len(c.ids)] = torch.tensor(c.pool_mask)
        layer = self.extraction.get("layer", -1)
        with torch.inference_mode():
            out = self.model(input_ids=ids.to(self.device), attention_mask=attn.to(self.device), output_hidden_states=layer != -1)
            hidden = out.hidden_states[layer] if layer != -1 else out.last_hidden_state
        if not torch.isfinite(hidden).all():
            raise FloatingPointError(f"model {self.model_id}: non-finite hidden states for rows {rows}")
        pooled = pool(hidden, pmask.to(hidden.device), self.extraction.get("pooling", "mean"), rows=rows)
        return pooled.cpu(), pmask.sum(dim=1)

    def embed(self, sequences: list[str], rows: list[int] | None = None) -> EmbedResult:
        """Pooled embeddings (n, d) float32 in input order; see the module docstring for the policy."""
        if isinstance(sequences, str):
            raise TypeError("embed() takes a list of sequences, not one string (wrap it: [seq])")
        rows = list(rows) if rows is not None else list(range(len(sequences)))
        chunks, n_chunks, truncated = self._chunks(list(sequences), rows)
        order = sorted(range(len(chunks)), key=lambda j: len(chunks[j].ids))
        method = self.extraction.get("pooling", "mean")
        dim = None
        acc: np.ndarray | None = None
        counts = np.zeros(len(sequences), np.int64)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = [chunks[j] for j in idx]
            pooled, ntok = self._forward(batch, [rows[c.seq_index] for c in batch])
            if acc is None:
                dim = pooled.shape[1]
                acc = np.zeros((len(sequences), dim), np.float64)
                if method == "max":
                    acc[:] = -np.inf
            for c, v, n in zip(batch, pooled.numpy().astype(np.float64), ntok.numpy()):
                i = c.seq_index
                if method == "mean":
                    acc[i] += v * n
                elif method == "max":
                    acc[i] = np.maximum(acc[i], v)
                else:  # cls / last: one chunk per sequence (checked in _chunks)
                    acc[i] = v
                counts[i] += int(n)
        if method == "mean":
            acc = acc / counts[:, None]
        return EmbedResult(acc.astype(np.float32), counts.astype(np.int32), n_chunks, truncated)


NT_SPECIAL_TOKENS = ["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]


def build_random_esm(builtin: dict[str, Any], folder: str | os.PathLike[str]) -> Path:
    """Build the seeded random-init NT/ESM-style encoder into `folder` (save_pretrained), and return it.

    builtin: {"config": EsmConfig kwargs, "init_seed": int, "tokenizer": "nt-6mer"}. The tokenizer is NT's
    scheme (6-mers, single-letter fallback, a CLS prefix and no EOS; Dalla-Torre et al. 2023): vocabulary =
    6 special tokens + 4^6 6-mers + A, C, G, T, N. Weights come from `torch.manual_seed(init_seed)` then the
    model constructor, so the same seed and torch version give the same weights (hashed into the cache key).
    """
    from transformers import EsmConfig, EsmModel, EsmTokenizer

    if builtin.get("tokenizer", "nt-6mer") != "nt-6mer":
        raise ValueError(f"unknown builtin tokenizer {builtin.get('tokenizer')!r}; only 'nt-6mer' is built in")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = NT_SPECIAL_TOKENS + ["".join(p) for p in itertools.product("ACGT", repeat=6)] + list("ACGTN")
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = EsmTokenizer(str(folder / "vocab.txt"), unk_token="<unk>", pad_token="<pad>", mask_token="<mask>", cls_token="<cls>", eos_token=None)
    tok.model_max_length = SENTINEL_MAX_LENGTH * 10  # "not set", like many hub tokenizers
    tok.save_pretrained(folder)
    config = EsmConfig(vocab_size=len(vocab), pad_token_id=1, mask_token_id=2, position_embedding_type="absolute", **builtin["config"])
    torch.manual_seed(int(builtin.get("init_seed", 0)))
    EsmModel(config, add_pooling_layer=False).save_pretrained(folder)
    return folder


def random_esm_encoder(builtin: dict[str, Any], extraction: dict[str, Any], **kwargs: Any) -> HFEncoder:
    """Build the random-init encoder in a temporary folder and load it through `HFEncoder` (the hub path);
    the folder is deleted once loaded (its weights hash is kept in the encoder's identity)."""
    with tempfile.TemporaryDirectory(prefix="geneb-random-esm-") as tmp:
        encoder = HFEncoder(str(build_random_esm(builtin, tmp)), extraction, **kwargs)
    encoder.name_or_path = "builtin:random-esm"  # the temporary folder is gone; the weights hash identifies it
    return encoder
