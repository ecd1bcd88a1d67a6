"""Fine-tuning throughput: GENEB's finetune-lora training loop against a plain `transformers.Trainer` loop with the
same recipe, on the same real checkpoint, adapters, head, rows and batches.

Both train the network `geneb.finetune.train.adapt` builds (the real Mistral-DNA checkpoint of ../shared with
LoRA on its attention projections and a linear head, seed 0) on the same capped real task for the same epochs:
AdamW (lr, weight decay, no decay on biases), linear warm-up over 10% of the steps then linear decay, gradient
clipping at 1, batch 16. GENEB's loop (`geneb.finetune.train.train_cell`) also scores its validation rows and writes
a checkpoint after every epoch; the Trainer loop does neither (save_strategy "no"), so the ratio includes that
overhead. Each variant runs in its own process (peak resident memory: `resource.getrusage`), on one torch thread.
Reported: optimizer steps per second (CPU and wall), their ratio, the last epoch's mean training loss of each (the
row order differs: GENEB's `default_rng([seed, epoch])`, the Trainer's seeded sampler), the test MCC of each.

    python bench/finetune_step.py            # writes bench/results/finetune.json and the docs/performance.md section
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
MODEL = "mistral-dna-1m-ft-tf0"
TASK = "gue_prom_core_all"
N_TRAIN, N_TEST, EPOCHS, SEED = 320, 200, 3, 0
OUT = REPO / "bench" / "results" / "finetune.json"


def _setup() -> dict[str, Any]:
    import numpy as np
    import pandas as pd
    import torch
    import yaml

    from geneb.extract.step import model_inputs
    from geneb.finetune.recipe import from_config
    from geneb.finetune.train import adapt, load_encoder, tokenise
    from geneb.registry.load import extraction_settings, load_registry
    from geneb.tasks.prepare import stratified_cap

    torch.set_num_threads(1)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    recipe_settings = dict(config["finetune"]["finetune-lora"], epochs=EPOCHS, patience=EPOCHS + 1)
    recipe = from_config(recipe_settings, config["probe"]["geneb-paper"])
    folder = SHARED / "data" / "tasks" / TASK
    tr = pd.read_csv(folder / "train.csv.gz")
    te = pd.read_csv(folder / "test.csv.gz")
    tr = tr.iloc[stratified_cap(tr["label"].to_numpy(), N_TRAIN, 0)].reset_index(drop=True)
    te = te.iloc[stratified_cap(te["label"].to_numpy(), N_TEST, 0)].reset_index(drop=True)
    tr["row"], te["row"] = np.arange(len(tr)), np.arange(len(te))
    settings = extraction_settings(load_registry(REPO / "config" / "models.yaml"), MODEL, {})
    encoder = load_encoder(settings, device="cpu", threads=1)
    pristine = encoder.model
    tok_tr = tokenise(encoder, model_inputs(tr, task=TASK, split="train"), tr["row"].tolist())
    tok_te = tokenise(encoder, model_inputs(te, task=TASK, split="test"), te["row"].tolist())
    adapted = adapt(encoder, pristine, settings["family"], recipe, 2, SEED)
    return {
        "recipe": recipe,
        "adapted": adapted,
        "train_rows": tok_tr.rows_chunks(np.arange(len(tr))),
        "test_rows": tok_te.rows_chunks(np.arange(len(te))),
        "y": tr["label"].to_numpy().astype("int64"),
        "y_test": te["label"].to_numpy().astype("int64"),
    }


def _geneb(s: dict[str, Any]) -> dict[str, Any]:
    from geneb.finetune.train import predict, train_cell, validation_split

    fit, _ = validation_split(s["y"], s["recipe"], SEED)
    steps = math.ceil(len(fit) / s["recipe"].batch_size) * EPOCHS
    with tempfile.TemporaryDirectory() as tmp:
        c0, w0 = time.process_time(), time.perf_counter()
        rec = train_cell(
            s["adapted"],
            s["train_rows"],
            s["y"],
            s["recipe"],
            SEED,
            cell="bench",
            checkpoint=Path(tmp) / "c.pt",
            key={},
        )
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    proba = predict(s["adapted"], s["test_rows"], s["recipe"].batch_size)
    return {"steps": steps, "cpu_s": cpu, "wall_s": wall, "final_loss": rec.final_loss, "proba": proba}


def _trainer(s: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import torch
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from geneb.finetune.train import predict, validation_split

    recipe, clf = s["recipe"], s["adapted"].classifier
    fit, _ = validation_split(s["y"], recipe, SEED)  # the same training rows as GENEB's loop
    rows, y = s["train_rows"], s["y"]

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.clf = clf

        def forward(self, idx: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
            part = [rows[int(i)] for i in idx]
            logits = self.clf(*self.clf.batch(part), len(part))
            return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}

    data = [{"idx": int(i), "labels": int(y[i])} for i in fit]

    def collate(batch: list[dict[str, int]]) -> dict[str, torch.Tensor]:
        return {k: torch.tensor([b[k] for b in batch]) for k in ("idx", "labels")}

    losses: list[float] = []

    class Record(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    steps_per_epoch = math.ceil(len(fit) / recipe.batch_size)
    total = steps_per_epoch * EPOCHS
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(
            output_dir=tmp,
            learning_rate=recipe.learning_rate,
            weight_decay=recipe.weight_decay,
            lr_scheduler_type="linear",
            warmup_steps=math.ceil(recipe.warmup_fraction * total),
            num_train_epochs=EPOCHS,
            per_device_train_batch_size=recipe.batch_size,
            max_grad_norm=recipe.max_grad_norm,
            seed=SEED,
            save_strategy="no",
            eval_strategy="no",
            report_to=[],
            use_cpu=True,
            logging_steps=steps_per_epoch,
            remove_unused_columns=False,
            dataloader_num_workers=0,
            disable_tqdm=True,
        )
        trainer = Trainer(model=Wrapped(), args=args, train_dataset=data, data_collator=collate, callbacks=[Record()])
        c0, w0 = time.process_time(), time.perf_counter()
        trainer.train()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    proba = predict(s["adapted"], s["test_rows"], recipe.batch_size)
    return {
        "steps": total,
        "cpu_s": cpu,
        "wall_s": wall,
        "final_loss": losses[-1] if losses else np.nan,
        "proba": proba,
    }


def _child(kind: str, queue: Any) -> None:
    from sklearn.metrics import matthews_corrcoef

    s = _setup()
    out = (_geneb if kind == "geneb" else _trainer)(s)
    out["test_mcc"] = float(matthews_corrcoef(s["y_test"], out.pop("proba").argmax(axis=1)))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(out)


def run_variant(kind: str) -> dict[str, Any]:
    """One variant in a fresh process (spawn): its timings, final loss, test MCC and peak resident memory."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kind, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return dict(out)


def main() -> None:
    import peft
    import torch
    import transformers

    res = {kind: run_variant(kind) for kind in ("geneb", "trainer")}
    for r in res.values():
        r["steps_per_cpu_s"] = r["steps"] / r["cpu_s"]
        r["steps_per_wall_s"] = r["steps"] / r["wall_s"]
    summary = {
        "model": MODEL,
        "task": TASK,
        "n_train": N_TRAIN,
        "n_test": N_TEST,
        "epochs": EPOCHS,
        "threads": 1,
        "results": res,
        "throughput_ratio_cpu": res["geneb"]["steps_per_cpu_s"] / res["trainer"]["steps_per_cpu_s"],
        "throughput_ratio_wall": res["geneb"]["steps_per_wall_s"] / res["trainer"]["steps_per_wall_s"],
        "final_loss_diff": abs(res["geneb"]["final_loss"] - res["trainer"]["final_loss"]),
        "machine": f"{platform.machine()}, Python {sys.version.split()[0]}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, peft {peft.__version__}",
    }
    OUT.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
