"""Benchmark: all views from one forward pass against one view, and against one extraction per view.

Run from the repository root: `python bench/views.py [--rows N] [--no-write]`. For the real Mistral-DNA-v1-1M
checkpoint (`mistral-dna-1m-ft-prom`, 4 blocks: 5 hidden states) and HyenaDNA tiny-1k (2 blocks), on the first N
training rows of the three mixed-length tasks of bench/extraction.py, it times in one process (CPU seconds of the
process, one torch thread, best of 2):

* one view: the registry's extraction (`TokenModelEncoder.embed`, last hidden state, mean);
* all views: `views: {layers: all, poolings: [mean, last, max]}` through `geneb.extract.step.embed_split_views`
  (one forward pass per chunk, every layer pooled three ways), and the same with `reverse_complement: [false, true]`
  (a second pass over the reverse strand);
* separate runs: one extraction per view, each a full forward pass: n_views x the one-view time (a run of the
  registry's extraction per (layer, pooling) costs what the one-view run costs; the engine runs the whole model
  for any layer).

Writes bench/results/views.json (keys `views`, `cost_ratio_all_views_vs_one`, `cost_ratio_separate_runs_vs_all_views`,
per-model rows) and prints a table; docs/performance.md ("Views") quotes it, with the HDF5 size per view and the
probe stage's cost per view measured in the end-to-end run it names.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
TASKS = (
    "pgb_lncrna_manihot_esculenta",
    "prelnc_ath_lncrna_vs_mrna__resplit",
    "gb_human_ensembl_regulatory__toy_resplit",
)
MODELS = ("mistral-dna-1m-ft-prom", "hyenadna-tiny-1k-ft-anticapt")
REQUEST = {"layers": "all", "poolings": ["mean", "last", "max"]}


def _cpu(fn, repeats: int = 2) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO / "src"))
    import yaml

    from geneb.core.paths import SCHEMA_DIR
    from geneb.extract.step import build_encoder, embed_split_views
    from geneb.registry.load import extraction_settings, load_registry
    from geneb.registry.spec import ExtractionSettings
    from geneb.run.checks import plan_views

    torch.set_num_threads(1)
    registry = load_registry(
        REPO / "config" / "models.yaml", yaml.safe_load((SCHEMA_DIR / "models.schema.yaml").read_text())
    )
    seqs = []
    for task in TASKS:
        df = pd.read_csv(SHARED / "data" / "tasks" / task / "train.csv.gz", nrows=args.rows)
        seqs += df["sequence"].str.upper().tolist()
    rows = list(range(len(seqs)))
    out_rows = []
    for model in MODELS:
        settings = extraction_settings(registry, model, {}, device="cpu")
        enc = build_encoder(settings, progress=False)
        one = _cpu(lambda enc=enc: enc.embed(seqs, rows))
        for rc in ([False], [False, True]):
            vset = ExtractionSettings.of(
                plan_views({"views": {**REQUEST, "reverse_complement": rc}}, {model: settings})[model]
            ).views
            n_views = len(vset.views())
            venc = build_encoder({**settings, "views": vset.as_dict()}, progress=False)
            all_views = _cpu(lambda venc=venc, vset=vset: embed_split_views(venc, seqs, rows, vset))
            out_rows.append(
                {
                    "model": model,
                    "rows": len(seqs),
                    "reverse_complement": rc,
                    "views": n_views,
                    "one_view_cpu_s": round(one, 3),
                    "all_views_cpu_s": round(all_views, 3),
                    "separate_runs_cpu_s": round(n_views * one, 3),
                    "cost_ratio_all_views_vs_one": round(all_views / one, 3),
                    "cost_ratio_separate_runs_vs_all_views": round(n_views * one / all_views, 2),
                }
            )
            print(out_rows[-1], flush=True)
    single = [r for r in out_rows if r["reverse_complement"] == [False]]
    result = {
        "views": [r["views"] for r in single],
        "cost_ratio_all_views_vs_one": max(r["cost_ratio_all_views_vs_one"] for r in single),
        "cost_ratio_separate_runs_vs_all_views": min(r["cost_ratio_separate_runs_vs_all_views"] for r in single),
        "rows": out_rows,
        "machine": f"{platform.machine()}, 1 torch thread; torch {torch.__version__}; Python {platform.python_version()}",
    }
    if not args.no_write:
        (REPO / "bench" / "results" / "views.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
