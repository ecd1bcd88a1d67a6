"""Benchmark: GENEB's extractor against the loops a user would otherwise run, and its speed at realistic sizes.

Run from the repository root: `python bench/extraction.py [--device cpu|cuda] [--quick] [--no-write]`. It prints
its tables, writes bench/results/extraction.json (extraction_cuda.json with --device cuda) and replaces the
Extraction sections of docs/performance.md (`## Extraction` and `## Extraction at realistic sizes` on CPU,
`## Extraction on GPU` with --device cuda; every other section is left alone).

1. Three methods on the real Mistral-DNA-v1-1M checkpoint (../shared/models) and three real mixed-length tasks,
   side by side in one process, with the same chunks (GENEB's chunking at the model's 256-token maximum, so
   long rows are handled alike) and the same masked mean:

   * reference: the official GENEB reference script's loop (`extract_embeddings(sequences, batch_size=8)` of
     darlednik/GENEB embedding_pipeline): batches of 8 rows in file order, each padded to its longest row,
     torch.no_grad;
   * pad-to-maximum: file order, every chunk padded to the model maximum, fixed batches of `--batch-size`;
   * GENEB: `TokenModelEncoder.embed` (length-sorted chunks, each batch padded to its own longest, inference
     mode, results put back in input order; on CUDA batches sized to `--batch-tokens`).

   Equality: max |GENEB - reference| over all rows and dimensions (goal <= 1e-5 in float32).

2. Realistic sizes: random-init models built from the real configs of paper models (NT-v2 50M, HyenaDNA
   small-32k; `extraction_lib`), plus the real Mistral-DNA, over a sweep of batch sizes and token budgets;
   throughput (rows/s, real tokens/s) and model-FLOPs utilisation: useful FLOPs (extraction_lib: 2 x
   per-token parameters per real token plus self-attention) per second over the matrix-multiply rate measured
   in the same run (torch.matmul of two 2048 x 2048 float32 matrices on CPU, 8192 x 8192 in the model's
   compute dtype on CUDA). On CPU the seconds are process CPU seconds at `--threads` threads (a shared machine
   stretches wall time, not the work done); on CUDA they are wall seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from extraction_lib import (  # bench/, the script's folder, is on sys.path
    HYENA_SMALL_32K,
    NT_V2_50M,
    attention_flops,
    best_time,
    build_random_hyena,
    matmul_rate,
    padmax_embed,
    per_token_params,
    random_nt_v2_settings,
    reference_embed,
    reference_model,
    useful_flops,
)

ROOT = Path(__file__).resolve().parents[1]
TASKS = (
    "pgb_lncrna_manihot_esculenta",
    "prelnc_ath_lncrna_vs_mrna__resplit",
    "gb_human_ensembl_regulatory__toy_resplit",
)
SWEEP_TASK = "gb_human_ensembl_regulatory__toy_resplit"
GOAL_REFERENCE = 3.0
GOAL_MFU = 0.5
GOAL_DIFF = 1e-5
#: the default plan (execution.batch_tokens: by_device) against the best plan of the sweep, per model
GOAL_DEFAULT_VS_BEST = 0.75


def task_rows(shared: Path, task: str, n: int) -> tuple[list[str], pd.Series]:
    """The first n training rows of a task as model input, and their lengths in nt."""
    from geneb.tasks.validation import model_input

    df = pd.read_csv(shared / "data" / "tasks" / task / "train.csv.gz").iloc[:n]
    return [model_input(s) for s in df["sequence"]], df["sequence"].str.len()


def padded_tokens(lengths: list[int], batches: list[list[int]], width: int | None = None) -> int:
    """Tokens a batch plan feeds the model: each batch's rows x its width (its longest, or `width`)."""
    return sum(len(b) * (width or max(lengths[i] for i in b)) for b in batches)


def with_budget(enc: Any, budget: int, fn: Callable[[], Any]) -> Any:
    """fn() with the encoder's batches sized to `budget` padded tokens (the plan `batch_tokens: auto` chose)."""
    saved = enc.batch_tokens
    enc.batch_tokens = budget
    try:
        return fn()
    finally:
        enc.batch_tokens = saved


def time_methods(
    enc: Any, lm: torch.nn.Module, seqs: list[str], args: argparse.Namespace
) -> tuple[dict[str, tuple[float, float]], dict[str, np.ndarray]]:
    """Best (wall s, CPU s) and the embeddings (n, d) of each method, tokenization included; the methods run
    interleaved, repeat by repeat, so a neighbour's burst of load hits all of them alike."""
    methods = {
        "reference": lambda: reference_embed(enc, lm, seqs, args.reference_batch),
        "padmax": lambda: padmax_embed(enc, seqs, args.batch_size),
        "geneb": lambda: enc.embed(seqs).embeddings,
        "geneb_auto": lambda: with_budget(enc, args.auto_budget, lambda: enc.embed(seqs).embeddings),
    }
    timed = {name: (float("inf"), float("inf")) for name in methods}
    out: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        for name, fn in methods.items():
            wall, cpu, out[name] = best_time(fn, 1, enc.device)
            timed[name] = (min(timed[name][0], wall), min(timed[name][1], cpu))
    return timed, out


def compare_methods(enc: Any, args: argparse.Namespace, peak: float) -> pd.DataFrame:
    """Reference loop, pad-to-maximum and GENEB on each task of TASKS (see the module docstring)."""
    from geneb.encoders.engine.batching import plan_chunks
    from geneb.extract.batch_plan import probe_budget

    lm = reference_model(enc)
    totals = {"useful_flops": 0.0, "attention_flops": 0.0}
    args.auto_budget, _ = probe_budget(enc)  # the plan `batch_tokens: auto` records at this model's first load

    rows = []
    for task in TASKS:
        seqs, nt = task_rows(Path(args.shared), task, args.rows)
        chunks, *_ = enc.make_chunks(seqs, list(range(len(seqs))))
        lengths = [len(c.ids) for c in chunks]
        in_file_order = list(range(len(chunks)))
        row_batches = [c.seq_index // args.reference_batch for c in chunks]  # batches of rows, in file order
        ref_plan = [[j for j in in_file_order if row_batches[j] == b] for b in sorted(set(row_batches))]
        max_plan = [in_file_order[s : s + args.batch_size] for s in range(0, len(chunks), args.batch_size)]
        geneb_plan = plan_chunks(lengths, batch_size=args.batch_size, batch_tokens=args.batch_tokens)
        timed, out = time_methods(enc, lm, seqs, args)
        cost = 1 if args.device == "cpu" else 0  # CPU: compare CPU seconds; CUDA: wall seconds
        secs = {k: v[cost] for k, v in timed.items()}
        flops = useful_flops(enc.model, lengths)
        totals["useful_flops"] += flops
        totals["attention_flops"] += attention_flops(enc.model, lengths)
        rows.append(
            {
                "task": task,
                "rows": len(seqs),
                "nt_min_median_max": f"{nt.min()}/{int(nt.median())}/{nt.max()}",
                "chunks": len(chunks),
                "real_tokens": sum(lengths),
                "padded_tokens_reference": padded_tokens(lengths, ref_plan),
                "padded_tokens_padmax": padded_tokens(lengths, max_plan, enc.max_tokens),
                "padded_tokens_geneb": padded_tokens(lengths, geneb_plan),
                "padded_tokens_auto": padded_tokens(
                    lengths, plan_chunks(lengths, batch_size=1, batch_tokens=args.auto_budget)
                ),
                "reference_s": round(timed["reference"][0], 2),
                "padmax_s": round(timed["padmax"][0], 2),
                "geneb_s": round(timed["geneb"][0], 2),
                "reference_cpu_s": round(timed["reference"][1], 2),
                "padmax_cpu_s": round(timed["padmax"][1], 2),
                "geneb_cpu_s": round(timed["geneb"][1], 2),
                "geneb_auto_cpu_s": round(timed["geneb_auto"][1], 2),
                "geneb_rows_per_s": round(len(seqs) / secs["geneb"], 1),
                "speedup_vs_reference": round(secs["reference"] / secs["geneb"], 2),
                "speedup_vs_padmax": round(secs["padmax"] / secs["geneb"], 2),
                "auto_speedup_vs_reference": round(secs["reference"] / secs["geneb_auto"], 2),
                "wall_speedup_vs_reference": round(timed["reference"][0] / timed["geneb"][0], 2),
                "max_abs_diff": float(
                    max(np.abs(out[m] - out["reference"]).max() for m in ("geneb", "geneb_auto", "padmax"))
                ),
                "MFU_reference": round(flops / secs["reference"] / peak, 4),
                "MFU_geneb": round(flops / secs["geneb"] / peak, 4),
            }
        )
    table = pd.DataFrame(rows)
    table.attrs.update(totals, head_weights=int(lm.get_output_embeddings().weight.numel()))
    return table


def sweep_model(name: str, enc: Any, seqs: list[str], plans: list[tuple[str, int]], args, peak: float) -> list[dict]:
    """Throughput and MFU of one encoder on `seqs` for each (kind, value) batch plan (batch_size or batch_tokens),
    for the budget `batch_tokens: auto` chooses (geneb.extract.batch_plan.probe_budget, timed) and for the default,
    `batch_tokens: by_device` (the fixed DEVICE_BUDGETS entry of the device class; plan label "default")."""
    from geneb.extract.batch_plan import n_parameters, probe_budget, table_budget

    chunks, *_ = enc.make_chunks(seqs, list(range(len(seqs))))
    lengths = [len(c.ids) for c in chunks]
    flops = useful_flops(enc.model, lengths)
    enc.embed(seqs[:4])  # warm-up: first-call allocations and lazy initialisation
    t0 = time.process_time()
    budget, _ = probe_budget(enc)  # what `batch_tokens: auto` chooses at the model's first load on this CPU
    probe_s = time.process_time() - t0
    out = []
    default = table_budget(enc.device, n_parameters(enc))  # what `by_device` gives this model
    for kind, value in [*plans, ("auto", budget), ("default", default)]:
        enc.batch_size, enc.batch_tokens = (value, None) if kind == "batch_size" else (args.batch_size, value)
        label = {
            "auto": f"auto (batch_tokens={value}; probe {probe_s:.1f} s)",
            "default": f"default (by_device: batch_tokens={value})",
        }.get(kind, f"{kind}={value}")
        wall, cpu, _ = best_time(lambda: enc.embed(seqs), args.sweep_repeats, enc.device)
        secs = cpu if args.device == "cpu" else wall
        out.append(
            {
                "model": name,
                "per_token_params": per_token_params(enc.model),
                "compute_dtype": enc.compute_dtype,
                "plan": label,
                "rows": len(seqs),
                "real_tokens": sum(lengths),
                "seconds": round(secs, 2),
                "wall_s": round(wall, 2),
                "rows_per_s": round(len(seqs) / secs, 1),
                "tokens_per_s": round(sum(lengths) / secs),
                "GFLOP_per_s": round(flops / secs / 1e9, 1),
                "MFU": round(flops / secs / peak, 4),
            }
        )
        print(out[-1], file=sys.stderr)
    return out


def realistic(args: argparse.Namespace, mistral: Any, peaks: dict[str, float]) -> pd.DataFrame:
    """The sweep of `sweep_model` for the real Mistral-DNA and the random-init NT-v2-50M and HyenaDNA-small."""
    from geneb.extract.step import build_encoder
    from geneb.registry.load import load_registry

    registry = load_registry(ROOT / "config" / "models.yaml")
    seqs, _ = task_rows(Path(args.shared), SWEEP_TASK, args.sweep_rows)
    plans = [("batch_size", b) for b in args.sweep] + [("batch_tokens", t) for t in args.sweep_tokens]
    execution = {"device": args.device, "batch_size": args.batch_size, "progress": False}
    results, failed = [], {}
    for name in args.models:
        if name not in ("mistral-dna-1m", "nt-v2-50m", "hyenadna-small-32k"):
            raise ValueError(f"unknown model {name!r}")
        try:
            if name == "mistral-dna-1m":
                enc = mistral
            elif name == "nt-v2-50m":
                enc = build_encoder(random_nt_v2_settings(registry), **execution)
            else:
                with tempfile.TemporaryDirectory(prefix="geneb-bench-") as tmp:  # the weights stay in memory
                    enc = build_random_hyena(
                        registry, Path(args.shared), Path(tmp) / f"hyena-{os.getpid()}", **execution
                    )
            results += sweep_model(name, enc, seqs, plans, args, peaks[enc.compute_dtype])
        except Exception as err:  # noqa: BLE001 - on a GPU, a model that cannot run there is reported, not fatal
            if args.device == "cpu":
                raise
            failed[name] = f"{type(err).__name__}: {err}"
            print(f"{name}: failed: {failed[name]}", file=sys.stderr)
    table = pd.DataFrame(results)
    table.attrs["failed"] = failed
    return table


def markdown(table: pd.DataFrame) -> str:
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.itertuples(index=False):
        cells = [f"{v:.1e}" if isinstance(v, float) and 0 < abs(v) < 1e-3 else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine(args: argparse.Namespace) -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    where = (
        f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"
        if args.device == "cuda"
        else f"{platform.machine()}, {torch.get_num_threads()} torch thread(s) of {os.cpu_count()} cores, shared "
        f"with other jobs (load average at the end {load}); torch {torch.__version__}"
    )
    return f"Machine: {where}; Python {platform.python_version()}."


def command(args: argparse.Namespace) -> str:
    """The command line that produced these figures (the options given, as given)."""
    return " ".join(["python bench/extraction.py", *getattr(args, "argv", [])])


def best_per_model(sweep: pd.DataFrame) -> pd.DataFrame:
    return sweep.loc[sweep.groupby("model", sort=False)["MFU"].idxmax()]


def default_vs_best(sweep: pd.DataFrame) -> dict[str, float]:
    """{model: the default plan's rate (`batch_tokens: by_device`) over the best plan's of the sweep}: the ratio of
    their MFU (the same sample and FLOPs, so also of their CPU seconds' inverses)."""
    best = sweep.groupby("model", sort=False)["MFU"].max()
    default = sweep[sweep["plan"].str.startswith("default")].set_index("model")["MFU"]
    return {m: round(float(default[m] / best[m]), 3) for m in best.index if m in default.index}


def cpu_sections(cmp: pd.DataFrame, sweep: pd.DataFrame, peak: float, args: argparse.Namespace) -> dict[str, str]:
    """The two CPU sections of docs/performance.md, by heading."""
    mistral = sweep[sweep["model"] == "mistral-dna-1m"].set_index("plan")["MFU"]
    mistral_gain = (
        mistral.max() / mistral.get(f"batch_size={args.batch_size}", mistral.max()) - 1 if len(mistral) else 0.0
    )
    real = cmp["real_tokens"].sum()
    ref_pad, max_pad = cmp["padded_tokens_reference"].sum() / real, cmp["padded_tokens_padmax"].sum() / real
    geneb_pad = cmp["padded_tokens_geneb"].sum() / real
    attn_share = cmp.attrs["attention_flops"] / cmp.attrs["useful_flops"]
    ref = cmp["speedup_vs_reference"]
    below = [f"{t} ({r:.1f}x)" for t, r in zip(cmp["task"], ref) if r < GOAL_REFERENCE]
    worst = float(cmp["max_abs_diff"].max())
    shown = cmp.drop(columns=["reference_s", "padmax_s", "MFU_reference"]).copy()
    auto_ref = cmp["auto_speedup_vs_reference"]
    auto_change = cmp["geneb_auto_cpu_s"].sum() / cmp["geneb_cpu_s"].sum() - 1
    for col in ("speedup_vs_reference", "speedup_vs_padmax", "wall_speedup_vs_reference", "auto_speedup_vs_reference"):
        shown[col] = shown[col].map(lambda v: f"{v:.1f}x")
    for col in ("MFU_geneb",):
        shown[col] = shown[col].map(lambda v: f"{100 * v:.1f}%")
    best = best_per_model(sweep)
    sweep_shown = sweep.drop(columns=["compute_dtype", "rows", "real_tokens"]).copy()
    sweep_shown["MFU"] = sweep_shown["MFU"].map(lambda v: f"{100 * v:.1f}%")
    nt = best[best["model"] == "nt-v2-50m"]
    nt_mfu = float(nt["MFU"].iloc[0]) if len(nt) else float("nan")
    per_model = "; ".join(f"{r.model} {100 * r.MFU:.1f}% at {r.plan}" for r in best.itertuples())
    default_plan = f"batch_size={args.batch_size}"
    token_rows = sweep[sweep["plan"].str.startswith("batch_tokens")]
    default_rows = sweep[sweep["plan"] == default_plan].set_index("model")["MFU"]
    token_best = token_rows.groupby("model")["MFU"].max()
    size_best = sweep[sweep["plan"].str.startswith("batch_size")].groupby("model")["MFU"].max()
    better = [m for m in token_best.index if m in size_best and token_best[m] > 1.1 * size_best[m]]
    ratios = default_vs_best(sweep)
    short = [m for m, r in ratios.items() if r < GOAL_DEFAULT_VS_BEST]
    default_label = sweep[sweep["plan"].str.startswith("default")]["plan"].iloc[0] if ratios else "default"
    budget_verdict = (
        "Against the best batch size instead, a budget is more than 10% better for "
        + (", ".join(better) if better else "no model")
        + f". On whole tasks batches of {args.batch_size} are padded by only {100 * (geneb_pad - 1):.0f}% (previous section): "
        "what a budget buys on a CPU is the batch's size more than its padding."
    )
    autos = sweep[sweep["plan"].str.startswith("auto")].set_index("model")
    auto_vs = "; ".join(
        f"{m} {100 * r.MFU:.1f}% at {r.plan} vs {100 * default_rows[m]:.1f}% at {default_plan} and "
        f"{100 * size_best[m]:.1f}% at the best batch size"
        for m, r in autos.iterrows()
        if m in default_rows and m in size_best
    )
    defaults = sweep[sweep["plan"].str.startswith("default")].set_index("model")
    default_vs = "; ".join(
        f"{m} {100 * defaults.loc[m, 'MFU']:.1f}% vs {100 * best.set_index('model').loc[m, 'MFU']:.1f}% at "
        f"{best.set_index('model').loc[m, 'plan']} ({100 * r:.0f}% of the best rate; {100 * default_rows[m]:.1f}% at "
        f"{default_plan})"
        for m, r in ratios.items()
        if m in default_rows
    )
    token_vs_default = "; ".join(
        f"{m} {100 * token_best[m]:.1f}% vs {100 * default_rows[m]:.1f}%" for m in token_best.index if m in default_rows
    )
    first = f"""## Extraction

Command: `{command(args)}` (bench/extraction.py; its figures also in bench/results/extraction.json).
Three ways to embed the first {args.rows} training rows of three real mixed-length tasks with the real
Mistral-DNA-v1-1M checkpoint (`mistral-dna-1m-ft-prom`: Mixtral, hidden 64, 4 layers, 8 experts with 1 routed
per token, {cmp.attrs["per_token_params"]:,} per-token parameters), side by side in one process, runs interleaved, best of
{args.repeats}: the **reference** loop of the official GENEB script (darlednik/GENEB
`extract_embeddings(sequences, batch_size=8)`: batches of {args.reference_batch} rows in file order, each padded to its
longest row, `torch.no_grad`), the **pad-to-maximum** loop (file order, every chunk padded to the model maximum of
{cmp.attrs["max_tokens"]} tokens, batches of {args.batch_size}), and **GENEB** (`TokenModelEncoder.embed`: length-sorted
chunks, batches of {args.batch_size} padded to their own longest, inference mode, rows put back in input order). All
three embed the same chunks (rows longer than the model maximum are cut into chunks and their means pooled, so
the vectors agree; the reference script itself would truncate them) with the same masked mean. Speed-ups are
ratios of CPU seconds (one torch thread); `wall_speedup_vs_reference` is the ratio of wall seconds, which
neighbours on the shared machine stretch for every method alike. MFU = useful FLOPs (real tokens only) per
CPU-second over the float32 matmul rate measured in the same run ({peak / 1e9:.1f} GFLOP per CPU-second, 2048 x 2048
products, {args.threads} thread). {machine(args)}

{markdown(shown)}

Speed-up over the reference loop {ref.min():.1f}x to {ref.max():.1f}x (goal >= {GOAL_REFERENCE:.0f}x: {"met on every task" if not below else "below it on " + ", ".join(below)});
over pad-to-maximum {cmp["speedup_vs_padmax"].min():.1f}x to {cmp["speedup_vs_padmax"].max():.1f}x; largest |embedding difference| {worst:.1e}
(goal <= {GOAL_DIFF:.0e}: {"met" if worst <= GOAL_DIFF else "NOT met"}; GENEB's columns are batches of {args.batch_size}, `geneb_auto_cpu_s` /
`auto_speedup_vs_reference` the budget `batch_tokens: auto` measured for this model on this CPU,
{cmp.attrs["auto_budget"]} padded tokens: {auto_ref.min():.1f}x to {auto_ref.max():.1f}x over the reference loop, {100 * auto_change:+.0f}% CPU time against
batches of {args.batch_size} over the three tasks). Where the time goes:
the reference loop feeds the model {ref_pad:.2f}x the real tokens (rows in file order have mixed lengths, and each
batch of {args.reference_batch} is padded to its longest) and runs the LM head of `AutoModelForCausalLM` on every position
({cmp.attrs["head_weights"]:,} weights, {cmp.attrs["head_weights"] / cmp.attrs["per_token_params"]:.1f}x the body's per-token weights) although only the hidden states are
used; pad-to-maximum feeds it {max_pad:.2f}x; GENEB {geneb_pad:.2f}x, and no head. What GENEB spends is the model's
own arithmetic, at a low rate (MFU_geneb): self-attention is {attn_share:.0%} of the useful FLOPs here, {cmp.attrs["heads"]} heads of width
{cmp.attrs["head_dim"]} that run far below the matmul rate, and the rest are products with an inner dimension of 64. The best plan of
the sweep below is {mistral_gain:.0%} faster than batches of {args.batch_size} on its short sample, where batches of
{args.batch_size} pad more than on whole tasks. GENEB passes no attention mask to this causal model padded on the
right (no real position sees a pad; identical vectors), so attention takes its causal path (1.6 % to 6.7 % less
CPU on two of these tasks when it was added); a cProfile of GENEB's loop puts half its time in the model's own
scaled-dot-product attention at head width 8, which the reference loop spends too. So the ratio over the
reference loop is bounded by the reference's padding and its head, and the goal is {"met" if not below else "not reached for this model on this CPU"};
at realistic widths the model's products run near the matmul rate (next section). Figures are from one run on
a shared 2-core machine: ratios of CPU seconds are steadier than wall seconds, but neighbours sharing caches and
memory bandwidth still move them by several percent between runs.
"""
    second = f"""## Extraction at realistic sizes

Same command. Random-init models built from the real configs of paper models (no trained weights are needed to
measure speed): **nt-v2-50m**, NT-v2 50M's encoder (hidden {NT_V2_50M["hidden_size"]}, {NT_V2_50M["num_hidden_layers"]} layers, {NT_V2_50M["num_attention_heads"]} heads, rotary positions; its SwiGLU
feed-forward of width 2048 as a GELU one of width {NT_V2_50M["intermediate_size"]}, the same weights and FLOPs) through the
`random-init` family (6-mer tokens); **hyenadna-small-32k**, HyenaDNA small-32k's dims (d_model {HYENA_SMALL_32K["d_model"]}, {HYENA_SMALL_32K["n_layer"]} layers,
MLP {HYENA_SMALL_32K["d_inner"]}) with the real HyenaDNA remote code (single-nucleotide tokens, FFT long convolutions); and the real
**mistral-dna-1m** for comparison. Each embeds the first {args.sweep_rows} training rows of {SWEEP_TASK} (113 to 801 nt)
through GENEB's engine, for each batch plan (`batch_size=B` chunks, or `batch_tokens=N` padded tokens per
batch), best of {args.sweep_repeats}. `seconds` are CPU seconds at {args.threads} thread (wall seconds beside them), `tokens_per_s` counts
real tokens, `GFLOP_per_s` useful FLOPs (2 x per-token parameters per real token, plus 4 x layers x T^2 x d of
self-attention per chunk; the PaLM paper's accounting; HyenaDNA's FFT convolutions and implicit filters are not
counted, so its MFU is a lower bound), MFU = that over the measured float32 matmul rate ({peak / 1e9:.1f} GFLOP per
CPU-second at {args.threads} thread, torch.matmul of 2048 x 2048 matrices, this run).

{markdown(sweep_shown)}

MFU at the best plan of each model: {per_model}. Goal for the transformer: >= {100 * GOAL_MFU:.0f}% of the measured
matmul rate at its best batch plan ({"met" if nt_mfu >= GOAL_MFU else "NOT met"}: {100 * nt_mfu:.1f}%). At hidden 512 the dense products are large
enough (rows x 512 x {NT_V2_50M["intermediate_size"]}) to run near the matmul rate; what is left goes to attention over short chunks,
layer norms, GELU and the softmax, which are mostly memory-bound. Larger batches pad more in a {args.sweep_rows}-row
sample (fewer, wider length buckets), so the best batch size need not be the largest. Token budgets against
`{default_plan}` (the default before `by_device`; MFU of the best budget vs it): {token_vs_default or "not measured"}. {budget_verdict}
**The default plan** (`execution.batch_tokens: by_device`, rows `{default_label}`: a fixed budget per device
class from a table, `geneb.extract.batch_plan.DEVICE_BUDGETS`, never a timing, so every CPU batches a task the same
way): {default_vs or "not measured"}. Goal: the default at >= {100 * GOAL_DEFAULT_VS_BEST:.0f}% of the best plan's rate for every
model ({"met" if ratios and not short else "NOT met for " + ", ".join(short) if short else "not measured"}). **The measured plan** (`batch_tokens: auto`, opt-in; a plan chosen by timing
differs between machines and so do the vectors' last bits, within the batch-invariance tolerance; the `auto` rows,
with the probe's own CPU seconds, paid once per model and CPU): {auto_vs or "not measured"}.
The real Mistral-DNA stays far below the rate with any plan: its products are too narrow (inner dimension 64,
attention heads of width {cmp.attrs["head_dim"]}) to run near it. Caduceus is not measured: it needs the mamba-ssm CUDA kernels.
"""
    return {"## Extraction": first, "## Extraction at realistic sizes": second}


def gpu_section(cmp: pd.DataFrame, sweep: pd.DataFrame, peaks: dict[str, float], args) -> str:
    """The `## Extraction on GPU` section, from a --device cuda run."""
    best = best_per_model(sweep)
    rates = ", ".join(f"{dtype} {rate / 1e12:.1f} TFLOP/s" for dtype, rate in peaks.items())
    sweep_shown = sweep.drop(columns=["rows", "real_tokens", "wall_s"]).copy()
    sweep_shown["MFU"] = sweep_shown["MFU"].map(lambda v: f"{100 * v:.1f}%")
    shown = cmp.drop(columns=["reference_cpu_s", "padmax_cpu_s", "geneb_cpu_s", "wall_speedup_vs_reference"]).copy()
    for col in ("MFU_reference", "MFU_geneb"):
        shown[col] = shown[col].map(lambda v: f"{100 * v:.1f}%")
    return f"""## Extraction on GPU

Command: `{command(args)}` (bench/results/extraction_cuda.json). The same comparison and sweep as above, on CUDA, in
each model's compute dtype (the registry's `dtype`; `auto` is bfloat16 on CUDA); GENEB's batches sized to
`batch_tokens={args.batch_tokens}` padded tokens; host-to-device copies from pinned memory. Seconds are wall seconds
between CUDA synchronisations; MFU is over the matmul rate measured in the same run (torch.matmul of 8192 x 8192
matrices: {rates}). {machine(args)}

{markdown(shown)}

{markdown(sweep_shown)}

Models that could not run: {", ".join(f"{m} ({e})" for m, e in sweep.attrs.get("failed", {}).items()) or "none"}.
Best plan per model: {"; ".join(f"{r.model} {r.rows_per_s} rows/s, MFU {100 * r.MFU:.1f}% at {r.plan}" for r in best.itertuples())}.
"""


GPU_PENDING = """## Extraction on GPU

Not measured yet: no GPU was at hand when this file was last written. `python bench/extraction.py --device cuda`
(on a machine with CUDA; it stops with an error naming the problem otherwise) runs the same comparison and sweep
on the GPU in each model's compute dtype, with batches sized to a token budget (`--batch-tokens`, default 65536)
and pinned-memory copies, and writes this section and bench/results/extraction_cuda.json.
"""


def write_sections(sections: dict[str, str], path: Path) -> None:
    """Replace each `heading` section of `path` (up to the next `## ` heading) with its text, or append it."""
    doc = path.read_text() if path.exists() else "# GENEB performance\n\nMeasured costs of the pipeline stages.\n"
    doc = doc.rstrip("\n") + "\n\n"
    end = None  # where the previous section of `sections` ends: a missing section goes right after it
    for heading, text in sections.items():
        text = text.rstrip("\n") + "\n\n"
        found = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M).search(doc)
        start, stop = (found.start(), found.end()) if found else ((end, end) if end is not None else (len(doc),) * 2)
        doc = doc[:start] + text + doc[stop:]
        end = start + len(text)
    path.write_text(doc.rstrip("\n") + "\n")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("GENEB_SHARED", str(ROOT.parent / "shared")))
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--rows", type=int, default=1200, help="rows per task in the method comparison")
    ap.add_argument("--batch-size", type=int, default=64, help="GENEB's and pad-to-maximum's batch size")
    ap.add_argument("--reference-batch", type=int, default=8, help="the reference script's batch size")
    ap.add_argument("--batch-tokens", type=int, default=None, help="GENEB's token budget (CUDA default 65536)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--sweep-rows", type=int, default=128, help="rows of the realistic-size sweep")
    ap.add_argument("--sweep", type=int, nargs="+", default=[8, 16, 32, 64], help="batch sizes of the sweep")
    ap.add_argument("--sweep-tokens", type=int, nargs="+", default=[2048, 8192], help="token budgets of the sweep")
    ap.add_argument("--sweep-repeats", type=int, default=2)
    ap.add_argument("--models", nargs="+", default=["nt-v2-50m", "hyenadna-small-32k", "mistral-dna-1m"])
    ap.add_argument("--quick", action="store_true", help="small sizes for development; implies --no-write")
    ap.add_argument("--no-write", action="store_true", help="print only; leave the doc and the JSON alone")
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.device == "cuda":
        args.batch_tokens = args.batch_tokens or 65536
        if "--sweep-tokens" not in (argv or sys.argv):
            args.sweep_tokens = [16384, 65536, 262144]
        if "--sweep" not in (argv or sys.argv):
            args.sweep = [64, 256]
        if "--sweep-rows" not in (argv or sys.argv):
            args.sweep_rows = 2000
    if args.quick:
        args.rows, args.repeats, args.sweep_rows, args.sweep_repeats = 200, 1, 32, 1
        args.sweep, args.sweep_tokens, args.no_write = [16, 64], [4096], True
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(
            f"bench/extraction.py --device cuda: CUDA is not available here (torch {torch.__version__}, "
            f"CUDA build {torch.version.cuda or 'none'}); run it on a machine with a GPU, or use --device cpu"
        )
    logging.getLogger("transformers").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    from geneb.extract.step import build_encoder
    from geneb.registry.load import extraction_settings, load_registry

    settings = extraction_settings(load_registry(ROOT / "config" / "models.yaml"), "mistral-dna-1m-ft-prom", {})
    mistral = build_encoder(
        settings, device=args.device, batch_size=args.batch_size, batch_tokens=args.batch_tokens, progress=False
    )
    if args.device == "cuda":
        dtypes = {"float32", mistral.compute_dtype, "bfloat16"}
        peaks = {d: matmul_rate("cuda", getattr(torch, d), n=8192, repeats=10) for d in sorted(dtypes)}
    else:
        peaks = {"float32": matmul_rate("cpu", torch.float32, n=2048)}
    cmp = compare_methods(mistral, args, peaks[mistral.compute_dtype])
    cmp.attrs.update(
        auto_budget=args.auto_budget,
        per_token_params=per_token_params(mistral.model),
        max_tokens=mistral.max_tokens,
        heads=mistral.model.config.num_attention_heads,
        head_dim=mistral.model.config.hidden_size // mistral.model.config.num_attention_heads,
        n_layers=mistral.model.config.num_hidden_layers,
    )
    print(cmp.to_string(index=False))
    sweep = realistic(args, mistral, peaks)
    print(sweep.to_string(index=False))
    result = {
        "command": command(args),
        "device": args.device,
        "machine": machine(args),
        "matmul_rate_gflop_per_s": {d: round(r / 1e9, 1) for d, r in peaks.items()},
        "settings": {k: v for k, v in vars(args).items() if k not in ("shared", "no_write", "argv")},
        "comparison": cmp.to_dict(orient="records"),
        "sweep": sweep.to_dict(orient="records"),
        "failed_models": sweep.attrs.get("failed", {}),
        "best_per_model": best_per_model(sweep)[["model", "plan", "rows_per_s", "tokens_per_s", "MFU"]].to_dict(
            orient="records"
        ),
        "goals": {
            "speedup_vs_reference_min": float(cmp["speedup_vs_reference"].min()),
            "speedup_vs_reference_goal": GOAL_REFERENCE,
            "max_abs_diff": float(cmp["max_abs_diff"].max()),
            "max_abs_diff_goal": GOAL_DIFF,
            "transformer_best_mfu": float(best_per_model(sweep).set_index("model")["MFU"].get("nt-v2-50m", np.nan)),
            "transformer_best_mfu_goal": GOAL_MFU,
            "default_vs_best": default_vs_best(sweep),
            "default_vs_best_goal": GOAL_DEFAULT_VS_BEST,
        },
    }
    print(json.dumps(result["goals"], indent=1))
    if args.no_write:
        return
    name = "extraction.json" if args.device == "cpu" else "extraction_cuda.json"
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / name).write_text(json.dumps(result, indent=1) + "\n")
    doc = ROOT / "docs" / "performance.md"
    if args.device == "cpu":
        sections = cpu_sections(cmp, sweep, peaks["float32"], args)
        if "## Extraction on GPU" not in (doc.read_text() if doc.exists() else ""):
            sections["## Extraction on GPU"] = GPU_PENDING
    else:
        sections = {"## Extraction on GPU": gpu_section(cmp, sweep, peaks, args)}
    write_sections(sections, doc)
    print(f"wrote bench/results/{name} and {', '.join(sections)} of docs/performance.md", file=sys.stderr)


if __name__ == "__main__":
    main()
