"""A cost estimate before a run (`geneb plan`): per model of a config, the sequences and bases it will embed, the
forward FLOPs (`geneb.registry.flops`), hours on the named hardware, peak memory per batch, and the biggest jobs.

Task sizes, per task of the config, from the best source at hand (`TaskSize.source`): the prepared task's splits
(`resources/tasks/<task>/<hash>/{train,test}.parquet`, the newest folder whose card's caps are the config's: exact
rows and lengths), else the mirror's `meta.json` (`<task_source>/<task>/meta.json`: rows capped by the config's
`caps`, every row taken at the mean of the split's shortest and longest length). A task with neither is listed as
unsized and left out of the totals.

Hours: FLOPs / rate. The rate is configured (`device_tflops`: sustained TFLOP/s of the named hardware) or measured
(an earlier run's `cost.parquet`, `geneb.tables.cost`: per model, the analytic FLOPs of the tasks it embedded there
over its measured compute seconds, on one `hardware` only; a model not measured there takes the configured rate, or
none). `rate_basis` names which. Every sequence is embedded once per strand (2 with a reverse-complement pass).

Peak memory per batch (bytes): weights (params x dtype bytes) + activations of one batch of `batch_tokens` padded
tokens: every layer's hidden state is kept (GENEB pools from `output_hidden_states`), plus one layer's FFN
intermediate and attention scores (`n_ctx x d/64` heads per token, 64-wide heads assumed), each x dtype bytes:
`P b + b T ((n_layer + 1) d + d_ff + (d / 64) n_ctx)`. An upper-bound sketch for planning, not a measurement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from geneb.registry.flops import Architecture, architecture, forward_flops

#: bytes per value of a compute dtype
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "auto": 4}
_SPLITS = ("train", "test")


@dataclass(frozen=True)
class TaskSize:
    """One task's rows to embed: `lengths` int64 (n,) base counts of every row (train and test), or the split's
    mean length repeated; `source` says where they came from ("prepared <folder>", "meta.json (...)", "unsized")."""

    task: str
    lengths: np.ndarray
    source: str

    @property
    def sequences(self) -> int:
        return int(len(self.lengths))

    @property
    def bases(self) -> int:
        return int(self.lengths.sum())


def _caps(config: Mapping[str, Any], task: str) -> dict[str, Any]:
    caps = config.get("caps") or {}
    return {**(caps.get("default") or {}), **((caps.get("per_task") or {}).get(task) or {})}


def _cap_matches(card: Mapping[str, Any], split: str, want: int | None) -> bool:
    """Whether a prepared card's `split` was made under the cap `want` (None: uncapped): its recorded cap is
    `want`, or none was applied and `want` does not cut the split's rows."""
    recorded = ((card.get("caps") or {}).get(split) or {}).get("cap")
    if recorded is not None:
        return bool(recorded == want)
    return want is None or int(want) >= int(((card.get("splits") or {}).get(split) or {}).get("n") or 0)


def _prepared(folder: Path, task: str, caps: Mapping[str, Any]) -> TaskSize | None:
    """The newest prepared folder of `task` under `folder` whose card's caps are `caps`, None without one."""
    candidates = sorted((folder / task).glob("*/card.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for card_path in candidates:
        card = json.loads(card_path.read_text(encoding="utf-8"))
        if not all(_cap_matches(card, split, caps.get(f"max_{split}")) for split in _SPLITS):
            continue
        parts = [pd.read_parquet(card_path.parent / f"{s}.parquet", columns=["sequence"]) for s in _SPLITS]
        lengths = np.concatenate([p["sequence"].str.len().to_numpy(np.int64) for p in parts])
        return TaskSize(task, lengths, f"prepared {card_path.parent}")
    return None


def _from_meta(meta_path: Path, task: str, caps: Mapping[str, Any]) -> TaskSize | None:
    """Rows capped by `caps` at the mean of each split's shortest and longest length, from the mirror's meta.json."""
    if not meta_path.exists():
        return None
    splits = json.loads(meta_path.read_text(encoding="utf-8")).get("splits") or {}
    lengths = []
    for split in _SPLITS:
        info = splits.get(split) or {}
        n = int(info.get("n") or 0)
        cap = caps.get(f"max_{split}")
        n = min(n, int(cap)) if cap else n
        mean = round((int(info.get("min_len") or 0) + int(info.get("max_len") or 0)) / 2)
        lengths.append(np.full(n, mean, np.int64))
    return TaskSize(task, np.concatenate(lengths), "meta.json (rows capped, mean of min and max length)")


def task_size(config: Mapping[str, Any], task: str, *, workdir: str | Path = ".") -> TaskSize:
    """The rows `task` will embed under `config` (module docstring); an unsized TaskSize (no rows) when neither a
    prepared folder nor a meta.json is found."""
    caps = _caps(config, task)
    root = Path(workdir)
    found = _prepared(root / "resources" / "tasks", task, caps)
    if found is None and config.get("task_source"):
        found = _from_meta(root / str(config["task_source"]) / task / "meta.json", task, caps)
    return found or TaskSize(task, np.zeros(0, np.int64), "unsized")


def sequence_flops(arch: Architecture, lengths: np.ndarray) -> float:
    """Forward FLOPs of embedding rows of these base `lengths` (int (n,)), one pass each, FFT and scan terms
    included; rows of one length are counted once and multiplied."""
    values, counts = np.unique(np.asarray(lengths, np.int64), return_counts=True)
    return float(
        sum(
            forward_flops(arch, math.ceil(int(v) * arch.tokens_per_base)).total * int(c) for v, c in zip(values, counts)
        )
    )


def batch_memory_bytes(arch: Architecture, batch_tokens: int, dtype: str) -> float:
    """Peak memory of one batch of `batch_tokens` padded tokens (module docstring), bytes; the weights alone for a
    model without layers or width, 0 for a model without a network."""
    b = _DTYPE_BYTES.get(dtype, 4)
    weights = float(arch.params or 0) * b
    if arch.n_layer is None or arch.d_model is None:
        return weights
    d = arch.d_model
    n_ctx = min(arch.context_tokens or batch_tokens, batch_tokens)
    per_token = (arch.n_layer + 1) * d + (arch.d_ff or 4 * d) + (d / 64) * n_ctx
    return weights + b * batch_tokens * per_token


def _passes(settings: Mapping[str, Any]) -> int:
    ext = settings.get("extraction") or {}
    views = settings.get("views") or {}
    rc_views = True in (views.get("reverse_complement") or [])
    return 2 if rc_views or ext.get("rc", "none") != "none" else 1


def measured_rates(cost: pd.DataFrame, archs: Mapping[str, Architecture], sizes: Mapping[str, TaskSize],
                   hardware: str) -> dict[str, float]:  # fmt: skip
    """{model: FLOP/s} measured on `hardware` in an earlier run's cost table: the analytic FLOPs of the tasks the
    model embedded there (their sizes here) over its compute seconds. Models of other hardware, without network,
    or without a sized task are left out. Raises ValueError naming the hardware values when `hardware` has no row."""
    rows = cost[cost["hardware"] == hardware]
    if rows.empty:
        raise ValueError(f"cost table has no row on hardware {hardware!r}; it has {sorted(set(cost['hardware']))}")
    rates = {}
    for model, group in rows.groupby("model"):
        arch = archs.get(str(model))
        if arch is None or arch.kind == "none":
            continue
        tasks = [t for t in group["task"] if t in sizes and sizes[t].sequences]
        seconds = float(group[group["task"].isin(tasks)]["seconds_compute"].sum())
        passes = group[group["task"].isin(tasks)]["forward_passes"].fillna(1).astype(int)
        flops = sum(sequence_flops(arch, sizes[t].lengths) * p for t, p in zip(tasks, passes))
        if tasks and seconds > 0:
            rates[str(model)] = flops / seconds
    return rates


def estimate(
    config: Mapping[str, Any],
    registry: Any,
    settings: Mapping[str, Mapping[str, Any]],
    *,
    device_tflops: float | None = None,
    measured: pd.DataFrame | None = None,
    hardware: str | None = None,
    workdir: str | Path = ".",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per model, per job) estimates of a run of `config`. registry: the run's `Registry`; settings: {model:
    resolved extraction settings} (`geneb.registry.load.extraction_settings`); device_tflops: the configured rate;
    measured + hardware: an earlier cost table and the hardware whose rates to take (module docstring).

    Per job (model, task): sequences, bases, passes, flops, seconds, rate_basis. Per model: the jobs summed, plus
    flops_per_kb, peak_memory_bytes (one batch), batch_tokens, dtype, rate_flops, rate_basis and hours.
    Raises ValueError when neither a rate nor a measured table is given, and for a model not in `settings`."""
    if device_tflops is None and measured is None:
        raise ValueError("no device rate: give device_tflops (sustained TFLOP/s) or an earlier run's cost.parquet")
    if device_tflops is not None and device_tflops <= 0:
        raise ValueError(f"device_tflops {device_tflops}: must be > 0")
    models = list(config["models"])
    missing = [m for m in models if m not in settings]
    if missing:
        raise ValueError(f"no extraction settings for model(s) {missing}")
    sizes = {t: task_size(config, t, workdir=workdir) for t in config["tasks"]}
    archs = {m: architecture(registry.models[m]) for m in models}
    rates = measured_rates(measured, archs, sizes, str(hardware)) if measured is not None else {}
    budget = config.get("execution", {}).get("batch_tokens")
    jobs, per_model = [], []
    for model in models:
        arch = archs[model]
        passes = _passes(settings[model])
        dtype = str((settings[model].get("extraction") or {}).get("dtype") or "float32")
        rate, basis = _rate(model, arch, rates, device_tflops, hardware)
        for task, size in sizes.items():
            flops = sequence_flops(arch, size.lengths) * passes
            jobs.append({
                "model": model, "task": task, "sequences": size.sequences, "bases": size.bases, "passes": passes,
                "flops": flops, "seconds": flops / rate if rate else float("nan"), "size_source": size.source,
            })  # fmt: skip
        batch_tokens = int(budget) if isinstance(budget, int) else _device_budget(arch, config)
        per_model.append({
            "model": model, "kind": arch.kind, "params": arch.params, "dtype": dtype, "batch_tokens": batch_tokens,
            "peak_memory_bytes": batch_memory_bytes(arch, batch_tokens, dtype), "rate_flops": rate,
            "rate_basis": basis, "flops_per_kb": forward_flops(arch, round(1000 * arch.tokens_per_base)).total,
        })  # fmt: skip
    job_table = pd.DataFrame(jobs)
    sums = job_table.groupby("model", sort=False)[["sequences", "bases", "flops", "seconds"]].sum(min_count=1)
    table = pd.DataFrame(per_model).merge(sums.reset_index(), on="model")
    table["hours"] = table["seconds"] / 3600
    return table, job_table


def _device_budget(arch: Architecture, config: Mapping[str, Any]) -> int:
    """The padded tokens per batch of the `by_device` plan (`geneb.extract.batch_plan.DEVICE_BUDGETS`)."""
    from geneb.extract.batch_plan import _CPU_LARGE_BUDGET, _CPU_LARGE_PARAMS, DEVICE_BUDGETS

    device = str(config.get("execution", {}).get("device", "cpu"))
    device = "cuda" if device.startswith("cuda") else "cpu"
    if device == "cpu" and (arch.params or 0) >= _CPU_LARGE_PARAMS:
        return _CPU_LARGE_BUDGET
    return DEVICE_BUDGETS[device]


def _rate(model: str, arch: Architecture, rates: Mapping[str, float], device_tflops: float | None,
          hardware: str | None) -> tuple[float | None, str]:  # fmt: skip
    """(FLOP/s, basis) of one model: measured on `hardware`, else configured, else none."""
    if arch.kind == "none":
        return None, "no network (k-mer counts, shortcut features): no FLOPs"
    if model in rates:
        return rates[model], f"measured on {hardware}"
    if device_tflops is not None:
        return device_tflops * 1e12, f"configured {device_tflops:g} TFLOP/s"
    return None, f"not measured on {hardware}, no configured rate"


def biggest_jobs(jobs: pd.DataFrame, n: int = 5) -> pd.DataFrame:
    """The `n` jobs with the most FLOPs (ties by bases), largest first."""
    return jobs.sort_values(["flops", "bases"], ascending=False, kind="stable").head(n)


def model_settings(config: Mapping[str, Any], registry: Any, models: Sequence[str]) -> dict[str, dict[str, Any]]:
    """{model: {"extraction": its resolved options, "views": the config's views}} of `models`: the registry's
    extraction options (`geneb.registry.load.resolved_extraction`; a model need not be runnable here, so a cluster
    config plans on a laptop), dtype auto read as bfloat16 on CUDA and float32 elsewhere
    (`geneb.registry.load.AUTO_DTYPE`). Raises RegistryError for a model not in the registry."""
    from geneb.registry.load import AUTO_DTYPE, resolved_extraction
    from geneb.registry.registry import model_spec

    device = "cuda" if str((config.get("execution") or {}).get("device", "cpu")).startswith("cuda") else "cpu"
    out = {}
    for model in models:
        extraction = resolved_extraction(model_spec(registry, model))
        if extraction.get("dtype") == "auto":
            extraction["dtype"] = AUTO_DTYPE[device]
        views = dict(config.get("views") or {})
        rc = views.get("reverse_complement")
        views["reverse_complement"] = rc if isinstance(rc, list) else [bool(rc)] if rc is not None else []
        out[model] = {"extraction": extraction, "views": views}
    return out
