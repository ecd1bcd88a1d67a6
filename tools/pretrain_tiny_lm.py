"""Pretrain GENEB's tiny reference language models (one masked, one causal DNA transformer) on a real task's
training sequences, seeded, for a few CPU minutes (geneb.zeroshot.reference_lms.pretrain_reference_lm).

Run from the repository root: `python tools/pretrain_tiny_lm.py --kind masked --out resources/reference_lms/tiny-masked
[--task gb_human_nontata_promoters__resplit] [--steps 300] [--seed 0] [--shared ../shared]`. Writes a hub-snapshot
folder (config, weights with the head, one-base tokenizer, geneb_pretraining.json with the seed, the task, the
sha256 of its train file and the loss curve) that the llr scorer loads as a local hf-encoder (masked, with
`lm_head: masked`) or hf-decoder (causal) entry. A zero-shot task built from the same source task must not be
scored with it (the provenance names the task).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from geneb.core.provenance import file_sha256  # noqa: E402
from geneb.zeroshot.reference_lms import ReferenceLMSettings, pretrain_reference_lm  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kind", choices=["masked", "causal"], required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--task", default="gb_human_nontata_promoters__resplit")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    args = ap.parse_args()
    train = args.shared / "data" / "tasks" / args.task / "train.csv.gz"
    sequences = pd.read_csv(train)["sequence"].astype(str).tolist()
    settings = ReferenceLMSettings(kind=args.kind, steps=args.steps, seed=args.seed, window=args.window)
    record = pretrain_reference_lm(
        args.out, sequences, settings, data={"task": args.task, "train_sha256": file_sha256(train, 64)}
    )
    curve = record["loss_every_10_steps"]
    print(
        f"wrote {args.out}: {args.kind}, {args.steps} steps, loss {curve[0]} -> {curve[-1]}, {record['cpu_seconds']} s CPU"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
