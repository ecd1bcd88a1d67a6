"""The view analyses end to end on a planted views run (tests/synthetic_views.py) and on a run without views:
best layer, sensitivity (Kendall τ, changed category winners, headline), their figures and report section."""

import pandas as pd
import pytest

from geneb.analysis.inputs import reference_views, view_table
from geneb.report.html import build_report
from geneb.report.render import report_captions
from synthetic_views import LAST_POOLING_SWAP


def _tables(root, name):
    return pd.read_parquet(root / "results" / "tables" / f"{name}.parquet")


def test_best_layer_finds_the_planted_depth_and_gain(view_run):
    b = _tables(view_run, "best_layer")
    macro = b[(b["category"] == "macro") & (b["regime"] == "full")].set_index(["protocol", "model"])
    mid = macro.loc[("geneb-paper", "m-mid")]
    assert mid["best_layer"] == 2 and mid["best_depth"] == 0.5
    assert mid["registry_layer"] == 4 and mid["gain"] > 0.15 and mid["gain_ci_low"] > 0
    assert mid["n_tasks_better"] >= 10 and mid["n_tasks_worse"] == 0  # the paired test, task by task
    for model in ("m-a", "m-b", "m-deep"):  # best at the registry's (last) layer: no gain
        row = macro.loc[("geneb-paper", model)]
        assert row["best_depth"] == 1.0 and abs(row["gain"]) < 0.02
    assert "kmer" not in set(b["model"])  # no layers: nothing to choose
    assert b.loc[b["regime"] == "10shot", "n_tasks_better"].isna().all()


def test_sensitivity_counts_the_planted_winner_changes(view_run):
    s = _tables(view_run, "sensitivity")
    full = s[s["regime"] == "full"].set_index(["choice", "alternative"])
    assert full.loc[("pooling", "last"), "winners_changed"] == len(LAST_POOLING_SWAP)
    assert full.loc[("pooling", "last"), "changed_categories"] == "; ".join(LAST_POOLING_SWAP)
    for key in (("pooling", "max"), ("reverse_complement", "on"), ("protocol", "geneb-strict")):
        assert full.loc[key, "winners_changed"] == 0 and full.loc[key, "kendall_tau"] == pytest.approx(1.0)
    cv = full.loc[("layer_rule", "inner_cv")]
    assert cv["kendall_tau"] < 1 and cv["tau_ci_low"] <= cv["kendall_tau"] <= cv["tau_ci_high"]
    assert full.loc[("pooling", "last"), "n_models_unaffected"] == 1  # kmer has one pooling
    assert full.loc[("pooling", "last"), "headline"].startswith("pooling mean -> last changes 4 of 13 category winners")
    assert set(full["n_resamples"]) == {200} and set(full["seed"]) == {5}
    board = _tables(view_run, "sensitivity_leaderboard")
    assert {"reference", "pooling", "layer_rule", "protocol", "reverse_complement"} <= set(board["choice"])


def test_the_leaderboard_ranks_each_models_reference_view(view_run):
    board = _tables(view_run, "leaderboard")
    macro = board[(board["category"] == "macro") & (board["regime"] == "full") & (board["protocol"] == "geneb-paper")]
    # the reference view is the registry layer (m-mid's worst), mean pooling, no rc: m-mid ranks last
    assert macro.set_index("model")["rank"].idxmax() == "m-mid"


def test_the_report_has_a_sentence_per_choice(view_run, repo, tmp_path):
    t = view_run / "results" / "tables"
    out = build_report(
        t,
        view_run / "results" / "figures",
        tmp_path / "r.html",
        config={},
        captions=report_captions(repo / "workflow" / "report"),
        protocol="geneb-paper",
    )
    text = out.read_text()
    assert "How much of a ranking is the protocol" in text
    assert "pooling mean -&gt; last changes 4 of 13 category winners" in text
    assert (view_run / "results" / "figures" / "best_layer.png").stat().st_size > 10_000


def test_a_run_without_views_gets_empty_view_tables_and_a_note(synthetic_run):
    root = synthetic_run["root"]
    assert _tables(root, "best_layer").empty and _tables(root, "sensitivity").empty
    import json

    summary = json.loads((root / "results" / "tables" / "analysis_summary.json").read_text())
    assert "no alternative view or protocol" in summary["sensitivity"]["note"]
    assert "fixed-layer views" in summary["best_layer"]["note"]


def test_a_views_run_without_registry_rows_takes_the_deepest_fixed_layer():
    """The extraction side writes "fixed" rows for every layer and no "registry" rows in a views run."""
    rows = [
        {
            "model": "m",
            "view": f"L{i}|{p}|rc{int(rc)}",
            "layer": i,
            "layer_depth": i / 2,
            "pooling": p,
            "reverse_complement": rc,
            "layer_rule": "fixed",
        }
        for i in range(3)
        for p in ("mean", "last")
        for rc in (False, True)
    ]
    rows.append(
        {
            "model": "k",
            "view": "L-|mean|rc0",
            "layer": pd.NA,
            "layer_depth": pd.NA,
            "pooling": "mean",
            "reverse_complement": False,
            "layer_rule": "fixed",
        }
    )
    ref = {"pooling": "mean", "layer_rule": "registry", "reverse_complement": False}
    assert reference_views(view_table(pd.DataFrame(rows)), ref) == {"k": "L-|mean|rc0", "m": "L2|mean|rc0"}


def test_a_views_run_without_registry_rows_takes_the_deepest_layer_as_reference(tmp_path):
    """A real views run writes no "registry" rows: the reference view is then the deepest fixed layer, one of the
    layers best_layer compares, which must be read once (twice made a duplicate index)."""
    from geneb.analysis.registry import LEADERBOARD_TABLES
    from geneb.analysis.steps import analyses_step, leaderboard_step
    from synth import analysis_config
    from synthetic_views import write_view_run

    write_view_run(tmp_path, protocols=("geneb-paper",), registry=False)
    t = tmp_path / "results" / "tables"
    common = {
        "scores": str(t / "scores.parquet"),
        "models_yaml": str(tmp_path / "config" / "models.yaml"),
        "tasks_tsv": str(tmp_path / "config" / "tasks.tsv"),
        "analysis_config": analysis_config({"bootstrap": {"n_resamples": 100, "seed": 5}}),
        "view": "geneb",
    }
    names = LEADERBOARD_TABLES
    leaderboard_step(**common, outputs={n: str(t / f"{n}.parquet") for n in names})
    analyses_step(**common, predictions_root=str(tmp_path / "results" / "predictions"), outdir=str(t))
    b = _tables(tmp_path, "best_layer")
    mid = b[(b["category"] == "macro") & (b["regime"] == "full") & (b["model"] == "m-mid")].iloc[0]
    assert mid["registry_view"] == "L4|mean|rc0" and mid["registry_layer"] == 4
    assert mid["best_layer"] == 2 and mid["gain"] > 0.15
