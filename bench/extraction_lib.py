"""Helpers of bench/extraction.py: the measured matmul rate, model-FLOPs accounting, the two baseline loops and
the random-init models of realistic size.

FLOPs follow the usual accounting for MFU (Kaplan et al. 2020; the PaLM paper, Chowdhery et al. 2022, app. B):
a forward pass costs 2 FLOPs per parameter per token for the dense weights a token passes through, plus
4 x layers x T^2 x d for self-attention over a chunk of T tokens (the QK^T scores and the weighted sum of V).
Only real tokens count (padding is wasted work, not useful work). Embedding tables are lookups (0 FLOPs);
for a mixture of experts only the routed experts count; HyenaDNA's implicit long-convolution filters are
generated once per forward pass, not per token, and its FFT convolution (O(T log T) per channel) is not
counted, so its MFU understates the arithmetic done.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

#: NT-v2 50M (InstaDeepAI/nucleotide-transformer-v2-50m-multi-species, its config.json): hidden 512, 12 layers,
#: 16 heads, rotary positions, a SwiGLU feed-forward of width 2048 (no biases). transformers' EsmModel has no
#: GLU, so a GELU feed-forward of width 3072 stands in for it: the same weights per layer (2 x 512 x 3072 =
#: 3 x 512 x 2048) and so the same dense FLOPs per token.
NT_V2_50M = {
    "hidden_size": 512,
    "num_hidden_layers": 12,
    "num_attention_heads": 16,
    "intermediate_size": 3072,
    "max_position_embeddings": 2050,
    "position_embedding_type": "rotary",
}

#: HyenaDNA small-32k (LongSafari/hyenadna-small-32k-seqlen-hf): d_model 256, 4 layers, MLP width 1024,
#: 32,768-token context; the rest (filter order 64, order-2 operator, short filter 3) as in every HyenaDNA.
HYENA_SMALL_32K = {"d_model": 256, "n_layer": 4, "d_inner": 1024, "max_seq_len": 32770}


def sync(device: str) -> None:
    """Wait for the queued work of `device` (a no-op on CPU)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def matmul_rate(device: str, dtype: torch.dtype = torch.float32, n: int = 2048, repeats: int = 5) -> float:
    """The measured matrix-multiply rate in FLOP/s: torch.matmul of two n x n matrices of `dtype` (2 n^3 FLOPs),
    best of `repeats` rounds of 4 products after a warm-up. On CPU the time is process CPU time (FLOP per
    CPU-second: other jobs on a shared machine do not lower it; at one thread it is the rate of one core);
    on CUDA it is wall time between synchronisations. Raises RuntimeError for device cuda without CUDA."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("matmul_rate: device cuda but CUDA is not available")
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    torch.matmul(a, b)
    sync(device)
    clock = time.perf_counter if device.startswith("cuda") else time.process_time
    best = float("inf")
    for _ in range(repeats):
        t = clock()
        for _ in range(4):
            torch.matmul(a, b)
        sync(device)
        best = min(best, (clock() - t) / 4)
    return 2 * n**3 / best


def per_token_params(model: torch.nn.Module) -> int:
    """Parameters one token passes through, the N of 2N FLOPs per token: all parameters except embedding and
    position tables, the ESM pooler (one token per row) and contact head (not run), and HyenaDNA's implicit
    filters (`filter_fn`, made once per forward pass); routed experts are scaled by top-k / experts (Mixtral)."""
    cfg = model.config
    experts = getattr(cfg, "num_local_experts", 1) or 1
    topk = getattr(cfg, "num_experts_per_tok", experts) or experts
    total = 0.0
    for name, p in model.named_parameters():
        if any(part in name for part in ("embed", "pooler", "contact_head", "filter_fn")):
            continue
        total += p.numel() * (topk / experts if ".experts." in name else 1.0)
    return int(total)


def attention_shape(model: torch.nn.Module) -> tuple[int, int] | None:
    """(layers, hidden size) of a self-attention model, None for an attention-free one (HyenaDNA)."""
    cfg = model.config
    if getattr(cfg, "num_attention_heads", None) is None:
        return None
    return int(cfg.num_hidden_layers), int(cfg.hidden_size)


def attention_flops(model: torch.nn.Module, lengths: Sequence[int]) -> float:
    """Self-attention FLOPs of chunks of real `lengths` (tokens): 4 x layers x T^2 x d per chunk (0 for an
    attention-free model)."""
    shape = attention_shape(model)
    if shape is None:
        return 0.0
    lengths = np.asarray(lengths, dtype=np.float64)
    return 4.0 * shape[0] * shape[1] * float((lengths**2).sum())


def useful_flops(model: torch.nn.Module, lengths: Sequence[int]) -> float:
    """Forward FLOPs of chunks of real `lengths` (tokens): 2 x per-token parameters x tokens, plus
    self-attention (`attention_flops`; module docstring)."""
    dense = 2.0 * per_token_params(model) * float(np.asarray(lengths, dtype=np.float64).sum())
    return dense + attention_flops(model, lengths)


def reference_model(enc: Any) -> torch.nn.Module:
    """The model as the reference script loads it: `AutoModelForCausalLM.from_pretrained(path,
    output_hidden_states=True)` (its decoder extractors, e.g. embedding_pipeline/extractors/generator.py of
    darlednik/GENEB), from the folder GENEB loaded, in eval mode on the encoder's device and weights dtype. The
    body's weights are GENEB's; the LM head runs on every position although only the hidden states are used."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        enc.where, output_hidden_states=True, dtype=getattr(torch, enc.weights_dtype)
    )
    return model.to(enc.device).eval()


def _accumulate(acc: np.ndarray, counts: np.ndarray, batch: list[Any], pooled: np.ndarray, n: np.ndarray) -> None:
    for c, v, k in zip(batch, pooled, n):
        acc[c.seq_index] += v * k
        counts[c.seq_index] += k


def reference_embed(enc: Any, model: torch.nn.Module, seqs: list[str], batch_rows: int = 8) -> np.ndarray:
    """The reference script's loop (`extract_embeddings(sequences, batch_size=8)`): batches of `batch_rows` rows
    in file order; per batch the rows are tokenized (GENEB's tokenization and chunking, so a row longer than
    the model maximum is embedded as chunks like GENEB's, where the script truncates it), padded to the
    batch's longest, run under `torch.no_grad` through `model` (`reference_model`) with the attention mask,
    `hidden_states[-1]` mean-pooled over GENEB's pool mask, chunk means weighted by their positions. Returns
    float32 (len(seqs), d) in row order."""
    from geneb.encoders.engine.chunking import pad_chunks, pool

    acc = np.zeros((len(seqs), enc.hidden_size), np.float64)
    counts = np.zeros(len(seqs), np.int64)
    for s in range(0, len(seqs), batch_rows):
        batch, *_ = enc.make_chunks(seqs[s : s + batch_rows], list(range(s, min(s + batch_rows, len(seqs)))))
        for c in batch:
            c.seq_index += s  # make_chunks numbers the rows of its call from 0
        ids, attn, pmask = pad_chunks(batch, pad_id=enc.pad_id, side=enc.padding_side)
        with torch.no_grad():
            out = model(input_ids=ids.to(enc.device), attention_mask=attn.to(enc.device))
            hidden = out.hidden_states[-1]
            pooled = pool(hidden, pmask.to(hidden.device), "mean").double().cpu().numpy()
        _accumulate(acc, counts, batch, pooled, pmask.sum(1).numpy())
    return (acc / counts[:, None]).astype(np.float32)


def padmax_embed(enc: Any, seqs: list[str], batch_size: int) -> np.ndarray:
    """A pad-to-maximum loop: GENEB's chunks of all rows in file order, fixed batches of `batch_size`, every
    batch padded to the model maximum, `torch.no_grad`, the encoder's model (no LM head) with the attention
    mask, last hidden state mean-pooled over the pool mask. Returns float32 (len(seqs), d) in row order."""
    from geneb.encoders.engine.chunking import pad_chunks, pool

    chunks, *_ = enc.make_chunks(seqs, list(range(len(seqs))))
    acc = np.zeros((len(seqs), enc.hidden_size), np.float64)
    counts = np.zeros(len(seqs), np.int64)
    for s in range(0, len(chunks), batch_size):
        batch = chunks[s : s + batch_size]
        ids, attn, pmask = pad_chunks(batch, pad_id=enc.pad_id, side=enc.padding_side, min_width=enc.max_tokens)
        with torch.no_grad():
            hidden = enc.model(input_ids=ids.to(enc.device), attention_mask=attn.to(enc.device)).last_hidden_state
            pooled = pool(hidden, pmask.to(hidden.device), "mean").double().cpu().numpy()
        _accumulate(acc, counts, batch, pooled, pmask.sum(1).numpy())
    return (acc / counts[:, None]).astype(np.float32)


def best_time(fn: Callable[[], Any], repeats: int, device: str) -> tuple[float, float, Any]:
    """(best wall seconds, best process CPU seconds, the last result) of `repeats` calls of fn()."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        sync(device)
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        sync(device)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), out


def random_nt_v2_settings(registry: Any) -> dict[str, Any]:
    """Extraction settings of a random-init NT-v2-50M-sized encoder: the registry's `random-esm-tiny` entry
    (NT's 6-mer tokenizer, CLS prefix, mean pooling) with `NT_V2_50M` as its config."""
    from geneb.registry.load import extraction_settings

    settings = copy.deepcopy(dict(extraction_settings(registry, "random-esm-tiny", {})))
    settings["model"] = "random-init-nt-v2-50m"
    settings["builtin"] = {**settings["builtin"], "config": dict(NT_V2_50M)}
    return settings


def build_random_hyena(registry: Any, shared: Path, folder: Path, *, seed: int = 0, **execution: Any) -> Any:
    """A random-init HyenaDNA of small-32k size (`HYENA_SMALL_32K`), loaded through GENEB's HF adapter.

    The remote code and character tokenizer are those of the real HyenaDNA checkpoint in
    ../shared/models/hyenadna-tiny-1k-ft-anticapt (the -hf implementation, plain torch FFT convolutions);
    the weights come from `torch.manual_seed(seed)` and the model constructor. The settings are that
    checkpoint's registry entry (family hyena, mean over the real tokens, right padding) under another
    name, with the wider embedding. `folder` must be new: remote code is cached by folder name. execution: device, batch_size, ...
    """
    from transformers import AutoConfig, AutoModel

    from geneb.encoders.families.hf import HFEncoder
    from geneb.registry.load import extraction_settings

    source = shared / "models" / "hyenadna-tiny-1k-ft-anticapt"
    folder.mkdir(parents=True)
    for name in ("configuration_hyena.py", "modeling_hyena.py", "tokenization_hyena.py", "tokenizer_config.json"):
        shutil.copy(source / name, folder / name)
    config = {**json.loads((source / "config.json").read_text()), **HYENA_SMALL_32K}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    torch.manual_seed(seed)
    model = AutoModel.from_config(AutoConfig.from_pretrained(folder, trust_remote_code=True), trust_remote_code=True)
    # the real checkpoint's format: one Sin activation is shared by the filter layers, which save_pretrained's
    # tied-weights check refuses, and from_pretrained reads a plain state dict the same way
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    settings = copy.deepcopy(dict(extraction_settings(registry, "hyenadna-tiny-1k-ft-anticapt", {})))
    settings["model"] = "random-init-hyenadna-small-32k"
    settings["extraction"] = {**settings["extraction"], "embedding_dim": HYENA_SMALL_32K["d_model"]}
    return HFEncoder(settings, where=str(folder), **execution)
