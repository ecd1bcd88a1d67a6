"""`extract_task`: one (model, task) -> one HDF5 embedding file, with the views of a split.

The views of one split (`geneb.registry.spec`): every requested layer and pooling of a token model from one
forward pass per chunk and strand (`geneb.encoders.engine.views`), the reverse-complement views as the mean of
the two strands' vectors (a second pass, over the reverse strand, only when a view asks for it), and the k-mer
counts' one view per rc value. What the extraction step (`geneb.extract.step`) writes into the views groups of the
(model, task) file (`geneb.extract.cache`, `ViewArrays`).

`extract_task`: one (model, task) -> one HDF5 embedding file (docs/data-dictionary.md, stage 2).

Builds the model's encoder from its resolved extraction settings (`geneb.registry.load.extraction_settings`)
through the lazy family adapters (models/adapters.py; a k-mer job never imports torch), embeds every split of the
prepared task in parquet row order (model input = uppercase sequence), applies the reverse-complement mode, and
writes the cache atomically with the complete extraction key and the policy as flat HDF5 attributes.
Every row of every split is embedded or the job fails: GENEB never skips a row for one model, so every
model is scored on the same rows.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

import geneb.extract.batch_plan as batch_plan
from geneb.core import integrity
from geneb.core.errors import ExtractionError
from geneb.core.provenance import code_revision, dirty_label, package_versions
from geneb.encoders.protocol import EmbedResult, Encoder, deferred_load_checks
from geneb.extract.cache import SplitEmbeddings, ViewArrays, key_hash, write_embeddings
from geneb.extract.cost import CostMeter, model_tokens
from geneb.registry.load import extraction_hash
from geneb.registry.spec import ExtractionSettings, SettingsLike, View, ViewSet, layer_depth
from geneb.tasks.prepare import read_card
from geneb.tasks.validation import AlphabetPolicy, model_input, reverse_complement

#: a view's (layer, pooling): the layer None for an encoder without layers (k-mer counts)
_LayerPooling = tuple[int | None, str]


def _reverse_inputs(encoder: Encoder, sequences: list[str]) -> list[str]:
    # the reverse strand of the bases the forward pass keeps (a length_multiple rule trims the forward 3' end)
    multiple = int((encoder.extraction.length_multiple if encoder.extraction is not None else None) or 1)
    return [reverse_complement(s[: len(s) - len(s) % multiple]) for s in sequences]


def _one_strand(
    encoder: Encoder, sequences: list[str], rows: list[int], views: ViewSet, desc: str | None
) -> tuple[EmbedResult, dict[_LayerPooling, np.ndarray]]:
    """(EmbedResult with an empty (n, 0) embeddings, {(layer, pooling): float32 (n, d)}) of one strand."""
    if not views.layers:  # no token states (k-mer counts): the encoder's one vector
        res = encoder.embed(sequences, rows, desc=desc)
        return replace(res, embeddings=np.zeros((len(sequences), 0), np.float32)), {(None, "mean"): res.embeddings}
    from geneb.encoders.engine.tokenmodel import TokenModelEncoder
    from geneb.encoders.engine.views import embed_views  # torch: only for token models

    specs = [(layer, pooling) for pooling in views.poolings for layer in views.layers]
    # layers are resolved for token models only (geneb.registry.spec: none without token states)
    base, vectors = embed_views(cast(TokenModelEncoder, encoder), sequences, rows, specs, desc=desc)
    by_spec: dict[_LayerPooling, np.ndarray] = dict(zip(specs, vectors))
    return base, by_spec


def embed_split_views(
    encoder: Encoder, sequences: list[str], rows: list[int], views: ViewSet, *, desc: str | None = None
) -> tuple[EmbedResult, dict[str, np.ndarray]]:
    """Embed one split for every view of `views`: (the forward strand's EmbedResult, with an empty (n, 0)
    `embeddings`, `truncated` set where either strand was, step-downs and float32 retries of both strands;
    {view id: float32 (n, d)} in `views.views()` order). rc views are (forward + reverse) / 2 per (layer,
    pooling), as the registry's `rc: average`. Raises what the encoder raises (see `embed_views`)."""
    base, fwd = _one_strand(encoder, sequences, rows, views, desc)
    rev: dict[_LayerPooling, np.ndarray] = {}
    if True in views.reverse_complement:
        rev_base, rev = _one_strand(
            encoder, _reverse_inputs(encoder, sequences), rows, views, f"{desc} (RC)" if desc else None
        )
        counters = replace(
            base.counters,
            step_downs=base.counters.step_downs + rev_base.counters.step_downs,
            fp32_retries=base.counters.fp32_retries + rev_base.counters.fp32_retries,
        )
        base = replace(base, truncated=base.truncated | rev_base.truncated, counters=counters)
    out: dict[str, np.ndarray] = {}
    for view in views.views():
        layer_pool = (view.layer, view.pooling)
        x = fwd[layer_pool] if not view.reverse_complement else (fwd[layer_pool] + rev[layer_pool]) / 2
        out[view.id] = np.asarray(x, dtype=np.float32)
    return base, out


def view_attrs(view: View, views: ViewSet, *, key_hash: str, settings_hash: str) -> dict[str, Any]:
    """The HDF5 attributes of one view's group: its id, layer (-1 in the file for an encoder without layers; HDF5
    has no null), n_layers (-1 likewise), layer_depth (NaN likewise), pooling, reverse_complement, and `view_key`
    (JSON: the file's settings hash and key hash with the view), its full key."""
    depth = layer_depth(view.layer, views.n_layers)
    spec = {"layer": view.layer, "pooling": view.pooling, "reverse_complement": view.reverse_complement}
    return {
        "view_id": view.id,
        "layer": -1 if view.layer is None else int(view.layer),
        "n_layers": -1 if views.n_layers is None else int(views.n_layers),
        "layer_depth": float("nan") if depth is None else depth,
        "pooling": view.pooling,
        "reverse_complement": bool(view.reverse_complement),
        "view_key": {"settings_hash": settings_hash, "key_hash": key_hash, "view": spec},
    }


def _view_arrays(
    views: ViewSet, per_split: dict[str, dict[str, np.ndarray]], *, key_hash: str, settings_hash: str
) -> dict[str, ViewArrays]:
    """{view id: ViewArrays(its attributes, {split: float32 (n, d)})} from {split: {view id: vectors}}."""
    return {
        view.id: ViewArrays(
            view_attrs(view, views, key_hash=key_hash, settings_hash=settings_hash),
            {split: arrays[view.id] for split, arrays in per_split.items()},
        )
        for view in views.views()
    }


_log = logging.getLogger(__name__)
RC_MODES = ("none", "average", "concat")


def build_encoder(
    settings: SettingsLike,
    *,
    device: str = "cpu",
    batch_size: int = 64,
    threads: int | None = None,
    progress: bool = True,
    batch_tokens: int | None = None,
) -> Encoder:
    """The encoder for resolved `settings` (registry.extraction_settings; typed once as `ExtractionSettings`).

    threads: torch intra-op threads (an execution knob; set only for families that use torch, so a k-mer job
    never imports it). batch_tokens: None = batches of `batch_size` chunks; else a budget of padded tokens
    per batch (length-sorted; `geneb.encoders.engine.batching.plan_token_batches`), for torch families only. Raises ValueError for an unknown family or one without an adapter, and
    MissingPackageError naming the model and the package for a missing optional package.
    """
    from geneb.registry.families import build, family

    settings = ExtractionSettings.of(settings)
    if family(settings.family, model=settings.model).uses_torch:
        import torch

        if threads is not None:
            torch.set_num_threads(int(threads))
        return build(settings, device=device, batch_size=batch_size, batch_tokens=batch_tokens, progress=progress)
    return build(settings, progress=progress)  # a python entry's batch loop logs progress too


@dataclass
class LoadedModel:
    """An encoder loaded once, with its load-time probes passed, ready to embed any number of tasks.

    identity: `encoder.identity()` (goes into every file's key). seconds_load: wall seconds of the load and
    probes. load_id: `<host>:<pid>:<12 hex>`, one per load (files embedded by one load share it; the
    workflow benchmark counts loads by it). load_checks_sha256: the passed-checks record the load relied on
    (geneb.extract.batch_plan); checks_run: whether this load ran the probes or took the record.
    """

    settings: ExtractionSettings
    settings_hash: str
    encoder: Encoder
    identity: dict[str, Any]
    seconds_load: float
    load_id: str
    load_checks_sha256: str
    checks_run: bool
    batch_tokens: int | None = None  # the budget the encoder runs with (execution.batch_tokens, auto resolved)


#: how a load treats a passed load-time checks record (execution.load_checks)
_LOAD_CHECKS_POLICIES = ("record", "every_load")


def load_model(
    settings: SettingsLike,
    *,
    checks_dir: str | Path,
    device: str = "cpu",
    batch_size: int = 64,
    batch_tokens: int | str | None = None,
    threads: int | None = None,
    progress: bool = True,
    load_checks_policy: str = "record",
) -> LoadedModel:
    """Load the encoder of resolved `settings` once and pass its load-time probes, or take a matching
    passed-checks record from `checks_dir` (the folder of the model's embeddings under its settings hash;
    module geneb.extract.batch_plan) instead of probing again. Writes the record after probing. batch_tokens
    "auto": the CPU budget measured once per model (geneb.extract.batch_plan).
    load_checks_policy: "record" (the default: take a matching record) or "every_load" (probe at every load,
    as every extraction job did before the record existed; the benchmark's baseline, or to re-verify a suspect record).

    Raises what `build_encoder` raises while loading, and the probes' errors (DroppedInputError,
    MaxLengthError, PaddingVarianceError, naming the model); no record is written then.
    """
    typed = ExtractionSettings.of(settings)
    mapping = typed.as_dict() if isinstance(settings, ExtractionSettings) else dict(settings)
    settings_hash = extraction_hash(mapping)
    t0 = time.perf_counter()
    fixed = batch_tokens if isinstance(batch_tokens, int) else None  # auto (or a typo) is resolved below
    with deferred_load_checks():
        encoder = build_encoder(
            typed, device=device, batch_size=batch_size, batch_tokens=fixed, threads=threads, progress=progress
        )
    identity = encoder.identity()
    record_path = Path(checks_dir) / batch_plan.LOAD_CHECKS_FILE
    names = encoder.load_check_names  # a family without probes (k-mer counts, Enformer) records none
    want = batch_plan.expected(typed.model, settings_hash, identity, names)
    found = batch_plan.read_record(record_path)
    if load_checks_policy not in _LOAD_CHECKS_POLICIES:
        raise ValueError(f"load_checks_policy {load_checks_policy!r}: expected one of {_LOAD_CHECKS_POLICIES}")
    checks_run = found != want or load_checks_policy == "every_load"
    if checks_run:
        encoder.run_load_checks()
        batch_plan.write_record(record_path, want)
        _log.info("model %s: load-time checks %s passed; recorded in %s", typed.model, list(names), record_path)
    else:
        _log.info(
            "model %s: load-time checks %s passed earlier (%s); not run again", typed.model, list(names), record_path
        )
    plan = batch_plan.resolve_batch_tokens(  # auto: the CPU budget measured once per model (batch_plan)
        encoder, batch_tokens, device=device, checks_dir=checks_dir, model=typed.model, settings_hash=settings_hash,
        identity_sha256=want.identity_sha256,
    )  # fmt: skip
    if batch_plan.token_batches(encoder):
        cast(Any, encoder).batch_tokens = plan
    return LoadedModel(
        settings=typed,
        settings_hash=settings_hash,
        encoder=encoder,
        identity=identity,
        seconds_load=time.perf_counter() - t0,
        load_id=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}",
        load_checks_sha256=want.sha256(),
        checks_run=checks_run,
        batch_tokens=plan,
    )


def embed_with_rc(
    encoder: Encoder, sequences: list[str], rows: list[int], rc: str, *, desc: str | None = None
) -> EmbedResult:
    """Embed `sequences` with reverse-complement mode `rc`: none, average (mean of the forward and RC
    vectors, width d), concat ([forward, RC], width 2d). The RC strand is that of the bases the forward pass
    keeps (after a `length_multiple` trim). n_tokens/n_chunks and the unknown-token counters are the forward
    strand's; `truncated` is set when either strand was truncated; step-downs and float32 retries are both
    strands' together. Raises ValueError for an unknown mode, and for rc with long_policy
    truncate (the strands would be cut at opposite ends of the row)."""
    if rc not in RC_MODES:
        raise ValueError(f"unknown rc mode {rc!r}; expected one of {RC_MODES}")
    ext = encoder.extraction  # None: an encoder with no token options (k-mer counts)
    if rc != "none" and ext is not None and ext.long_policy == "truncate":
        # each strand would be cut at its own 5' end: the two halves would describe different regions
        raise ValueError(
            f"rc {rc!r} with long_policy truncate would average two different windows of a long row; "
            "use long_policy chunk_mean (or rc none)"
        )
    fwd = encoder.embed(sequences, rows, desc=desc)
    if rc == "none":
        return fwd
    # the reverse strand of the bases the forward pass kept: a length_multiple rule trims the 3' end of the
    # forward strand, which is the 5' start of its reverse complement
    multiple = int((ext.length_multiple if ext is not None else None) or 1)
    kept = [s[: len(s) - len(s) % multiple] for s in sequences]
    rev = encoder.embed([reverse_complement(s) for s in kept], rows, desc=f"{desc} (RC)" if desc else None)
    emb = (
        (fwd.embeddings + rev.embeddings) / 2
        if rc == "average"
        else np.concatenate([fwd.embeddings, rev.embeddings], axis=1)
    )
    counters = replace(
        fwd.counters,  # the file reports the forward strand's unknown tokens
        step_downs=fwd.counters.step_downs + rev.counters.step_downs,
        fp32_retries=fwd.counters.fp32_retries + rev.counters.fp32_retries,
    )
    return EmbedResult(
        emb.astype(np.float32),
        fwd.n_tokens,
        fwd.n_chunks,
        fwd.truncated | rev.truncated,
        fwd.trimmed_bases,
        counters,
        empty=fwd.empty | rev.empty,
    )


def model_inputs(df: pd.DataFrame, *, task: str, split: str) -> list[str]:
    """The model-input form (uppercase) of a prepared split's `sequence` column, each row checked again
    against the widest alphabet policy (A C G T N and IUPAC codes, no whitespace, not empty): a parquet
    written by other means than `prepare_task` cannot slip whitespace or stray letters into a tokenizer that
    would swallow them. Raises SequenceError naming task, split, row and character."""
    policy = AlphabetPolicy()
    return [
        model_input(policy.apply(seq, task=task, split=split, row=int(row)))
        for seq, row in zip(df["sequence"], df["row"])
    ]


def _longest_split_first(frames: dict[str, pd.DataFrame]) -> list[str]:
    """The splits in embedding order: the one holding the longest sequence first (ties keep the given order),
    so that the largest batch, which each split runs first, meets an out-of-memory in the job's first minute
    rather than after the whole training split. Rows, vectors and the file's layout do not depend on it."""
    longest = {s: int(df["sequence"].str.len().max()) if len(df) else 0 for s, df in frames.items()}
    return sorted(frames, key=lambda s: -longest[s])


def _policy_attrs(settings: ExtractionSettings, identity: dict[str, Any]) -> dict[str, Any]:
    """Flat, human-readable HDF5 root attributes: the pooling/layer/special-token policy and how the model
    was run (pooled positions, layer, dtype). The complete key stays in the `extraction_key` JSON attribute."""
    ext = settings.extraction
    return {
        "model": settings.model,
        "family": settings.family,
        "pooling": ext.pooling,
        "layer": str(ext.layer),
        "layer_resolved": identity.get("layer_resolved", "n/a (no layers)"),
        "exclude_special_tokens": bool(ext.exclude_special_tokens),
        "special_prefix_ids": json.dumps(identity.get("special_prefix", [])),
        "special_suffix_ids": json.dumps(identity.get("special_suffix", [])),
        "max_tokens": int(identity.get("max_tokens") or ext.max_tokens or 0),
        "long_policy": ext.long_policy,
        "rc": ext.rc,
        "compute_dtype": identity.get("compute_dtype", "float32"),
        "padding": identity.get("padding", "none (no model)"),
        "attention_mask": str(identity.get("attention_mask", "n/a")),
        "weights_format": identity.get("weights_format", "n/a (no checkpoint)"),
    }


def extract_task(
    settings: SettingsLike,
    task_dir: str | Path,
    out_path: str | Path,
    *,
    splits: tuple[str, ...] = ("train", "test"),
    device: str = "cpu",
    batch_size: int = 64,
    batch_tokens: int | str | None = None,
    threads: int | None = None,
    hdf5_locking: str = "auto",
    storage_dtype: str | None = None,
    progress: bool = True,
    loaded: LoadedModel | None = None,
    load_checks_policy: str = "record",
) -> dict[str, Any]:
    """Embed every split of the prepared task in `task_dir` and write `out_path`; returns the extraction key.

    settings: the resolved mapping of registry.extraction_settings (the rule's params; it goes into the key
    and its hash as it is), typed here once as `ExtractionSettings` for everything else. storage_dtype: None = the settings' `extraction.storage_dtype` (float32, or float16 to halve the file).
    device, batch_size, batch_tokens, threads, hdf5_locking, progress: execution knobs (recorded as attributes,
    not in the key), as are the running code's `geneb_commit` and `geneb_dirty` ("true", "false" or "unknown").
    Errors from the encoder (empty pools, non-finite states, over-long rows under long_policy error,
    token ids outside the table) are re-raised naming model, task and split; nothing is written then.
    loaded: a model `load_model` loaded earlier for these settings (a model server embeds many tasks with one
    load); None loads it here, with `load_checks_policy` (`load_model`). Raises ValueError when `loaded` was
    loaded for other settings.
    """
    task_dir = Path(task_dir)
    card = read_card(task_dir / "card.json")
    task = card.task
    typed = ExtractionSettings.of(settings)  # typed once; the mapping itself goes into the key and the hash
    settings = typed.as_dict() if isinstance(settings, ExtractionSettings) else settings
    t0 = time.perf_counter()
    reused = loaded is not None
    if loaded is None:
        checks_dir = Path(out_path).parents[1]  # <model>/<settings hash>/ of <task>/<task hash>.h5
        loaded = load_model(
            typed,
            checks_dir=checks_dir,
            device=device,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            threads=threads,
            progress=progress,
            load_checks_policy=load_checks_policy,
        )
    elif loaded.settings_hash != extraction_hash(settings):
        raise ValueError(
            f"model {typed.model}: the loaded model has settings {loaded.settings_hash}, "
            f"the task {task} asks for {extraction_hash(settings)}"
        )
    encoder, identity = loaded.encoder, loaded.identity
    t_load = 0.0 if reused else time.perf_counter() - t0
    meter = CostMeter(device, threads)  # after the load: seconds_compute and the counts are the embedding's alone
    passes = 2 if _embeds_reverse(typed) else 1
    out: dict[str, SplitEmbeddings] = {}
    step_downs = fp32_retries = 0  # over every split and strand of the file
    per_split_views: dict[str, dict[str, np.ndarray]] = {}
    frames = {split: integrity.read_parquet(task_dir / f"{split}.parquet") for split in splits}
    for split in _longest_split_first(frames):
        df = frames[split]
        rows = df["row"].astype(int).tolist()
        where = f"model {typed.model}, task {task}, split {split}"
        desc = where  # what the progress lines of a long split name (geneb.encoders.engine.batching)
        try:
            inputs = model_inputs(df, task=task, split=split)
            if typed.views is None:
                res = embed_with_rc(encoder, inputs, rows, typed.extraction.rc, desc=desc)
            else:  # every view from one forward pass per chunk and strand (geneb.extract.step)
                res, per_split_views[split] = embed_split_views(encoder, inputs, rows, typed.views, desc=desc)
        except (ExtractionError, ValueError, MemoryError) as err:
            msg = f"{where}: {err}"
            wrapped = type(err)(msg) if _reraisable(err) else ExtractionError(msg)
            if isinstance(err, ExtractionError) and isinstance(wrapped, ExtractionError):
                wrapped.rows = err.rows
            raise wrapped from err
        step_downs += res.counters.step_downs
        fp32_retries += res.counters.fp32_retries
        specials_pooled = not typed.extraction.exclude_special_tokens
        meter.add(
            inputs, model_tokens(res.n_tokens, res.n_chunks, identity, specials_pooled=specials_pooled), passes=passes
        )
        out[split] = SplitEmbeddings(
            res.embeddings,
            df["row"].to_numpy(),
            res.n_tokens,
            res.n_chunks,
            res.truncated,
            trimmed_bases=res.trimmed_bases,
            empty=res.empty,
            attrs={
                "n_rows": len(df),
                "n_truncated": int(res.truncated.sum()),
                "n_chunked": int((res.n_chunks > 1).sum()),
                "n_pooled_positions": int(res.n_tokens.sum()),
                "n_trimmed_rows": int((res.trimmed_bases > 0).sum()),
                "n_unknown_tokens": int(res.counters.unknown_tokens),
                "n_empty_rows": int(res.empty.sum()),
            },
        )
        _log.info(
            "%s: %d rows, dim %d, %d view(s), %d chunked, %d truncated, %d pooled positions",
            where,
            len(df),
            res.embeddings.shape[1],
            len(per_split_views.get(split, {})) or 1,
            int((res.n_chunks > 1).sum()),
            int(res.truncated.sum()),
            int(res.n_tokens.sum()),
        )
    out = {split: out[split] for split in splits}  # the file lists the splits in their usual order
    key: dict[str, Any] = {
        "model": typed.model,
        "task": task,
        "settings_hash": extraction_hash(settings),
        "settings": settings,
        "encoder": identity,
        "task_data_hash": card.data_hash,
        "package_versions": package_versions(),
    }
    cost = meter.attrs()  # before seconds_total: the embedding's seconds never exceed the job's
    seconds = time.perf_counter() - t0
    attrs = {
        **_policy_attrs(typed, identity),
        "device": device,
        "batch_size": int(batch_size),
        "batch_tokens": int(loaded.batch_tokens or (batch_tokens if isinstance(batch_tokens, int) else 0)),  # 0: none
        "batch_step_downs": int(step_downs),
        "fp32_retries": int(fp32_retries),
        "hdf5_locking": hdf5_locking,
        "seconds_load": round(t_load, 3),
        "seconds_model_load": round(loaded.seconds_load, 3),
        "model_load_id": loaded.load_id,
        "model_reused": bool(reused),
        "load_checks_sha256": loaded.load_checks_sha256,
        "seconds_total": round(seconds, 3),
        **cost,  # what the embedding cost, measured in this process (geneb.extract.cost)
        # the running code's revision: an attribute, not in the extraction key (a new commit reruns nothing)
        "geneb_commit": str(code_revision()["geneb_commit"]),
        "geneb_dirty": dirty_label(code_revision()["geneb_dirty"]),
    }
    storage = storage_dtype or typed.extraction.storage_dtype
    views = None
    if typed.views is not None:
        views = _view_arrays(typed.views, per_split_views, key_hash=key_hash(key), settings_hash=key["settings_hash"])
    write_embeddings(out_path, out, key, storage_dtype=storage, hdf5_locking=hdf5_locking, attrs=attrs, views=views)
    _log.info("wrote %s in %.1f s (model load %.1f s)", out_path, time.perf_counter() - t0, t_load)
    return key


def _embeds_reverse(settings: ExtractionSettings) -> bool:
    """Whether the extraction embeds the reverse strand too (rc average/concat, or a view with rc): two passes."""
    if settings.views is not None:
        return True in settings.views.reverse_complement
    return settings.extraction.rc != "none"


def _reraisable(err: BaseException) -> bool:
    """Whether `type(err)(message)` rebuilds the error (single-message constructors)."""
    try:
        type(err)("probe")
    except TypeError:
        return False
    return True
