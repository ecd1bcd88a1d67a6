"""Each model's resolved extraction settings (everything that changes its embeddings, not execution knobs)
and their hash, which names the embedding cache folder (docs/data-dictionary.md, embedding cache folder).
Torch-free: Snakemake calls these while it builds the DAG.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geneb.core.provenance import stable_hash
from geneb.registry.families import family
from geneb.registry.python_entry import PRECOMPUTED, PYTHON, entry_fingerprint, hash_view, option_fingerprints
from geneb.registry.registry import NotRunnableError, Registry, RegistryError, as_registry, model_spec
from geneb.registry.runnable import runnable
from geneb.registry.settings import AUTO_DTYPE, COMPUTE_DTYPES, Extraction, device_class
from geneb.registry.spec import ModelSpec
from geneb.registry.weights import LOCATION_KEYS, WEIGHT_KINDS, settings_source

#: extraction defaults where neither the family nor the registry entry says otherwise (docs/adding-a-model.md):
#: the defaults of the typed `geneb.registry.settings.Extraction`, in its field order
#: GENEB's extraction defaults; `unk_policy` (default count) is left out, so it is in a model's settings (and
#: the extraction rule's params) only where its entry sets it: adding the key reran no existing job
DEFAULT_EXTRACTION: dict[str, Any] = {k: v for k, v in Extraction().as_dict().items() if k != "unk_policy"}
#: free-text provenance of `source:` and `load:`: kept in the registry, never in the extraction settings (the cache
#: key), so correcting a note reruns nothing (docs/footguns.md, "Model loading")
#: (`fetch`: the instructions to fetch external weights; kind download keeps its `url` in the settings, to fetch
#: it in the job, and `extraction_hash` leaves it out)
PROVENANCE_SOURCE_KEYS = ("origin", "base_hub_id", "where", "url", "fetch")
PROVENANCE_LOAD_KEYS = ("transformers_note",)


def resolved_extraction(spec: ModelSpec) -> dict[str, Any]:
    """The extraction options of `spec`: DEFAULT_EXTRACTION < the family's defaults < the entry's own.
    Raises ValueError naming the model for an unknown family."""
    return {**DEFAULT_EXTRACTION, **family(spec.family, model=spec.id).extraction, **(spec.extraction or {})}


def resolve_dtype(spec: ModelSpec, dtype: str, device: str) -> str:
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
    by `resolve_dtype`: one config gives one settings hash per device class, and the hash says which dtype
    ran), and the alphabet policy. This mapping is the rerun key of the extraction rule and is stored in
    every embedding file. device: the run's execution.device (cpu, cuda, cuda:N, auto).

    A random-init twin's settings also carry `twin: {of, seed}` (`geneb.registry.twins`). A python entry's `load`
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
    source = {k: v for k, v in spec.source.as_dict().items() if k not in PROVENANCE_SOURCE_KEYS}
    if spec.source.kind in WEIGHT_KINDS:
        source = settings_source(spec, as_registry(registry).weights_dir)
    elif spec.source.kind == "local" and spec.family != PRECOMPUTED:  # precomputed: each task's files are inputs
        from geneb.registry.files import folder_fingerprint

        source["fingerprint"] = folder_fingerprint(str(spec.source.path))  # the schema requires a path for kind local
    extraction = resolved_extraction(spec)
    extraction["dtype"] = resolve_dtype(spec, extraction["dtype"], device)
    if extraction.get("rc", "none") != "none" and extraction.get("long_policy") == "truncate":
        raise RegistryError(
            f"model {model}: rc {extraction['rc']!r} with long_policy truncate would cut the two strands "
            "at opposite ends of a long row and combine different windows; use long_policy chunk_mean"
        )
    load = {k: v for k, v in spec.load.as_dict().items() if k not in PROVENANCE_LOAD_KEYS}
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
