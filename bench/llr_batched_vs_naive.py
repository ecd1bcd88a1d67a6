"""Benchmark: the `llr` scorer's batched forward passes (geneb.zeroshot.llr.score_llr) against its naive reference
(score_llr_naive: one forward pass per row, strand and allele, causal windows summed over every token).

Run from the repository root: `python bench/llr_batched_vs_naive.py [--rows 64] [--length 200] [--batch-size 32]
[--shared ../shared]`. Models: a seeded random-init MixtralForCausalLM on the real Mistral-DNA-v1-1M config and
BPE tokenizer, and a seeded random-init BertForMaskedLM (hidden 64, 2 layers) on the real DNABERT-2 tokenizer,
written as hub-layout folders in a temporary directory and loaded through geneb.zeroshot.llr_load (weights are
random: the timing and the agreement are what is measured, not the scores). Rows: `--rows` seeded random variants
in `--length`-bp windows, both strands. One torch thread; process CPU seconds and wall seconds; the largest
absolute difference between the two score vectors is printed.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _task(rows: int, length: int, seed: int = 0):
    from geneb.zeroshot.task import ZeroShotTask

    rng = np.random.default_rng(seed)
    data = []
    for i in range(rows):
        seq = "".join(rng.choice(list("ACGT"), size=length))
        pos = int(rng.integers(length))
        alt = str(rng.choice([b for b in "ACGT" if b != seq[pos]]))
        data.append({"sequence": seq, "pos": pos, "ref": seq[pos], "alt": alt, "label": i % 2})
    return ZeroShotTask(name="bench", kind="variant", rows=pd.DataFrame(data), data_sha256="0" * 64)


def _folders(shared: Path, root: Path) -> dict[str, tuple[Path, str, str]]:
    import torch
    from transformers import AutoConfig, BertConfig, BertForMaskedLM, MixtralForCausalLM

    out = {}
    real = shared / "models" / "mistral-dna-v1-1m-hg38-finetuned-prom"
    causal = root / "causal"
    causal.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(real / name, causal / name)
    torch.manual_seed(0)
    MixtralForCausalLM(AutoConfig.from_pretrained(real)).save_pretrained(causal)
    out["causal"] = (causal, "hf-decoder", "causal")
    tok = shared / "models" / "tokenizers" / "dnabert-2-117m"
    masked = root / "masked"
    masked.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tok / name, masked / name)
    config = BertConfig(
        vocab_size=4096,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=512,
        pad_token_id=3,
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(masked)
    out["masked"] = (masked, "hf-encoder", "masked")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--length", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    args = ap.parse_args()
    import torch

    from geneb.registry.extraction import extraction_settings
    from geneb.zeroshot.llr import score_llr, score_llr_naive
    from geneb.zeroshot.llr_load import load_language_model

    torch.set_num_threads(1)
    task = _task(args.rows, args.length)
    with tempfile.TemporaryDirectory() as tmp:
        for kind, (folder, family, head) in _folders(args.shared.resolve(), Path(tmp)).items():
            entry = {
                "display": kind,
                "family": family,
                "source": {"kind": "local", "path": str(folder)},
                "architecture_family": "test",
                "tokenizer_type": "bpe",
                "params": 0,
                "pretraining_domain": "none",
                "license": "test",
                "extraction": {"max_tokens": 256},
            }
            model = load_language_model(extraction_settings({"models": {kind: entry}}, kind, {}), head=head)
            timings = {}
            scores = {}
            for name, run in (
                ("batched", lambda m=model: score_llr(m, task, batch_size=args.batch_size)),
                ("naive", lambda m=model: score_llr_naive(m, task)),
            ):
                cpu, wall = time.process_time(), time.perf_counter()
                scores[name] = run()["score"].to_numpy()
                timings[name] = (time.process_time() - cpu, time.perf_counter() - wall)
            diff = float(np.abs(scores["batched"] - scores["naive"]).max())
            print(
                f"{kind}: {args.rows} variants x 2 strands, {args.length} bp: batched {timings['batched'][0]:.2f} s CPU "
                f"({timings['batched'][1]:.2f} s wall), naive {timings['naive'][0]:.2f} s CPU "
                f"({timings['naive'][1]:.2f} s wall), speed-up {timings['naive'][0] / timings['batched'][0]:.1f}x CPU; "
                f"max |batched - naive| {diff:.2e}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
