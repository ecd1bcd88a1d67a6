"""The tiers' settings are output-affecting: changing `analysis.tier_method` or `analysis.tier_category_blocks`
reruns the rules that write tiers (their `analysis` params, the rerun key), never the probes or the embeddings.
A dry run of the shared finished run (`finished_run`), no new workflow run."""

from __future__ import annotations

import pytest

from workflow_support import dry_run

#: the rules whose params carry the `analysis:` section and write a tiered leaderboard
_TIERED = {"leaderboard", "analyses"}


@pytest.mark.parametrize("setting", [{"tier_method": "wilcoxon_holm"}, {"tier_category_blocks": "source_benchmarks"}])
def test_a_tier_setting_reruns_the_tiered_tables_by_their_params(finished_run, setting):
    jobs = dry_run(finished_run, config={"analysis": setting})
    by_params = {j["rule"] for j in jobs if "Params have changed" in j["reason"]}
    assert by_params >= _TIERED, by_params
    assert not {j["rule"] for j in jobs} & {"extract_embeddings", "fit_probes", "aggregate_scores", "prepare_task"}
    assert dry_run(finished_run) == []  # the shared run itself is up to date
