"""geneb.run.plan: the parse-time decisions of the workflow (config, ids, registry, pre-flight, settings hashes,
partial files set aside) and the rules' input/params functions, without Snakemake.

Most plans here are made with main_process=False (what a job process does: no pins resolved, no files looked at
or moved) and switch the main process on only where the check is the main process's."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from geneb.core.paths import validate_with_defaults
from geneb.core.provenance import stable_params
from geneb.registry.load import extraction_hash, extraction_settings
from geneb.registry.registry import RegistryError
from geneb.run.checks import PreflightError, check_config, default_schema_files
from geneb.run.layout import canonical_path
from geneb.run.plan import _FINAL_OUTPUTS, RunPlan, plan_run
from geneb.tasks.catalogue import CatalogueError
from workflow_support import reversed_mappings

REPO = Path(__file__).resolve().parents[2]
TASKS = ["idna_ms_5hmc_h_sapiens", "ienhancer2l_enhancer_vs_non"]
MODELS = ["kmer-3", "kmer-4"]


class RecordingLog:
    """A PlanLog that keeps (level, message) pairs."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, msg: str) -> None:
        self.lines.append(("info", msg))

    def warning(self, msg: str) -> None:
        self.lines.append(("warning", msg))

    def error(self, msg: str) -> None:
        self.lines.append(("error", msg))


def repo_config(name: str = "config.yaml") -> dict:
    """config/config.yaml with config/<name> merged over it, as Snakemake merges `--configfile` over the
    Snakefile's `configfile:` (mappings key by key, lists replaced)."""
    from snakemake.utils import update_config

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if name != "config.yaml":
        update_config(config, yaml.safe_load((REPO / "config" / name).read_text()))
    return config


@pytest.fixture
def small_config(shared, monkeypatch) -> dict:
    """The repository config on 2 mirrored tasks x 2 k-mer models, sheets by absolute path, the shared mirror."""
    monkeypatch.delenv("GENEB_TASK_SOURCE", raising=False)
    monkeypatch.delenv("GENEB_PARTIAL_RUN", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config = repo_config()
    config.update(
        task_source=str(shared / "data" / "tasks"),
        task_sheet=str(REPO / "config" / "tasks.tsv"),
        model_sheet=str(REPO / "config" / "models.yaml"),
        model_revisions=str(REPO / "config" / "model_revisions.yaml"),
        tasks=list(TASKS),
        models=list(MODELS),
    )
    return config


def plan(config: dict, *, main_process: bool = False, log: RecordingLog | None = None, **kwargs) -> RunPlan:
    return plan_run(
        config,
        main_process=main_process,
        conda_deploys=kwargs.pop("conda_deploys", True),
        partial_file=kwargs.pop("partial_file", None),
        log=log or RecordingLog(),
        **kwargs,
    )


# ---- the config schema and its defaults ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["config.yaml", "local_full.yaml", "paper.yaml", "compare_published.yaml", "shortcuts.yaml"]
)
def test_defaults_are_filled_as_snakemake_validate_fills_them(name):
    """The library's defaults filler gives exactly the config Snakemake's `validate` gave (nested defaults too),
    for every shipped config as Snakemake loads it, and for a config of two keys (every default filled)."""
    from snakemake.utils import validate

    schema_path = default_schema_files()["config"]
    schema = yaml.safe_load(schema_path.read_text())
    for config in (repo_config(name), {"tasks": ["t"], "models": ["m"]}):
        by_snakemake, ours = copy.deepcopy(config), copy.deepcopy(config)
        validate(by_snakemake, str(schema_path))
        assert validate_with_defaults(ours, schema) is ours
        assert ours == by_snakemake
        assert json.dumps(ours) == json.dumps(by_snakemake)  # key order too
        assert ours != config  # something was filled in, so the comparison says something
    # the schema handed in is not changed (each call fills from its own copy)
    assert schema == yaml.safe_load(schema_path.read_text())


def test_no_two_configs_share_a_default_object():
    schema = yaml.safe_load(default_schema_files()["config"].read_text())
    a = validate_with_defaults({"tasks": ["t"], "models": ["m"]}, schema)
    b = validate_with_defaults({"tasks": ["t"], "models": ["m"]}, schema)
    a["execution"]["batch_size"] = 1
    assert b["execution"]["batch_size"] == 64


def test_a_config_that_breaks_the_schema_is_one_line_per_problem(small_config):
    small_config["model"] = ["x"]
    small_config["execution"]["devise"] = "cuda"
    with pytest.raises(ValueError) as err:
        plan(small_config)
    lines = str(err.value).splitlines()
    assert lines[0] == "the configuration does not match workflow/schemas/config.schema.yaml (2 problem(s)):"
    assert lines[1].startswith("  - (top level): Additional properties are not allowed ('model' was unexpected)")
    assert lines[2].startswith("  - execution: Additional properties are not allowed ('devise' was unexpected)")
    assert len(lines) == 3


def test_the_plan_holds_a_copy_and_the_callers_config_is_not_changed(small_config):
    before = copy.deepcopy(small_config)
    made = plan(small_config)
    assert small_config == before
    assert made.config["execution"]["batch_tokens"] == "by_device"  # the schema's default
    assert check_config(copy.deepcopy(before), yaml.safe_load(default_schema_files()["config"].read_text())) != before


# ---- ids ------------------------------------------------------------------------------------------------------


def test_an_unknown_task_id_stops_the_plan_with_close_matches(small_config):
    small_config["tasks"] = ["gue_prom_core_tatta"]
    with pytest.raises(CatalogueError, match=r"task 'gue_prom_core_tatta' is not in the catalogue .*tasks.tsv"):
        plan(small_config)


def test_a_misspelled_task_in_per_task_caps_stops_the_plan(small_config):
    small_config["caps"]["per_task"] = {"gue_prom_core_tatta": {"max_train": 10}}
    with pytest.raises(ValueError) as err:
        plan(small_config)
    text = str(err.value)
    assert text.startswith("caps.per_task: task 'gue_prom_core_tatta' is not in the catalogue ")
    assert "(the config's task_sheet)" in text and "did you mean ['gue_prom_core_tata'" in text


def test_an_unknown_model_id_stops_the_plan_with_close_matches(small_config):
    small_config["models"] = ["kmer-33"]
    with pytest.raises(RegistryError, match=r"model 'kmer-33' is not in the registry; did you mean \['kmer-3'"):
        plan(small_config)


@pytest.mark.parametrize(
    "where, edit",
    [
        ("analysis.scale.rho_exclusions", lambda a: a["scale"].update(rho_exclusions=[{"model": "kmer-33"}])),
        (
            "analysis.scale.in_domain.exclude_models",
            lambda a: a["scale"].setdefault("in_domain", {}).update(exclude_models=[{"model": "kmer-33"}]),
        ),
        (
            "analysis.published.scale.rho_exclusions",
            lambda a: a.setdefault("published", {}).update(scale={"rho_exclusions": [{"model": "kmer-33"}]}),
        ),
    ],
)
def test_a_misspelled_model_in_an_exclusion_list_stops_the_plan(small_config, where, edit):
    analysis = small_config.setdefault("analysis", {})
    analysis.setdefault("scale", {})
    edit(analysis)
    for item in _exclusion_items(analysis):
        item["reason"] = "a test"
    with pytest.raises(ValueError, match=rf"^the config: {where}: entry 1: model 'kmer-33' is not in the registry"):
        plan(small_config)
    for item in _exclusion_items(analysis):
        item["model"] = "kmer-3"
    plan(small_config)  # the same list naming a registry model plans


def _exclusion_items(analysis: dict) -> list[dict]:
    scales = [analysis.get("scale") or {}, (analysis.get("published") or {}).get("scale") or {}]
    return [
        item
        for scale in scales
        for item in [
            *(scale.get("rho_exclusions") or []),
            *((scale.get("in_domain") or {}).get("exclude_models") or []),
        ]
    ]


def test_a_task_folder_missing_from_the_mirror_stops_the_main_process_only(small_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mirror = tmp_path / "mirror"
    (mirror / "gue_prom_core_tata").mkdir(parents=True)
    (mirror / "gue_prom_core_tata" / "train.csv").write_text("sequence,label\nACGT,0\n")
    small_config.update(task_source=str(mirror), tasks=["gue_prom_core_tata", "gue_prom_core_all"], models=["kmer-3"])
    with pytest.raises(PreflightError) as err:
        plan(small_config, main_process=True)
    lines = str(err.value).splitlines()
    assert lines[0] == "2 selected task(s) cannot be read from their source, so nothing was planned:"
    assert (
        f"- 1 from {mirror}: no test split ({{split}}.csv.gz or {{split}}.csv) under {mirror}/<task>: gue_prom_core_tata"
        in lines
    )
    assert (
        f"- 1 from {mirror}: no train/test split ({{split}}.csv.gz or {{split}}.csv) under {mirror}/<task>: gue_prom_core_all"
        in lines
    )
    assert "point `task_source:` (or $GENEB_TASK_SOURCE)" in str(err.value)
    assert plan(small_config).tasks == ["gue_prom_core_tata", "gue_prom_core_all"]  # a job process does not look


# ---- task sources that cannot be reached stop the plan, every task named, with the fix ------------------------

PAPER_TASKS = [
    "InstaDeepAI_nucleotide_transformer_downstream_tasks_H3",
    "InstaDeepAI_nucleotide_transformer_downstream_tasks_H4",
]


def test_paper_tasks_offline_stop_the_plan_naming_each_task_and_paper_task_source(small_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GENEB_PAPER_TASK_SOURCE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    small_config.update(tasks=[*PAPER_TASKS, TASKS[0]], models=["kmer-3"])
    with pytest.raises(PreflightError) as err:
        plan(small_config, main_process=True)
    text = str(err.value)
    assert text.splitlines()[0] == "2 selected task(s) cannot be read from their source, so nothing was planned:"
    assert (
        "- 2 from hf:DeepPavlov/geneb-tasks@4edd705be573e48c585c2cf79dc320f9f43c7b04: offline (HF_HUB_OFFLINE set)"
        in text
    )
    assert text.splitlines()[1].endswith(": " + ", ".join(PAPER_TASKS))
    assert "`paper_task_source:`" in text and "$GENEB_PAPER_TASK_SOURCE" in text
    assert plan(small_config).tasks == [*PAPER_TASKS, TASKS[0]]  # a job process does not look
    # a prepared task is not read again: nothing to reach
    for task in PAPER_TASKS:
        folder = tmp_path / plan(small_config).layout.task_dir(task)
        folder.mkdir(parents=True)
        for name in ("train.parquet", "test.parquet", "card.json"):
            (folder / name).write_text("x")
    assert plan(small_config, main_process=True).tasks == [*PAPER_TASKS, TASKS[0]]


def test_paper_tasks_with_the_hub_unreachable_stop_the_plan_with_the_models_problems(
    small_config, tmp_path, monkeypatch
):
    from hub_support import closed_endpoint

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("GENEB_PAPER_TASK_SOURCE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_ENDPOINT", closed_endpoint())
    small_config.update(tasks=PAPER_TASKS, models=["kmer-3", "deepgene"])
    with pytest.raises(PreflightError) as err:
        plan(small_config, main_process=True)
    text = str(err.value)
    assert text.startswith("1 selected model(s) cannot run, so nothing was planned:")  # the models' part first
    assert "2 selected task(s) cannot be read from their source, so nothing was planned:" in text
    assert "cannot be reached (URLError: [Errno 111] Connection refused)" in text
    # the fix works: a local copy named by paper_task_source (here: the shared mirror has no paper task folders)
    monkeypatch.setenv("GENEB_PAPER_TASK_SOURCE", str(tmp_path / "copy"))
    with pytest.raises(PreflightError, match=r"the mirror folder .*copy does not exist"):
        plan(small_config, main_process=True)


def test_an_unreachable_http_mirror_stops_the_plan(small_config, tmp_path, monkeypatch):
    from hub_support import closed_endpoint

    monkeypatch.chdir(tmp_path)
    url = closed_endpoint() + "/geneb-tasks"
    small_config.update(task_source=url)
    with pytest.raises(PreflightError) as err:
        plan(small_config, main_process=True)
    assert (
        f"- 2 from {url}: the mirror does not answer (URLError: [Errno 111] Connection refused): {', '.join(TASKS)}"
        in str(err.value)
    )


# ---- what the main process says and does --------------------------------------------------------------------


def test_caps_default_is_announced_once_by_the_main_process(small_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small_config["caps"]["per_task"] = {TASKS[1]: {"max_train": 10}}
    log = RecordingLog()
    plan(small_config, main_process=True, log=log)
    assert (
        "info",
        f"caps.default {{'max_test': 1000, 'max_train': 2000}} applies to 1 task(s) without caps.per_task: {TASKS[0]} "
        "(keep one whole with caps.per_task.<task>: {max_train: null, max_test: null})",
    ) in log.lines
    quiet = RecordingLog()
    plan(small_config, log=quiet)
    assert not any(msg.startswith("caps.default") for _, msg in quiet.lines)
    small_config["caps"]["default"] = {"max_train": None, "max_test": None}
    uncapped = RecordingLog()
    plan(small_config, main_process=True, log=uncapped)
    assert not any(msg.startswith("caps.default") for _, msg in uncapped.lines)


def test_a_model_that_cannot_run_stops_the_main_process_with_the_preflight_message(small_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small_config["models"] = ["kmer-3", "deepgene"]
    with pytest.raises(PreflightError) as err:
        plan(small_config, main_process=True)
    lines = str(err.value).splitlines()
    assert lines[0] == "1 selected model(s) cannot run, so nothing was planned:"
    assert lines[1].startswith("- 1 have weights outside the hub that GENEB cannot download: deepgene;")
    assert lines[2].startswith("  - deepgene: its weights are not on the Hugging Face hub")
    assert "model_weights: {deepgene: /path/to/deepgene}" in lines[2]


def test_partial_embedding_files_are_set_aside_by_the_main_process(small_config, tmp_path, monkeypatch):
    """A half-written embedding file (no `complete` attribute) of a configured model and task is moved to
    .partial-<name>.<n> before the DAG is built, with a warning; a job process leaves it."""
    monkeypatch.chdir(tmp_path)
    half = tmp_path / plan(small_config).layout.embedding_file("kmer-3", TASKS[0])
    half.parent.mkdir(parents=True)
    with h5py.File(half, "w") as f:
        f.create_group("train").create_dataset("embeddings", data=np.zeros((3, 4), dtype="float32"))
    assert plan(small_config).set_aside == () and half.exists()
    log = RecordingLog()
    made = plan(small_config, main_process=True, log=log)
    aside = half.with_name(f".partial-{half.name}.0")
    assert made.set_aside == (
        (Path(made.layout.embedding_file("kmer-3", TASKS[0])), Path(aside.relative_to(tmp_path))),
    )
    assert not half.exists() and aside.exists()
    lines = [text for level, text in log.lines if level == "warning" and text.startswith("GENEB ERROR")]
    assert len(lines) == 1 and made.layout.embedding_file("kmer-3", TASKS[0]) in lines[0], log.lines
    assert f"moved to {aside.name}; this run builds it again" in lines[0]
    # the file moved aside is an input of the default target: this run extracts it again (geneb.run.integrity)
    assert made.trusted.rebuild_targets() == [made.layout.embedding_file("kmer-3", TASKS[0])]


def test_a_dry_run_plan_moves_nothing_and_names_what_a_run_would(small_config, tmp_path, monkeypatch):
    """`snakemake -n` (and --touch, --lint, --report, ...: `handlers.dry_run_requested`) plans with dry_run: the
    bad file stays where it is, its GENEB ERROR line says a real run moves it aside, and nothing is rebuilt."""
    from geneb.run.handlers import dry_run_requested

    assert dry_run_requested(["-np", "--cores", "1"]) and dry_run_requested(["--touch"])
    assert dry_run_requested(["--report", "r.zip"]) and not dry_run_requested(["--cores", "1", "results/x"])
    monkeypatch.chdir(tmp_path)
    made = plan(small_config)
    half = tmp_path / made.layout.embedding_file("kmer-3", TASKS[0])
    half.parent.mkdir(parents=True)
    half.write_bytes(b"\x89HDF\r\n")  # a truncated HDF5 file without a digest
    log = RecordingLog()
    dry = plan(small_config, main_process=True, log=log, dry_run=True)
    assert dry.set_aside == () and dry.trusted.rebuild_targets() == [] and half.read_bytes() == b"\x89HDF\r\n"
    (line,) = [text for _, text in log.lines if text.startswith("GENEB ERROR")]
    assert made.layout.embedding_file("kmer-3", TASKS[0]) in line and "dry run: nothing moved" in line
    assert not (tmp_path / ".geneb").exists()  # nothing recorded either


# ---- rerun keys: one value however the config is written ----------------------------------------------------


def test_integral_floats_are_ints_in_params():
    a = stable_params(
        {"C": 1.0, "seeds": [13.0, 17], "tol": 1e-4, "caps": {"max_train": 200.0}, "flag": True, "k": 0.5}
    )
    b = stable_params({"k": 0.5, "flag": True, "caps": {"max_train": 200}, "tol": 0.0001, "seeds": [13, 17], "C": 1})
    assert repr(a) == repr(b) and a["C"] == 1 and type(a["C"]) is int and a["flag"] is True and a["k"] == 0.5


def test_the_planned_config_and_params_do_not_depend_on_key_order_or_number_spelling(small_config):
    """Params are compared by repr: the same config with every mapping in reverse key order and
    integral numbers written as floats plans the same config, task params, probe settings and settings hashes."""
    flipped = reversed_mappings(copy.deepcopy(small_config))
    paper = flipped["probe"]["geneb-paper"]
    paper["C"], paper["seeds"] = float(paper["C"]), [float(x) for x in paper["seeds"]]
    flipped["caps"]["default"] = {k: float(v) for k, v in flipped["caps"]["default"].items()}
    a, b = plan(small_config), plan(flipped)
    assert list(flipped) != list(small_config)  # the order did change
    # every value the rules take from the config renders alike (the top level keeps the file's order: Snakemake's
    # config object is updated in place, and no rule takes the whole of it)
    assert a.config == b.config and all(repr(a.config[key]) == repr(b.config[key]) for key in a.config)
    assert list(a.config["probe"]["geneb-paper"]) == sorted(paper)
    assert type(b.config["caps"]["default"]["max_train"]) is int
    assert repr(a.task_params(TASKS[0])) == repr(b.task_params(TASKS[0]))
    assert repr(a.probe_settings("geneb-paper")) == repr(b.probe_settings("geneb-paper"))
    assert a.extraction_hashes == b.extraction_hashes


def test_one_spelling_per_local_path(tmp_path, monkeypatch):
    """`config/x`, `./config/x` and `/abs/config/x` are one rerun key for the sheets (rule inputs)."""
    monkeypatch.chdir(tmp_path)
    spellings = [
        "config/models.yaml",
        "./config/models.yaml",
        str(tmp_path / "config" / "models.yaml"),
        "config/../config/models.yaml",
    ]
    assert {canonical_path(p) for p in spellings} == {"config/models.yaml"}
    outside = tmp_path.parent / "shared" / "tasks.tsv"
    # outside the run folder the form is kept (a copied run folder must give the same key), only normalised
    assert (
        canonical_path("../shared/./tasks.tsv") == canonical_path("../shared/x/../tasks.tsv") == "../shared/tasks.tsv"
    )
    assert canonical_path(str(outside) + "/") == str(outside)
    assert canonical_path("hf:org/data@" + "0" * 40) == "hf:org/data@" + "0" * 40
    assert canonical_path("https://example.org/tasks") == "https://example.org/tasks"


def test_the_plan_gives_every_configured_path_one_spelling(small_config, monkeypatch):
    """The sheets, the lockfile, the `model_weights` paths (~ expanded) and the published reference paths."""
    monkeypatch.chdir(REPO)  # a job process writes nothing; the sheets are then inside the working directory
    monkeypatch.setenv("HOME", str(REPO))
    small_config.update(
        task_sheet="./config/../config/tasks.tsv",
        model_sheet=str(REPO / "config" / "models.yaml"),
        model_revisions="config/./model_revisions.yaml",
    )
    small_config.setdefault("analysis", {})["published"] = {
        "dir": "../shared/./reference/geneb_paper/",
        "claims": "./config/x.yaml",
    }
    small_config["model_weights"] = {"deepgene": "~/w/deepgene/"}
    config = plan(small_config).config
    assert (config["task_sheet"], config["model_sheet"], config["model_revisions"]) == (
        "config/tasks.tsv",
        "config/models.yaml",
        "config/model_revisions.yaml",
    )
    published = config["analysis"]["published"]
    assert (published["dir"], published["claims"]) == ("../shared/reference/geneb_paper", "config/x.yaml")
    assert published["registry"] == "../shared/reference/registry.yaml"  # the default, as written
    assert config["model_weights"] == {"deepgene": "w/deepgene"}  # ~ is the working folder here


# ---- settings hashes and the extraction functions -----------------------------------------------------------


def test_settings_hashes_name_the_resolved_settings_and_refuse_another_hash(small_config):
    made = plan(small_config)
    for model in MODELS:
        settings = stable_params(
            extraction_settings(
                made.registry, model, made.config["alphabet"], device=made.config["execution"]["device"]
            )
        )
        assert made.extraction_settings[model] == settings
        assert made.extraction_hashes[model] == extraction_hash(settings)
        assert made.extraction_params(model, made.extraction_hashes[model]) == settings
    assert made.extraction_hashes["kmer-3"] != made.extraction_hashes["kmer-4"]
    assert (
        made.layout.embedding_file("kmer-3", TASKS[1])
        == f"resources/embeddings/kmer-3/{made.extraction_hashes['kmer-3']}/{TASKS[1]}/{made.layout.task_hash(TASKS[1])}.h5"
    )
    with pytest.raises(ValueError) as err:
        made.extraction_params("kmer-3", "000000000000")
    assert str(err.value) == (
        f"embedding path for kmer-3 has settings hash 000000000000, current settings hash is "
        f"{made.extraction_hashes['kmer-3']}"
    )
    # an output-affecting setting (the alphabet policy) gives a new hash
    small_config["alphabet"]["u_to_t"] = not small_config["alphabet"]["u_to_t"]
    assert plan(small_config).extraction_hashes["kmer-3"] != made.extraction_hashes["kmer-3"]


def test_cpu_only_encoders_are_cpu_jobs_in_the_profiles_cpu_partition(small_config):
    small_config["models"] = ["kmer-3", "random-esm-tiny"]
    small_config["execution"]["device"] = "cuda"
    res = plan(small_config).resources
    assert [res.extraction_partition(m) for m in ("kmer-3", "random-esm-tiny")] == [None, None]  # no profile: unset
    small_config["slurm"] = {"gpu_partition": "gpu", "cpu_partition": "cpu"}
    res = plan(small_config).resources
    assert (res.extraction_partition("kmer-3"), res.extraction_gpus("kmer-3"), res.extraction_gres("kmer-3")) == (
        "cpu",
        0,
        None,
    )
    assert (res.extraction_partition("random-esm-tiny"), res.extraction_gpus("random-esm-tiny")) == ("gpu", 1)
    small_config["slurm"]["gpu_gres"] = "gpu:1"  # sites that refuse --gpus: the GPU job asks with --gres instead
    res = plan(small_config).resources
    assert (res.extraction_gpus("random-esm-tiny"), res.extraction_gres("random-esm-tiny")) == (0, "gpu:1")
    assert (res.extraction_gres("kmer-3"), res.extraction_partition("kmer-3")) == (None, "cpu")
    small_config["execution"]["device"] = "cpu"  # a CPU-only cluster: every extraction is a CPU job
    assert plan(small_config).resources.extraction_partition("random-esm-tiny") == "cpu"


def test_models_extra_adds_to_the_models_an_overlay_set(small_config):
    small_config["models_extra"] = ["kmer-5", "kmer-3"]
    assert plan(small_config).models == ["kmer-3", "kmer-4", "kmer-5"]
    small_config["models_extra"] = ["kmer-3-typo"]
    # named by its own setting and each config file once (Snakemake lists the default configfile twice)
    with pytest.raises(RegistryError, match=r"^config/config.yaml \+ over.yaml: models_extra: entry 1: .*kmer-3-typo"):
        plan(small_config, config_files=[str(Path("config/config.yaml").resolve()), "over.yaml", "config/config.yaml"])


def test_results_dir_keeps_a_runs_tables_apart(small_config):
    small_config["results_dir"] = "results/paper"
    made = plan(small_config)
    assert made.final_outputs()[0] == "results/paper/tables/scores.parquet"
    assert made.probe_tables()[0] == f"results/paper/probes/geneb-paper/{MODELS[0]}/{TASKS[0]}.parquet"
    assert made.failures_file() == "results/paper/tables/failed_tasks.json"
    assert made.layout.embedding_file(MODELS[0], TASKS[0]).startswith("resources/embeddings/")  # caches stay shared
    for bad in ("/tmp/elsewhere", "results/../resources", "output"):
        small_config["results_dir"] = bad
        with pytest.raises(ValueError, match="results_dir"):
            plan(small_config)


def test_extraction_priority_env_and_resources(small_config):
    made = plan(small_config)
    order = sorted(((m, t) for m in MODELS for t in TASKS), key=lambda mt: -made.extraction_priority(*mt))
    assert order == [(MODELS[0], TASKS[0]), (MODELS[1], TASKS[0]), (MODELS[0], TASKS[1]), (MODELS[1], TASKS[1])]
    assert made.extraction_env("kmer-3") == "../../envs/geneb.yaml"
    assert made.resources.extraction_gpus("kmer-3") == 0  # k-mer models never hold a GPU
    assert made.resources.extraction_mem_mb("kmer-3", 2) == 2 * made.resources.extraction_mem_mb("kmer-3", 1)
    small_config["execution"]["env_route"] = "venv"
    assert plan(small_config).extraction_env("kmer-3") is None


# ---- tasks, probes, tables ----------------------------------------------------------------------------------


def test_task_params_hold_task_checks_only_when_not_the_default(small_config):
    made = plan(small_config)
    params = made.task_params(TASKS[0])
    assert "task_checks" not in params
    assert params["caps"] == {"max_test": 1000, "max_train": 2000} and params["cap_seed"] == 0
    assert params["source_identity"]["kind"] == "folder" and params["source_identity"]["files"]
    small_config["task_checks"] = {"single_class_test": "keep"}
    small_config["caps"]["per_task"] = {TASKS[0]: {"max_train": 10}}
    params = plan(small_config).task_params(TASKS[0])
    assert params["task_checks"] == {
        "conflicting_labels": "keep",
        "no_base_rows": "keep",
        "single_class_test": "keep",
    }
    assert params["caps"]["max_train"] == 10


def test_shot_draw_params_carry_the_nested_draw_key_only_for_nested_draws(small_config):
    from geneb.probe.shots import NESTED_DRAW_KEY

    made = plan(small_config)
    assert "nested_draw_key" not in made.shot_draw_params("geneb-paper")
    small_config["probe"]["geneb-paper"]["draw"] = "nested"
    assert plan(small_config).shot_draw_params("geneb-paper")["nested_draw_key"] == NESTED_DRAW_KEY


def test_table_lists_follow_snakemakes_expand_order(small_config):
    from snakemake.io import expand

    made = plan(small_config)
    pattern = "results/{kind}/{protocol}/{model}/{task}.parquet"
    for kind in ("probes", "predictions"):
        expected = expand(pattern, kind=kind, protocol=made.config["protocols"], model=MODELS, task=TASKS)
        assert made.probe_tables(kind=kind) == expected
    assert made.probe_tables([TASKS[1]]) == [f"results/probes/geneb-paper/{m}/{TASKS[1]}.parquet" for m in MODELS]
    assert made.layout.task_embedding_files(TASKS[0]) == [made.layout.embedding_file(m, TASKS[0]) for m in MODELS]
    assert made.layout.task_cards() == [f"resources/tasks/{t}/{made.layout.task_hash(t)}/card.json" for t in TASKS]
    assert made.submission_files() == [f"results/submissions/{m}.json" for m in MODELS]
    assert _FINAL_OUTPUTS[0] == "tables/scores.parquet" and made.final_outputs()[0] == "results/tables/scores.parquet"


def test_report_config_leaves_out_execution_knobs_and_weights_paths(small_config):
    small_config["tasks"] = list(reversed(TASKS))
    shown = plan(small_config).report_config()
    assert "execution" not in shown and "model_weights" not in shown
    assert shown["tasks"] == sorted(TASKS) and list(shown) == sorted(shown)


def test_a_partial_run_plans_the_completed_tasks_only(small_config, tmp_path):
    failures = tmp_path / "failed_tasks.json"
    failures.write_text(json.dumps({"tasks": [TASKS[1]], "failed": {TASKS[0]: {"category": "x", "error": "y"}}}))
    made = plan(small_config, partial_file=str(failures))
    assert made.tasks == [TASKS[1]] and made.failure_files() == [str(failures)]
    assert made.partial is not None and made.partial["failed"] == {TASKS[0]: {"category": "x", "error": "y"}}
    full = plan(small_config)
    assert full.tasks == TASKS and full.failure_files() == [] and full.partial is None


def test_every_resources_path_carries_the_hash_of_what_decides_its_content(small_config):
    """Two configs that prepare a task differently (caps, cap seed, alphabet policy, task_checks), draw its shots
    differently under one protocol name, or audit it differently never share a prepared, shot, audit or embedding
    file; a config that differs only in what changes none of them (threads) shares all of them. The rules' params
    functions refuse a path whose hash is not the config's."""
    import copy

    task = TASKS[0]

    def files(made: RunPlan) -> dict[str, str]:
        return {
            "task": made.layout.task_dir(task),
            "card": made.layout.task_file(task, "card.json"),
            "audit": made.layout.audit_file(task),
            "shots": made.layout.shot_file("geneb-paper", task),
            "embeddings": made.layout.embedding_file("kmer-3", task),
        }

    base = plan(small_config)
    ours = files(base)
    assert ours["task"] == f"resources/tasks/{task}/{base.layout.task_hash(task)}"
    assert ours["card"] == f"{ours['task']}/card.json" and ours["audit"].startswith(f"{ours['task']}/audit-")
    variants = {
        "caps": {"caps": {**small_config["caps"], "default": {"max_train": 123, "max_test": 45}}},
        "cap seed": {"caps": {**small_config["caps"], "seed": 7}},
        "alphabet": {"alphabet": {**small_config.get("alphabet", {}), "u_to_t": True}},
        "task_checks": {"task_checks": {"no_base_rows": "error", "single_class_test": "error"}},
    }
    for name, change in variants.items():
        other = files(plan({**copy.deepcopy(small_config), **change}))
        assert all(other[k] != ours[k] for k in ours), name  # every path derived from the prepared task moves
    probe = copy.deepcopy(small_config.get("probe") or repo_config()["probe"])
    probe["geneb-paper"]["seeds"] = [1, 2]
    redrawn = files(plan({**copy.deepcopy(small_config), "probe": probe}))
    assert redrawn["shots"] != ours["shots"] and redrawn["task"] == ours["task"]
    audited = files(plan({**copy.deepcopy(small_config), "task_audit": {"similarity_threshold": 0.8}}))
    assert audited["audit"] != ours["audit"] and audited["embeddings"] == ours["embeddings"]
    knobs = files(plan({**copy.deepcopy(small_config), "execution": {"threads": 3}}))
    assert knobs == ours

    with pytest.raises(ValueError, match=f"task {task}: the path has hash 000000000000, this config's is "):
        base.task_params(task, "000000000000")
    assert base.task_params(task, base.layout.task_hash(task)) == base.task_params(task)
    with pytest.raises(ValueError, match="protocol geneb-paper draws: the path has hash 000000000000"):
        base.shot_draw_params("geneb-paper", "000000000000")
    with pytest.raises(ValueError, match="task_audit: the path has hash 000000000000"):
        base.layout.audit_settings("000000000000")
    assert base.layout.probe_inputs("geneb-paper", "kmer-3", task) == {
        "train": f"{ours['task']}/train.parquet",
        "test": f"{ours['task']}/test.parquet",
        "card": ours["card"],
        "embeddings": ours["embeddings"],
        "shots": ours["shots"],
        "audit": ours["audit"],
    }


def test_twins_true_adds_the_twin_of_every_model_that_can_have_one(small_config):
    small_config["models"] = ["kmer-3", "mistral-dna-1m-ft-prom"]
    log = RecordingLog()
    made = plan(small_config, main_process=True, log=log)
    assert made.models == ["kmer-3", "mistral-dna-1m-ft-prom"]  # off by default
    small_config["twins"] = True
    made = plan(small_config, main_process=True, log=log)
    assert made.models == ["kmer-3", "mistral-dna-1m-ft-prom", "mistral-dna-1m-ft-prom-twin"]
    assert ("info", "twins: no random-init twin for kmer-3: family kmer has no trained weights to re-initialise") in (
        log.lines
    )
    twin = made.extraction_settings["mistral-dna-1m-ft-prom-twin"]
    assert twin["twin"] == {"of": "mistral-dna-1m-ft-prom", "seed": 0}
    assert "twin" not in made.extraction_settings["mistral-dna-1m-ft-prom"]
    hashes = made.extraction_hashes
    assert hashes["mistral-dna-1m-ft-prom-twin"] != hashes["mistral-dna-1m-ft-prom"]
    # a twin listed already is not added again
    small_config["models"] = ["mistral-dna-1m-ft-prom", "mistral-dna-1m-ft-prom-twin"]
    assert plan(small_config).models == small_config["models"]
