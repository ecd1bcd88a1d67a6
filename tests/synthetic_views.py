"""A synthetic run with several views per model (layers x poolings x reverse complement, layer rules registry /
fixed / inner_cv) and two protocols, with planted answers, for the view analyses (best layer, sensitivity) and
`geneb compare-cells`.

Planted: "m-mid" is best at layer 2 of 0..4 (relative depth 0.5) and its registry layer is the last one; the other
layered models are best at their last layer (the registry's); under pooling "last", "m-b" overtakes "m-a" in the
first 4 categories and nowhere else; pooling "max", reverse complement and protocol geneb-strict change nothing
(the strict protocol's predictions are drawn again: only noise). "kmer" has one view (no layers, one pooling).
Predictions: exactly round(accuracy * n) test rows right, drawn at random, so MCC is nearly the planted level.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from geneb.core.categories import CATEGORIES

LEVEL = {"m-a": 0.86, "m-b": 0.74, "m-mid": 0.70, "m-deep": 0.66, "kmer": 0.62}
LAYERS = (0, 1, 2, 3, 4)
N_LAYERS = 4
POOLINGS = ("mean", "last", "max")
N_TEST = 200
SEEDS = {"full": (13, 17), "10shot": (13, 17)}
TASKS = {f"t{i:02d}": c for i, c in enumerate(CATEGORIES)}
PROTOCOLS = ("geneb-paper", "geneb-strict")
LAST_POOLING_SWAP = CATEGORIES[:4]


def accuracy(model: str, layer: int | None, pooling: str, category: str, regime: str) -> float:
    """The planted accuracy of a view's cell."""
    acc = LEVEL[model] - (0.06 if regime == "10shot" else 0.0)
    if layer is not None:
        depth = layer / N_LAYERS
        acc -= 0.24 * abs(depth - 0.5) if model == "m-mid" else 0.10 * (1 - depth)
    if model == "m-b" and pooling == "last" and category in LAST_POOLING_SWAP:
        acc += 0.22
    return min(acc, 0.99)


def views_of(model: str, registry: bool = True) -> list[dict]:
    """The model's views: every (layer, pooling, rc) as rule "fixed", the last layer as rule "registry" (left out
    with registry=False, as a real views run writes none), the planted best layer as rule "inner_cv"; "kmer": one
    registry view without a layer."""
    if model == "kmer":
        return [dict(view="kmer|mean|rc0", layer=None, pooling="mean", reverse_complement=False, layer_rule="registry")]
    best = 2 if model == "m-mid" else N_LAYERS
    out = []
    for pooling in POOLINGS:
        for rc in (False, True):
            tail = f"{pooling}|rc{int(rc)}"
            out += [
                dict(view=f"L{i}|{tail}", layer=i, pooling=pooling, reverse_complement=rc, layer_rule="fixed")
                for i in LAYERS
            ]
            if registry:
                out.append(
                    dict(
                        view=f"reg|{tail}",
                        layer=N_LAYERS,
                        pooling=pooling,
                        reverse_complement=rc,
                        layer_rule="registry",
                    )
                )
            out.append(
                dict(view=f"cv|{tail}", layer=best, pooling=pooling, reverse_complement=rc, layer_rule="inner_cv")
            )
    return out


VIEW_KEYS = ("view", "layer", "layer_depth", "pooling", "reverse_complement", "layer_rule")


def _mcc(y: np.ndarray, p: np.ndarray) -> float:
    """Binary MCC (0 when a margin is empty), as sklearn's matthews_corrcoef."""
    tp, tn = float(np.sum((y == 1) & (p == 1))), float(np.sum((y == 0) & (p == 0)))
    fp, fn = float(np.sum((y == 0) & (p == 1))), float(np.sum((y == 1) & (p == 0)))
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / den) if den else 0.0


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """The view columns in their contract dtypes (layer Int64, layer_depth Float64, reverse_complement bool)."""
    return df.astype(
        {
            "view": str,
            "pooling": str,
            "layer_rule": str,
            "layer": "Int64",
            "layer_depth": "Float64",
            "reverse_complement": bool,
        }
    )


def write_view_run(root: Path, *, protocols: tuple[str, ...] = PROTOCOLS, registry: bool = True) -> dict:
    """Write results/tables/scores.parquet, results/predictions/..., config/models.yaml and config/tasks.tsv of
    the planted run under `root`; returns {"tasks": {task: category}}."""
    rng = np.random.default_rng(1)
    rows = []
    y = np.repeat([0, 1], N_TEST // 2)
    for protocol in protocols:
        for task, cat in TASKS.items():
            for model in LEVEL:
                cols: dict[str, list] = {k: [] for k in ("regime", "seed", "y_pred", *VIEW_KEYS)}
                for v in views_of(model, registry):
                    layer = v["layer"]
                    attrs = {**v, "layer": layer, "layer_depth": None if layer is None else layer / N_LAYERS}
                    for regime, seeds in SEEDS.items():
                        acc = accuracy(model, layer, v["pooling"], cat, regime)
                        wrong = None
                        for seed in seeds:
                            if wrong is None or regime != "full":  # the full regime is one fit, reported per seed
                                wrong = rng.permutation(N_TEST)[: int(round((1 - acc) * N_TEST))]
                            yp = y.copy()
                            yp[wrong] = 1 - yp[wrong]
                            cols["regime"].append(np.full(N_TEST, regime, dtype=object))
                            cols["seed"].append(np.full(N_TEST, seed))
                            cols["y_pred"].append(yp)
                            for k in VIEW_KEYS:
                                cols[k].append(np.full(N_TEST, attrs[k], dtype=object))
                            ident = {"protocol": protocol, "model": model, "task": task, "category": cat}
                            for metric, val in (("MCC", _mcc(y, yp)), ("Acc", float(np.mean(y == yp)))):
                                rows.append(
                                    {
                                        **ident,
                                        "schema_version": "2",
                                        "regime": regime,
                                        "seed": seed,
                                        "metric": metric,
                                        "value": val,
                                        "n_test": N_TEST,
                                        **attrs,
                                    }
                                )
                n_cells = len(cols["seed"])
                pred = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
                pred = pred.assign(
                    protocol=protocol,
                    model=model,
                    task=task,
                    row=np.tile(np.arange(N_TEST), n_cells),
                    y_true=np.tile(y, n_cells),
                    score=np.nan,
                )
                path = root / "results" / "predictions" / protocol / model / f"{task}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                _typed(pred).to_parquet(path, index=False)
    (root / "results" / "tables").mkdir(parents=True, exist_ok=True)
    scores = _typed(pd.DataFrame(rows))
    scores.to_parquet(root / "results" / "tables" / "scores.parquet", index=False)
    (root / "config").mkdir(exist_ok=True)
    reg = {
        "schema_version": 1,
        "matched_pairs": [],
        "models": {
            m: {
                "display": m.upper(),
                "params": 1000 * (i + 1),
                "architecture_family": "transformer-decoder" if m != "kmer" else "kmer",
                "tokenizer_type": "single-nucleotide" if m != "kmer" else "k-mer",
                "pretraining_domain": "human" if m != "kmer" else "none",
                "family": "kmer",
                "source": {"kind": "builtin"},
                "builtin": {"k": 3},
                "license": "none",
            }
            for i, m in enumerate(LEVEL)
        },
    }
    (root / "config" / "models.yaml").write_text(yaml.safe_dump(reg))
    cat_rows = [
        {
            "task": t,
            "task_set": "mirror",
            "category": c,
            "label": t,
            "geneb_task_id": "",
            "same_split_as_geneb": "",
            "organism": "x",
            "taxon_group": "human",
        }
        for t, c in TASKS.items()
    ]
    pd.DataFrame(cat_rows).to_csv(root / "config" / "tasks.tsv", sep="\t", index=False)
    return {"tasks": dict(TASKS)}


def _build_view_run(root: Path) -> None:
    """The planted views run in `root`, analysed end to end (`view_run`)."""
    from geneb.analysis.registry import LEADERBOARD_TABLES
    from geneb.analysis.steps import analyses_step, leaderboard_step
    from geneb.figures.registry import render_figures
    from synth import analysis_config

    write_view_run(root)
    t = root / "results" / "tables"
    analysis = analysis_config({"bootstrap": {"n_resamples": 200, "seed": 5}})
    common = {
        "scores": str(t / "scores.parquet"),
        "models_yaml": str(root / "config" / "models.yaml"),
        "tasks_tsv": str(root / "config" / "tasks.tsv"),
        "analysis_config": analysis,
        "view": "geneb",
    }
    names = LEADERBOARD_TABLES
    leaderboard_step(**common, outputs={n: str(t / f"{n}.parquet") for n in names})
    analyses_step(**common, predictions_root=str(root / "results" / "predictions"), outdir=str(t))
    render_figures(t, root / "results" / "figures", protocol="geneb-paper")


@pytest.fixture(scope="session")
def view_run(tmp_path_factory):
    """Root of the planted views run, analysed end to end: results/tables (leaderboard, every analysis table),
    results/figures, results/predictions, config/; built once per session for every xdist worker
    (`workflow_support.shared_folder`): read it, never change it."""
    from workflow_support import shared_folder

    return shared_folder(tmp_path_factory, "view-run", _build_view_run)
