"""Agreement across machines: a run's model x regime means against a committed reference, within a tolerance.

The same code on two machines gives scores that agree to the last bit only where the machines compute alike:
BLAS kernels chosen by CPU instruction set, torch kernels, reduction orders (docs/performance.md, "Agreement
across machines"). Measured on the quickstart (config/config.yaml) on two machines: single cells differ by up to
0.011 MCC, model x regime means by at most 0.001, against a median 95% CI width of 0.13. The test of that
agreement compares the model x regime means of a fresh run with a committed reference
(`tests/reference/quickstart_means.json`, written by `tools/quickstart_reference.py` from a finished run's
scores.parquet) within TOLERANCE: three times the largest difference measured between machines, and far below
what a real change of the code moves a mean by.

A reference is one JSON document: {"protocol", "metric", "view", "tolerance", "source" (what it was made from),
"means": {model: {regime: {"mean": float, "n_tasks": int, "tasks": [task, ...]}}}}. Each mean is over the
model's tasks of the seed mean of each (task, regime) cell, default view only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from geneb.core import integrity
from geneb.core.integrity import write_text_atomic
from geneb.tables.scores import REGIMES, load_scores

#: the largest |difference| allowed between a run's model x regime mean MCC and the reference's: 3x the largest
#: difference measured between two machines on the quickstart (0.001; single cells up to 0.011)
TOLERANCE = 0.003
#: the reference's format version
_REFERENCE_VERSION = 1
#: the view whose rows the means are taken over (a run without `views:`)
_DEFAULT_VIEW = "default"


def _regime_means(scores: pd.DataFrame, *, protocol: str, metric: str = "MCC") -> dict[str, dict[str, dict]]:
    """{model: {regime: {"mean", "n_tasks", "tasks"}}} of a validated score table (`load_scores`): per (model,
    task, regime) the mean `value` over seeds, then the mean of those over the model's tasks (sorted task names
    recorded). Only GENEB rows (`source` geneb) of `protocol` and `metric` and of the default view (when the
    table has views). Raises ValueError when no row is left, naming the protocol and metric."""
    rows = scores[(scores["protocol"] == protocol) & (scores["metric"] == metric)]
    if "source" in rows.columns:
        rows = rows[rows["source"] == "geneb"]
    if "view" in rows.columns:
        rows = rows[rows["view"] == _DEFAULT_VIEW]
    if rows.empty:
        raise ValueError(f"no {metric} rows of protocol {protocol!r} (default view) in the score table")
    cells = rows.groupby(["model", "regime", "task"], sort=True)["value"].mean().reset_index()
    out: dict[str, dict[str, dict]] = {}
    for (model, regime), g in cells.groupby(["model", "regime"], sort=True):
        out.setdefault(str(model), {})[str(regime)] = {
            "mean": round(float(g["value"].mean()), 6),
            "n_tasks": int(len(g)),
            "tasks": sorted(str(t) for t in g["task"]),
        }
    return out


def make_reference(
    scores_path: str | Path, *, protocol: str, metric: str = "MCC", tolerance: float = TOLERANCE
) -> dict[str, Any]:
    """The reference document (module docstring) of the score table at `scores_path` (read through
    `load_scores`, which validates it). The table's code revision and the thread pools of its probes, when
    recorded, go into "source"."""
    scores = load_scores(str(scores_path))
    source: dict[str, Any] = {"scores": str(scores_path), "rows": int(len(scores))}
    for col in ("geneb_commit", "geneb_dirty", "sklearn_version", "numpy_version"):
        if col in scores.columns:
            values = sorted({str(v) for v in scores[col].dropna()})
            source[col] = values[0] if len(values) == 1 else values
    threads = integrity.read_parquet(scores_path).attrs.get("geneb_probe_threads")
    if threads:
        source["probe_threads"] = threads
    return {
        "reference_version": _REFERENCE_VERSION,
        "protocol": protocol,
        "metric": metric,
        "view": _DEFAULT_VIEW,
        "tolerance": float(tolerance),
        "source": source,
        "means": _regime_means(scores, protocol=protocol, metric=metric),
    }


def write_reference(reference: dict[str, Any], path: str | Path) -> None:
    """Write `reference` as indented JSON with sorted keys (atomically), so a regenerated file diffs cleanly."""
    write_text_atomic(Path(path), json.dumps(reference, indent=1, sort_keys=True) + "\n")


def _read_reference(path: str | Path) -> dict[str, Any]:
    """The reference at `path`. Raises ValueError naming the file when it is not a reference of this version or a
    key is missing."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    missing = [k for k in ("reference_version", "protocol", "metric", "tolerance", "means") if k not in doc]
    if missing or doc.get("reference_version") != _REFERENCE_VERSION:
        raise ValueError(
            f"{path}: not a model x regime reference of version {_REFERENCE_VERSION} (missing keys {missing}, "
            f"version {doc.get('reference_version')!r}); regenerate it with tools/quickstart_reference.py write"
        )
    return doc


def _compare_means(
    found: dict[str, dict[str, dict]], reference: dict[str, Any], *, tolerance: float | None = None
) -> list[str]:
    """Every disagreement of `found` (`_regime_means` of a run) with `reference` (a reference document), one line
    each, [] when they agree: a model or regime of one missing from the other, a cell averaged over other tasks,
    a mean that is not finite, or |found - reference| > tolerance (default: the reference's own). Regimes are
    compared in REGIMES order."""
    tol = float(reference["tolerance"] if tolerance is None else tolerance)
    want = reference["means"]
    problems = [f"model {m!r}: in the reference, not in the run" for m in sorted(set(want) - set(found))]
    problems += [f"model {m!r}: in the run, not in the reference" for m in sorted(set(found) - set(want))]
    for model in sorted(set(want) & set(found)):
        regimes = [r for r in REGIMES if r in want[model] or r in found[model]]
        regimes += sorted((set(want[model]) | set(found[model])) - set(regimes))
        for regime in regimes:
            w, f = want[model].get(regime), found[model].get(regime)
            where = f"model {model!r}, regime {regime!r}"
            if w is None or f is None:
                problems.append(f"{where}: {'not in the run' if f is None else 'not in the reference'}")
                continue
            if list(f["tasks"]) != list(w["tasks"]):
                gone, new = sorted(set(w["tasks"]) - set(f["tasks"])), sorted(set(f["tasks"]) - set(w["tasks"]))
                problems.append(f"{where}: other tasks (missing {gone}, extra {new})")
                continue
            diff = float(f["mean"]) - float(w["mean"])
            if not math.isfinite(diff) or abs(diff) > tol:
                problems.append(
                    f"{where}: mean {reference['metric']} {float(f['mean']):.6f}, reference "
                    f"{float(w['mean']):.6f}, difference {diff:+.6f} beyond the tolerance {tol}"
                )
    return problems


def check_against_reference(
    scores_path: str | Path, reference_path: str | Path, *, tolerance: float | None = None
) -> list[str]:
    """`_compare_means` of the score table at `scores_path` with the reference at `reference_path` (its protocol
    and metric); [] when they agree within the tolerance."""
    reference = _read_reference(reference_path)
    scores = load_scores(str(scores_path))
    found = _regime_means(scores, protocol=reference["protocol"], metric=reference["metric"])
    return _compare_means(found, reference, tolerance=tolerance)
