"""Whether GENEB can build a registry entry now, and why not. Torch-free.

Runnable means GENEB can build the model now: a builtin, a local folder that exists, a hub id pinned to a
40-hex commit (needs the network or a filled HF cache), weights outside the hub that the config key
`model_weights` points at (`external`), or a checksummed download (`download`; geneb.registry.weights), in a
family with an adapter. An entry whose revision is not known (`source.kind: hub-unpinned`), whose external
weights were not given, or whose family has no adapter (`unsupported`) is kept for its metadata and refused by
`geneb.registry.extraction.extraction_settings`, with the reason and its fix (loading by name alone
runs whatever is on the hub today).
"""

from __future__ import annotations

from pathlib import Path

from geneb.registry.families import FAMILIES
from geneb.registry.pins import LockResult
from geneb.registry.python_entry import PYTHON, entry_refusal
from geneb.registry.registry import Registry
from geneb.registry.spec import SOURCE_KINDS, ModelSpec
from geneb.registry.weights import WEIGHT_KINDS, weights_refusal

#: the one way to pin a hub model, as every error says it (docs/hpc.md, "Pinning the hub models")
PIN_HOWTO = (
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
        why.append(("unpinned: a run with network pins it", f"hub id {src.hub_id} has no pinned revision; {PIN_HOWTO}"))
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
    from geneb.registry.requirements import check_transformers_range, require_modules

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


def runnable_offline(spec: ModelSpec) -> bool:
    """Runnable with no network: a builtin, an existing local folder, or external weights the config gives."""
    ok, _ = runnable(spec)
    return ok and spec.source.kind in ("builtin", "local", "external")


def selection_error(registry: Registry, problems: dict[str, str], lock: LockResult | None, pins: str) -> str:
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
            + f": {', '.join(groups['network'])}; {PIN_HOWTO.replace('config/model_revisions.yaml', pins)}"
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
