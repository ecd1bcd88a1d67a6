"""The synthetic run end to end: tables, planted findings with test-row resampling, figures (PNG + PDF)."""

import json

import pandas as pd

from geneb.analysis.registry import LEADERBOARD_TABLES, all_tables
from geneb.core.provenance import code_revision


def test_every_table_and_the_summary_are_written_with_provenance(synthetic_run):
    t = synthetic_run["root"] / "results" / "tables"
    for name in all_tables():
        df = pd.read_parquet(t / f"{name}.parquet")
        if name not in LEADERBOARD_TABLES:
            assert {"settings_hash", "input_sha256"} <= set(df.columns), name
        assert (df["geneb_commit"] == code_revision()["geneb_commit"]).all(), name  # every table: the code's revision
    s = json.loads((t / "analysis_summary.json").read_text())
    assert s["geneb_commit"] == code_revision()["geneb_commit"] and s["geneb_dirty"] == code_revision()["geneb_dirty"]
    assert s["settings"]["bootstrap"] == {"n_resamples": 200, "seed": 5, "resample_tasks": True}
    assert s["package_versions"]["scipy"] and s["view"] == "geneb"


def test_planted_findings_are_found(synthetic_run):
    t = synthetic_run["root"] / "results" / "tables"
    s = json.loads((t / "analysis_summary.json").read_text())["protocols"]["geneb-paper"]
    full = s["regimes"]["full"]
    assert full["rows_resampled"] and full["top_model"] == "enc-big"
    # scale: prok (1e9, weakest pretrained) is excluded by name; kmer has no parameters; prok is out of domain
    assert full["spearman"]["excluding"]["rho"] > full["spearman"]["all"]["rho"]
    assert full["spearman"]["excluding"]["n"] == 4 and full["not_in_scale_analysis"] == {
        "kmer": "no trained parameters (baseline)"
    }
    assert full["out_of_domain"] == ["prok"] and full["n_in_domain"] == 4
    # reversal planted: enc-small-ms (12M) and enc-small (10M) and ssm (8M) all trail enc-big (500M): none;
    # but the specialist ssm wins Splice Sites
    sp = pd.read_parquet(t / "specialists.parquet")
    win = sp[(sp["regime"] == "full") & (sp["category"] == "Splice Sites")]
    assert win["winner"].tolist() == ["ssm"] and win["specialist"].all()
    mp = pd.read_parquet(t / "matched_pairs.parquet")
    mp = mp[(mp["regime"] == "full") & (mp["category"] == "Splice Sites")].set_index("pair_id")
    assert mp.loc["declared", "diff"] < 0 and mp.loc["declared", "pair_source"] == "declared"
    assert "enc-small~enc-small-ms" in mp.index  # derived: differs in pretraining data only
    ri = pd.read_parquet(t / "rank_intervals.parquet")
    assert ri["rows_resampled"].all()
    cis = pd.read_parquet(t / "near_random.parquet")
    assert (cis["ci_source"] == "paired bootstrap over test rows").all()
