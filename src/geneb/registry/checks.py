"""Checks of the model registry that its JSON schema cannot express: the cross-field checks of each entry and
of the matched pairs (`check_registry`), and whether each entry can run in the env it names (`check_envs`).
`geneb.registry.load.load_registry` runs both before it types the entries; each returns a list of problems,
empty when all is well. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from geneb.core.envs import DEFAULT_ENV, ENVS_DIR, EnvError, EnvFile, env_names, read_env
from geneb.core.provenance import REVISION
from geneb.registry.extraction import DEFAULT_EXTRACTION
from geneb.registry.families import FAMILIES, family
from geneb.registry.python_entry import PYTHON, entry_problems
from geneb.registry.registry import Registry
from geneb.registry.scoring import scoring_problems
from geneb.registry.spec import SOURCE_KINDS

#: what `matched_pairs[].differs_in` may say (the analyses compare exactly these factors)
PAIR_FACTORS = ("architecture", "tokenizer", "pretraining_data")


def _resolved_extraction(spec: dict[str, Any], model: str) -> dict[str, Any]:
    return {
        **DEFAULT_EXTRACTION,
        **family(spec.get("family", "?"), model=model).extraction,
        **(spec.get("extraction") or {}),
    }


def check_registry(registry: Registry | Mapping[str, Any], task_ids: set[str] | None = None) -> list[str]:
    """Cross-field checks JSON schema cannot express, on the schema-validated mapping (or a Registry's
    `raw`); returns a list of problems (empty = fine). `load_registry` runs them before typing the entries.

    Checks: known family; hub sources pinned to a 40-hex revision; remote code only with a declared
    transformers range; no left padding for a model without an attention mask; cls/last
    pooling never with chunk_mean (undefined across chunks); cls pooling keeps the special tokens; Evo 2 layers are module names;
    `extraction.max_tokens` no larger than `context_tokens` unless `beyond_trained_context` says why; matched pairs
    name two distinct registry models and an allowed factor; `trained_on_tasks` ids exist in `task_ids`
    when given; `lm_head` and `scoring` name known values, and `llr` only for a model with a head
    (`geneb.registry.scoring`).
    """
    if isinstance(registry, Registry):
        registry = registry.raw
    problems: list[str] = []
    models = registry.get("models") or {}
    for name, spec in models.items():
        where = f"model {name}"
        fam = spec.get("family")
        if fam not in FAMILIES:
            problems.append(f"{where}: unknown family {fam!r} (known: {sorted(FAMILIES)})")
            continue
        src = spec.get("source") or ({"kind": "builtin"} if fam == PYTHON else {})  # a python entry needs none
        kind = src.get("kind")
        if kind not in SOURCE_KINDS:
            problems.append(f"{where}: source.kind {kind!r} not in {SOURCE_KINDS}")
        if kind == "hub" and not REVISION.match(str(src.get("revision", ""))):
            problems.append(
                f"{where}: source.kind hub needs a 40-hex commit revision, got {src.get('revision')!r}; "
                "use kind hub-unpinned until the commit is known"
            )
        if kind == "hub-unpinned" and src.get("revision"):
            problems.append(f"{where}: a hub-unpinned source must not carry a revision (use kind hub)")
        if spec.get("trust_remote_code") and not (spec.get("load") or {}).get("transformers"):
            problems.append(f"{where}: trust_remote_code needs load.transformers (the version range its code supports)")
        ext = _resolved_extraction(spec, name)
        if ext["attention_mask"] is False and ext["padding_side"] == "left":
            problems.append(f"{where}: left padding with no attention mask feeds pads into real positions")
        if ext["pooling"] in ("cls", "last") and ext["long_policy"] == "chunk_mean":
            problems.append(
                f"{where}: pooling {ext['pooling']} is undefined across chunks; set long_policy truncate or error"
            )
        if ext["pooling"] == "cls" and ext["exclude_special_tokens"]:
            problems.append(f"{where}: pooling cls reads the CLS token, so exclude_special_tokens must be false")
        transform = ext.get("input_transform") or {}
        if transform.get("kind") == "codons" and (ext.get("length_multiple") or 1) % 3:
            problems.append(
                f"{where}: input_transform codons needs length_multiple 3 (a multiple of 3), so that trailing "
                "bases that make no codon are trimmed and counted"
            )
        if fam == "evo2" and not isinstance(ext["layer"], str):
            problems.append(f"{where}: Evo 2 needs layer as a module name (e.g. blocks.28.mlp.l3)")
        problems += _context_problems(where, spec, ext["max_tokens"])
        problems += entry_problems(name, spec)
        problems += scoring_problems(name, spec)
        if task_ids is not None:
            unknown = sorted(set(spec.get("trained_on_tasks") or []) - task_ids)
            if unknown:
                problems.append(f"{where}: trained_on_tasks not in the task catalogue: {unknown}")
    seen: set[str] = set()
    for pair in registry.get("matched_pairs") or []:
        pid = pair.get("id")
        if pid in seen:
            problems.append(f"matched pair {pid!r}: duplicate id")
        seen.add(pid)
        members = pair.get("models") or []
        if len(members) != 2 or len(set(members)) != 2:
            problems.append(f"matched pair {pid!r}: needs exactly two different models, got {members}")
        for m in members:
            if m not in models:
                problems.append(f"matched pair {pid!r}: model {m!r} is not in the registry")
        if pair.get("differs_in") not in PAIR_FACTORS:
            problems.append(f"matched pair {pid!r}: differs_in must be one of {PAIR_FACTORS}")
    return problems


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _context_problems(where: str, spec: dict[str, Any], max_tokens: Any) -> list[str]:
    """An input cap above the trained context: `extraction.max_tokens` (resolved) > `context_tokens`.

    Both count tokens, special tokens included: `context_tokens` is set only where the source states the
    trained maximum in tokens (a figure in bp is not a token count unless the tokenizer has one token per
    base, and even then the special tokens come on top), so the comparison is unit for unit. An overrun is an
    error unless the entry says why in `beyond_trained_context` (the paper's reference cap for LucaOne is one);
    a reason given where there is no overrun is an error too, so it cannot go stale silently.
    """
    ctx, why = spec.get("context_tokens"), spec.get("beyond_trained_context")
    over = _is_count(max_tokens) and _is_count(ctx) and max_tokens > ctx
    if over and not why:
        return [
            f"{where}: extraction.max_tokens {max_tokens} exceeds context_tokens {ctx} (the trained maximum, in "
            "tokens); lower max_tokens (long_policy chunk_mean or truncate handles longer inputs), or keep it "
            "and say why in beyond_trained_context"
        ]
    if why and not over:
        return [
            f"{where}: beyond_trained_context is set, but extraction.max_tokens ({max_tokens}) does not exceed "
            f"context_tokens ({ctx}); remove it"
        ]
    return []


def required_packages(spec: Mapping[str, Any]) -> dict[str, str]:
    """{import name: pip distribution} an entry needs beyond GENEB's own: its family's and `load.requires`."""
    name = spec.get("family")
    fam = FAMILIES.get(name) if isinstance(name, str) else None
    return {**(fam.requires if fam else {}), **((spec.get("load") or {}).get("requires") or {})}


def env_fit(spec: Mapping[str, Any], env: EnvFile) -> list[str]:
    """Why registry entry `spec` (a mapping) cannot run in `env` (empty = it can): its `load.transformers`
    range excludes the transformers release the env pins (or the env pins none), or a package it needs
    (`required_packages`) is not in the env's pip section."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    why = []
    spec_range = (spec.get("load") or {}).get("transformers")
    if spec_range:
        pin = env.transformers
        if pin is None:
            why.append(
                f"load.transformers {spec_range!r} needs an exact transformers pin, and {env.path.name} has none"
            )
        else:
            try:
                if Version(pin) not in SpecifierSet(spec_range):
                    why.append(
                        f"load.transformers {spec_range!r} excludes transformers {pin} pinned in {env.path.name}"
                    )
            except InvalidSpecifier:
                why.append(f"load.transformers {spec_range!r} is not a PEP 440 range")
    missing = sorted({pip for pip in required_packages(spec).values() if not env.provides(pip)})
    if missing:
        why.append(f"needs {', '.join(missing)}, which {env.path.name} does not install")
    return why


def check_envs(registry: Registry | Mapping[str, Any], envs_dir: str | Path = ENVS_DIR) -> list[str]:
    """The env problems of every entry (empty = fine): its `env:` (default `geneb.core.envs.DEFAULT_ENV`) must be a
    file envs/<env>.yaml, that env must pin a transformers release inside the entry's `load.transformers` range,
    and install the packages the entry needs (`env_fit`). Each problem names the model, the env and the fix
    (the envs that would fit, when there are any)."""
    if isinstance(registry, Registry):
        registry = registry.raw
    envs: dict[str, EnvFile] = {}
    problems: list[str] = []
    names = env_names(envs_dir)
    for name in names:
        try:
            envs[name] = read_env(name, envs_dir)
        except EnvError as err:
            problems.append(str(err))
    for model, spec in (registry.get("models") or {}).items():
        env_name = spec.get("env") or DEFAULT_ENV
        if env_name not in envs:
            if env_name not in names:
                problems.append(
                    f"model {model}: env {env_name!r} has no file {Path(envs_dir) / (env_name + '.yaml')}; set env: to "
                    f"one of {', '.join(names) or 'none'} (or add the env file)"
                )
            continue
        why = env_fit(spec, envs[env_name])
        if why:
            fits = sorted(
                (n for n, e in envs.items() if n != env_name and not env_fit(spec, e)),
                key=lambda n: (len(envs[n].requirements), _newest_first(envs[n].transformers), n),
            )
            fix = (
                f"set env: {fits[0]}" + (f" (envs that fit: {', '.join(fits)})" if len(fits) > 1 else "")
                if fits
                else ("add an env file that fits under envs/ and name it in env:")
            )
            problems.append(f"model {model}: cannot run in env {env_name}: {'; '.join(why)}; {fix}")
    return problems


def _newest_first(version: str | None) -> tuple[int, ...]:
    """A sort key putting the newest pinned release first (no pin last)."""
    if not version:
        return (1,)
    from packaging.version import Version

    return (0, *(-p for p in Version(version).release))
