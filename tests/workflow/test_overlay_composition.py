"""The shipped track overlays composed (geneb.run.overlays): config/zeroshot.yaml, finetune.yaml, twins.yaml,
shortcuts.yaml and sensitivity.yaml given together, in more than one order, plan every overlay's models,
protocols and zero-shot tasks, and the jobs of each track; what the composition changes is said at plan time.

Planned in process only (GENEB's `RunPlan` per order, Snakemake's DAG by `dry_run`); nothing runs. The run folder
is a sibling of a `shared` link to ../shared (the registry's local checkpoints are `../shared/models/...`), with
the two GENEB-made reference language models of the zero-shot overlay as their network configuration only
(`geneb.zeroshot.reference_lms`' own networks, untrained: planning reads a model's depth, never its weights), as
the zero-shot planning tests leave the trained models out."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
import yaml

from workflow_support import REPO, dry_run, run_plan

TRACKS = ("zeroshot", "finetune", "twins", "shortcuts", "sensitivity")
#: two orders of the five (and the reverse of each other)
ORDERS = (TRACKS, tuple(reversed(TRACKS)))


class _Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.infos: list[str] = []

    def info(self, msg: str) -> None:
        self.infos.append(msg)

    def warning(self, msg: str) -> None:
        self.warnings.append(msg)


def _reference_lm_configs(run: Path, shared: Path) -> None:
    """run/resources/reference_lms/<id>/config.json of each GENEB reference model: the network
    `build_reference_lms` pretrains, with its settings, unpretrained and without weights."""
    from geneb.zeroshot import reference_lms

    train = shared / "data" / "tasks" / reference_lms.PRETRAINING_TASK / "train.csv.gz"
    for name, kind in reference_lms._REFERENCE_LMS.items():
        folder = run / "resources" / "reference_lms" / name
        folder.mkdir(parents=True)
        settings = reference_lms.ReferenceLMSettings(**reference_lms._wanted(kind, train)["settings"])
        tokenizer = reference_lms._write_base_tokenizer(folder, kind)
        reference_lms._network(settings, len(tokenizer), 522).config.save_pretrained(folder)


@pytest.fixture(scope="module")
def run(tmp_path_factory, shared) -> Path:
    """A run folder: the repository's config/config.yaml (sheets, claims and task lock by absolute path, ../shared's
    tasks) and the five shipped overlays as they are, beside a `shared` link."""
    root = tmp_path_factory.mktemp("overlays")
    (root / "shared").symlink_to(shared, target_is_directory=True)
    run = root / "run"
    (run / "config").mkdir(parents=True)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for key in ("task_sheet", "model_sheet", "model_revisions"):
        config[key] = str(REPO / config[key])
    config["task_lock"] = str(REPO / "config" / "tasks.lock")
    config["analysis"]["published"]["claims"] = str(REPO / config["analysis"]["published"]["claims"])
    (run / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for name in (*TRACKS, "zeroshot_tasks"):
        suffix = ".tsv" if name == "zeroshot_tasks" else ".yaml"
        shutil.copy(REPO / "config" / f"{name}{suffix}", run / "config" / f"{name}{suffix}")
    _reference_lm_configs(run, shared)
    return run


def _files(names) -> list[str]:
    return [f"config/{name}.yaml" for name in names]


def _own(run: Path, names) -> dict[str, set]:
    """The models (`models` and `models_extra`), protocols and zero-shot tasks of config/config.yaml composed with
    the overlays `names` (`geneb.run.overlays.compose_files`), before planning (twins not yet added)."""
    from geneb.run.overlays import compose_files

    config = compose_files([run / "config" / "config.yaml", *(run / f for f in _files(names))]).config
    return {
        "models": set(config["models"]) | set(config.get("models_extra", [])),
        "protocols": set(config["protocols"]),
        "zeroshot": set(config.get("zeroshot", {}).get("tasks", [])),
    }


@pytest.fixture(scope="module")
def alone(run) -> dict:
    """{overlay: `_own` of config/config.yaml + that overlay alone}."""
    return {name: _own(run, [name]) for name in TRACKS}


@pytest.mark.parametrize("order", ORDERS, ids=["forward", "reverse"])
def test_the_five_overlays_plan_every_overlays_models_protocols_and_zeroshot_tasks(run, alone, order, monkeypatch):
    monkeypatch.delenv("GENEB_TASK_SOURCE", raising=False)
    log = _Log()
    plan = run_plan(run, *_files(order), log=log)
    for name in TRACKS:
        assert alone[name]["models"] <= set(plan.models), (name, sorted(alone[name]["models"] - set(plan.models)))
        assert alone[name]["protocols"] <= set(plan.config["protocols"]), name
        assert alone[name]["zeroshot"] <= set(plan.config["zeroshot"]["tasks"]), name
    # each track is on: zero-shot tasks, twins, the views, finetune-lora with its seeds among the probes' draws
    assert plan.config["twins"] and "mistral-dna-1m-ft-prom-twin" in plan.models
    assert {"shortcut-gc", "geneb-tiny-mlm", "geneb-tiny-clm", "hyenadna-tiny-1k-ft-anticapt"} <= set(plan.models)
    assert set(plan.config["views"]["poolings"]) == {"mean", "last", "max"}
    assert set(plan.config["protocols"]) == {"geneb-paper", "geneb-strict", "finetune-lora"}
    paper_seeds = set(plan.config["probe"]["geneb-paper"]["seeds"])
    assert set(plan.config["finetune"]["finetune-lora"]["seeds"]) | {13} <= paper_seeds  # 13: sensitivity's seed
    # said at the start: the caps the two overlays set differently (both files, both values), and the quickstart's
    # tasks that config/finetune.yaml's five replace, naming the overlays that run on them
    caps = [w for w in log.warnings if "caps.default.max_train" in w]
    assert (
        len(caps) == 1 and "config/finetune.yaml sets 160" in caps[0] and "config/sensitivity.yaml sets 250" in caps[0]
    )
    (tasks,) = [w for w in log.warnings if w.startswith("config: tasks of config/finetune.yaml replaces")]
    assert "8 of them not run" in tasks and "config/twins.yaml" in tasks and "config/zeroshot.yaml" in tasks
    assert any(line.startswith("config: models_extra joined:") for line in log.infos)


def test_every_pair_of_overlays_keeps_both_overlays_models(run, alone):
    """Each ordered pair of the five, composed: no model, protocol or zero-shot task of either overlay is lost (the
    Snakemake merge of lists lost models in 9 of the 20 pairs and refused one more)."""
    for a, b in itertools.permutations(TRACKS, 2):
        both = _own(run, [a, b])
        for name in (a, b):
            for what, items in alone[name].items():
                assert items <= both[what], (a, b, name, what, sorted(items - both[what]))


def _cells(jobs: list[dict]) -> set[tuple]:
    """(rule, model, task, protocol, zero-shot task) of each planned job: what it does, without the settings hashes
    (the caps the later overlay sets are in the task hashes)."""
    keys = ("model", "task", "protocol", "zstask")
    return {(job["rule"], *(job["wildcards"].get(k) for k in keys)) for job in jobs}


def test_snakemake_plans_each_tracks_jobs_in_either_order(run, alone):
    forward, reverse = (_cells(dry_run(run, configfiles=tuple(_files(order)))) for order in ORDERS)
    assert forward == reverse
    by_rule: dict[str, set[tuple]] = {}
    for cell in forward:
        by_rule.setdefault(cell[0], set()).add(cell[1:])
    extracted = {model for model, *_ in by_rule["extract_embeddings"]}
    for name in TRACKS:  # every overlay's models are extracted
        assert alone[name]["models"] <= extracted, (name, sorted(alone[name]["models"] - extracted))
    finetuned = {model for model, *_ in by_rule["finetune_lora"]}
    assert {"hyenadna-tiny-1k-ft-anticapt", "mistral-codon-1m-ft-mrfp", "geneb-tiny-clm"} <= finetuned
    assert "mistral-dna-1m-ft-prom-twin" in finetuned and not any(m.startswith("shortcut-") for m in finetuned)
    probed = {(model, protocol) for model, _, protocol, _ in by_rule["fit_probes"]}
    assert {("shortcut-gc", "geneb-strict"), ("geneb-tiny-mlm", "geneb-paper")} <= probed
    scored = {(model, zstask) for model, _, _, zstask in by_rule["score_zeroshot"]}
    assert {m for m, _ in scored} >= {"geneb-tiny-mlm", "shortcut-gc", "mistral-codon-1m-ft-mrfp"}
    assert {z for _, z in scored} == alone["zeroshot"]["zeroshot"]
