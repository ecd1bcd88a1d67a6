"""Benchmark: bringing one's own model, against GENEB's own routes for the same vectors.

1. Extraction: the `python` family's route (a factory in a `.py` file whose object calls GENEB's k-mer counter) vs
   the same model as the built-in `kmer` family, on every row of real tasks: CPU seconds (`time.process_time`) of
   `encoder.embed` over the task's rows, best of `--repeats`, and the largest |difference| of the vectors (0: the
   same vectors). The python route's cost is the wrapper: argument checks, batching, dtype and finiteness checks.
2. Probing: `geneb.evaluate` on one task with precomputed vectors (a `precomputed` entry: task preparation with the
   quickstart's caps, the import, the shot draws, every probe and bootstrap of geneb-paper) vs the workflow's probe
   job for the same task (`geneb.probe.job.fit_probes` on the same files, as the fit_probes rule runs it): CPU
   seconds, best of `--repeats`; the goal is evaluate within 1.5x the probe job (a repeated call, whose workdir
   keeps the prepared task; a first call is set against the workflow's four steps for the task).

Single machine, single thread. Writes bench/results/byom.json and the `## Bringing your own model` section of
docs/performance.md.

Usage: PYTHONPATH=src python bench/byom.py [--tasks t1 ...] [--probe-task t] [--repeats 3] [--no-write]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from docsection import replace_section  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ENCODER_FILE = """
from geneb.encoders.families.kmer import KmerEncoder


class Wrapped:
    def __init__(self, k):
        self.inner = KmerEncoder(k)

    def embed(self, sequences):
        return self.inner.embed(sequences).embeddings


def build(options):
    return Wrapped(int(options["k"]))
"""


def _registry(folder: Path, vectors: Path) -> Path:
    from geneb.registry.load import load_registry

    data = copy.deepcopy(dict(load_registry(REPO / "config" / "models.yaml").raw))
    data["models"]["py-kmer-4"] = {"family": "python", "load": {"entry": "kmer_entry.py:build", "options": {"k": 4}}}
    data["models"]["vec-kmer-4"] = {"family": "precomputed", "source": {"kind": "local", "path": str(vectors)}}
    (folder / "kmer_entry.py").write_text(ENCODER_FILE)
    (folder / "models.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "models.yaml"


def _sequences(task: str, split: str) -> list[str]:
    from geneb.tasks.sources import open_source
    from geneb.tasks.validation import AlphabetPolicy, model_input

    raw = open_source(str(SHARED / "data" / "tasks")).read_split(task, split)
    policy = AlphabetPolicy()
    return [
        model_input(policy.apply(s, task=task, split=split, row=int(r))) for r, s in zip(raw["row"], raw["sequence"])
    ]


def _best_cpu(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def bench_extraction(sheet: Path, tasks: list[str], repeats: int) -> list[dict]:
    from geneb.extract.step import build_encoder
    from geneb.registry.load import extraction_settings, load_registry

    registry = load_registry(sheet)
    builtin = build_encoder(extraction_settings(registry, "kmer-4", {}))
    python = build_encoder(extraction_settings(registry, "py-kmer-4", {}))
    rows = []
    for task in tasks:
        seqs = _sequences(task, "train") + _sequences(task, "test")
        t_builtin, a = _best_cpu(lambda seqs=seqs: builtin.embed(seqs).embeddings, repeats)
        t_python, b = _best_cpu(lambda seqs=seqs: python.embed(seqs).embeddings, repeats)
        rows.append(
            {
                "task": task,
                "rows": len(seqs),
                "cpu_s_builtin": round(t_builtin, 3),
                "cpu_s_python": round(t_python, 3),
                "cpu_ratio": round(t_python / t_builtin, 3),
                "max_abs_diff": float(np.abs(a - b).max()),
            }
        )
        print(rows[-1], flush=True)
    return rows


def bench_probe(sheet: Path, vectors: Path, task: str, repeats: int) -> dict:
    from geneb.encoders.families.kmer import KmerEncoder

    for split in ("train", "test"):
        (vectors / task).mkdir(parents=True, exist_ok=True)
        np.save(vectors / task / f"{split}.npy", KmerEncoder(4).embed(_sequences(task, split)).embeddings)
    import geneb
    from geneb.probe.job import fit_probes

    caps = {"seed": 0, "default": {"max_train": 2000, "max_test": 1000}, "per_task": {}}
    config = {
        "model_sheet": str(sheet),
        "task_sheet": str(REPO / "config/tasks.tsv"),
        "caps": caps,
        "task_source": str(SHARED / "data" / "tasks"),
    }
    work = Path(tempfile.mkdtemp(prefix="byom-probe-"))
    from geneb.api import evaluate
    from geneb.core.paths import load_schema

    def cold():  # a first call: nothing kept (registry, schema, probe defaults) and a new workdir (task prepared)
        evaluate._registries.clear()
        evaluate._probe_sections.clear()
        load_schema.cache_clear()
        return geneb.evaluate("vec-kmer-4", [task], config=config, workdir=tempfile.mkdtemp(prefix="byom-cold-"))

    t_cold, _ = _best_cpu(cold, repeats)
    geneb.evaluate("vec-kmer-4", [task], config=config, workdir=work)  # the workdir's task prepared once
    t_eval, scores = _best_cpu(lambda: geneb.evaluate("vec-kmer-4", [task], config=config, workdir=work), repeats)
    probe = geneb.api.evaluate.resolve_config(config, [task], ["vec-kmer-4"], {})["probe"]["geneb-paper"]
    (h5,) = (work / "resources" / "embeddings" / "vec-kmer-4").glob(f"*/{task}/*.h5")  # <xhash>/<task>/<thash>.h5
    (t_dir,) = (p.parent for p in (work / "resources" / "tasks" / task).glob("*/card.json"))

    def job():
        return fit_probes(
            train=t_dir / "train.parquet",
            test=t_dir / "test.parquet",
            card=t_dir / "card.json",
            embeddings=h5,
            shots=next((work / "resources" / "shots" / "geneb-paper").glob(f"*/{task}/*.json")),
            scores_out=work / "job-scores.parquet",
            predictions_out=work / "job-predictions.parquet",
            task=task,
            model="vec-kmer-4",
            protocol="geneb-paper",
            settings=probe,
            settings_hash=h5.parents[1].name,
        )

    t_job, job_scores = _best_cpu(job, repeats)
    from geneb.api.evaluate import resolve_config
    from geneb.extract.precomputed import import_task
    from geneb.probe.job import write_shot_indices
    from geneb.registry.load import extraction_settings, load_registry
    from geneb.run.plan import RunPlan
    from geneb.tasks.catalogue import read_catalogue, source_string, task_row
    from geneb.tasks.prepare import prepare_from_params

    cfg = resolve_config(config, [task], ["vec-kmer-4"], {})
    sheet_df = read_catalogue(cfg["task_sheet"])
    plan = RunPlan(config=cfg, task_sheet=sheet_df, registry=None, extraction_settings={}, extraction_hashes={})
    jobs_dir = work / "jobs"
    (jobs_dir / task).mkdir(parents=True, exist_ok=True)
    settings = extraction_settings(load_registry(sheet), "vec-kmer-4", cfg["alphabet"])
    steps = {
        "prepare_task": lambda: prepare_from_params(
            task, plan.task_params(task), source_string(task_row(sheet_df, task), cfg), jobs_dir / task / "card.json"
        ),
        "write_shot_indices": lambda: write_shot_indices(
            train=jobs_dir / task / "train.parquet",
            card=jobs_dir / task / "card.json",
            output=jobs_dir / "shots.json",
            task=task,
            protocol="geneb-paper",
            settings=plan.shot_draw_params("geneb-paper"),
        ),
        "extract_embeddings (import)": lambda: import_task(settings, jobs_dir / task, jobs_dir / "x.h5"),
    }
    per_step = {name: round(_best_cpu(fn, repeats)[0], 3) for name, fn in steps.items()}
    per_step["fit_probes"] = round(t_job, 3)
    t_jobs = sum(per_step.values())
    same = np.array_equal(
        scores.loc[scores.metric == "MCC", "value"].to_numpy(),
        job_scores.loc[job_scores.metric == "MCC", "value"].to_numpy(),
    )
    out = {
        "task": task,
        "cpu_s_evaluate": round(t_eval, 3),
        "cpu_s_evaluate_first_call": round(t_cold, 3),
        "cpu_ratio_first_call_to_workflow_jobs": round(t_cold / t_jobs, 3),
        "cpu_s_probe_job": round(t_job, 3),
        "cpu_ratio": round(t_eval / t_job, 3),
        "cpu_s_workflow_jobs": round(t_jobs, 3),
        "cpu_ratio_to_workflow_jobs": round(t_eval / t_jobs, 3),
        "workflow_jobs": per_step,
        "same_mcc": bool(same),
        "test_rows": int(scores["n_test"].iloc[0]),
    }
    print(out, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["ienhancer2l_enhancer_vs_non", "gue_prom_core_all"])
    ap.add_argument("--probe-task", default="ienhancer2l_enhancer_vs_non")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="byom-"))
    sheet = _registry(folder, folder / "vectors")
    result = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "extraction": bench_extraction(sheet, args.tasks, args.repeats),
        "probe": bench_probe(sheet, folder / "vectors", args.probe_task, args.repeats),
        "load_average_1min": round(os.getloadavg()[0], 1),  # the machine is shared: CPU time still rises with load
    }
    if args.no_write:
        return
    (REPO / "bench" / "results" / "byom.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "`bench/byom.py` (results in `bench/results/byom.json`), CPU seconds (`time.process_time`, best of "
        f"{args.repeats}) on this shared 2-core machine (load average {result['load_average_1min']} when it ended).",
        "",
        "**The python route's extraction** against the same model as a built-in family: the 4-mer counter as the "
        "`kmer` family and as a `python` entry whose factory wraps it (same vectors: max |diff| below).",
        "",
        "| task | rows | built-in (s) | python entry (s) | ratio | max abs diff |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['task']} | {r['rows']} | {r['cpu_s_builtin']} | {r['cpu_s_python']} | {r['cpu_ratio']} | {r['max_abs_diff']:g} |"
        for r in result["extraction"]
    ]
    p = result["probe"]
    lines += [
        "",
        f"**`geneb.evaluate` with precomputed vectors** on {p['task']} (quickstart caps, geneb-paper; "
        f"{p['test_rows']} test rows). The goal, evaluate within 1.5x CPU time of the workflow's probe job: a "
        "repeated call in a notebook, on a workdir whose task is prepared (as the probe job's task is), against "
        "`fit_probes` run as a function on the same files. A first call also prepares the task; it is set against "
        "the workflow's own steps for one task, the jobs a user would otherwise run: `prepare_task`, "
        "`write_shot_indices`, the precomputed import of `extract_embeddings` and `fit_probes` "
        f"({p['workflow_jobs']}; {p['cpu_s_workflow_jobs']} s in all). Snakemake's own planning and scheduling and "
        "the job processes' start-up and imports are not counted on the workflow's side; imports are not counted "
        "on evaluate's either.",
        "",
        "| route | CPU s | ratio to the four workflow steps | ratio to the probe job alone |",
        "|---|---|---|---|",
        f"| `geneb.evaluate`, repeated call (registry and config checks kept while their files are unchanged; the "
        f"workdir's prepared task kept; import, shot draws, probes and aggregation run again) | "
        f"{p['cpu_s_evaluate']} | {p['cpu_ratio_to_workflow_jobs']}x | {p['cpu_ratio']}x |",
        f"| `geneb.evaluate`, first call (nothing kept: registry read and validated, config schema read, a new "
        "workdir, the task prepared) | "
        f"{p['cpu_s_evaluate_first_call']} | {p['cpu_ratio_first_call_to_workflow_jobs']}x | "
        f"{round(p['cpu_s_evaluate_first_call'] / p['cpu_s_probe_job'], 3)}x |",
        f"| the four workflow steps as functions | {p['cpu_s_workflow_jobs']} | 1x | "
        f"{round(p['cpu_s_workflow_jobs'] / p['cpu_s_probe_job'], 3)}x |",
        f"| the probe job alone (`fit_probes`) | {p['cpu_s_probe_job']} | - | 1x |",
        "",
        f"Identical MCC (evaluate against the probe job, every regime and seed): {p['same_mcc']}. A first call "
        "cannot come within 1.5x of the probe job alone: task preparation is work it has to do and the probe job "
        f"does not, and the four steps alone take {round(p['cpu_s_workflow_jobs'] / p['cpu_s_probe_job'], 2)}x the "
        "probe job.",
    ]
    replace_section(REPO / "docs" / "performance.md", "## Bringing your own model\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
