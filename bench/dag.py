"""How long Snakemake takes to plan a paper-scale GENEB run, and how many jobs it plans.

    python bench/dag.py                      # 40 models x 100 tasks, best of 3; prints the table
    python bench/dag.py --write-docs         # ... and replaces the `## DAG scale` section of docs/performance.md
    python bench/dag.py --models 40 --tasks 100 --repeats 3 --snakefile Snakefile

The configuration: config/config.yaml with the paper's 100 tasks (catalogue rows with task_set=paper) and the
paper's 40 models (registry entries with a `paper` block). The registry is synthetic where it must be: a
model whose hub revision is not pinned yet gets a made-up 40-hex revision, and a model without a GENEB
adapter stands in as an `hf-encoder` (nothing is downloaded or loaded by a dry run; only ids and settings
hashes matter). Each repeat runs `snakemake --dry-run` in this process (a fresh run directory, no outputs)
and times Snakemake's DAG construction (`Workflow._build_dag`: parsing is excluded, every job, its input
functions and params, and the needrun decisions are included) and the whole dry run. The jobs are counted
from the DAG, and those a Slurm run would submit (not local rules) through geneb.run.sbatch_preview with
profiles/slurm (group jobs counted once). Goals: DAG construction <= 20 s, sbatch extraction submissions <= 2 x
models, all sbatch submissions <= 500. Writes bench/results/dag.json.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import io
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
SECTION = "## DAG scale"
GOAL_DAG_S = 20.0
GOAL_EXTRACTION_PER_MODEL = 2.0
GOAL_SBATCH = 500
RESULT = REPO / "bench" / "results" / "dag.json"


def synthetic_registry(n_models: int) -> tuple[dict, list[str]]:
    """The repository registry, with its first `n_models` paper models made runnable for a dry run."""
    sys.path.insert(0, str(REPO / "src"))
    from geneb.registry.load import load_registry

    typed = load_registry(REPO / "config" / "models.yaml")  # the one reader; the copy of its mapping is edited
    registry = copy.deepcopy(dict(typed.raw))
    models = [m for m, spec in typed.models.items() if spec.paper][:n_models]
    if len(models) < n_models:
        raise SystemExit(f"the registry has {len(models)} paper models; asked for {n_models}")
    for m in models:
        spec = registry["models"][m]
        revision = hashlib.sha1(m.encode()).hexdigest()  # a made-up pin: nothing is fetched in a dry run
        if typed.models[m].family == "unsupported":
            spec.update(family="hf-encoder", trust_remote_code=False)
            spec.pop("load", None)
            spec["source"] = {"kind": "hub", "hub_id": f"synthetic/{m}", "revision": revision}
        elif typed.models[m].source.kind == "hub-unpinned":
            spec["source"] = {**spec["source"], "kind": "hub", "revision": revision}
    return registry, models


def write_run(run: Path, n_models: int, n_tasks: int) -> tuple[list[str], list[str]]:
    """A run directory with the paper-scale config; returns (models, tasks)."""
    registry, models = synthetic_registry(n_models)
    catalogue = pd.read_csv(REPO / "config" / "tasks.tsv", sep="\t")
    tasks = catalogue.loc[catalogue["task_set"] == "paper", "task"].tolist()[:n_tasks]
    if len(tasks) < n_tasks:
        raise SystemExit(f"the catalogue has {len(tasks)} paper tasks; asked for {n_tasks}")
    (run / "config").mkdir(parents=True)
    (run / "config" / "models.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    shared = Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared")).resolve()
    config.update(
        task_source=str(shared / "data" / "tasks"),
        task_sheet=str(REPO / "config" / "tasks.tsv"),
        model_sheet=str(run / "config" / "models.yaml"),
        tasks=tasks,
        models=models,
    )
    published = config.get("analysis", {}).get("published")
    if published:  # relative to the repository, not to the run directory
        for key in ("dir", "registry"):
            if key in published and not os.path.isabs(published[key]):
                published[key] = str((REPO / published[key]).resolve())
    (run / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return models, tasks


def timed_dry_run(run: Path, snakefile: Path) -> tuple[float, float, float, Counter]:
    """(DAG construction wall seconds, its CPU seconds, whole dry run wall seconds, jobs per rule) of one
    in-process `snakemake -n`."""
    import snakemake.cli
    from snakemake.workflow import Workflow

    spans: list[float] = []
    cpu: list[float] = []
    counts: Counter = Counter()
    original = Workflow._build_dag

    def build_dag(self, *args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            spans.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            counts.update(job.rule.name for job in self.dag.needrun_jobs())

    out = io.StringIO()
    cwd = os.getcwd()
    Workflow._build_dag = build_dag  # type: ignore[method-assign]
    try:
        os.chdir(run)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                snakemake.cli.main(["-s", str(snakefile), "--dry-run", "--cores", "1", "--quiet", "all"])
                code = 0
            except SystemExit as exit_:
                code = exit_.code or 0
        total = time.perf_counter() - t0
    finally:
        os.chdir(cwd)
        Workflow._build_dag = original  # type: ignore[method-assign]
    text = out.getvalue()
    if code != 0 or not spans:
        raise SystemExit(f"dry run failed (exit {code}):\n{text[-4000:]}")
    return sum(spans), sum(cpu), total, counts


def submitted_jobs(run: Path, snakefile: Path) -> tuple[int, Counter]:
    """sbatch submissions of a Slurm run with profiles/slurm, per rule: one per group job (the rules' groups,
    sized by the profile's group-components; counted under the rule its jobs belong to) and one per ungrouped
    non-local job; local rules never reach the scheduler."""
    sys.path.insert(0, str(REPO / "src"))
    from geneb.run.sbatch_preview import preview_submissions

    cwd = os.getcwd()
    try:
        os.chdir(run)
        jobs, groups = preview_submissions(["-s", str(snakefile), "--profile", str(REPO / "profiles" / "slurm")])
    finally:
        os.chdir(cwd)
    remote = Counter(j.rule for j in jobs if not j.local and j.group is None)
    for group in groups:
        remote.update({"+".join(sorted(group.rules)): 1})
    return sum(remote.values()), remote


def markdown(row: dict, per_rule: Counter, remote_rule: Counter, repeats: int) -> str:
    cols = ["models", "tasks", "jobs", "sbatch_jobs", "sbatch_extraction_jobs", "sbatch_probe_jobs"]
    cols += ["dag_build_s", "dag_build_cpu_s", "dry_run_s"]
    lines = [
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
        "| " + " | ".join(str(row[c]) for c in cols) + " |",
    ]
    rules = ", ".join(f"{rule} {n}" for rule, n in per_rule.items())
    remote = ", ".join(f"{rule} {n}" for rule, n in remote_rule.items())
    n_models = row["models"]
    verdict_dag = "met" if min(row["dag_build_s"], row["dag_build_cpu_s"]) <= GOAL_DAG_S else "NOT met"
    verdict_x = "met" if row["sbatch_extraction_jobs"] <= GOAL_EXTRACTION_PER_MODEL * n_models else "NOT met"
    verdict_all = "met" if row["sbatch_jobs"] <= GOAL_SBATCH else "NOT met"
    return f"""{SECTION}

Command: `python bench/dag.py --write-docs` (bench/dag.py; figures also in bench/results/dag.json). A dry run
(`snakemake -n`, no outputs present) of the paper-scale configuration: the paper's {n_models} models (the
registry's entries with a `paper` block; unpinned hub revisions replaced by made-up pins and models without
an adapter standing in as `hf-encoder`, since a dry run loads nothing) x the paper's {row["tasks"]} tasks,
protocol geneb-paper, the default target. `dag_build_s` is Snakemake's DAG construction
(`Workflow._build_dag`: every job with its input functions, params and resources, and the needrun
decisions; parsing excluded) in wall-clock seconds, `dag_build_cpu_s` the same in CPU seconds of the process
(robust when neighbours load the machine), `dry_run_s` the whole in-process dry run including parsing and
the job listing; best of {repeats} runs. `jobs` counts every job of the DAG; `sbatch_jobs` the submissions a
Slurm run (`--profile profiles/slurm`) makes: one per group job (a model's extractions, up to 50 per
submission, and its probes, up to 100: the rules' groups and the profile's `group-components`) and one per
ungrouped non-local job. Machine: {platform.machine()}, {os.cpu_count()} cores, shared with other work;
Python {platform.python_version()}, Snakemake {_snakemake_version()}.

{chr(10).join(lines)}

Jobs per rule: {rules}. Submitted with sbatch: {remote}. Goals: DAG construction <= {GOAL_DAG_S:.0f} s ({verdict_dag});
sbatch extraction submissions <= {GOAL_EXTRACTION_PER_MODEL:.0f} x models ({verdict_x}); all sbatch submissions
<= {GOAL_SBATCH} ({verdict_all}). Task preparation, shot draws and aggregation run as local rules.
"""


def _snakemake_version() -> str:
    from importlib.metadata import version

    return version("snakemake")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--snakefile", type=Path, default=REPO / "Snakefile")
    parser.add_argument(
        "--write-docs", action="store_true", help="replace the DAG scale section of docs/performance.md"
    )
    args = parser.parse_args(argv)
    snakefile = args.snakefile.resolve()
    builds, cpus, totals = [], [], []
    with tempfile.TemporaryDirectory(prefix="geneb-dag-") as tmp:
        for i in range(args.repeats):
            run = Path(tmp) / f"run{i}"
            write_run(run, args.models, args.tasks)
            build, build_cpu, total, per_rule = timed_dry_run(run, snakefile)
            builds.append(build)
            cpus.append(build_cpu)
            totals.append(total)
            print(
                f"repeat {i + 1}: DAG construction {build:.1f} s ({build_cpu:.1f} s CPU), dry run {total:.1f} s",
                file=sys.stderr,
            )
        n_remote, remote_rule = submitted_jobs(Path(tmp) / "run0", snakefile)
    n_jobs = sum(per_rule.values())
    row = {
        "models": args.models,
        "tasks": args.tasks,
        "jobs": n_jobs,
        "sbatch_jobs": n_remote,
        "sbatch_extraction_jobs": sum(n for rule, n in remote_rule.items() if "extract_embeddings" in rule),
        "sbatch_probe_jobs": sum(n for rule, n in remote_rule.items() if "fit_probes" in rule),
        "dag_build_s": round(min(builds), 1),
        "dag_build_cpu_s": round(min(cpus), 1),
        "dry_run_s": round(min(totals), 1),
    }
    from docsection import publish  # bench/ is the script's folder on sys.path

    publish(
        RESULT,
        row,
        markdown(row, per_rule, remote_rule, args.repeats),
        write_docs=args.write_docs,
        doc=REPO / "docs" / "performance.md",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
