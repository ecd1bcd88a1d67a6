"""`geneb compare-cells`: a paired test between two cells of one task, read from the kept per-item predictions.

A cell is (model, view, protocol, regime) of a task; the two cells are written `key=value,...` (keys: model,
view, protocol, regime). Cell b takes every key it does not name from cell a, so `--a model=X --b model=Y`
compares two models on the same view, protocol and regime, and `--a model=X,view=V1 --b view=V2` two views of
one model. Defaults: regime full; protocol the only one under the predictions folder; view the file's only one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from geneb.analysis.stats.paired import compare_cells, read_cell
from geneb.cli.common import CliError
from geneb.tables.scores import REGIMES

#: the keys a cell may name
CELL_KEYS = ("model", "view", "protocol", "regime")


def parse_cell(text: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """{key: value} of a cell written "model=X,view=V,...", over `base` (cell a, for cell b). Raises CliError for
    an unknown key, an entry without "=", or a repeated key."""
    out = dict(base or {})
    seen = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise CliError(f"cell entry {part!r} is not key=value (keys: {', '.join(CELL_KEYS)})")
        if key not in CELL_KEYS:
            raise CliError(f"unknown cell key {key!r}; use {', '.join(CELL_KEYS)}")
        if key in seen:
            raise CliError(f"cell key {key!r} given twice in {text!r}")
        seen.add(key)
        out[key] = value
    return out


def _complete(cell: dict[str, str], root: Path, side: str) -> dict[str, str]:
    """Fill the defaults (regime full, the only protocol) and check what the cell names."""
    cell = {"regime": "full", **cell}
    if "model" not in cell:
        raise CliError(f"cell {side} names no model (model=...)")
    if cell["regime"] not in REGIMES:
        raise CliError(f"cell {side}: regime {cell['regime']!r} is not one of {', '.join(REGIMES)}")
    if "protocol" not in cell:
        have = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        if len(have) != 1:
            raise CliError(f"{root} holds the protocols {have}; name one (protocol=...)")
        cell["protocol"] = have[0]
    return cell


def _label(cell: dict[str, str], view: str) -> str:
    return f"model={cell['model']} view={view} protocol={cell['protocol']} regime={cell['regime']}"


def cmd_compare_cells(args: argparse.Namespace) -> str:
    """The report of `compare_cells` for the two cells of `args` (module docstring)."""
    root = Path(args.predictions)
    if not root.is_dir():
        raise CliError(f"predictions folder {root} not found; run the probes first, or pass --predictions")
    a = _complete(parse_cell(args.a), root, "a")
    b = _complete(parse_cell(args.b, parse_cell(args.a)), root, "b")
    if a == b:
        raise CliError("cells a and b are the same cell; change at least one of model, view, protocol, regime")
    frames, views = [], []
    for cell in (a, b):
        frame = read_cell(
            root,
            task=args.task,
            view=cell.get("view"),
            protocol=cell["protocol"],
            model=cell["model"],
            regime=cell["regime"],
        )
        frames.append(frame)
        views.append(str(frame["view"].iloc[0]) if "view" in frame.columns else "default")
    r = compare_cells(*frames, task=args.task, n_resamples=args.resamples, seed=args.seed, confidence=args.confidence)
    level = f"{args.confidence * 100:g}%"
    lines = [
        f"task {args.task}: {r['n_rows']} test items",
        f"a: {_label(a, views[0])}: MCC {r['mcc_a']:.4f} ({r['n_seeds_a']} seed(s))",
        f"b: {_label(b, views[1])}: MCC {r['mcc_b']:.4f} ({r['n_seeds_b']} seed(s))",
        f"MCC(a) - MCC(b) = {r['difference']:+.4f}, {level} CI [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}], "
        f"bootstrap p = {r['p_bootstrap']:.3g} (paired bootstrap over test items, {r['n_resamples']} resamples, seed {r['seed']})",
    ]
    if r["mcnemar_note"]:
        lines.append(f"McNemar: not applicable ({r['mcnemar_note']})")
    else:
        lines.append(
            f"McNemar (exact binomial): a right where b wrong {r['a_only_correct']}, b right where a wrong "
            f"{r['b_only_correct']}, p = {r['p_mcnemar']:.3g}"
        )
    return "\n".join(lines)
