"""User registry files beside GENEB's (config key `registry_extra:`): each holds only the user's entries; they are
merged with the shipped config/models.yaml, an id given by two files refused naming both. Torch-free.

The merged mapping is written once per run to one file (`write_merged_sheet`) that the run's jobs and analyses read
as their model sheet, so every reader of the registry sees the same entries (docs/adding-a-model.md, "A registry
file of your own").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from geneb.core.atomic import write_text_atomic
from geneb.registry.registry import RegistryError

#: the file of a run's merged registry, under its results_dir
MERGED_SHEET = "registry/models.yaml"


def sheet_label(path: str | os.PathLike[str], extra: Sequence[str | os.PathLike[str]]) -> str:
    """How an error names the registry: the shipped file, then each extra file ("a.yaml + b.yaml")."""
    return " + ".join(str(p) for p in (path, *extra))


def merge_extra(
    data: dict[str, Any], path: str | os.PathLike[str], extras: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Add the `models` entries and `matched_pairs` of each extra registry mapping (file name, parsed mapping, in
    order) to `data`, the shipped registry parsed from `path`, in place. Raises RegistryError for an id an extra
    file gives that the shipped registry or an earlier extra file gives too, naming the id and both files."""
    owner = {str(model): str(path) for model in data["models"]}
    for name, extra in extras:
        for model, spec in extra["models"].items():
            if str(model) in owner:
                raise RegistryError(
                    f"registry_extra: model {model!r} of {name} is already an entry of {owner[str(model)]}; "
                    "give it another id (an extra file adds models, it does not replace them)"
                )
            owner[str(model)] = name
            data["models"][model] = spec
        pairs = extra.get("matched_pairs")
        if pairs:
            data["matched_pairs"] = [*(data.get("matched_pairs") or []), *pairs]


def write_merged_sheet(data: Mapping[str, Any], results_dir: str | os.PathLike[str]) -> str:
    """Write the merged registry mapping (as parsed, python entry paths made absolute, before pins and weights) to
    `<results_dir>/registry/models.yaml` when its content changed (so its mtime reruns nothing), atomically;
    returns its path."""
    out = Path(results_dir) / MERGED_SHEET
    text = "# written by GENEB from config/models.yaml and the config's registry_extra files: do not edit\n"
    text += yaml.safe_dump(dict(data), sort_keys=False)
    if not out.is_file() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out, text)
    return str(out)
