"""The two named protocols: built from the real config, every setting required, bad settings named."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from snakemake.utils import validate

from geneb.probe.protocols import _SETTING_KEYS, from_config
from geneb.probe.shots import ProtocolConfigError


def test_paper_protocol_is_the_published_one(protocols):
    p = protocols["geneb-paper"]
    assert (p.draw, p.standardize, p.solver, p.penalty, p.C, p.C_grid) == ("paper", False, "lbfgs", "l2", 1.0, ())
    assert (p.class_weight, p.max_iter, p.tol) == (None, 1000, 1e-4)
    assert p.seeds == (13, 17, 42, 123, 997) and p.regimes == ("full", "10shot", "1shot")
    assert p.max_train == 100_000 and p.report_full_per_seed


def test_strict_protocol_tunes_the_full_regime_and_has_ten_seeds(protocols):
    p = protocols["geneb-strict"]
    assert p.draw == "nested" and p.standardize and p.tunes_C and len(p.seeds) >= 10
    assert list(p.C_grid) == sorted(p.C_grid) and p.class_weight == "balanced_if_imbalanced"
    assert p.cv_scoring == "log_loss" and p.C_grid[0] == 1e-4 and p.C_grid[-1] == 100.0
    # the task's weight: balanced from a 3:1 imbalance on, none for a 2:1:1 task (it cost 0.04 MCC there)
    assert p.class_weight_for(np.array([0] * 30 + [1] * 10)) == "balanced"
    assert p.class_weight_for(np.array([0] * 20 + [1] * 10 + [2] * 10)) is None


def test_tied_inner_cv_scores_pick_the_middle_of_the_tie_not_the_smallest_C():
    from geneb.probe.fit import _best_C_index as best_C_index

    assert best_C_index(np.array([0.1, 0.3, 0.2])) == 1
    assert best_C_index(np.array([0.0, 0.0, 0.0, 0.0, 0.0])) == 2  # flat (near-random folds): the middle
    assert best_C_index(np.array([0.1, 0.5, 0.5, 0.5, 0.2])) == 2
    assert best_C_index(np.array([0.5, 0.5, 0.1, 0.1])) == 0


def test_config_section_validates_against_the_workflow_schema(repo):
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    validate(config, str(repo / "workflow" / "schemas" / "config.schema.yaml"))
    broken = copy.deepcopy(config)
    del broken["probe"]["geneb-strict"]["C_grid"]
    with pytest.raises(Exception, match="C_grid"):
        validate(broken, str(repo / "workflow" / "schemas" / "config.schema.yaml"))


@pytest.mark.parametrize("key", _SETTING_KEYS)
def test_every_setting_is_required(probe_config, key):
    settings = copy.deepcopy(probe_config["geneb-strict"])
    del settings[key]
    with pytest.raises(ProtocolConfigError, match=rf"'geneb-strict': missing settings \['{key}'\]"):
        from_config("geneb-strict", settings)


@pytest.mark.parametrize(
    "key, value, match",
    [
        ("C_grid", [1.0, 0.1], "strictly ascending"),
        ("C_grid", [0.1, 0.1], r"C_grid: \[0.1, 0.1\] has non-unique elements"),
        ("penalty", "l1", r"penalty: 'l1' is not one of \['l2'\]"),
        ("seeds", [1, 1], r"seeds: \[1, 1\] has non-unique elements"),
        ("seeds", [1, True], "seeds/1: True is not of type 'integer'"),
        ("class_weight", "auto", "class_weight: 'auto' is not one of"),
        ("bootstrap", {"n_resamples": 10, "seed": 0, "confidence": 0.95, "method": "percentile"}, "n_resamples"),
        ("draw", "random", "draw: 'random' is not one of"),
        ("max_train", 0, "max_train: 0 is less than the minimum of 1"),
    ],
)
def test_bad_settings_are_named(probe_config, key, value, match):
    settings = {**probe_config["geneb-strict"], key: value}
    with pytest.raises(ProtocolConfigError, match=match):
        from_config("geneb-strict", settings)


def test_unknown_settings_and_protocols_are_refused(probe_config):
    with pytest.raises(ProtocolConfigError, match=r"unknown settings \['n_jobs'\]"):
        from_config("geneb-strict", {**probe_config["geneb-strict"], "n_jobs": 4})
    with pytest.raises(ProtocolConfigError, match="unknown protocol"):
        from_config("geneb-fast", probe_config["geneb-strict"])


def test_config_hash_is_stable_and_tracks_every_setting(probe_config, protocols):
    p = protocols["geneb-strict"]
    assert p.config_hash() == from_config("geneb-strict", copy.deepcopy(probe_config["geneb-strict"])).config_hash()
    changed = from_config("geneb-strict", {**probe_config["geneb-strict"], "tol": 1e-5})
    assert changed.config_hash() != p.config_hash()
    assert p.config_hash() != protocols["geneb-paper"].config_hash()


def test_few_shot_k_outside_the_known_regimes_is_refused_before_any_job(repo):
    """k = 5 would draw, probe and aggregate, then fail at the leaderboard (regimes are full/10shot/1shot)."""
    import yaml

    settings = yaml.safe_load((repo / "config" / "config.yaml").read_text())["probe"]["geneb-strict"]
    with pytest.raises(ProtocolConfigError, match=r"few_shot_k/1: 5 is not one of \[10, 1\]"):
        from_config("geneb-strict", {**settings, "few_shot_k": [10, 5]})
    assert from_config("geneb-strict", {**settings, "few_shot_k": [1]}).regimes == ("full", "1shot")


def test_the_schema_section_is_the_one_list_of_settings_and_values():
    """from_config validates with `$defs/probe_protocol` of the workflow schema, so the schema and the
    Python names must agree: the required keys are SETTING_KEYS, the k-shot enum is the k of the k-shot regimes
    of geneb.tables.scores), the F1 label modes are geneb.probe.metrics._F1_LABELS."""
    from geneb.core.paths import load_schema
    from geneb.probe.metrics import _F1_LABELS as F1_LABELS
    from geneb.tables.scores import REGIMES

    spec = load_schema("config")["$defs"]["probe_protocol"]
    assert spec["required"] == list(_SETTING_KEYS) and sorted(spec["properties"]) == sorted(_SETTING_KEYS)
    assert sorted(spec["properties"]["few_shot_k"]["items"]["enum"]) == sorted(
        int(r.removesuffix("shot")) for r in REGIMES if r != "full"
    )
    assert tuple(spec["properties"]["f1_labels"]["enum"]) == tuple(F1_LABELS)
