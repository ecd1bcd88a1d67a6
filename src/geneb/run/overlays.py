"""How GENEB composes the config files of one run: the default config, the overlays, a user's own config.

Snakemake merges several `--configfile`s by replacing every list and merging mappings key by key, so of two
overlays that each add models the later one drops the other's. GENEB reads the same files again, in the order
Snakemake read them (the Snakefile's `configfile:` first, then each `--configfile`, then `--config`), and composes
them by three rules (README, "Composing overlays"):

* **Joined over every file** (`JOINED_KEYS`: `models_extra`, `registry_extra`): the ordered union of every file's
  list, the first file's included, each item once.
* **Selections** (`SELECTION_KEYS`: `models`, `tasks`, `protocols`, `zeroshot.tasks`, `zeroshot.markov_orders`,
  and the `seeds` and `few_shot_k` of every probe and fine-tune protocol): the first file's list (the default
  config's) is the starting value; when overlays set the key, their lists replace it and are joined with each
  other, in the order given. So one overlay replaces the default's list as before (config/paper.yaml runs the
  paper's tasks only), and two overlays run the union of theirs.
* **Everything else** merges as Snakemake merges it: mappings key by key, any other value replaced by the file
  given later. A value that two overlays set differently is a `Conflict`: the later file's value is used and
  planning warns, naming the key, both files and both values.

`--config KEY=VALUE` is applied last, over everything, as Snakemake applies it (what the command line says wins,
and a conflict about a key it sets is no conflict).
A selection list that the overlays replace is a `Replacement`: planning says which of the first file's items are
not run, as a warning when another overlay sets no list of its own for that key (it runs on the replacing list).
Which file contributed which item of a joined or selection key is kept (`Composition.contributions`).

Used by every route that plans a run: the workflow (`geneb.run.plan.plan_workflow`, from the file list Snakemake
keeps on its workflow object), `geneb verify`, and the tests' in-process plans.
"""

from __future__ import annotations

import copy
import fnmatch
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from geneb.core import yamlio

#: list keys joined over every config file, the first included (dotted paths)
JOINED_KEYS = ("models_extra", "registry_extra")
#: list keys whose overlays' lists replace the first file's and are joined with each other (dotted paths; `*`
#: stands for one mapping key, e.g. a protocol name)
SELECTION_KEYS = (
    "models",
    "tasks",
    "protocols",
    "zeroshot.tasks",
    "zeroshot.markov_orders",
    "probe.*.seeds",
    "probe.*.few_shot_k",
    "finetune.*.seeds",
    "finetune.*.few_shot_k",
)
#: the name of the `--config KEY=VALUE` settings in messages and contributions
COMMAND_LINE = "--config"
#: selection keys whose replaced items planning warns about (the rest are said as info): what a run covers
_WARN_REPLACED = ("models", "tasks")
#: at most this many items named in one line
_SHOWN = 8


@dataclass(frozen=True)
class ConfigFile:
    """One config file of a run: `name` as messages show it (the shortest spelling), `content` its mapping."""

    name: str
    content: Mapping[str, Any]


@dataclass(frozen=True)
class Conflict:
    """A plain key (`key`, dotted) that overlays set to different values: `values` is ((file name, value), ...)
    in the order the files were given; the last one is used."""

    key: str
    values: tuple[tuple[str, Any], ...]

    def line(self) -> str:
        """The plan-time warning: the key, every file with its value, the value used and how to choose."""
        sets = "; ".join(f"{name} sets {value!r}" for name, value in self.values)
        return (
            f"config: {self.key} is set differently by the overlays: {sets}. The run uses {self.values[-1][1]!r}, "
            f"from {self.values[-1][0]}, the file given later (the order of the --configfile files decides); to "
            f"choose, set {self.key} in one of the files only, or on the command line (--config)"
        )


@dataclass(frozen=True)
class Replacement:
    """A selection key (`key`) whose first-file list (of `base`) the overlays `by` replaced: `dropped` are the first
    file's items not in the run; `relying` the overlays that set no list of their own for the key (they run on the
    replacing list: named in the line of a key that `warns`)."""

    key: str
    base: str
    by: tuple[str, ...]
    dropped: tuple[Any, ...]
    relying: tuple[str, ...]

    @property
    def warns(self) -> bool:
        """Whether planning warns (models or tasks another overlay runs on), rather than saying it as info."""
        return bool(self.relying) and self.key in _WARN_REPLACED

    def line(self) -> str:
        """One line: the replaced list, what of it is not run, and the overlays that run on the replacing list."""
        text = (
            f"config: {self.key} of {' + '.join(self.by)} replaces the {self.key} of {self.base}; "
            f"{len(self.dropped)} of them not run: {_items(self.dropped)}"
        )
        if self.warns:
            one = len(self.relying) == 1
            text += (
                f". {', '.join(self.relying)} {'sets' if one else 'set'} no {self.key} of {'its' if one else 'their'} "
                f"own and {'runs' if one else 'run'} on the replacing list; to keep the others, list the {self.key} "
                "you want in one of the files"
            )
        return text


@dataclass(frozen=True)
class Composition:
    """The composed configuration of a run. config: the merged config (not yet validated). files: the file names in
    the order composed (the first is the default config). contributions: {key: {file name: [the items that file
    added, in order]}} of every joined and selection key some file set (the command line as `COMMAND_LINE`).
    conflicts / replacements: what planning reports (`lines`)."""

    config: dict[str, Any]
    files: tuple[str, ...]
    contributions: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    conflicts: tuple[Conflict, ...] = ()
    replacements: tuple[Replacement, ...] = ()
    sources: tuple[ConfigFile, ...] = field(default=(), repr=False)

    def entries(self, key: str) -> dict[Any, str]:
        """{item: "<file>: <key>: entry <n>"} of the items of list key `key` (dotted), each named by the file that
        added it and its place in that file's list (the command line as `COMMAND_LINE`): what an error about an item
        names."""
        lists = {f.name: _get(f.content, tuple(key.split("."))) for f in self.sources}
        out: dict[Any, str] = {}
        for name, items in self.contributions.get(key, {}).items():
            own = lists.get(name)
            for item in items:
                n = own.index(item) + 1 if isinstance(own, list) and item in own else items.index(item) + 1
                out[item] = f"{name}: {key}: entry {n}"
        return out

    def lines(self) -> list[tuple[str, str]]:
        """[(level "info" | "warning", line)] for the console when the run is planned: with more than one file,
        the files in order and, per key several files added to, who added what; then every replacement (a warning
        when it `warns`) and every conflict (a warning). [] for a run of one file."""
        if len(self.files) < 2 and not self.conflicts:
            return []
        out = [
            ("info", f"config files, composed in this order (README, 'Composing overlays'): {', '.join(self.files)}")
        ]
        for key, by_file in self.contributions.items():
            added = {name: items for name, items in by_file.items() if items}
            if len(added) > 1:
                parts = [f"{name} {_items(items)}" for name, items in added.items()]
                out.append(("info", f"config: {key} joined: " + "; ".join(parts)))
        out += [("warning" if r.warns else "info", r.line()) for r in self.replacements]
        out += [("warning", c.line()) for c in self.conflicts]
        return out

    def log(self, log: Any) -> None:
        """Each of `lines` to `log` (anything with info and warning methods: Snakemake's logger, a Logger)."""
        for level, line in self.lines():
            getattr(log, level)(line)


def _items(items: Sequence[Any]) -> str:
    shown = ", ".join(map(str, items[:_SHOWN]))
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def display_name(path: str | os.PathLike[str]) -> str:
    """`path` as messages show it: relative to the working directory when it is below it, else as given."""
    text = os.fspath(path)
    rel = os.path.relpath(os.path.abspath(text))
    return rel if not rel.startswith("..") else text


def read_config_files(paths: Iterable[str | os.PathLike[str]]) -> list[ConfigFile]:
    """The config files `paths` read in order (YAML or JSON), each file once (the first time it is named, by its
    real path: Snakemake lists the Snakefile's default config again when the command line names it too). An empty
    file is {}. Raises ValueError naming a file that cannot be read or does not hold a mapping."""
    seen: set[str] = set()
    out: list[ConfigFile] = []
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        name = display_name(path)
        try:
            content = yamlio.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as err:
            raise ValueError(f"config file {name}: cannot be read: {err}") from err
        except yaml.YAMLError as err:
            raise ValueError(f"config file {name}: not YAML or JSON: {err}") from err
        if content is None:
            content = {}
        if not isinstance(content, dict):
            raise ValueError(f"config file {name}: holds a {type(content).__name__}, not a mapping of config keys")
        out.append(ConfigFile(name, content))
    return out


def _matches(path: tuple[str, ...], patterns: Sequence[str]) -> bool:
    dotted = ".".join(path)
    return any(len(p.split(".")) == len(path) and fnmatch.fnmatchcase(dotted, p) for p in patterns)


def _leaves(content: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    """(key path, value) of every value of `content` that is not a non-empty mapping, depth first."""
    for key, value in content.items():
        path = (*prefix, str(key))
        if isinstance(value, dict) and value:
            yield from _leaves(value, path)
        else:
            yield path, value


def _get(content: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = content
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _set(content: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = content
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


_MISSING = object()


def merge_mappings(base: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Snakemake's merge of one config over another (`snakemake.utils.update_config`), in place: a mapping over a
    mapping merged key by key, any other value replaced. Returns `base`."""
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge_mappings(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _union(lists: Iterable[Sequence[Any]]) -> list[Any]:
    out: list[Any] = []
    for items in lists:
        out += [x for x in items if x not in out]
    return out


def compose(files: Sequence[ConfigFile], overrides: Mapping[str, Any] | None = None) -> Composition:
    """The configuration of `files` (in the order Snakemake reads them; the first is the default config) and the
    command line's `overrides` (`--config`), by the module's rules. Nothing is validated here (the run plan does
    that next). Returns the `Composition`: the config, who contributed what, the conflicts and replacements."""
    config: dict[str, Any] = {}
    for f in files:
        merge_mappings(config, f.content)
    base, overlays = (files[0], files[1:]) if files else (None, ())
    # every joined and selection key any file sets, with the files setting it (in order)
    keys: dict[tuple[str, ...], list[ConfigFile]] = {}
    for f in files:
        for path, value in _leaves(f.content):
            if isinstance(value, list) and _matches(path, (*JOINED_KEYS, *SELECTION_KEYS)):
                keys.setdefault(path, []).append(f)
    contributions: dict[str, dict[str, list[Any]]] = {}
    replacements: list[Replacement] = []
    for path, setters in keys.items():
        dotted = ".".join(path)
        joined = _matches(path, JOINED_KEYS)
        from_overlays = [f for f in setters if f is not base]
        used = setters if joined or not from_overlays else from_overlays
        value = _union(_get(f.content, path) for f in used)
        _set(config, path, value)
        added: dict[str, list[Any]] = {}
        for f in used:
            added[f.name] = [x for x in _get(f.content, path) if x not in _union(added.values())]
        contributions[dotted] = added
        if not joined and base is not None and from_overlays and base in setters:
            dropped = tuple(x for x in _get(base.content, path) if x not in value)
            if dropped:
                relying = tuple(f.name for f in overlays if f not in setters)
                replacements.append(
                    Replacement(dotted, base.name, tuple(f.name for f in from_overlays), dropped, relying)
                )
    conflicts = _conflicts(overlays)
    if overrides:
        merge_mappings(config, overrides)
        decided = {".".join(path) for path, _ in _leaves(overrides)}  # the command line chose these values
        conflicts = [c for c in conflicts if not any(c.key == k or c.key.startswith(f"{k}.") for k in decided)]
        for path, value in _leaves(overrides):
            if ".".join(path) in contributions:
                contributions[".".join(path)][COMMAND_LINE] = list(value) if isinstance(value, list) else [value]
    return Composition(
        config=config,
        files=tuple(f.name for f in files),
        contributions=contributions,
        conflicts=tuple(conflicts),
        replacements=tuple(replacements),
        sources=tuple(files),
    )


def _conflicts(overlays: Sequence[ConfigFile]) -> list[Conflict]:
    """Every plain key (not joined, not a selection) that two of `overlays` set to different values."""
    values: dict[tuple[str, ...], list[tuple[str, Any]]] = {}
    for f in overlays:
        for path, value in _leaves(f.content):
            if not _matches(path, (*JOINED_KEYS, *SELECTION_KEYS)):
                values.setdefault(path, []).append((f.name, value))
    return [
        Conflict(".".join(path), tuple(setters))
        for path, setters in values.items()
        if any(v != setters[0][1] for _, v in setters[1:])
    ]


def compose_files(paths: Iterable[str | os.PathLike[str]], overrides: Mapping[str, Any] | None = None) -> Composition:
    """`compose` of the config files at `paths` (`read_config_files`: each once, in order) and `overrides`."""
    return compose(read_config_files(paths), overrides)


def workflow_composition(workflow: Any) -> Composition:
    """The `compose_files` of the Snakemake `workflow` being parsed: the Snakefile's `configfile:` (Snakemake appends
    it to `workflow.configfiles` after the command line's files, and merges it first; left out under
    --replace-workflow-config), then each `--configfile` (`workflow.overwrite_configfiles`), then `--config`
    (`workflow.config_settings.config`). Job processes get the same files and settings from Snakemake, so they
    compose the same config."""
    given = [os.fspath(p) for p in workflow.overwrite_configfiles]
    default = [os.fspath(p) for p in workflow.configfiles[len(given) :]]
    settings = workflow.config_settings
    if getattr(settings, "replace_workflow_config", False):
        default = []
    return compose_files([*default, *given], dict(settings.config or {}))
