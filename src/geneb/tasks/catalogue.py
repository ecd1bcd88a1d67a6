"""The task catalogue (config/tasks.tsv): loading, validation and which source serves each task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from geneb.tasks.sources import ENV_PAPER_TASK_SOURCE, ENV_TASK_SOURCE, resolve_source_string


class CatalogueError(ValueError):
    """A catalogue problem: unknown task, duplicate id, a row that breaks the schema."""


def read_catalogue(path: str | Path) -> pd.DataFrame:
    """The catalogue as strings (empty cells stay ''), indexed by `task`. Raises CatalogueError on duplicate
    task ids or a missing `task` column."""
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if "task" not in df.columns:
        raise CatalogueError(f"{path}: column 'task' missing")
    dup = df["task"][df["task"].duplicated()]
    if not dup.empty:
        raise CatalogueError(f"{path}: duplicate task ids: {sorted(set(dup))}")
    df = df.set_index("task", drop=False)
    df.attrs["path"] = str(path)
    return df


def validate_catalogue(df: pd.DataFrame, schema: dict[str, Any]) -> None:
    """Validate every row against the JSON schema (workflow/schemas/tasks.schema.yaml); the error names the
    task and the offending field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    for task, row in df.iterrows():
        errors = sorted(validator.iter_errors(row.to_dict()), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            field = "/".join(map(str, e.path)) or "(row)"
            raise CatalogueError(f"task catalogue row {task!r}, field {field}: {e.message}")


def task_row(df: pd.DataFrame, task: str) -> dict[str, Any]:
    """One catalogue row as a dict; raises CatalogueError naming close matches for an unknown task."""
    if task not in df.index:
        import difflib

        close = difflib.get_close_matches(task, df.index.tolist(), n=3)
        sheet = df.attrs.get("path", "config/tasks.tsv")
        raise CatalogueError(
            f"task {task!r} is not in the catalogue {sheet} (the config's task_sheet); add a row for it there "
            "(docs/adding-a-task.md)" + (f"; did you mean {close}?" if close else "")
        )
    return {str(k): v for k, v in df.loc[task].to_dict().items()}


def source_string(row: dict[str, Any], config: dict[str, Any]) -> str:
    """The source string for a task: mirrored tasks use `task_source` ($GENEB_TASK_SOURCE wins); paper tasks
    their catalogue source unless `paper_task_source` ($GENEB_PAPER_TASK_SOURCE wins) is set."""
    if row["source"] == "mirror":
        return resolve_source_string(config.get("task_source"), ENV_TASK_SOURCE)
    override = resolve_source_string(config.get("paper_task_source") or row["source"], ENV_PAPER_TASK_SOURCE)
    return override
