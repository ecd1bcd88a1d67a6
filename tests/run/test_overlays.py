"""geneb.run.overlays: config files composed as the workflow composes its `--configfile`s (joined lists, selection
lists, plain values with their conflicts, `--config` last), and the workflow's own file list read back."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from geneb.run.overlays import COMMAND_LINE, ConfigFile, compose, compose_files, read_config_files, workflow_composition

BASE = ConfigFile(
    "config/config.yaml",
    {
        "models": ["kmer-3to6", "random-esm-tiny"],
        "tasks": ["t1", "t2", "t3"],
        "protocols": ["geneb-paper"],
        "caps": {"default": {"max_train": 2000, "max_test": 1000}, "per_task": {"t1": {"max_train": 1000}}},
        "probe": {"geneb-paper": {"seeds": [13, 17, 42, 123, 997], "C": 1.0}},
    },
)


def test_models_extra_is_joined_over_every_file_in_order_each_model_once():
    a = ConfigFile("a.yaml", {"models_extra": ["m1", "m2"]})
    b = ConfigFile("b.yaml", {"models_extra": ["m2", "m3"]})
    base = ConfigFile("config/config.yaml", {**BASE.content, "models_extra": ["m0"]})
    out = compose([base, a, b])
    assert out.config["models_extra"] == ["m0", "m1", "m2", "m3"]
    assert out.contributions["models_extra"] == {"config/config.yaml": ["m0"], "a.yaml": ["m1", "m2"], "b.yaml": ["m3"]}
    assert compose([base, b, a]).config["models_extra"] == ["m0", "m2", "m3", "m1"]
    assert out.entries("models_extra")["m3"] == "b.yaml: models_extra: entry 2"  # its place in the file that added it


def test_one_overlay_replaces_the_defaults_selection_and_two_overlays_join():
    paper = ConfigFile("paper.yaml", {"tasks": ["p1", "p2"], "models": ["big"]})
    alone = compose([BASE, paper])
    assert alone.config["tasks"] == ["p1", "p2"] and alone.config["models"] == ["big"]  # as Snakemake's merge
    ft = ConfigFile("ft.yaml", {"tasks": ["t1"], "protocols": ["geneb-paper", "finetune-lora"]})
    sens = ConfigFile("sens.yaml", {"tasks": ["t2", "t1"], "protocols": ["geneb-paper", "geneb-strict"]})
    both = compose([BASE, ft, sens])
    assert both.config["tasks"] == ["t1", "t2"]
    assert both.config["protocols"] == ["geneb-paper", "finetune-lora", "geneb-strict"]
    assert both.config["models"] == BASE.content["models"]  # no overlay sets it: the default's list
    assert compose([BASE, sens, ft]).config["protocols"] == ["geneb-paper", "geneb-strict", "finetune-lora"]


def test_seeds_of_a_protocol_are_a_selection_too():
    ft = ConfigFile("ft.yaml", {"probe": {"geneb-paper": {"seeds": [13, 17]}}})
    sens = ConfigFile("sens.yaml", {"probe": {"geneb-paper": {"seeds": [13], "cv_folds": 3}}})
    out = compose([BASE, sens, ft])
    assert out.config["probe"]["geneb-paper"] == {"seeds": [13, 17], "C": 1.0, "cv_folds": 3}
    assert compose([BASE, sens]).config["probe"]["geneb-paper"]["seeds"] == [13]


def test_a_replaced_selection_names_what_is_not_run_and_warns_for_the_overlays_relying_on_it():
    ft = ConfigFile("ft.yaml", {"tasks": ["t1"]})
    twins = ConfigFile("twins.yaml", {"twins": True})
    alone = compose([BASE, ft])
    (replaced,) = alone.replacements
    assert (replaced.key, replaced.dropped, replaced.relying, replaced.warns) == ("tasks", ("t2", "t3"), (), False)
    assert ("info", replaced.line()) in alone.lines()
    (replaced,) = compose([BASE, twins, ft]).replacements
    assert replaced.warns and replaced.relying == ("twins.yaml",)
    assert replaced.line() == (
        "config: tasks of ft.yaml replaces the tasks of config/config.yaml; 2 of them not run: t2, t3. twins.yaml "
        "sets no tasks of its own and runs on the replacing list; to keep the others, list the tasks you want in one "
        "of the files"
    )


def test_a_value_two_overlays_set_differently_is_a_conflict_naming_both_files_and_values():
    ft = ConfigFile("ft.yaml", {"caps": {"default": {"max_train": 160, "max_test": 200}}, "results_dir": "results/ft"})
    sens = ConfigFile("sens.yaml", {"caps": {"default": {"max_train": 250, "max_test": 200}, "per_task": {}}})
    out = compose([BASE, ft, sens])
    assert [c.key for c in out.conflicts] == ["caps.default.max_train"]  # max_test agrees; the default is no party
    assert out.config["caps"]["default"] == {"max_train": 250, "max_test": 200}
    assert out.config["caps"]["per_task"] == {"t1": {"max_train": 1000}} and out.config["results_dir"] == "results/ft"
    assert ("warning", out.conflicts[0].line()) in out.lines()
    assert (
        out.conflicts[0]
        .line()
        .startswith(
            "config: caps.default.max_train is set differently by the overlays: ft.yaml sets 160; sens.yaml sets 250. "
            "The run uses 250, from sens.yaml, the file given later"
        )
    )
    assert compose([BASE, sens, ft]).config["caps"]["default"]["max_train"] == 160
    decided = compose([BASE, ft, sens], {"caps": {"default": {"max_train": 100}}})  # the command line chose
    assert decided.conflicts == () and decided.config["caps"]["default"]["max_train"] == 100


def test_the_command_line_config_is_applied_last_over_everything():
    ft = ConfigFile("ft.yaml", {"tasks": ["t1"], "models_extra": ["m1"]})
    out = compose([BASE, ft], {"tasks": ["t9"], "caps": {"default": {"max_test": 5}}})
    assert out.config["tasks"] == ["t9"] and out.config["caps"]["default"] == {"max_train": 2000, "max_test": 5}
    assert out.contributions["tasks"][COMMAND_LINE] == ["t9"] and out.config["models_extra"] == ["m1"]


def test_one_file_says_nothing_and_composes_as_snakemake_merges():
    from snakemake.utils import update_config

    out = compose([BASE])
    assert out.lines() == [] and out.config == BASE.content and out.config is not BASE.content
    merged = dict(yaml.safe_load(yaml.safe_dump(BASE.content)))
    overlay = {"caps": {"per_task": {"t2": {"max_test": 3}}}, "tasks": ["t2"], "results_dir": "results/x"}
    update_config(merged, overlay)
    assert compose([BASE, ConfigFile("o.yaml", overlay)]).config == merged


def _write(folder: Path, **files: str) -> None:
    """folder/config/config.yaml (BASE) and each {name}.yaml with its text; `folder` made the working directory."""
    os.chdir(folder)
    (folder / "config").mkdir()
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump(BASE.content))
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text)


def test_files_are_read_once_each_by_their_real_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, o="models_extra: [m1]\n", empty="")
    files = read_config_files(
        [str(tmp_path / "config" / "config.yaml"), "o.yaml", "config/config.yaml", "./o.yaml", "empty.yaml"]
    )
    assert [f.name for f in files] == ["config/config.yaml", "o.yaml", "empty.yaml"] and files[2].content == {}
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ValueError, match=r"^config file list.yaml: holds a list, not a mapping"):
        read_config_files(["list.yaml"])
    (tmp_path / "bad.yaml").write_text("models: [a\n")
    with pytest.raises(ValueError, match=r"^config file bad.yaml: not YAML or JSON"):
        read_config_files(["bad.yaml"])


def test_the_workflow_composes_its_default_config_first_then_the_command_lines_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, a="models_extra: [m1]\ntasks: [t1]\n", b="models_extra: [m2]\ntasks: [t2]\n")
    given = [Path(tmp_path / "a.yaml"), Path(tmp_path / "b.yaml")]

    def workflow(replace: bool = False) -> SimpleNamespace:
        # what Snakemake keeps: the command line's files (absolute), then the Snakefile's `configfile:` appended
        settings = SimpleNamespace(config={"results_dir": "results/x"}, replace_workflow_config=replace)
        return SimpleNamespace(
            overwrite_configfiles=given, configfiles=[*given, "config/config.yaml"], config_settings=settings
        )

    out = workflow_composition(workflow())
    assert out.files == ("config/config.yaml", "a.yaml", "b.yaml")
    assert out.config["models_extra"] == ["m1", "m2"] and out.config["tasks"] == ["t1", "t2"]
    assert out.config["models"] == BASE.content["models"] and out.config["results_dir"] == "results/x"
    replaced = workflow_composition(workflow(replace=True))  # --replace-workflow-config: no default config
    assert replaced.files == ("a.yaml", "b.yaml") and "models" not in replaced.config
    assert compose_files(["config/config.yaml", "a.yaml"]).config["tasks"] == ["t1"]
