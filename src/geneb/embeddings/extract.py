"""`extract_task`: one (model, task) -> one HDF5 embedding file (docs/data-dictionary.md, stage 2).

Builds the model's encoder from its resolved extraction settings (models/registry.py), embeds every split
of the prepared task in parquet row order (model input = uppercase sequence), applies the reverse-complement
mode, and writes the cache atomically with the complete extraction key.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.embeddings.cache import SplitEmbeddings, write_embeddings
from geneb.models.base import EmbedResult, Encoder
from geneb.models.registry import extraction_hash
from geneb.provenance import package_versions
from geneb.tasks.alphabet import model_input
from geneb.tasks.hygiene import reverse_complement

log = logging.getLogger(__name__)
RC_MODES = ("none", "average", "concat")


def build_encoder(settings: dict[str, Any], *, device: str = "cpu", batch_size: int = 64) -> Encoder:
    """The encoder for resolved `settings` (registry.extraction_settings). Heavy imports happen here, lazily:
    a k-mer run never imports torch. Raises ValueError for an unknown family."""
    family = settings["family"]
    ext = settings["extraction"]
    common = {"model_id": settings["model"], "device": device, "batch_size": batch_size}
    if family == "kmer":
        from geneb.models.kmer import KmerEncoder

        return KmerEncoder(int(settings["builtin"]["k"]))
    if family == "random-init":
        from geneb.models.hf import random_esm_encoder

        return random_esm_encoder(settings["builtin"], ext, **common)
    if family in ("hf-encoder", "hf-decoder"):
        from geneb.models.hf import HFEncoder

        src = settings["source"]
        where = src.get("path") if src["kind"] == "local" else src.get("hub_id")
        revision = None if src["kind"] == "local" else src.get("revision")
        return HFEncoder(where, ext, revision=revision, trust_remote_code=settings["trust_remote_code"], **common)
    raise ValueError(f"model {settings['model']}: unknown family {family!r}")


def embed_with_rc(encoder: Encoder, sequences: list[str], rows: list[int], rc: str) -> EmbedResult:
    """Embed `sequences` with reverse-complement mode `rc`: none, average (mean of the forward and RC
    vectors), concat ([forward, RC], width 2d). Raises ValueError for an unknown mode."""
    if rc not in RC_MODES:
        raise ValueError(f"unknown rc mode {rc!r}; expected one of {RC_MODES}")
    fwd = encoder.embed(sequences, rows)
    if rc == "none":
        return fwd
    rev = encoder.embed([reverse_complement(s) for s in sequences], rows)
    emb = (fwd.embeddings + rev.embeddings) / 2 if rc == "average" else np.concatenate([fwd.embeddings, rev.embeddings], axis=1)
    return EmbedResult(emb.astype(np.float32), fwd.n_tokens, fwd.n_chunks, fwd.truncated | rev.truncated)


def extract_task(
    settings: dict[str, Any],
    task_dir: str | Path,
    out_path: str | Path,
    *,
    splits: tuple[str, ...] = ("train", "test"),
    device: str = "cpu",
    batch_size: int = 64,
    hdf5_locking: str = "auto",
    storage_dtype: str = "float32",
) -> dict[str, Any]:
    """Embed every split of the prepared task in `task_dir` and write `out_path`; returns the extraction key.

    Raises whatever the encoder raises (empty pools, non-finite states, over-long rows under
    long_policy=error) with the model and row named; nothing is written then.
    """
    task_dir = Path(task_dir)
    card = json.loads((task_dir / "card.json").read_text())
    t0 = time.perf_counter()
    encoder = build_encoder(settings, device=device, batch_size=batch_size)
    out: dict[str, SplitEmbeddings] = {}
    for split in splits:
        df = pd.read_parquet(task_dir / f"{split}.parquet")
        rows = df["row"].astype(int).tolist()
        res = embed_with_rc(encoder, [model_input(s) for s in df["sequence"]], rows, settings["extraction"]["rc"])
        out[split] = SplitEmbeddings(res.embeddings, df["row"].to_numpy(), res.n_tokens, res.n_chunks, res.truncated)
        log.info("%s/%s %s: %d rows, dim %d, %d chunked, %d truncated", settings["model"], card["task"], split,
                 len(df), res.embeddings.shape[1], int((res.n_chunks > 1).sum()), int(res.truncated.sum()))
    key = {
        "model": settings["model"],
        "task": card["task"],
        "settings_hash": extraction_hash(settings),
        "settings": settings,
        "encoder": encoder.identity(),
        "task_data_hash": card["data_hash"],
        "package_versions": package_versions(),
    }
    write_embeddings(out_path, out, key, storage_dtype=storage_dtype, hdf5_locking=hdf5_locking)
    log.info("wrote %s in %.1f s", out_path, time.perf_counter() - t0)
    return key
