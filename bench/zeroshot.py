"""Benchmark: the zero-shot scorers' cost per variant against a naive loop, on the real built zero-shot tasks.

Run from the repository root: `python bench/zeroshot.py [--rows N] [--repeats 3] [--batch-size 32]
[--shared ../shared] [--before REV] [--no-write] [--write-docs]`. It prints a table and its section, writes
bench/results/zeroshot.json and, with --write-docs, replaces the `## Zero-shot scoring` section of
docs/performance.md. --before REV also times the scorers of git revision REV in the same run (before/after).

Tasks: the two variant tasks of the catalogue (`zs_promoter_motif_disruption`, `zs_stop_gain_vs_synonymous`),
built at seed 0 from the real tasks of `<shared>/data/tasks` into a temporary folder
(`geneb.zeroshot.build.build_tasks`); `--rows N` keeps the first N rows of each (variants of one window are
adjacent rows, so the window sharing is kept).

Cases, each the same rows scored both ways:

* `llr`, causal head: a seeded random-init MixtralForCausalLM on the real Mistral-DNA-v1-1M config and BPE
  tokenizer (`<shared>/models/mistral-dna-v1-1m-hg38-finetuned-prom`; the checkpoint itself has no LM head);
* `llr`, masked head: a seeded random-init BertForMaskedLM (hidden 64, 2 layers) on the real DNABERT-2 BPE
  tokenizer (`<shared>/models/tokenizers/dnabert-2-117m`).
  Both are written as hub folders in a temporary directory and loaded through `geneb.zeroshot.llr` (the
  weights are random: cost and agreement are measured, not the scores). Batched: `score_llr`; naive:
  `score_llr_naive` (one full forward per allele and strand, no batching, no reuse, causal windows summed
  over every token).
* `embedding`: the real `mistral-dna-1m-ft-prom` checkpoint loaded as the workflow loads it
  (`geneb.api.zeroshot.load_zeroshot_model`). Batched: `embedding_scores` (one embed call for every ref
  and alt window); naive: one `embed_with_rc([window])` call per allele (and strand, under the model's rc mode),
  then the same distances.

One torch thread. The two sides alternate (naive, batched, naive, ...) `--repeats` times in one process;
the medians of process CPU seconds and of wall seconds are reported, per variant, and `speedup` is the ratio of
the CPU medians (`wall_speedup` that of the wall medians). `max_abs_diff` is the largest |batched - naive|
over every row's score (both embedding distances for `embedding`).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

VARIANT_TASKS = ("zs_promoter_motif_disruption", "zs_stop_gain_vs_synonymous")
EMBEDDING_MODEL = "mistral-dna-1m-ft-prom"
GOAL = 5.0
RESULT = Path("bench/results/zeroshot.json")
DOC = Path("docs/performance.md")


def build_variant_tasks(shared: Path, out: Path, rows: int | None) -> list[Any]:
    """The catalogue's variant tasks built at seed 0, cut to their first `rows` rows when given."""
    from geneb.zeroshot.build import build_tasks
    from geneb.zeroshot.task import ZeroShotTask

    tasks = build_tasks(out, shared / "data" / "tasks", seed=0, tasks=list(VARIANT_TASKS))
    if rows is None:
        return tasks
    return [
        ZeroShotTask(name=t.name, kind=t.kind, rows=t.rows.iloc[:rows].reset_index(drop=True), data_sha256="0" * 64)
        for t in tasks
    ]


def random_heads(shared: Path, root: Path) -> dict[str, Any]:
    """{"causal", "masked"}: seeded random-init language models on real configs / tokenizers, loaded through
    geneb.zeroshot.llr."""
    import torch
    from transformers import AutoConfig, BertConfig, BertForMaskedLM, MixtralForCausalLM

    from geneb.registry.load import extraction_settings
    from geneb.zeroshot.llr import load_language_model

    real = shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom"
    tok = shared / "models" / "tokenizers" / "dnabert-2-117m"
    specs: dict[str, tuple[Path, str, Callable[[], Any]]] = {
        "causal": (real, "hf-decoder", lambda: MixtralForCausalLM(AutoConfig.from_pretrained(real))),
        "masked": (
            tok,
            "hf-encoder",
            lambda: BertForMaskedLM(
                BertConfig(
                    vocab_size=4096,
                    hidden_size=64,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=128,
                    max_position_embeddings=1024,
                    pad_token_id=3,
                )
            ),
        ),
    }
    out = {}
    for head, (tokenizer_dir, family, make) in specs.items():
        folder = root / head
        folder.mkdir()
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tokenizer_dir / name, folder / name)
        torch.manual_seed(0)
        make().save_pretrained(folder)
        entry = {
            "display": head,
            "family": family,
            "source": {"kind": "local", "path": str(folder)},
            "architecture_family": "test",
            "tokenizer_type": "bpe",
            "params": 0,
            "pretraining_domain": "none",
            "license": "test",
            "extraction": {"max_tokens": 256},
        }
        out[head] = load_language_model(extraction_settings({"models": {head: entry}}, head, {}), head=head)
    return out


def embedding_settings(shared: Path) -> dict[str, Any]:
    """The registry entry of EMBEDDING_MODEL resolved with its local folder under `shared` (the registry's
    path is relative to a checkout beside ../shared)."""
    from geneb.registry.load import extraction_settings, load_registry

    settings = dict(extraction_settings(load_registry("config/models.yaml"), EMBEDDING_MODEL, {}))
    source = dict(settings["source"])
    source["path"] = str(shared / "models" / Path(source["path"]).name)
    return {**settings, "source": source}


def naive_embedding_scores(model: Any, task: Any) -> np.ndarray:
    """(n, 2) cosine and Euclidean distances with one embed call per allele window (and strand)."""
    from geneb.extract.step import embed_with_rc
    from geneb.zeroshot.scorers import embedding_distances, variant_windows

    refs, alts = variant_windows(task)
    vectors = {}
    for side, windows in (("ref", refs), ("alt", alts)):
        vectors[side] = np.concatenate(
            [embed_with_rc(model.encoder, [w], [i], model.rc).embeddings for i, w in enumerate(windows)]
        )
    return np.column_stack(embedding_distances(vectors["ref"], vectors["alt"]))


def scorers_at(rev: str, root: Path) -> Any:
    """The llr and embedding scorer modules (llr_head, llr, embedding) of git revision `rev` as a side package
    `zs_before` (for a before/after comparison in one process); other modules are today's."""
    import importlib
    import subprocess

    package = root / "zs_before"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("llr_head", "llr", "embedding"):
        text = subprocess.run(
            ["git", "show", f"{rev}:src/geneb/zeroshot/{name}.py"], check=True, capture_output=True, text=True
        ).stdout
        for other in ("llr_head", "llr", "embedding"):
            text = text.replace(f"from geneb.zeroshot.{other} import", f"from zs_before.{other} import")
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(root))
    return importlib.import_module("zs_before.llr"), importlib.import_module("zs_before.embedding")


def as_before(model: Any, llr_before: Any) -> Any:
    """The same language model as the `zs_before` scorer's own LanguageModel class."""
    import dataclasses

    return llr_before.LanguageModel(**{f.name: getattr(model, f.name) for f in dataclasses.fields(model)})


def scorer_sides(
    case: str, model: Any, task: Any, before: Any, batch_size: int
) -> tuple[dict[str, Callable[[], np.ndarray]], str]:
    """({"naive", "batched", and "before" when `before` holds old scorer modules}: runs returning the scores),
    the model's label."""
    from geneb.zeroshot.llr import score_llr, score_llr_naive
    from geneb.zeroshot.scorers import pooled_scores, variant_windows

    sides: dict[str, Callable[[], np.ndarray]] = {}
    if case == "embedding":

        def embed_with(module: Any) -> np.ndarray:
            frames = module.embedding_scores(model, task)[:2]  # the pooled distances (a later revision adds more)
            return np.column_stack([f["score"].to_numpy() for f in frames])

        sides["naive"] = lambda: naive_embedding_scores(model, task)
        # the pooled distances, the naive loop's (the at-variant ones are a separate forward pass)
        sides["batched"] = lambda: np.column_stack(
            [f["score"].to_numpy() for f in pooled_scores(model, task, *variant_windows(task))]
        )
        if before:
            sides["before"] = lambda: embed_with(before[1])
        return sides, f"{EMBEDDING_MODEL} (real checkpoint)"
    sides["naive"] = lambda: score_llr_naive(model, task)["score"].to_numpy()
    sides["batched"] = lambda: score_llr(model, task, batch_size=batch_size)["score"].to_numpy()
    if before:
        old_model = as_before(model, before[0])
        sides["before"] = lambda: before[0].score_llr(old_model, task, batch_size=batch_size)["score"].to_numpy()
    return sides, f"random-init {type(model.network).__name__} ({case})"


def timed(run: Callable[[], np.ndarray]) -> tuple[float, float, np.ndarray]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = run()
    return time.process_time() - cpu, time.perf_counter() - wall, result


def compare(sides: dict[str, Callable[[], np.ndarray]], repeats: int) -> dict[str, Any]:
    """Alternate the sides ("naive", "batched", optionally "before") `repeats` times; medians of CPU and wall
    seconds, largest |batched - naive| score difference."""
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    diff = 0.0
    for _ in range(repeats):
        out = {}
        for side, run in sides.items():
            cpu, wall, out[side] = timed(run)
            times[side].append((cpu, wall))
        diff = max(diff, float(np.abs(out["batched"] - out["naive"]).max()))
    med = {
        side: (statistics.median(c for c, _ in ts), statistics.median(w for _, w in ts)) for side, ts in times.items()
    }
    return {"median": med, "max_abs_diff": diff}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=None, help="first N rows of each task (default: all 300)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("GENEB_SHARED", "../shared")))
    ap.add_argument("--cases", nargs="+", default=["causal", "masked", "embedding"])
    ap.add_argument("--before", default=None, help="also time the scorers of this git revision (before/after)")
    ap.add_argument("--no-write", action="store_true", help="print only: no bench/results/zeroshot.json")
    ap.add_argument("--write-docs", action="store_true", help="replace the section of docs/performance.md")
    args = ap.parse_args()
    import torch

    from geneb.api.zeroshot import load_zeroshot_model

    torch.set_num_threads(1)
    shared = args.shared.resolve()
    machine = f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs, torch {torch.__version__}"
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tasks = build_variant_tasks(shared, Path(tmp) / "tasks", args.rows)
        models: dict[str, Any] = random_heads(shared, Path(tmp)) if {"causal", "masked"} & set(args.cases) else {}
        before = scorers_at(args.before, Path(tmp)) if args.before else None
        if "embedding" in args.cases:
            models["embedding"], _ = load_zeroshot_model(embedding_settings(shared), workdir=Path(tmp) / "work")
        print(HEADER)
        for case in args.cases:
            model = models[case]
            for task in tasks:
                sides, label = scorer_sides(case, model, task, before, args.batch_size)
                r = compare(sides, args.repeats)
                (nc, nw), (bc, bw) = r["median"]["naive"], r["median"]["batched"]
                results.append(
                    {
                        "scorer": "embedding" if case == "embedding" else "llr",
                        "task": task.name,
                        "rows": task.n,
                        "windows": int(task.rows["sequence"].nunique()),
                        "head": case if case != "embedding" else "",
                        "model": label,
                        "naive_cpu_s_per_variant": nc / task.n,
                        "batched_cpu_s_per_variant": bc / task.n,
                        "naive_wall_s_per_variant": nw / task.n,
                        "batched_wall_s_per_variant": bw / task.n,
                        "speedup": nc / bc,
                        "wall_speedup": nw / bw,
                        "max_abs_diff": r["max_abs_diff"],
                        "torch_threads": torch.get_num_threads(),
                        "repeats": args.repeats,
                        "machine": machine,
                    }
                )
                if "before" in sides:
                    oc, ow = r["median"]["before"]
                    results[-1].update(
                        before_rev=args.before,
                        before_cpu_s_per_variant=oc / task.n,
                        before_wall_s_per_variant=ow / task.n,
                        before_speedup=nc / oc,
                    )
                print_row(results[-1])
    note = {
        "machine": machine,
        "load_average_end": [round(x, 1) for x in os.getloadavg()],
        "torch_threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "batch_size": args.batch_size,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "command": "python bench/zeroshot.py " + " ".join(sys.argv[1:]),
        "before": args.before,
    }
    payload = {"environment": note, "results": results}
    if args.no_write:
        print(section(payload))
    else:
        from docsection import publish  # bench/, the script's folder, is on sys.path

        publish(RESULT, payload, section(payload), write_docs=args.write_docs, doc=DOC)
    return 0


HEADER = (
    "| scorer | task | rows | windows | model | naive ms/variant (CPU) | batched ms/variant (CPU) | "
    "naive ms/variant (wall) | batched ms/variant (wall) | speedup (CPU) | wall_speedup | max_abs_diff | "
    "before ms/variant (CPU) | before speedup (CPU) |\n" + "|---" * 14 + "|"
)


def print_row(r: dict[str, Any]) -> None:
    before = (
        f"{r['before_cpu_s_per_variant'] * 1e3:.1f} | {r['before_speedup']:.1f}x" if "before_speedup" in r else "- | -"
    )
    print(
        f"| {r['scorer']} | {r['task']} | {r['rows']} | {r['windows']} | {r['model']} | "
        f"{r['naive_cpu_s_per_variant'] * 1e3:.1f} | {r['batched_cpu_s_per_variant'] * 1e3:.1f} | "
        f"{r['naive_wall_s_per_variant'] * 1e3:.1f} | {r['batched_wall_s_per_variant'] * 1e3:.1f} | "
        f"{r['speedup']:.1f}x | {r['wall_speedup']:.1f}x | {r['max_abs_diff']:.1e} | {before} |",
        flush=True,
    )


def section(payload: dict[str, Any]) -> str:
    """The `## Zero-shot scoring` section of docs/performance.md from the figures."""
    env, results = payload["environment"], payload["results"]
    rows = "\n".join(
        f"| {r['scorer']} | {r['task']} | {r['rows']} | {r['windows']} | {r['model']} | "
        f"{r['naive_cpu_s_per_variant'] * 1e3:.1f} | {r['batched_cpu_s_per_variant'] * 1e3:.1f} | "
        f"{r['naive_wall_s_per_variant'] * 1e3:.1f} | {r['batched_wall_s_per_variant'] * 1e3:.1f} | "
        f"{r['speedup']:.1f}x | {r['wall_speedup']:.1f}x | {r['max_abs_diff']:.1e} | "
        + (
            f"{r['before_cpu_s_per_variant'] * 1e3:.1f} | {r['before_speedup']:.1f}x |"
            if "before_speedup" in r
            else "- | - |"
        )
        for r in results
    )
    table = (
        "| scorer | task | rows | windows | model | naive_ms (CPU) | batched_ms (CPU) | naive_ms (wall) | "
        "batched_ms (wall) | speedup | wall_speedup | max_abs_diff | before_ms (CPU) | before_speedup |\n"
        + "|---" * 14
        + "|\n"
        + rows
    )

    def name(r: dict[str, Any]) -> str:
        return f"{r['scorer']} {r.get('head', '')} on {r['task']}".replace("  ", " ")

    met = [name(r) for r in results if r["speedup"] >= GOAL]
    missed = [f"{name(r)} ({r['speedup']:.1f}x)" for r in results if r["speedup"] < GOAL]
    load = ", ".join(str(x) for x in env["load_average_end"])
    worst = max(r["max_abs_diff"] for r in results)
    speedups = ", ".join(f"{name(r)} {r['speedup']:.1f}x" for r in results)
    summary = textwrap.fill(
        f"Speed-up over the naive loop (CPU medians): {speedups}; largest |batched - naive| {worst:.1e} (float32 "
        f"rounding of sums over about 100 tokens). Goal {GOAL:g}x: met for {', '.join(met) or 'none'}"
        + (f"; not for {', '.join(missed)}" if missed else "")
        + ". Where the time goes and what changed:",
        width=115,
    )
    return (
        HEAD_TEXT.format(
            command=env["command"],
            machine=env["machine"],
            python=env["python"],
            load=load,
            before=env.get("before") or "(none given)",
        )
        + table
        + "\n\n"
        + summary
        + PROSE
    )


HEAD_TEXT = """## Zero-shot scoring

Command: `{command}` (bench/zeroshot.py; its figures also in
bench/results/zeroshot.json; `--rows N` scores the first N rows of each task, `--cases` picks the cases). The cost
per variant of the zero-shot scorers against a naive loop, on the two real variant tasks GENEB builds
(`zs_promoter_motif_disruption`, `zs_stop_gain_vs_synonymous`, 300 rows each, built at seed 0 from
../shared/data/tasks into a temporary folder; `windows` counts the distinct reference windows: the motif task has
two variants per window, the stop-gain task almost one):

* `llr` on a **causal** head (a seeded random-init `MixtralForCausalLM` on the real Mistral-DNA-v1-1M config and
  DNABERT-2 BPE tokenizer, vocabulary 4096) and a **masked** head (a seeded random-init `BertForMaskedLM`,
  hidden 64, 2 layers, on the real DNABERT-2 tokenizer), loaded through `geneb.zeroshot.llr`; the weights
  are random, so cost and agreement are measured, not the scores. Batched: `score_llr` (batch size 32);
  naive: `score_llr_naive`, one full forward per allele and strand, no batching, no reuse, logits at every
  position, causal windows summed over every token.
* `embedding` on the real `mistral-dna-1m-ft-prom` checkpoint, loaded as the workflow loads it
  (`geneb.api.zeroshot.load_zeroshot_model`). Batched: `embedding_scores`; naive: one
  `embed_with_rc([window])` call per allele (rc `none` for this model: one strand), then the same distances.

Both sides build their inputs the same way (tokenisation included in both times). The sides alternate in one
process (naive, batched, before, three times); times are medians, in milliseconds per variant (both strands),
one torch thread; `speedup` is the ratio of the CPU medians, `wall_speedup` of the wall medians; `max_abs_diff`
the largest |batched - naive| over every row's score (nats for llr; both distances for embedding); `before_*`
the batched scorer of revision {before} (`--before`; before the changes below), timed in the same run. Machine:
{machine}, Python {python}, load average at the end {load}.

"""

PROSE = """

* **The head at the read positions only.** With a 4096-token vocabulary the LM head (64 x 4096) is most of a
  small model's work per position (2.2x the Mixtral body's per-token weights). The batched scorer now runs the
  backbone and then the head only at the positions whose log-probabilities are read
  (`geneb.zeroshot.llr.head_split`, for transformers' own `BertForMaskedLM`, `EsmForMaskedLM`,
  `MixtralForCausalLM`, `MistralForCausalLM`, `LlamaForCausalLM`; other classes, remote code included, run
  whole); a position read for several targets gets its log-softmax once. A masked input reads one or two
  positions: this is most of the masked head's gain over the earlier scorer (`before_speedup` against
  `speedup`). A causal window reads every position from the first changed token on, so the head still runs on
  about half the positions of an alt window and most of a ref window.
* **Reuse of identical inputs** (already there): the two alleles of a variant whose BPE spans align share one
  masked input; variants of one window share the causal ref input. The naive loop runs 4 forwards per variant;
  the batched one 2 (masked) or 2 + 2/(variants per window) (causal: 3 on the motif task, about 3.8 on
  stop-gain). That is why the stop-gain task, with 268 windows for 300 rows, gains less on every scorer.
* **Embedding**: one length-sorted batched call instead of a call per window, and a window several rows share
  embedded once (450 windows instead of 600 on the motif task).
* **What is left, causal.** Batching does not lower a tiny model's per-token work on one CPU thread (batch sizes
  16 to 128 cost the same here), so the causal scorer is bounded by the forwards it runs. Reusing the ref
  window's key/value states for the tokens before the changed one (the alt runs only from there:
  `transformers.DynamicCache`, rows of different prefix lengths masked side by side) gave the same scores but
  was measured 0-8 % faster on this model (the masked attention over the cache costs what the skipped tokens
  save), so it was not kept; with a larger body per token it would save up to half of each alt forward.
"""


if __name__ == "__main__":
    raise SystemExit(main())
