"""A small synthetic GENEB run (scores, predictions, registry, catalogue) analysed end to end, shared by the
figure, report, CLI and workflow-step tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import matthews_corrcoef

from geneb.core.categories import CATEGORIES

MODELS = {
    "enc-small": {
        "display": "Encoder small",
        "params": 10e6,
        "architecture_family": "transformer-encoder",
        "tokenizer_type": "bpe",
        "pretraining_domain": "human",
    },
    "enc-small-ms": {
        "display": "Encoder small MS",
        "params": 12e6,
        "architecture_family": "transformer-encoder",
        "tokenizer_type": "bpe",
        "pretraining_domain": "multispecies",
    },
    "enc-big": {
        "display": "Encoder big",
        "params": 500e6,
        "architecture_family": "transformer-encoder",
        "tokenizer_type": "k-mer",
        "pretraining_domain": "multispecies",
    },
    "ssm": {
        "display": "SSM",
        "params": 8e6,
        "architecture_family": "ssm",
        "tokenizer_type": "single-nucleotide",
        "pretraining_domain": "human",
    },
    "prok": {
        "display": "Prokaryotic",
        "params": 1e9,
        "architecture_family": "transformer-decoder",
        "tokenizer_type": "bpe",
        "pretraining_domain": "prokaryote",
    },
    "kmer": {
        "display": "4-mer",
        "params": 0,
        "architecture_family": "kmer",
        "tokenizer_type": "k-mer",
        "pretraining_domain": "none",
    },
}
#: planted accuracy level per model (full regime); k-shot regimes lower it
LEVEL = {"enc-small": 0.78, "enc-small-ms": 0.84, "enc-big": 0.86, "ssm": 0.74, "prok": 0.70, "kmer": 0.66}
SHOT = {"full": 0.0, "10shot": 0.08, "1shot": 0.14}
SEEDS = (13, 17)


def _write_run(root) -> dict:
    rng = np.random.default_rng(0)
    tasks = {f"{c.split()[0].lower().strip('.')}_{i}".replace("/", ""): c for c in CATEGORIES for i in range(2)}
    rows, cat_rows = [], []
    for task, cat in tasks.items():
        y = rng.integers(0, 2, 120)
        cat_rows.append(
            {
                "task": task,
                "task_set": "mirror",
                "category": cat,
                "label": task,
                "geneb_task_id": "",
                "same_split_as_geneb": "",
                "organism": "x",
                "taxon_group": "human",
            }
        )
        for model in MODELS:
            frames = []
            for regime, drop in SHOT.items():
                for seed in SEEDS:
                    acc = LEVEL[model] - drop + (0.2 if (model == "ssm" and cat == "Splice Sites") else 0.0)
                    right = rng.random(len(y)) < acc
                    yp = np.where(right, y, 1 - y)
                    frames.append(
                        pd.DataFrame(
                            {
                                "regime": regime,
                                "seed": seed,
                                "row": np.arange(len(y)),
                                "y_true": y,
                                "y_pred": yp,
                                "score": np.nan,
                            }
                        )
                    )
                    for metric, v in (("MCC", matthews_corrcoef(y, yp)), ("Acc", float(np.mean(y == yp)))):
                        rows.append(
                            {
                                "schema_version": "1",
                                "protocol": "geneb-paper",
                                "model": model,
                                "task": task,
                                "category": cat,
                                "regime": regime,
                                "seed": seed,
                                "metric": metric,
                                "value": v,
                                "ci_low": np.nan,
                                "ci_high": np.nan,
                                "n_train": 100,
                                "n_test": len(y),
                            }
                        )
            path = root / "results" / "predictions" / "geneb-paper" / model / f"{task}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pd.concat(frames).to_parquet(path, index=False)
    (root / "results" / "tables").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(root / "results" / "tables" / "scores.parquet", index=False)
    (root / "config").mkdir(exist_ok=True)
    reg = {
        "schema_version": 1,
        "matched_pairs": [
            {
                "id": "declared",
                "models": ["enc-small", "ssm"],
                "differs_in": "architecture",
                "held_equal": ["pretraining_data"],
                "note": "planted",
            }
        ],
        # the analyses read the registry through its one reader, which validates every entry as the workflow
        # does: builtin k-mer stand-ins carry the facts the analyses use
        "models": {
            m: {
                **spec,
                "params": int(spec["params"]),
                "family": "kmer",
                "source": {"kind": "builtin"},
                "builtin": {"k": 3},
                "license": "none",
            }
            for m, spec in MODELS.items()
        },
    }
    (root / "config" / "models.yaml").write_text(yaml.safe_dump(reg))
    pd.DataFrame(cat_rows).to_csv(root / "config" / "tasks.tsv", sep="\t", index=False)
    return {"tasks": tasks}


def _build_synthetic_run(root: Path) -> None:
    """The analysed synthetic run in `root` (`synthetic_run`), with `_write_run`'s facts in root/run_info.json."""
    from geneb.analysis.registry import LEADERBOARD_TABLES
    from geneb.analysis.steps import analyses_step, leaderboard_step
    from geneb.figures.registry import render_figures

    info = _write_run(root)
    t = root / "results" / "tables"
    common = {
        "scores": str(t / "scores.parquet"),
        "models_yaml": str(root / "config" / "models.yaml"),
        "tasks_tsv": str(root / "config" / "tasks.tsv"),
        "analysis_config": _analysis_config(),
        "view": "geneb",
    }
    leaderboard_step(**common, outputs={n: str(t / f"{n}.parquet") for n in LEADERBOARD_TABLES})
    analyses_step(**common, predictions_root=str(root / "results" / "predictions"), outdir=str(t))
    render_figures(t, root / "results" / "figures")
    (root / "run_info.json").write_text(json.dumps(info))


def _analysis_config() -> dict:
    from synth import analysis_config

    return analysis_config(
        {
            "bootstrap": {"n_resamples": 200, "seed": 5},
            "scale": {"rho_exclusions": [{"model": "prok", "reason": "planted outlier"}]},
        }
    )


@pytest.fixture(scope="session")
def synthetic_run(tmp_path_factory):
    """Root folder of an analysed synthetic run: results/tables (scores, leaderboard, analyses),
    results/figures, config/models.yaml, config/tasks.tsv; built once per session for every xdist worker
    (`workflow_support.shared_folder`): read it, never change it."""
    from workflow_support import shared_folder

    root = shared_folder(tmp_path_factory, "synthetic-run", _build_synthetic_run)
    info = json.loads((root / "run_info.json").read_text())
    return {"root": root, "config": {"analysis": _analysis_config(), "models": list(MODELS)}, **info}
