"""Reading and checking the model registry: `load_registry` (the only reader of config/models.yaml), the
cross-field checks, whether an entry can run now, and each model's resolved extraction settings and their cache key.

Whether GENEB can build a registry entry now, and why not. Torch-free.

Runnable means GENEB can build the model now: a builtin, a local folder that exists, a hub id pinned to a
40-hex commit (needs the network or a filled HF cache), weights outside the hub that the config key
`model_weights` points at (`external`), or a checksummed download (`download`; geneb.registry.weights), in a
family with an adapter. An entry whose revision is not known (`source.kind: hub-unpinned`), whose external
weights were not given, or whose family has no adapter (`unsupported`) is kept for its metadata and refused by
`geneb.registry.load.extraction_settings`, with the reason and its fix (loading by name alone
runs whatever is on the hub today).

Each model's resolved extraction settings (everything that changes its embeddings, not execution knobs)
and their hash, which names the embedding cache folder (docs/data-dictionary.md, embedding cache folder).
Torch-free: Snakemake calls these while it builds the DAG.

Checks of the model registry that its JSON schema cannot express: the cross-field checks of each entry and
of the matched pairs (`check_registry`), and whether each entry can run in the env it names (`check_envs`).
`geneb.registry.load.load_registry` runs both before it types the entries; each returns a list of problems,
empty when all is well. Torch-free.

Reading the model registry file (config/models.yaml): `load_registry`, its only reader, and
`load_locked_registry`, which pins the hub models a run selects first. Torch-free: Snakemake calls these while it
builds the DAG. Field meanings are in docs/data-dictionary.md ("Inputs: the model registry"); how to add a model
is in docs/adding-a-model.md.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from geneb.core import yamlio
from geneb.core.envs import DEFAULT_ENV, ENVS_DIR, EnvError, EnvFile, env_names, read_env
from geneb.core.paths import load_schema, schema_errors
from geneb.core.provenance import REVISION, stable_hash
from geneb.registry.families import FAMILIES, add_implicit_twins, expand_twin_entries, family, scoring_problems
from geneb.registry.python_entry import (
    PRECOMPUTED,
    PYTHON,
    entry_fingerprint,
    entry_problems,
    entry_refusal,
    hash_view,
    option_fingerprints,
    resolve_entry_paths,
)
from geneb.registry.registry import (
    NotRunnableError,
    Registry,
    RegistryError,
    as_registry,
    merge_extra,
    model_spec,
    sheet_label,
)
from geneb.registry.spec import AUTO_DTYPE, COMPUTE_DTYPES, SOURCE_KINDS, Extraction, ModelSpec, device_class
from geneb.registry.weights import (
    LOCATION_KEYS,
    WEIGHT_KINDS,
    LockResult,
    PinError,
    WeightsError,
    apply_pins,
    apply_weights,
    lock_revisions,
    read_pins,
    settings_source,
    weights_refusal,
)

#: the one way to pin a hub model, as every error says it (docs/hpc.md, "Pinning the hub models")
_PIN_HOWTO = (
    "run the workflow once where the hub is reachable (`snakemake -n` is enough, e.g. on a login node): it "
    "resolves the hub revision of every selected model without a pin and writes the commits to the "
    "model_revisions lockfile (config/model_revisions.yaml), which every later run uses"
)


def refusals(spec: ModelSpec) -> list[tuple[str, str]]:
    """Why GENEB cannot build this entry now, as (short label, full reason with its fix) pairs; [] when it can.
    See the module docstring; `runnable` joins the full reasons, `geneb models` shows the labels."""
    fam, src = spec.family, spec.source
    kind = src.kind
    why: list[tuple[str, str]] = []
    if fam not in FAMILIES:
        why.append(("unknown family", f"unknown family {fam!r}"))
    elif FAMILIES[fam].entry is None:
        why.append((f"no adapter (family {fam})", f"family {fam!r}: {FAMILIES[fam].notes}"))
    if kind == "hub-unpinned":
        why.append(
            ("unpinned: a run with network pins it", f"hub id {src.hub_id} has no pinned revision; {_PIN_HOWTO}")
        )
    elif kind in WEIGHT_KINDS:
        refusal = weights_refusal(spec)
        if refusal is not None:
            why.append(refusal)
    elif fam == PYTHON:
        refusal = entry_refusal(spec.id, spec.load.entry, spec.load.options)
        if refusal is not None:
            why.append(refusal)
    elif kind == "local" and not Path(src.path or "").is_dir():
        why.append(
            (
                "local folder missing",
                f"local folder {src.path} does not exist (relative paths resolve against the working directory)"
                # the entry's provenance says where the folder comes from (for a GENEB-made one, the command)
                + (f"; origin: {src.origin}" if src.origin else ""),
            )
        )
    elif kind not in SOURCE_KINDS:
        why.append(("unknown source kind", f"unknown source kind {kind!r}"))
    return why


def environment_refusals(spec: ModelSpec) -> list[tuple[str, str]]:
    """What this Python environment lacks to build `spec`, as (short label, full reason) pairs: the family's and
    the entry's optional packages (`requirements.require_modules`, nothing imported) and the transformers range of a
    remote-code entry (`requirements.check_transformers_range`); [] when nothing is missing. Torch-free."""
    from geneb.core.errors import MissingPackageError, TransformersVersionError
    from geneb.registry.families import check_transformers_range, require_modules

    fam = FAMILIES.get(spec.family)
    out: list[tuple[str, str]] = []
    for module, package in {**(fam.requires if fam else {}), **(spec.load.requires or {})}.items():
        try:
            require_modules(spec.id, {module: package})
        except MissingPackageError as err:
            out.append((f"needs package {package}", str(err)))
    try:
        check_transformers_range(spec.id, spec.load.transformers)
    except TransformersVersionError as err:
        out.append((f"needs transformers {spec.load.transformers}", str(err)))
    except Exception as err:  # transformers not installed at all, or a range that does not parse
        out.append((f"needs transformers {spec.load.transformers}", f"model {spec.id}: {err}"))
    return out


def runnable(spec: ModelSpec) -> tuple[bool, str]:
    """(True, how) when GENEB can build this entry now, else (False, every reason why not; "; "-joined).
    See the module docstring."""
    kind = spec.source.kind
    why = refusals(spec)
    if why:
        return False, "; ".join(full for _, full in why)
    how = {
        "local": "local folder",
        "hub": "pinned hub revision (needs the network or a filled HF cache)",
        "builtin": "built in",
        "external": "weights outside the hub, from model_weights",
        "download": "checksummed download (fetched once into the weights cache; needs the network the first time)",
    }
    return True, how[kind]


def not_runnable(registry: Registry, models: list[str]) -> dict[str, str]:
    """{model: every reason why not} for each of `models` that `runnable` refuses, in the given order."""
    out = {}
    for model in models:
        ok, why = runnable(registry.spec(model))
        if not ok:
            out[model] = why
    return out


def _selection_error(registry: Registry, problems: dict[str, str], lock: LockResult | None, pins: str) -> str:
    """One message for every selected model that cannot run (`problems`, from `not_runnable`), grouped by what
    it needs: the network once, to pin its hub revision (with the hub's answer where `lock`, the lockfile step's
    result, has one); an adapter (family unsupported); weights from outside the hub; anything else, with its
    reason. pins: the lockfile's path, named in the fix."""
    groups: dict[str, list[str]] = {"network": [], "adapter": [], "external": [], "other": []}
    for model in problems:
        spec = registry.spec(model)
        if FAMILIES.get(spec.family) is not None and FAMILIES[spec.family].entry is None:
            groups["adapter"].append(model)
        elif spec.source.kind == "hub-unpinned":
            groups["network"].append(model)
        elif spec.source.kind == "external":
            groups["external"].append(model)
        else:
            groups["other"].append(model)
    failed = lock.failed if lock is not None else {}
    lines = [f"{len(problems)} selected model(s) cannot run, so nothing was planned:"]
    if groups["network"]:
        unreachable = lock is not None and lock.unreachable
        why = next(iter(failed.values()), "") if unreachable else ""
        refused = [f"{m} ({failed[m]})" for m in groups["network"] if m in failed and not unreachable]
        lines.append(
            f"- {len(groups['network'])} need the network once, to pin their hub revision"
            + (f" (the hub was unreachable: {why})" if why else "")
            + f": {', '.join(groups['network'])}; {_PIN_HOWTO.replace('config/model_revisions.yaml', pins)}"
            + (f"; the hub refused: {'; '.join(refused)}" if refused else "")
        )
    if groups["adapter"]:
        lines.append(
            f"- {len(groups['adapter'])} have no GENEB adapter (family unsupported): {', '.join(groups['adapter'])}; "
            "leave them out of `models:` until their family has one (docs/adding-a-model.md)"
        )
    if groups["external"]:
        lines.append(
            f"- {len(groups['external'])} have weights outside the hub that GENEB cannot download: "
            f"{', '.join(groups['external'])}; fetch each one's files as its line says and point the config key "
            "model_weights at them:"
        )
        lines += [f"  - {m}: {problems[m]}" for m in groups["external"]]
    lines += [f"- {m}: {problems[m]}" for m in groups["other"]]
    if lock is not None and lock.pinned:
        lines.append(f"({len(lock.pinned)} hub model(s) were pinned into {pins} now: {', '.join(lock.pinned)})")
    return "\n".join(lines)


#: extraction defaults where neither the family nor the registry entry says otherwise (docs/adding-a-model.md):
#: the defaults of the typed `geneb.registry.spec.Extraction`, in its field order
#: GENEB's extraction defaults; `unk_policy` (default count) is left out, so it is in a model's settings (and
#: the extraction rule's params) only where its entry sets it: adding the key reran no existing job
DEFAULT_EXTRACTION: dict[str, Any] = {k: v for k, v in Extraction().as_dict().items() if k != "unk_policy"}
#: free-text provenance of `source:` and `load:`: kept in the registry, never in the extraction settings (the cache
#: key), so correcting a note reruns nothing (docs/footguns.md, "Model loading")
#: (`fetch`: the instructions to fetch external weights; kind download keeps its `url` in the settings, to fetch
#: it in the job, and `extraction_hash` leaves it out)
_PROVENANCE_SOURCE_KEYS = ("origin", "base_hub_id", "where", "url", "fetch")
_PROVENANCE_LOAD_KEYS = ("transformers_note",)


def resolved_extraction(spec: ModelSpec) -> dict[str, Any]:
    """The extraction options of `spec`: DEFAULT_EXTRACTION < the family's defaults < the entry's own.
    Raises ValueError naming the model for an unknown family."""
    return {**DEFAULT_EXTRACTION, **family(spec.family, model=spec.id).extraction, **(spec.extraction or {})}


def _resolve_dtype(spec: ModelSpec, dtype: str, device: str) -> str:
    """The compute dtype `spec` runs in on `device` (execution.device: cpu, cuda, cuda:N or auto), decided
    before the settings hash is made so that the hash names it. `dtype: auto` becomes `settings.AUTO_DTYPE`
    of the device class (float32 on CPU, bfloat16 on CUDA), or float32 for a family whose adapter runs in
    float32 only (`Family.dtypes`); a family without a network (k-mer) has no compute dtype and keeps what
    its entry says. An explicit dtype is kept as it is.

    Raises RegistryError naming the model for auto under device auto (the device class is not known when
    the run is planned), an unknown dtype, or a dtype the family's adapter does not run in."""
    fam = family(spec.family, model=spec.id)
    if not fam.uses_torch:
        return dtype
    allowed = fam.dtypes or COMPUTE_DTYPES
    if dtype == "auto":
        cls = device_class(device)
        if fam.dtypes is None and cls is None:
            raise RegistryError(
                f"model {spec.id}: extraction.dtype auto means {AUTO_DTYPE['cuda']} on CUDA and "
                f"{AUTO_DTYPE['cpu']} on CPU, and execution.device auto does not say which one the job gets; set "
                "execution.device to cpu or cuda (profiles/slurm sets cuda), or give the model an explicit "
                "extraction.dtype"
            )
        dtype = AUTO_DTYPE[cls] if cls is not None and AUTO_DTYPE[cls] in allowed else allowed[0]
    if dtype not in allowed:
        raise RegistryError(
            f"model {spec.id}: extraction.dtype {dtype!r} is not one the {spec.family} adapter runs in "
            f"({', '.join(allowed)}); set extraction.dtype to one of them or auto"
        )
    return dtype


def extraction_settings(
    registry: Registry | Mapping[str, Any], model: str, alphabet: dict[str, Any], *, device: str = "cpu"
) -> dict[str, Any]:
    """Everything about `model` that changes its embeddings (not execution knobs), as a stable JSON-able
    dict: identity, family, source (a local folder carries its content fingerprint, so new files give a new
    cache path; free-text provenance, PROVENANCE_SOURCE_KEYS, is left out; external weights and downloads:
    `weights.settings_source`, the folder the adapter reads at `path` and the content's fingerprint or sha256), builtin construction, remote-code
    flag, loading options (less PROVENANCE_LOAD_KEYS; `config_overrides` included), resolved extraction options
    (`resolved_extraction`: DEFAULT_EXTRACTION < family defaults < entry, with `dtype` resolved for `device`
    by `_resolve_dtype`: one config gives one settings hash per device class, and the hash says which dtype
    ran), and the alphabet policy. This mapping is the rerun key of the extraction rule and is stored in
    every embedding file. device: the run's execution.device (cpu, cuda, cuda:N, auto).

    A random-init twin's settings also carry `twin: {of, seed}` (`geneb.registry.families`). A python entry's `load`
    also carries `entry_sha256` (its code and the helpers it imports from its folder) and,
    when an option names a file or folder, `options_sha256` ({option: content sha256}; `python_entry`).

    Raises RegistryError for an unknown model or a dtype that cannot be resolved, NotRunnableError (with
    the reason) for an entry that cannot be extracted, EntryError naming the model and the option for a python
    entry's option that ends like a model file but names none, and WeightsError for external weights or a `model_weights`
    copy whose checksum is not the entry's.
    """
    spec = model_spec(registry, model)
    ok, why = runnable(spec)
    if not ok:
        raise NotRunnableError(f"model {model} is in the registry but not runnable: {why}")
    source = {k: v for k, v in spec.source.as_dict().items() if k not in _PROVENANCE_SOURCE_KEYS}
    if spec.source.kind in WEIGHT_KINDS:
        source = settings_source(spec, as_registry(registry).weights_dir)
    elif spec.source.kind == "local" and spec.family != PRECOMPUTED:  # precomputed: each task's files are inputs
        from geneb.registry.python_entry import folder_fingerprint

        source["fingerprint"] = folder_fingerprint(str(spec.source.path))  # the schema requires a path for kind local
    extraction = resolved_extraction(spec)
    extraction["dtype"] = _resolve_dtype(spec, extraction["dtype"], device)
    if extraction.get("rc", "none") != "none" and extraction.get("long_policy") == "truncate":
        raise RegistryError(
            f"model {model}: rc {extraction['rc']!r} with long_policy truncate would cut the two strands "
            "at opposite ends of a long row and combine different windows; use long_policy chunk_mean"
        )
    load = {k: v for k, v in spec.load.as_dict().items() if k not in _PROVENANCE_LOAD_KEYS}
    if spec.family == PYTHON:  # the entry's code identifies it, never its path (geneb.registry.python_entry)
        load["entry_sha256"] = entry_fingerprint(str(spec.load.entry), model=model)
        files = option_fingerprints(spec.load.options, model=model)
        if files:  # absent when no option names a file: such an entry's settings hash is what it was
            load["options_sha256"] = files
    settings = {
        "model": model,
        "family": spec.family,
        "source": source,
        "builtin": dict(spec.builtin) if spec.builtin is not None else {},
        "trust_remote_code": bool(spec.trust_remote_code),
        "load": load,
        "extraction": extraction,
        "alphabet": dict(sorted(alphabet.items())),
    }
    if spec.twin is not None:  # absent for every other model, so their settings hashes are unchanged
        settings["twin"] = {"of": str(spec.twin["of"]), "seed": int(spec.twin["seed"])}
    return settings


def extraction_hash(settings: Mapping[str, Any]) -> str:
    """12-hex hash of `extraction_settings(...)`: the cache folder name; any change gives a new path. A local
    folder is identified by its content fingerprint, not by how its path is spelled (`../x`, `/abs/x`, `x/`
    are one model), so its path is left out of the hash. External weights and downloads likewise: their
    fingerprint or sha256 (with the layout keys `unpack`, `filename`) is the identity, and where they are or how
    they are checked (`weights.LOCATION_KEYS`: path, file, url, expect, file_sha256) is left out. A python or
    precomputed entry: `python_entry.hash_view` (the code's content and options, never a path)."""
    settings = dict(hash_view(settings))
    source = settings.get("source") or {}
    if source.get("kind") == "local" and source.get("fingerprint"):
        settings = {**settings, "source": {k: v for k, v in source.items() if k != "path"}}
    elif source.get("kind") in WEIGHT_KINDS and (source.get("fingerprint") or source.get("sha256")):
        settings = {**settings, "source": {k: v for k, v in source.items() if k not in LOCATION_KEYS}}
    extraction = settings.get("extraction") or {}
    if "unk_policy" in extraction:  # count and error give the same vectors; an error run that meets UNK writes none
        settings = {**settings, "extraction": {k: v for k, v in extraction.items() if k != "unk_policy"}}
    return stable_hash(settings)


#: what `matched_pairs[].differs_in` may say (the analyses compare exactly these factors)
_PAIR_FACTORS = ("architecture", "tokenizer", "pretraining_data")


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
    (`geneb.registry.families`).
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
        if pair.get("differs_in") not in _PAIR_FACTORS:
            problems.append(f"matched pair {pid!r}: differs_in must be one of {_PAIR_FACTORS}")
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


def _env_fit(spec: Mapping[str, Any], env: EnvFile) -> list[str]:
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
    and install the packages the entry needs (`_env_fit`). Each problem names the model, the env and the fix
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
        why = _env_fit(spec, envs[env_name])
        if why:
            fits = sorted(
                (n for n, e in envs.items() if n != env_name and not _env_fit(spec, e)),
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


class _UniqueKeyLoader(yamlio.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping: plain YAML keeps the last silently, so a
    model id appended again would replace the first entry without a word."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is given twice (first at line {seen[key].line + 1})", key_node.start_mark
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _parse(path: Path) -> dict[str, Any]:
    """The registry file parsed: a mapping with a `models` mapping of id -> mapping, else RegistryError
    (unparsable YAML with line and column, a key such as a model id given twice, a binary file, another
    shape). OSError if it cannot be read."""
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 - a safe loader
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise RegistryError(f"{path}: not valid YAML ({where}{err.problem or err.context})") from err
    except yaml.YAMLError as err:
        raise RegistryError(f"{path}: not valid YAML ({str(err).strip().splitlines()[0]})") from err
    except UnicodeDecodeError as err:
        raise RegistryError(f"{path}: not a text file ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise RegistryError(f"{path}: expected a mapping with a `models` mapping")
    bad = [str(m) for m, spec in data["models"].items() if not isinstance(spec, dict)]
    if bad:
        raise RegistryError(f"{path}: the entry of each model must be a mapping of fields, not of {', '.join(bad[:5])}")
    return data


def read_merged(path: str | Path, extra: Sequence[str | Path] = ()) -> dict[str, Any]:
    """The registry file `path` parsed, each file of `extra` parsed and its entries added
    (`geneb.registry.registry.merge_extra`), a python entry's file path resolved against the folder of the file that
    declares it. Raises RegistryError naming the file (an id clash: both files), OSError if one cannot be read."""
    data = _parse(Path(path))
    resolve_entry_paths(data, Path(path).parent)
    extras = []
    for file in extra:
        more = _parse(Path(file))
        resolve_entry_paths(more, Path(file).parent)
        extras.append((str(file), more))
    merge_extra(data, path, extras)
    return data


def load_registry(
    path: str | Path,
    schema: dict[str, Any] | None = None,
    *,
    pins: str | Path | None = None,
    envs_dir: str | Path | None = ENVS_DIR,
    weights: Mapping[str, Any] | None = None,
    weights_dir: str | Path | None = None,
    extra: Sequence[str | Path] = (),
) -> Registry:
    """Read config/models.yaml (the only reader of that file; with the entries of each user registry file of
    `extra`, config key `registry_extra`, added by `read_merged`), apply the pinned hub revisions of the file
    `pins` (config key `model_revisions`; geneb.registry.weights) and the weights paths of `weights` (config key
    `model_weights`: {model id: folder, archive or file}; `weights.apply_weights`), expand its random-init twin entries (`twins.expand_twin_entries`), validate the mapping against the JSON schema
    (`schema`, default workflow/schemas/models.schema.yaml), run the cross-field checks of `check_registry`
    and the env checks of `check_envs` against the env files of `envs_dir` (default the repository's envs/;
    None skips them), add the implicit twin `<model>-twin` of every entry that can have one
    (`twins.add_implicit_twins`), and build the typed `Registry` (with `weights_dir`, the cache folder of external archives
    and downloads, default resources/model_weights). Raises RegistryError naming the file, the model and the
    field (for an env: the model, the env and the fix; for `model_weights`: the model)."""
    data = read_merged(path, extra)
    path = sheet_label(path, extra)  # errors name every file
    if pins is not None:
        try:
            apply_pins(data, read_pins(pins))
        except PinError as exc:
            raise RegistryError(f"{pins}: {exc}") from exc
    if weights:
        try:
            apply_weights(data, weights)
        except WeightsError as exc:
            raise RegistryError(str(exc)) from exc
    twin_problems = expand_twin_entries(data.get("models") or {}) if isinstance(data, dict) else []
    if twin_problems:
        raise RegistryError(f"{path}: " + "; ".join(twin_problems))
    errors = schema_errors(data, schema if schema is not None else load_schema("models"))
    if errors:
        e = errors[0]
        where = "/".join(map(str, e.path)) or "(top level)"
        raise RegistryError(f"{path}: {where}: {e.message}")
    problems = check_registry(data)
    if envs_dir is not None:
        problems += check_envs(data, envs_dir)
    if problems:
        raise RegistryError(f"{path}: " + "; ".join(problems))
    add_implicit_twins(data["models"])
    try:
        return Registry.from_mapping(data, weights_dir=weights_dir)
    except RegistryError as err:
        raise RegistryError(f"{path}: {err}") from err


def _pin_owner(registry: Registry, model: str) -> str:
    """The entry whose hub pin `model` uses: a twin's model (its source is copied from it), else `model`."""
    twin = registry.spec(model).twin
    return str(twin["of"]) if twin is not None else model


def load_locked_registry(
    path: str | Path,
    schema: dict[str, Any] | None,
    pins: str | Path,
    models: list[str],
    *,
    resolve: bool,
    endpoint: str | None = None,
    weights: Mapping[str, Any] | None = None,
    weights_dir: str | Path | None = None,
    extra: Sequence[str | Path] = (),
    where: Mapping[str, str] | None = None,
) -> tuple[Registry, list[str], str]:
    """The registry with the lockfile `pins` and the config's `model_weights` paths (`weights`; cache folder
    `weights_dir`, config execution.weights_dir) applied, for a run of `models` (the workflow calls this once,
    when it plans the run). With `resolve` (the process that plans the run, not its jobs), first pins every
    selected hub model that has an adapter and no pin yet (`pins.lock_revisions`: the hub is asked once, the
    lockfile written atomically) and reloads. Returns (registry, log lines saying which models were pinned now
    and which run at commits already locked, the NotRunnableError message listing at once every selected model
    that cannot run and what it needs, "" when all can: `_selection_error`; the network for a pin, named when
    the hub was unreachable or HF_HUB_OFFLINE is set, an adapter, or weights from outside the hub: what to fetch,
    from where, and the `model_weights` line). The caller raises it
    after its other checks of the config, so those keep their order.

    extra: the user registry files (config `registry_extra`) merged with `path`; where: {model: the setting that
    names it, e.g. "config.yaml: models: entry 3"}, the prefix of its error when it is not in the registry.

    Raises RegistryError for an unknown model id (with close matches, the setting that names it and the registry
    files) or a lockfile that cannot be used."""
    registry = load_registry(path, schema, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
    for model in models:
        try:
            registry.spec(model)
        except RegistryError as err:
            setting = (where or {}).get(model, "models")
            raise RegistryError(f"{setting}: {err} ({sheet_label(path, extra)})") from None
    lock = None
    log: list[str] = []
    if resolve:
        # a twin reads its model's configuration at its model's pin: the model is pinned, the twin copies it
        pinned = list(dict.fromkeys(_pin_owner(registry, m) for m in models))
        with_adapter = [m for m in pinned if FAMILIES[registry.models[m].family].entry is not None]
        try:
            lock = lock_revisions(registry, pinned, pins, pinnable=with_adapter, endpoint=endpoint)
        except PinError as err:
            raise RegistryError(f"{pins}: {err}") from err
        if lock.pinned:
            registry = load_registry(path, schema, pins=pins, weights=weights, weights_dir=weights_dir, extra=extra)
            log.append(
                f"pinned {len(lock.pinned)} hub model(s) once, written to the lockfile {pins}: "
                + ", ".join(
                    f"{m} {p['hub_id']}@{p['revision']} (from {p['resolved_from']})" for m, p in lock.pinned.items()
                )
            )
        if lock.locked:
            log.append(
                f"{len(lock.locked)} hub model(s) run at the commits locked in {pins}: "
                + ", ".join(f"{m}@{rev[:12]}" for m, rev in lock.locked.items())
            )
    problems = not_runnable(registry, models)
    return registry, log, _selection_error(registry, problems, lock, str(pins)) if problems else ""
