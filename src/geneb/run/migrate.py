"""Caches of the layout before task hashes, moved into the current one when this config would make them again.

Up to this layout a prepared task lived in `resources/tasks/<task>/` and its embeddings in
`resources/embeddings/<model>/<settings hash>/<task>.h5`, whatever the caps or alphabet policy: two configs that
prepare a task differently overwrote each other's files. Now every path carries the task's preparation hash
(`geneb.run.layout.task_dir_path` and the functions beside it). `migrate_legacy` runs at plan time in the main
process, before the DAG is built, and moves, per configured task:

* the legacy task folder's splits, card and validation record into `resources/tasks/<task>/<task hash>/`, when
  nothing the card records differs from this config's preparation params (`_legacy_card_problem`) and the task's
  source files are not newer than the card;
* then each legacy embedding file of a configured model into its new path, when it is complete and its stored
  extraction key (`geneb.extract.cache.read_key`) has this config's settings hash and settings and was made from
  the moved card's data (`task_data_hash`).

Nothing is re-extracted. The legacy audit and shot files are not moved (they do not record their settings): they
are made again, and so every probe of a moved task is fitted again once (Snakemake also reruns a probe whose
input paths changed). A legacy task whose card differs, or whose folder this config has already prepared anew, is
left where it is. A file is moved, never copied or deleted, with its modification time, so Snakemake, which has
no record of the new path, treats it as up to date.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from geneb.core.provenance import canonical_json

#: the files of a legacy task folder that are moved (the audit is made again: it does not record its settings)
_LEGACY_TASK_FILES = ("train.parquet", "test.parquet", "card.json", "validation.json")


def legacy_task_dir(task: str) -> Path:
    """Where the layout before task hashes kept a prepared task: resources/tasks/<task>/."""
    return Path("resources/tasks") / task


def _legacy_embedding_path(model: str, xhash: str, task: str) -> Path:
    """Where the layout before task hashes kept an embedding file: resources/embeddings/<model>/<xhash>/<task>.h5."""
    return Path("resources/embeddings") / model / xhash / f"{task}.h5"


def _legacy_card_problem(card: dict[str, Any], params: dict[str, Any], task: str) -> str | None:
    """Why the legacy card `card` (a card.json mapping) is not what `params` (`RunPlan.task_params`) would prepare,
    or None when nothing it records differs: the task id, the catalogue columns it copies (task_set, taxon_group),
    the alphabet policy, per split the cap and cap seed (a split without a cap record: no cap, or one at or above
    its source rows, cuts nothing), and no flagged rows (the config's task_checks decide what a flag does, and the
    card does not record them)."""
    from geneb.tasks.validation import AlphabetPolicy

    if card.get("task") != task:
        return f"the card is of task {card.get('task')!r}"
    row = params["catalogue_row"]
    for key in ("task_set", "taxon_group"):
        if key in row and card.get(key, "") != row[key]:
            return f"the card records {key} {card.get(key)!r}, the catalogue {row[key]!r}"
    policy = AlphabetPolicy.from_config(params["alphabet"]).as_dict()
    if canonical_json(card.get("alphabet_policy")) != canonical_json(policy):
        return f"the card records alphabet policy {card.get('alphabet_policy')}, this config {policy}"
    for split in ("train", "test"):
        cap = params["caps"].get(f"max_{split}")
        record = (card.get("caps") or {}).get(split)
        n_source = ((card.get("splits") or {}).get(split) or {}).get("n_source")
        if record:
            if record.get("cap") != cap or record.get("seed") != params["cap_seed"]:
                return f"the card records {split} capped to {record.get('cap')} (seed {record.get('seed')}), this config max_{split} {cap} (seed {params['cap_seed']})"
        elif cap is not None and (n_source is None or cap < n_source):
            return f"the card records {split} uncapped ({n_source} rows), this config max_{split} {cap}"
    if card.get("flags"):
        return "the card flags rows, which this config's task_checks decide"
    return None


def _source_files(params: dict[str, Any], source_spec: str, task: str) -> list[Path]:
    """The local source files the task's identity digests (a mirror folder's split files, a save_to_disk folder)."""
    identity = params["source_identity"]
    files = identity.get("files") or {}
    if not files:
        return []
    if identity.get("kind") == "hf-folder":
        return [Path(source_spec[3:]) / task / name for name in files]
    return [Path(source_spec) / task / name for name in files]


def _move(old: Path, new: Path, dry_run: bool) -> tuple[Path, Path]:
    if not dry_run:
        new.parent.mkdir(parents=True, exist_ok=True)
        os.replace(old, new)  # keeps the modification time: Snakemake sees it up to date
    return old, new


def _legacy_task(plan: Any, task: str, dry_run: bool, log: Any) -> tuple[list[tuple[Path, Path]], str | None]:
    """The moves of one legacy task folder (none when there is none, this config's folder is prepared already,
    or its card differs: then one log line says why) and the data hash of the card this config will use (the
    moved card's, or the one already in this config's folder; None when neither)."""
    old_dir, new_dir = legacy_task_dir(task), Path(plan.task_dir(task))
    card_path = old_dir / "card.json"
    if (new_dir / "card.json").is_file():
        try:
            return [], json.loads((new_dir / "card.json").read_text(encoding="utf-8")).get("data_hash")
        except (OSError, json.JSONDecodeError):
            return [], None
    if not all((old_dir / name).is_file() for name in _LEGACY_TASK_FILES[:3]):
        return [], None
    params = plan.task_params(task)
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        log.info(f"legacy task cache {old_dir}/ left in place ({err}): task {task} is prepared anew")
        return [], None
    why = _legacy_card_problem(card, params, task)
    if why is None:
        from geneb.tasks.catalogue import source_string, task_row

        spec = source_string(task_row(plan.task_sheet, task), plan.config)
        newer = [p for p in _source_files(params, spec, task) if p.stat().st_mtime > card_path.stat().st_mtime]
        if newer:
            why = f"its source file {newer[0]} is newer than the card"
    if why is not None:
        log.info(f"legacy task cache {old_dir}/ left in place ({why}): task {task} is prepared anew in {new_dir}/")
        return [], None
    return [_move(old_dir / n, new_dir / n, dry_run) for n in _LEGACY_TASK_FILES if (old_dir / n).is_file()], card.get(
        "data_hash"
    )


def migrate_legacy(plan: Any, *, dry_run: bool, log: Any) -> list[tuple[Path, Path]]:
    """Move the legacy-layout caches of `plan` (a `geneb.run.plan.RunPlan`) into its layout (module docstring)
    and return the (old, new) pairs. A legacy embedding file is also moved when its task was prepared (or moved)
    in this layout before, e.g. by a config without that model. dry_run: move nothing, return and log what
    would move. log: gets one info line per task with anything moved (the task folder, how many embedding files
    were kept without re-extraction) and one per legacy task left in place, with the reason. Raises nothing for
    a file it cannot read: that file stays."""
    from geneb.extract.cache import CacheError, is_complete_file, read_key

    hdf5_locking = plan.config["execution"]["hdf5_locking"]
    verb = "would move" if dry_run else "moved"
    moved: list[tuple[Path, Path]] = []
    for task in plan.tasks:
        pairs, data_hash = _legacy_task(plan, task, dry_run, log)
        if data_hash is None:
            continue
        kept = 0
        for model in plan.models:
            xhash = plan.extraction_hashes[model]
            old_h5 = _legacy_embedding_path(model, xhash, task)
            new_h5 = Path(plan.embedding_file(model, task))
            if not old_h5.is_file() or new_h5.exists() or not is_complete_file(old_h5, hdf5_locking=hdf5_locking):
                continue
            try:
                key = read_key(old_h5, hdf5_locking=hdf5_locking)
            except (OSError, CacheError):
                continue
            same = (
                key.get("settings_hash") == xhash
                and canonical_json(key.get("settings")) == canonical_json(plan.extraction_settings[model])
                and key.get("task_data_hash") == data_hash
            )
            if same:
                pairs.append(_move(old_h5, new_h5, dry_run))
                kept += 1
        if not pairs:
            continue
        moved += pairs
        dry = "; a dry run moves nothing, so the jobs below still make them" if dry_run else ""
        if pairs[0][0].parent == legacy_task_dir(task):
            log.info(
                f"legacy task cache {legacy_task_dir(task)}/ {verb} to {plan.task_dir(task)}/ (its card matches "
                f"this config's preparation params) with {kept} of {len(plan.models)} embedding file(s) kept "
                f"without re-extraction; its audit and shot draws are made again and its probes fitted again once{dry}"
            )
        else:
            log.info(
                f"task {task}: {kept} legacy embedding file(s) {verb} beside {plan.task_dir(task)}/ (made from its "
                f"prepared data under this config's settings), kept without re-extraction{dry}"
            )
    return moved
