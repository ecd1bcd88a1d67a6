"""The choices of the statistically tied tiers (geneb.analysis.tiers): the blocks of each row (categories for
macro, tasks or source benchmarks for a category), the too-few-blocks rule, Wilcoxon-Holm beside Nemenyi, and
tiers that stay integers wherever they are printed."""

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from scipy import stats

from geneb.analysis import tiers
from geneb.analysis.ranking import leaderboard
from geneb.tables.scores import AnalysisInputError


def _cells(values: dict[str, dict[str, float]], cats: dict[str, str]) -> pd.DataFrame:
    """Cells of models (outer keys) on tasks (inner keys), one protocol, the full regime."""
    return pd.DataFrame(
        [
            {"protocol": "p", "model": m, "task": t, "category": cats[t], "regime": "full", "value": v, "source": "x"}
            for m, row in values.items()
            for t, v in row.items()
        ]
    )


def _ordered(models: str, cats: dict[str, str]) -> dict[str, dict[str, float]]:
    """Every task ranks the models in the order given (first best), values apart by 0.1."""
    return {m: {t: 0.9 - 0.1 * j + 0.001 * i for i, t in enumerate(cats)} for j, m in enumerate(models)}


@pytest.mark.parametrize("n_tasks, too_few", [(2, True), (3, False)])
def test_too_few_tasks_for_the_nemenyi_test_is_no_tier_with_the_numbers(n_tasks, too_few):
    # 5 models: the largest mean-rank gap is 4; CD(k=5, N=2) = 4.31 >= 4 (no pair can ever differ), CD(N=3) = 3.52
    cats = {f"t{i}": "Promoters" for i in range(n_tasks)}
    board = tiers.add_tiers(
        leaderboard(_cells(_ordered("abcde", cats), cats)), _cells(_ordered("abcde", cats), cats), 0.95
    )
    prom = board[board["category"] == "Promoters"].set_index("model")
    cd = tiers._critical_difference(5, n_tasks, 0.95)
    assert (cd >= 4) == too_few and prom["tier_cd"].iloc[0] == pytest.approx(cd)
    if too_few:
        assert prom["tier"].isna().all() and prom["friedman_p"].notna().all()  # the test is still reported
        assert (prom["tier_reason"] == prom["tier_reason"].iloc[0]).all()
        reason = prom["tier_reason"].iloc[0]
        assert reason.startswith(
            f"too few tasks for a post-hoc test: the Nemenyi critical difference over 2 tasks is {cd:.2f}"
        )
        assert "at least 4, the largest possible mean-rank gap between 5 models" in reason
        assert tiers.rank_separability(board).set_index("category").loc["Promoters", "tier_reason"] == reason
    else:  # a perfect order over 3 tasks: Friedman rejects (p 0.017) and a (first) and e (last) are 4 > 3.52 apart
        assert prom.loc["a", "tier"] == 1 and prom.loc["e", "tier"] == 2 and (prom["tier_reason"] == "").all()


@pytest.mark.parametrize("n_tasks, too_few", [(6, True), (7, False)])
def test_too_few_tasks_for_wilcoxon_holm_is_no_tier_with_the_numbers(n_tasks, too_few):
    # 3 models, 3 pairs: Holm's first threshold is 0.05 / 3 = 0.0167; the smallest two-sided signed-rank p over n
    # blocks is 2 / 2^n: 0.03125 (6 tasks, above it), 0.0156 (7, below)
    cats = {f"t{i}": "Enhancers" for i in range(n_tasks)}
    cells = _cells(_ordered("abc", cats), cats)
    enh = tiers.add_tiers(leaderboard(cells), cells, 0.95, method="wilcoxon_holm")
    enh = enh[enh["category"] == "Enhancers"].set_index("model")
    assert (enh["tier_method"] == "Wilcoxon signed-rank + Holm (Benavoli et al. 2016)").all()
    assert enh["tier_cd"].isna().all()
    if too_few:
        assert enh["tier"].isna().all()
        assert enh["tier_reason"].iloc[0] == (
            "too few tasks for a post-hoc test: over 6 tasks the smallest two-sided Wilcoxon signed-rank p-value is "
            "0.0312, above Holm's first threshold 0.05/3 = 0.0167 for the 3 pairs of 3 models, so no pair can be "
            "separated"
        )
    else:  # every pair at p 2/128, Holm-adjusted 3 x 2/128 = 0.047 <= 0.05: three tiers
        assert enh["tier"].to_dict() == {"a": 1, "b": 2, "c": 3} and enh.loc["a", "tier_separable_next"]


def test_macro_tiers_use_the_category_means_as_blocks():
    # 'a' wins the 6 Histone tasks, 'b' wins the 3 one-task categories and 'c' is last everywhere: over tasks 'a'
    # leads (mean rank 1.33 vs 1.67); over the 4 categories, the macro's unit, 'b' leads (1.25 vs 1.75)
    cats = {**{f"h{i}": "Histone Mod." for i in range(6)}, "e": "Enhancers", "s": "Splice Sites", "t": "TF Binding"}
    vals = {
        "a": {t: (0.8 if c == "Histone Mod." else 0.5) for t, c in cats.items()},
        "b": {t: (0.7 if c == "Histone Mod." else 0.6) for t, c in cats.items()},
        "c": dict.fromkeys(cats, 0.1),
    }
    cells = _cells(vals, cats)
    board = tiers.add_tiers(leaderboard(cells), cells, 0.95)
    macro = board[board["category"] == "macro"].set_index("model")
    micro = board[board["category"] == "micro"].set_index("model")
    assert (macro["tier_blocks"] == "categories").all() and (macro["tier_n_blocks"] == 4).all()
    assert (macro["tier_n_tasks"] == 9).all() and (micro["tier_blocks"] == "tasks").all()
    assert macro["tier_mean_rank"].to_dict() == pytest.approx({"a": 1.75, "b": 1.25, "c": 3.0})
    assert micro["tier_mean_rank"].to_dict() == pytest.approx({"a": 4 / 3, "b": 5 / 3, "c": 3.0})
    means = cells.groupby(["category", "model"])["value"].mean().unstack("model")
    ref = stats.friedmanchisquare(*means.to_numpy().T)
    assert macro["friedman_stat"].iloc[0] == pytest.approx(ref.statistic) and macro.loc["b", "tier_position"] == 1
    with pytest.raises(AnalysisInputError, match="tier_category_blocks"):
        tiers.add_tiers(leaderboard(cells), cells, 0.95, category_blocks="benchmarks")


def test_source_benchmark_blocks_average_the_sibling_tasks_of_one_benchmark():
    cats = {f"t{i}": "Promoters" for i in range(6)}
    sources = {"t0": "GUE", "t1": "GUE", "t2": "GUE", "t3": "NT", "t4": "NT", "t5": ""}  # t5: no source, alone
    rng = np.random.default_rng(7)
    vals = {m: {t: float(rng.uniform()) for t in cats} for m in "abcd"}
    cells = _cells(vals, cats)
    kw = {"category_blocks": "source_benchmarks", "sources": sources}
    board = tiers.add_tiers(leaderboard(cells), cells, 0.95, **kw)
    prom = board[board["category"] == "Promoters"].set_index("model")
    assert (prom["tier_blocks"] == "source benchmarks").all() and (prom["tier_n_blocks"] == 3).all()
    assert (prom["tier_n_tasks"] == 6).all()
    wide = cells.pivot(index="model", columns="task", values="value")
    blocks = pd.DataFrame(
        {"GUE": wide[["t0", "t1", "t2"]].mean(axis=1), "NT": wide[["t3", "t4"]].mean(axis=1), "t5": wide["t5"]}
    )
    ranks = stats.rankdata(-blocks.to_numpy(), axis=0).mean(axis=1)  # within each block, over models
    assert prom["tier_mean_rank"].to_dict() == pytest.approx(dict(zip(blocks.index, ranks)))
    assert prom["friedman_stat"].iloc[0] == pytest.approx(stats.friedmanchisquare(*blocks.to_numpy()).statistic)
    macro = board[board["category"] == "macro"]  # macro and micro keep their own units
    assert (macro["tier_blocks"] == "categories").all()
    assert (board.loc[board["category"] == "micro", "tier_n_blocks"] == 6).all()
    one = tiers.add_tiers(
        leaderboard(cells), cells, 0.95, category_blocks="source_benchmarks", sources=dict.fromkeys(cats, "GUE")
    )
    reason = one.loc[one["category"] == "Promoters", "tier_reason"].iloc[0]
    assert reason == "this category has 1 source benchmark(s): the Friedman test needs >= 2 source benchmarks (blocks)"


def test_holm_adjustment_by_hand():
    # Holm 1979: sorted 0.01, 0.02, 0.04, 0.30 times 4, 3, 2, 1 = 0.04, 0.06, 0.08, 0.30 (already non-decreasing)
    assert tiers.holm(np.array([0.04, 0.01, 0.30, 0.02])) == pytest.approx([0.08, 0.04, 0.30, 0.06])
    # a later smaller product is raised to the running maximum; capped at 1
    assert tiers.holm(np.array([0.01, 0.011, 0.5])) == pytest.approx([0.03, 0.03, 0.5])
    assert tiers.holm(np.array([0.6, 0.7])) == pytest.approx([1.0, 1.0])
    with pytest.raises(AnalysisInputError, match="p-values"):
        tiers.holm(np.array([0.1, np.nan]))


def test_wilcoxon_holm_p_values_equal_scikit_posthocs_and_tiers_follow_the_value_order():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(25, 5)) * 0.05 + np.linspace(0.8, 0.5, 5)  # 25 blocks, 5 models, best first
    x[:, 3] = x[:, 2] + rng.normal(size=25) * 0.001  # models 2 and 3 nearly equal
    ours = tiers.wilcoxon_holm(x)
    ref = sp.posthoc_wilcoxon(
        pd.DataFrame(x).melt(var_name="g", value_name="v"), val_col="v", group_col="g", p_adjust="holm"
    )
    assert ours == pytest.approx(ref.to_numpy(), rel=1e-9)
    t = tiers._tiers(pd.DataFrame(x.T, index=list("abcde")), 0.95, "wilcoxon_holm")
    assert t.models == ("a", "b", "c", "d", "e") and not t.too_few  # by mean value: the score's order
    sep = ours <= 0.05
    assert (t.sep == sep).all() and list(t.tier) == [1, 2, 3, 3, 4]


def test_tiers_stay_integers_in_the_table_the_site_and_the_report(tmp_path):
    from geneb.report.render import table_html
    from geneb.site.pages import table_spec

    cats = {f"t{i}": c for i, c in enumerate(("Promoters", "Promoters", "Enhancers", "Enhancers", "TF Binding"))}
    cells = _cells(_ordered("abcde", cats), cats)
    board = tiers.add_tiers(leaderboard(cells), cells, 0.95)
    board.to_parquet(tmp_path / "b.parquet")
    back = pd.read_parquet(tmp_path / "b.parquet")
    for name in ("tier", "tier_n_models", "tier_n_tasks", "tier_n_blocks", "tier_position"):
        assert str(back[name].dtype) == "Int64", name
    spec = table_spec(back, columns=["model", "tier"])
    assert {c["key"]: c["kind"] for c in spec["columns"]}["tier"] == "int"
    assert {type(r["tier"]) for r in spec["rows"]} <= {int, type(None)}
    html = table_html(back[back["category"] == "macro"][["model", "tier"]])  # 5 models over 3 categories
    assert ">1<" in html and "1.0" not in html
