"""`geneb weights fetch` and `geneb weights list`: the weights of models that are not on the hub."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from geneb.cli.common import CliError, left_table, read_registry
from geneb.registry.registry import Registry, RegistryError
from geneb.registry.spec import ModelSpec


def _weight_specs(args: argparse.Namespace) -> tuple[Registry, list[ModelSpec]]:
    """The registry with the config's model_weights, and the specs of `args.models` (every model with weights
    outside the hub when none are named); CliError for an unknown model or one whose weights are on the hub."""
    from geneb.registry.weights import WEIGHT_KINDS

    registry = read_registry(args.sheet, None, args.config)
    if args.weights_dir:
        registry = Registry(registry.models, registry.pairs, registry.raw, weights_dir=args.weights_dir)
    names = list(
        getattr(args, "models", None) or [m for m, s in registry.models.items() if s.source.kind in WEIGHT_KINDS]
    )
    specs = []
    for model in names:
        try:
            spec = registry.spec(model)
        except RegistryError as err:
            raise CliError(str(err)) from err
        if spec.source.kind not in WEIGHT_KINDS:
            raise CliError(
                f"model {model}: source kind {spec.source.kind}; only models whose weights are outside the hub "
                "(kind external or download) are fetched here (hub models: docs/hpc.md, 'Offline compute nodes')"
            )
        specs.append(spec)
    return registry, specs


def cmd_weights_fetch(args: argparse.Namespace) -> str:
    from geneb.registry.weights import WeightsError, materialize, settings_source, weights_refusal

    registry, specs = _weight_specs(args)
    done, failed = [], []
    for spec in specs:
        refusal = weights_refusal(spec)
        if refusal is not None:
            failed.append(f"model {spec.id}: {refusal[1]}")
            continue
        try:
            source = settings_source(spec, registry.weights_dir)
            folder = materialize(source, spec.id, say=lambda line: print(line, flush=True))
        except (WeightsError, OSError) as err:
            failed.append(str(err) if str(err).startswith("model ") else f"model {spec.id}: {err}")
            continue
        ident = f"fingerprint {source['fingerprint'][:12]}" if "fingerprint" in source else f"sha256 {source['sha256']}"
        done.append(f"{spec.id}: {folder} ({ident})")
    if failed:
        raise CliError("\n".join([*done, *failed]))
    return "\n".join(done)


def cmd_weights_list(args: argparse.Namespace) -> str:
    from geneb.registry.weights import cache_folder, download_name, is_archive, is_complete, weights_refusal

    registry, specs = _weight_specs(args)
    rows = []
    for spec in specs:
        src = spec.source
        refusal = weights_refusal(spec)
        if refusal is not None:
            state, where = refusal[0], src.path or src.url or src.where or "-"
        elif src.kind == "download" and not src.path:
            folder = cache_folder(registry.weights_dir, spec.id, str(src.sha256).lower())
            name = src.filename or download_name(src.url)
            unpack = src.unpack if src.unpack is not None else is_archive(name)
            cached = is_complete(
                {"path": str(folder), "sha256": str(src.sha256).lower(), "unpack": unpack, "filename": name}
            )
            state = "cached" if cached else f"not fetched (`geneb weights fetch {spec.id}`)"
            where = str(folder) if cached else str(src.url)
        elif Path(str(src.path)).is_dir():
            state, where = "folder", str(src.path)
        else:
            state = "archive (unpacked into the cache when first used)" if is_archive(str(src.path)) else "file"
            where = str(src.path)
        rows.append({"model": spec.id, "kind": src.kind, "state": state, "where": where})
    if not rows:
        return "no models with weights outside the hub"
    return left_table(pd.DataFrame(rows))
