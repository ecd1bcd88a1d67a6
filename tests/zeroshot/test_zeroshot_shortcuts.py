"""Model-free baselines of zero-shot tasks (geneb.zeroshot.shortcuts): a planted shortcut is found and flagged, a
matched task is not, a paired task's member composition is read, and the flag reaches the leaderboard's rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from geneb.zeroshot.shortcuts import attach_shortcut_flags, shortcut_baselines, shortcut_flags
from geneb.zeroshot.task import ZeroShotTask

_BASES = np.array(list("ACGT"))


def _variant_task(planted: bool, seed: int = 0, n_groups: int = 80) -> ZeroShotTask:
    """Per group one effect and one control in 90-base random windows starting in frame. planted: every effect is
    a C>T at codon position 0 and every control an A>G at codon position 2; else matched as the stop-gain builder
    matches: the pair shares one drawn ref>alt and codon position, at different codons."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_groups):
        offset = int(rng.integers(3))
        ref = str(rng.choice(_BASES))
        alt = str(rng.choice([b for b in "ACGT" if b != ref]))
        for label in (1, 0):
            seq = list(rng.choice(_BASES, size=90))
            codon = 3 * int(rng.integers(5, 25))
            if planted:
                pos, ref, alt = (codon, "C", "T") if label else (codon + 2, "A", "G")
            else:
                pos = codon + offset
            seq[pos] = ref
            rows.append(
                {"sequence": "".join(seq), "pos": pos, "ref": ref, "alt": alt, "label": label, "group": f"t{g}"}
            )
    return ZeroShotTask("planted" if planted else "matched", "variant", pd.DataFrame(rows), "0" * 64,
                        meta={"reading_frame": 0})  # fmt: skip


def test_a_planted_shortcut_is_flagged_and_a_matched_task_is_not():
    planted = shortcut_baselines(_variant_task(True), n_boot=200, seed=0).set_index("baseline")
    assert planted.loc["substitution", "value"] > 0.95 and planted.loc["codon_position", "value"] > 0.95
    assert planted.loc["combined", "ci_low"] > 0.5 and (planted["resample_unit"] == "group").all()
    matched = shortcut_baselines(_variant_task(False), n_boot=200, seed=0)
    assert set(matched["baseline"]) == set(planted.index)  # codon_position: the task declares a reading frame
    flags = shortcut_flags(pd.concat([planted.reset_index(), matched])).set_index("task")
    assert flags.loc["planted", "shortcut_flag"] == "fail" and "solves" in flags.loc["planted", "shortcut_reason"]
    assert flags.loc["matched", "shortcut_flag"] == "pass"
    assert flags.loc["matched", "shortcut_best_value"] < 0.6 or flags.loc["matched", "shortcut_best_ci_low"] <= 0.5


def test_a_paired_task_is_scored_by_the_composition_of_each_member():
    rng = np.random.default_rng(2)
    gc_rich = ["".join(rng.choice(_BASES, size=80, p=[0.15, 0.35, 0.35, 0.15])) for _ in range(60)]
    at_rich = ["".join(rng.choice(_BASES, size=80, p=[0.35, 0.15, 0.15, 0.35])) for _ in range(60)]
    rows = pd.DataFrame({"sequence_a": gc_rich, "sequence_b": at_rich, "group": [f"p{i}" for i in range(60)]})
    table = shortcut_baselines(ZeroShotTask("gc", "paired", rows, "0" * 64), n_boot=200).set_index("baseline")
    assert table.loc["gc", "metric"] == "paired_accuracy" and table.loc["gc", "value"] > 0.9
    assert table.loc["length", "value"] == 0.5  # equal lengths: every pair a tie
    swapped = rows.assign(sequence_a=at_rich[30:] + gc_rich[:30], sequence_b=gc_rich[30:] + at_rich[:30])
    mixed = shortcut_baselines(ZeroShotTask("mixed", "paired", swapped, "0" * 64), n_boot=200)
    assert shortcut_flags(mixed)["shortcut_flag"].item() == "pass"  # half each way: nothing to learn


def test_the_flag_reaches_task_rows_and_the_macro_rows_that_average_them():
    board = pd.DataFrame(
        {"model": "m", "scorer": "s", "task": ["a", "b", "macro"], "kind": ["variant", "paired", "macro"],
         "scope": ["variant", "paired", "variant+paired"]}
    )  # fmt: skip
    flags = pd.DataFrame(
        {"task": ["a", "b"], "shortcut_flag": ["fail", "pass"], "shortcut_reason": ["substitution 0.8", ""]}
    )
    out = attach_shortcut_flags(board, flags).set_index("task")
    assert out.loc["a", "shortcut_flag"] == "fail" and out.loc["b", "shortcut_flag"] == "pass"
    assert out.loc["macro", "shortcut_flag"] == "fail" and "a" in out.loc["macro", "shortcut_reason"]
    assert attach_shortcut_flags(board, flags.iloc[1:]).set_index("task").loc["a", "shortcut_flag"] == "unknown"


def test_a_baseline_at_the_threshold_flags_only_with_its_interval_above_chance():
    table = pd.DataFrame(
        {"task": ["wide", "narrow"], "baseline": "cpg", "metric": "auroc", "value": [0.62, 0.60],
         "ci_low": [0.48, 0.51], "ci_high": [0.75, 0.69]}
    )  # fmt: skip
    flags = shortcut_flags(table).set_index("task")["shortcut_flag"]
    assert flags.to_dict() == {"wide": "pass", "narrow": "fail"}
