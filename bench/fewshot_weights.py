"""Measurement: geneb-strict k-shot MCC with class weights from the training split (before) vs from the draw (now).

For each task (`--tasks`; default: the two mirrored tasks whose training split is >= 3x imbalanced, where the
old rule weighted every k-shot fit, and two balanced ones), `kmer-4` frequency embeddings of the training split
(stratified cap `--max-train`, seed 0) and of the whole test split; geneb-strict's settings (config/config.yaml)
with seeds 0..4 (`--seeds`). "now" is the project's own `geneb.probe.fit.fit_all`; "before" refits every k-shot
draw with the old weights, `class_weight_for(full training labels)`, through the same `single_fit`. A
`--short N` variant of the first task keeps N rows of its smallest class (fewer than k = 10), the case where
the two rules can disagree. One BLAS thread. Prints and writes bench/results/fewshot_weights.json.

Usage: python bench/fewshot_weights.py [--tasks t1 t2 ...] [--seeds 0 1 2 3 4] [--max-train 4000] [--short 6]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from sklearn.metrics import matthews_corrcoef
from threadpoolctl import threadpool_limits

from geneb.encoders.families.kmer import KmerEncoder
from geneb.probe.fit import TaskArrays, _positions, fit_all, fit_scaler, single_fit
from geneb.probe.protocols import from_config
from geneb.probe.shots import build_shots
from geneb.tasks.prepare import stratified_cap

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"  # the README layout: ../shared beside the checkout
DEFAULT_TASKS = (
    "pgb_chromatin_access_any__7plants_derived",
    "viraminer_human_metagenome_virus__partial_loeo",
    "gue_prom_core_tata",
    "ienhancer2l_types_3class",
)


def load(task: str, max_train: int) -> TaskArrays:
    """kmer-4 embeddings of a mirrored task, training split stratified-capped at max_train (seed 0)."""
    folder = SHARED / "data" / "tasks" / task
    tr, te = pd.read_csv(folder / "train.csv.gz"), pd.read_csv(folder / "test.csv.gz")
    tr = tr.iloc[stratified_cap(tr["label"].to_numpy(), min(max_train, len(tr)), 0)]
    enc = KmerEncoder(4)
    return TaskArrays(
        task,
        enc.embed(tr["sequence"].tolist()).embeddings,
        tr["label"].to_numpy(),
        np.arange(len(tr), dtype=np.int64),
        enc.embed(te["sequence"].tolist()).embeddings,
        te["label"].to_numpy(),
        np.arange(len(te), dtype=np.int64),
    )


def shorten(data: TaskArrays, n: int) -> TaskArrays:
    """The task with only the first n training rows of its smallest class."""
    small = np.unique(data.y_train, return_counts=True)
    cls = small[0][np.argmin(small[1])]
    keep = np.concatenate([np.flatnonzero(data.y_train != cls), np.flatnonzero(data.y_train == cls)[:n]])
    keep.sort()
    return dataclasses.replace(
        data,
        task=f"{data.task}[class {cls}: {n} rows]",
        X_train=data.X_train[keep],
        y_train=data.y_train[keep],
        rows_train=np.arange(len(keep), dtype=np.int64),
    )


def measure(data: TaskArrays, protocol, settings: dict) -> list[dict]:
    """One row per (regime, seed): MCC before (full-split weights) and now (draw weights)."""
    shots = build_shots(data.task, protocol.name, data.y_train, data.rows_train, "bench", settings)
    now = {(f.regime, f.seeds[0]): f for f in fit_all(data, protocol, shots)[0] if f.regime != "full"}
    full_pos = _positions(data.rows_train, shots["full_rows"], data.task, "full", None)
    old_weight = protocol.class_weight_for(data.y_train[full_pos])
    scaler = fit_scaler(data.X_train[full_pos])
    X_tr, X_te = scaler.transform(data.X_train), scaler.transform(data.X_test)
    out = []
    for d in shots["draws"]:
        pos = _positions(data.rows_train, d["rows"], data.task, d["regime"], d["seed"])
        lr = single_fit(protocol, X_tr[pos], data.y_train[pos], protocol.C, d["seed"], "bench", old_weight)[0]
        f = now[(d["regime"], int(d["seed"]))]
        before = matthews_corrcoef(data.y_test, lr.predict(X_te))
        after = matthews_corrcoef(data.y_test, f.y_pred)
        out.append(
            {
                "task": data.task,
                "regime": d["regime"],
                "seed": int(d["seed"]),
                "weight_before": old_weight,
                "weight_now": protocol.class_weight_for(data.y_train[pos]),
                "mcc_before": float(before),
                "mcc_now": float(after),
                "delta": float(after - before),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--max-train", type=int, default=4000)
    ap.add_argument("--short", type=int, default=6)
    args = ap.parse_args()
    settings = dict(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["probe"]["geneb-strict"])
    settings["seeds"] = args.seeds
    protocol = from_config("geneb-strict", settings)
    rows = []
    with threadpool_limits(1):
        for i, task in enumerate(args.tasks):
            data = load(task, args.max_train)
            rows += measure(data, protocol, settings)
            if i == 0 and args.short:
                rows += measure(shorten(data, args.short), protocol, settings)
    df = pd.DataFrame(rows)
    summary = []
    for (task, regime), g in df.groupby(["task", "regime"], sort=False):
        summary.append(
            {
                "task": task,
                "regime": regime,
                "weight_before": g["weight_before"].iloc[0],
                "weights_now": sorted({str(w) for w in g["weight_now"]}),
                "mean_abs_delta": float(g["delta"].abs().mean()),
                "max_abs_delta": float(g["delta"].abs().max()),
            }
        )
    print(pd.DataFrame(summary).to_string(index=False))
    real = df[~df["task"].str.contains(r"\[")]
    print(
        f"real tasks: mean |dMCC| {real['delta'].abs().mean():.4f}, max {real['delta'].abs().max():.4f} "
        f"over {len(real)} fits"
    )
    out = ROOT / "bench" / "results" / "fewshot_weights.json"
    out.write_text(json.dumps({"args": vars(args), "summary": summary, "fits": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
