"""What every `geneb` subcommand shares: the user-facing error, file and table checks, the registry reader, the
parser with the CLI's error convention, and plain-text tables."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

import pandas as pd

from geneb.analysis.ranking import AGGREGATES
from geneb.core import yamlio
from geneb.core.categories import CATEGORIES
from geneb.registry.load import load_registry
from geneb.registry.registry import Registry, RegistryError


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def short_error(err: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, at most `limit` characters."""
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def existing_file(path: str, what: str, hint: str = "") -> Path:
    """`path` as a Path; CliError when it does not exist or is not a file."""
    p = Path(path)
    if not p.exists():
        raise CliError(f"{what} {p} not found{hint}")
    if not p.is_file():
        raise CliError(f"{what} {p} is not a file")
    return p


def category_name(name: str, allowed: tuple[str, ...] = (*CATEGORIES, *AGGREGATES)) -> str:
    if name in allowed:
        return name
    low = {c.lower(): c for c in allowed}
    if name.lower() in low:
        return low[name.lower()]
    raise CliError(f"unknown category {name!r}; choose one of: {', '.join(allowed)}")


def protocol_rows(df: pd.DataFrame, protocol: str | None) -> pd.DataFrame:
    have = sorted(df["protocol"].dropna().astype(str).unique())
    if not have:
        raise CliError("the table has no protocol values")
    if protocol is None:
        protocol = "geneb-paper" if "geneb-paper" in have else have[0]
    if protocol not in have:
        raise CliError(f"protocol {protocol!r} not in the table (have {have})")
    return df[df["protocol"] == protocol]


def read_registry(path: str, pins: str | None = None, config: str | None = None) -> Registry:
    """The model registry (config/models.yaml) through its one reader, `geneb.registry.load.load_registry`
    (schema and cross-field checks included), with the lockfile `pins` applied when given, and the
    `model_weights` paths and `execution.weights_dir` of the workflow config file `config` when given and
    present (`_weights_config`), and the user registry files of its `registry_extra` merged in; CliError for a
    missing file, unreadable or malformed YAML, or an invalid registry, lockfile or model_weights."""
    p = existing_file(path, "model sheet")
    weights, weights_dir = _weights_config(config)
    extra = _registry_extra_config(config)
    try:
        return load_registry(p, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
    except RegistryError as err:
        raise CliError(str(err)) from err


def _weights_config(path: str | None) -> tuple[dict[str, str], str | None]:
    """({model: path} of the config key `model_weights`, execution.weights_dir or None) of the workflow config
    file `path` ({} and None when there is no such file); CliError for a file that is not a YAML mapping."""
    if path is None or not Path(path).is_file():
        return {}, None
    import yaml

    try:
        data = yamlio.safe_load(Path(path).read_text()) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise CliError(f"config file {path} is not valid YAML ({short_error(err)})") from err
    if not isinstance(data, dict):
        raise CliError(f"config file {path}: expected a mapping of config keys")
    weights = data.get("model_weights") or {}
    if not isinstance(weights, dict):
        raise CliError(f"config file {path}: model_weights must be a mapping {{model id: path}}, got {weights!r}")
    return {str(k): str(v) for k, v in weights.items()}, ((data.get("execution") or {}).get("weights_dir"))


def _registry_extra_config(path: str | None) -> list[str]:
    """The user registry files of the config key `registry_extra` of the workflow config file `path` ([] when there
    is no such file or key); CliError for a value that is not a list of paths."""
    if path is None or not Path(path).is_file():
        return []
    import yaml

    try:
        extra = (yamlio.safe_load(Path(path).read_text()) or {}).get("registry_extra") or []
    except (yaml.YAMLError, UnicodeDecodeError, AttributeError) as err:
        raise CliError(f"config file {path}: not a YAML mapping of config keys ({short_error(err)})") from err
    if not isinstance(extra, list) or not all(isinstance(x, str) for x in extra):
        raise CliError(f"config file {path}: registry_extra must be a list of registry files, got {extra!r}")
    return extra


def left_table(df: pd.DataFrame) -> str:
    """`df` as text, one line per row, every column left-aligned to its widest cell, two spaces apart (the
    last column, free text, is not padded)."""
    cells = [list(map(str, df.columns))] + [
        ["" if pd.isna(v) else str(v) for v in row] for row in df.itertuples(index=False)
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(df.columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in cells).rstrip()


def positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return n


class Parser(argparse.ArgumentParser):
    """argparse with the CLI's convention for bad input: one `geneb: error:` line and exit status 2 (argparse
    itself prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"geneb: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(2)
