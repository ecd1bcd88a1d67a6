"""Benchmark: does geneb-strict's full-regime probe underfit? Its MCC against a plain scikit-learn baseline.

For every mirrored task (80; `--tasks` to choose): `kmer-4` frequency embeddings (256 dims) of the training
split, capped at 8,000 rows by a plain seeded random draw (`numpy.random.default_rng(0).choice`, no
stratification, so the baseline sees the same rows), and of the whole test split. Then

* GENEB: the project's geneb-strict settings (config/config.yaml) through its own fitting code
  (`build_shots` + `geneb.probe.fit.fit_all`), the full-regime fit's test MCC;
* baseline, as a user would write it: `make_pipeline(StandardScaler(), LogisticRegressionCV(Cs=10,
  cv=StratifiedKFold(5, shuffle=True, random_state=0), max_iter=1000))` with scikit-learn's other defaults
  (accuracy scoring, stated; no class weights), its test MCC.

Goal: GENEB never more than 0.03 below the baseline on any task. One BLAS thread, one process. Writes (replaces)
the `## Probe quality` section of docs/performance.md and bench/results/probe_quality.json.

Usage: python bench/probe_quality.py [--tasks t1 t2 ...] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
import yaml
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegressionCV
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from geneb.encoders.families.kmer import KmerEncoder
from geneb.probe.fit import TaskArrays, fit_all
from geneb.probe.protocols import from_config
from geneb.probe.shots import build_shots

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("GENEB_SHARED", REPO.parent / "shared"))
TASKS = SHARED / "data" / "tasks"
MAX_TRAIN = 8000
K = 4
#: the goal: GENEB's full-regime MCC at most this far below the baseline on every task
MARGIN = 0.03


def load_task(task: str) -> TaskArrays:
    """kmer-4 embeddings of the task's training split (capped at MAX_TRAIN by a seeded random draw) and test split."""
    tr, te = pd.read_csv(TASKS / task / "train.csv.gz"), pd.read_csv(TASKS / task / "test.csv.gz")
    if len(tr) > MAX_TRAIN:
        tr = tr.iloc[np.sort(np.random.default_rng(0).choice(len(tr), MAX_TRAIN, replace=False))]
    enc = KmerEncoder(K)
    labels = {v: i for i, v in enumerate(sorted(set(tr["label"]) | set(te["label"])))}  # names -> codes
    return TaskArrays(
        task,
        enc.embed(tr["sequence"].tolist()).embeddings,
        tr["label"].map(labels).to_numpy(np.int64),
        np.arange(len(tr), dtype=np.int64),
        enc.embed(te["sequence"].tolist()).embeddings,
        te["label"].map(labels).to_numpy(np.int64),
        np.arange(len(te), dtype=np.int64),
    )


def baseline_mcc(data: TaskArrays) -> tuple[float, float]:
    """The plain pipeline's test MCC and the C it chose."""
    lrcv = LogisticRegressionCV(
        Cs=10,
        cv=StratifiedKFold(5, shuffle=True, random_state=0),
        scoring="accuracy",  # scikit-learn's default, stated (1.9 warns that it will change)
        max_iter=1000,
        l1_ratios=(0.0,),
        use_legacy_attributes=False,
    )
    clf = make_pipeline(StandardScaler(), lrcv).fit(data.X_train, data.y_train)
    return float(matthews_corrcoef(data.y_test, clf.predict(data.X_test))), float(np.ravel(lrcv.C_)[0])


def geneb_mcc(data: TaskArrays, settings: dict) -> tuple[float, float, str]:
    """geneb-strict's full-regime test MCC through the project's fitting code, its C and how it was chosen."""
    protocol = from_config("geneb-strict", settings)
    shots = build_shots(data.task, "geneb-strict", data.y_train, data.rows_train, f"bench:{data.task}", settings)
    fits, _ = fit_all(data, protocol, shots)
    full = next(f for f in fits if f.regime == "full")
    return float(matthews_corrcoef(data.y_test, full.y_pred)), full.C, full.C_selection


def run(tasks: list[str]) -> pd.DataFrame:
    settings = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["probe"]["geneb-strict"]
    rows = []
    for task in tasks:
        data = load_task(task)
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.process_time()
            base, base_c = baseline_mcc(data)
            t1 = time.process_time()
            ours, c, how = geneb_mcc(data, settings)
            t2 = time.process_time()
        rows.append(
            {
                "task": task,
                "n_train": len(data.y_train),
                "n_test": len(data.y_test),
                "classes": int(len(np.unique(data.y_train))),
                "MCC_baseline": base,
                "MCC_geneb": ours,
                "diff": ours - base,
                "C_baseline": base_c,
                "C_geneb": c,
                "baseline_cpu_s": t1 - t0,
                "geneb_cpu_s": t2 - t1,
            }
        )
        print(pd.DataFrame(rows[-1:]).round(4).to_string(index=False, header=len(rows) == 1), flush=True)
    return pd.DataFrame(rows)


def write_outputs(table: pd.DataFrame, command: str, settings: dict) -> None:
    """docs/performance.md `## Probe quality` section and bench/results/probe_quality.json."""
    worst = table.loc[table["diff"].idxmin()]
    summary = {
        "tasks": len(table),
        "worst_task": worst["task"],
        "worst_diff": float(worst["diff"]),
        "tasks_below_margin": int((table["diff"] < -MARGIN).sum()),
        "margin": MARGIN,
        "mean_diff": float(table["diff"].mean()),
        "settings": {k: settings[k] for k in ("C_grid", "cv_folds", "cv_scoring", "class_weight")},
        "rows": table.round(6).to_dict("records"),
    }
    out = REPO / "bench" / "results" / "probe_quality.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    fmt = table.drop(columns=["baseline_cpu_s", "geneb_cpu_s"]).copy()
    for c in ("MCC_baseline", "MCC_geneb", "diff"):
        fmt[c] = fmt[c].map(lambda v: f"{v:.4f}")
    for c in ("C_baseline", "C_geneb"):
        fmt[c] = fmt[c].map(lambda v: f"{v:.3g}")
    header = "| " + " | ".join(fmt.columns) + " |\n|" + "---|" * len(fmt.columns) + "\n"
    body = "".join("| " + " | ".join(map(str, r)) + " |\n" for r in fmt.itertuples(index=False))
    section = (
        "## Probe quality\n\n"
        f"Command: `{command}` (bench/probe_quality.py). geneb-strict's full-regime test MCC (its settings in\n"
        f"config/config.yaml: C grid {settings['C_grid'][0]:g} to {settings['C_grid'][-1]:g} ({len(settings['C_grid'])} values), "
        f"{settings['cv_folds']}-fold inner CV,\n"
        f"scoring {settings['cv_scoring']}, class_weight {settings['class_weight']}) against `make_pipeline(StandardScaler(),\n"
        "LogisticRegressionCV(Cs=10, cv=StratifiedKFold(5, shuffle=True, random_state=0), max_iter=1000))`, on\n"
        f"`kmer-{K}` embeddings of every mirrored task, training split capped at {MAX_TRAIN:,} by a seeded random draw,\n"
        f"whole test split; one BLAS thread. Machine: {platform.machine()}, {os.cpu_count()} cores; scikit-learn\n"
        f"{sklearn.__version__}.\n\n"
        f"**Worst case: {worst['task']}, {worst['diff']:+.4f}** (goal: never below -{MARGIN}); "
        f"{summary['tasks_below_margin']} of {len(table)} tasks below the margin; mean difference {summary['mean_diff']:+.4f}.\n\n"
        f"{header}{body}"
    )
    path = REPO / "docs" / "performance.md"
    text = path.read_text() if path.exists() else "# GENEB performance\n\nMeasured costs of the pipeline stages.\n"
    pattern = re.compile(r"^## Probe quality\n.*?(?=^## |\Z)", re.S | re.M)
    text = pattern.sub(lambda _: section + "\n", text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=sorted(p.name for p in TASKS.iterdir() if p.is_dir()))
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs and bench/results alone")
    args = ap.parse_args(argv)
    table = run(args.tasks)
    worst = table["diff"].min()
    print(f"\nworst difference {worst:+.4f} ({table.loc[table['diff'].idxmin(), 'task']}); goal >= -{MARGIN}")
    if not args.no_write:
        settings = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["probe"]["geneb-strict"]
        write_outputs(
            table, " ".join(["python bench/probe_quality.py", *(argv if argv is not None else sys.argv[1:])]), settings
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
