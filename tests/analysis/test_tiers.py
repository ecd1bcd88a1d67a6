"""Statistically tied tiers (geneb.analysis.tiers) on hand-checked matrices and on the paper's published results."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from scipy import stats

from geneb.analysis import tiers
from geneb.analysis.ranking import leaderboard
from geneb.tables.scores import REGIMES, AnalysisInputError

PAPER = Path(__file__).resolve().parents[3] / "shared" / "reference" / "geneb_paper"


def _cells(values: dict[str, dict[str, float]], cats: dict[str, str], regime: str = "full") -> pd.DataFrame:
    """Cells of models (outer keys) on tasks (inner keys), one protocol and regime."""
    return pd.DataFrame(
        [
            {"protocol": "p", "model": m, "task": t, "category": cats[t], "regime": regime, "value": v, "source": "x"}
            for m, row in values.items()
            for t, v in row.items()
        ]
    )


def _tiered(cells: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    return tiers.add_tiers(leaderboard(cells), cells, confidence)


def test_friedman_equals_scipy_with_ties_and_works_for_two_models():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=(9, 4)), 1)  # rounded: ties inside tasks
    x[2] = 0.5  # one task where every model ties
    stat, p = tiers._friedman(x)
    ref = stats.friedmanchisquare(*x.T)
    assert stat == pytest.approx(ref.statistic, rel=1e-12) and p == pytest.approx(ref.pvalue, rel=1e-12)
    # two models: the chi-square with 1 df; by hand: model 0 wins 5 of 6 tasks, the sixth ties
    y = np.array([[1, 0], [1, 0], [1, 0], [1, 0], [1, 0], [0.5, 0.5]])
    r0, n, k = 1 * 5 + 1.5, 6, 2
    r1 = n * (k + 1) / 2 * 2 - r0
    chi = (12 / (n * k * (k + 1)) * (r0**2 + r1**2) - 3 * n * (k + 1)) / (1 - 6 / (n * k * (k * k - 1)))
    assert tiers._friedman(y)[0] == pytest.approx(chi) and tiers._friedman(y)[1] == pytest.approx(stats.chi2.sf(chi, 1))
    with pytest.raises(AnalysisInputError, match="missing values"):
        tiers._friedman(np.array([[1.0, np.nan], [0.0, 1.0]]))


def test_critical_difference_matches_demsar_table_and_nemenyi_of_scikit_posthocs():
    # Demsar 2006 Table 5a: q_0.05 = 2.343 (k = 3), 2.569 (k = 4), 3.164 (k = 10)
    for k, q in ((3, 2.343), (4, 2.569), (10, 3.164)):
        assert tiers._critical_difference(k, 6, 0.95) == pytest.approx(q * np.sqrt(k * (k + 1) / 36), abs=2e-3)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(14, 6)) + np.linspace(1.5, 0, 6)
    t = tiers._tiers(pd.DataFrame(x.T, index=list("abcdef")), 0.95)
    p = sp.posthoc_nemenyi_friedman(x).to_numpy()  # pairwise Nemenyi p-values (scikit-posthocs)
    r = stats.rankdata(-x, axis=1).mean(axis=0)
    ours = np.abs(r[:, None] - r[None, :]) > t.cd
    assert t.friedman_p < 0.05 and (ours == (p < 0.05)).all()


def test_one_clearly_best_model_is_tier_one_alone():
    cats = {f"t{i}": "Promoters" for i in range(8)}
    vals = {"best": dict.fromkeys(cats, 0.9)}
    for j, m in enumerate(("m1", "m2", "m3")):  # the rest swap places task by task, far below the best
        vals[m] = {t: 0.3 + 0.01 * ((i + j) % 3) for i, t in enumerate(cats)}
    board = _tiered(_cells(vals, cats))
    prom = board[board["category"] == "Promoters"].set_index("model")
    assert prom.loc["best", "tier"] == 1 and (prom.drop(index="best")["tier"] == 2).all()
    assert prom.loc["best", "tier_mean_rank"] == 1.0 and (prom["tier_reason"] == "").all()
    assert (prom["tier_confidence"] == 0.95).all() and (prom["tier_n_tasks"] == 8).all()
    sep = tiers.rank_separability(board).set_index("category").loc["Promoters"]
    assert sep["n_defensible_top"] == 1 and sep["defensible_top_models"] == "best" and sep["n_tiers"] == 2
    assert sep["n_adjacent_pairs"] == 3 and sep["n_separable_adjacent"] == 1  # only best | m*


def test_all_equal_models_are_all_tier_one():
    cats = {f"t{i}": "Enhancers" for i in range(5)}
    board = _tiered(_cells({m: dict.fromkeys(cats, 0.4) for m in "abcd"}, cats))
    enh = board[board["category"] == "Enhancers"]
    assert (enh["tier"] == 1).all() and (enh["friedman_p"] == 1.0).all() and (enh["friedman_stat"] == 0.0).all()
    sep = tiers.rank_separability(board).set_index("category").loc["Enhancers"]
    assert sep["n_defensible_top"] == 4 and sep["n_separable_adjacent"] == 0


def test_single_task_category_and_single_model_have_no_tier_but_a_reason():
    cats = {"s1": "Splice Sites", **{f"p{i}": "Promoters" for i in range(4)}}
    vals = {m: {t: 0.1 * j + 0.01 * i for i, t in enumerate(cats)} for j, m in enumerate("abc")}
    board = _tiered(_cells(vals, cats))
    ss = board[board["category"] == "Splice Sites"]
    assert ss["tier"].isna().all() and ss["friedman_p"].isna().all()
    assert (ss["tier_reason"] == "this category has 1 task(s): the Friedman test needs >= 2 tasks (blocks)").all()
    assert board.loc[board["category"] == "Promoters", "tier"].notna().all()
    sep = tiers.rank_separability(board).set_index("category")
    assert (
        pd.isna(sep.loc["Splice Sites", "n_defensible_top"]) and "1 task(s)" in sep.loc["Splice Sites", "tier_reason"]
    )
    one = _tiered(_cells({"a": dict.fromkeys(cats, 0.5)}, cats))
    assert (
        one["tier"].isna().all() and one.loc[one["category"] == "macro", "tier_reason"].str.contains("1 ranked").all()
    )


def test_an_unranked_model_gets_no_tier_and_says_why():
    cats = {f"t{i}": "Promoters" for i in range(4)}
    vals = {m: {t: 0.2 * j + 0.01 * i for i, t in enumerate(cats)} for j, m in enumerate("abc")}
    del vals["c"]["t0"]  # c lacks a task: not ranked on Promoters, macro or micro
    board = _tiered(_cells(vals, cats))
    c = board[board["model"] == "c"].set_index("category")
    assert c["tier"].isna().all() and c.loc["micro", "tier_reason"].startswith("not ranked: missing 1 of 4")
    assert c.loc["macro", "tier_reason"].startswith("this regime has 1 category(ies): the Friedman test needs >= 2")
    assert (board.loc[board["model"] != "c", "tier_n_models"] == 2).all()
    with pytest.raises(AnalysisInputError, match="tier_confidence"):
        tiers.add_tiers(leaderboard(_cells(vals, cats)), _cells(vals, cats), 1.0)


@pytest.fixture(scope="module")
def published_cells() -> pd.DataFrame:
    """The paper's published cells (40 models x 100 tasks x 3 regimes)."""
    if not (PAPER / "per_task_results.tsv").exists():
        pytest.skip("needs ../shared/reference/geneb_paper")
    from geneb.analysis.inputs import cell_scores
    from geneb.analysis.published import import_published

    return cell_scores(import_published(PAPER))


def _block_values(cells: pd.DataFrame, regime: str, category: str) -> pd.DataFrame:
    """(blocks, models) as GENEB's rows use them: macro the category means, micro every task, a category its tasks."""
    c = cells[cells["regime"] == regime]
    if category == "macro":
        return c.groupby(["category", "model"])["value"].mean().unstack("model")
    c = c if category == "micro" else c[c["category"] == category]
    return c.pivot(index="task", columns="model", values="value")


def test_tiers_of_the_published_40_models_are_scipy_and_scikit_posthocs_on_the_real_table(published_cells):
    cells = published_cells
    board = _tiered(cells)
    for regime in REGIMES:  # macro over the 13 category means, micro and a category over their tasks
        for category in ("macro", "micro", "Enhancers", "Histone Mod."):
            g = board[(board["regime"] == regime) & (board["category"] == category)].set_index("model")
            w = _block_values(cells, regime, category)
            ref = stats.friedmanchisquare(*w.to_numpy().T)
            row = g.iloc[0]
            assert row["tier_n_blocks"] == len(w) and row["tier_blocks"] == (
                "categories" if category == "macro" else "tasks"
            )
            assert row["friedman_stat"] == pytest.approx(ref.statistic, rel=1e-9)
            assert row["friedman_p"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300)
            p = sp.posthoc_nemenyi_friedman(w.to_numpy())  # pairwise Nemenyi p-values (scikit-posthocs)
            p.index = p.columns = w.columns
            # every tier from scikit-posthocs' decisions: walk the mean-rank order, a tier ends at the first model
            # separable (p < 0.05) from its first
            order = list(g.sort_values("tier_position").index)
            assert order == sorted(order, key=lambda m: (g.loc[m, "tier_mean_rank"], -w[m].mean(), m))
            expected, head, level = {}, order[0], 1
            for m in order:
                if p.loc[head, m] < 0.05 and ref.pvalue < 0.05:
                    head, level = m, level + 1
                expected[m] = level
            assert g["tier"].to_dict() == expected, (regime, category)
    full = board[(board["regime"] == "full") & (board["category"] == "macro")]
    assert full["tier"].notna().sum() == 40 and (full["tier_n_tasks"] == cells["task"].nunique()).all()
    sep = tiers.rank_separability(board)
    assert set(sep["regime"]) == set(REGIMES) and len(sep) == 3 * 15
    assert (sep["n_defensible_top"].dropna() >= 1).all()


def test_two_task_categories_of_the_published_40_have_no_tier_but_the_reason_with_its_numbers(published_cells):
    board = _tiered(published_cells)
    for category in ("Regulatory", "Virus/Phage"):
        g = board[(board["regime"] == "full") & (board["category"] == category)]
        k, cd = 40, tiers._critical_difference(40, 2, 0.95)
        assert g["tier"].isna().all() and cd > k - 1
        assert (g["tier_reason"] == g["tier_reason"].iloc[0]).all()
        reason = g["tier_reason"].iloc[0]
        assert reason.startswith("too few tasks for a post-hoc test: the Nemenyi critical difference over 2 tasks is")
        assert f"{cd:.2f}" in reason and "at least 39" in reason and "between 40 models" in reason
    assert board.loc[(board["regime"] == "full") & (board["category"] == "Virus/Phage"), "friedman_p"].iloc[0] < 0.05


def test_every_published_tier_against_the_rank_order_says_why(published_cells):
    """Tiers order by mean rank, ranks by value: every row in a contradiction carries a tier_note naming the other
    model, and no other row does; macro over categories has fewer contradictions than over tasks had (5 pairs in
    the full regime)."""
    board = _tiered(published_cells)
    n_pairs = {}
    for (regime, category), g in board[board["tier"].notna()].groupby(["regime", "category"]):
        r, t, m = g["rank"].to_numpy(float), g["tier"].to_numpy(float), g["model"].tolist()
        bad = {i for i in range(len(g)) for j in range(len(g)) if (r[i] - r[j]) * (t[i] - t[j]) < 0}
        n_pairs[(regime, category)] = sum(
            1 for i in range(len(g)) for j in range(len(g)) if r[i] < r[j] and t[i] > t[j]
        )
        for i, note in enumerate(g["tier_note"]):
            assert (i in bad) == (note != ""), (regime, category, m[i], note)
            if i in bad:
                others = [m[j] for j in range(len(g)) if (r[i] - r[j]) * (t[i] - t[j]) < 0]
                assert "tiers order by mean rank over the" in note and any(f"{o} (rank" in note for o in others)
    assert n_pairs[("full", "macro")] == 0 and n_pairs[("1shot", "macro")] == 0 and n_pairs[("10shot", "macro")] == 1
    sep = tiers.rank_separability(board).set_index(["regime", "category"])
    assert [sep.loc[(r, "macro"), "n_tiers"] for r in REGIMES] == [2, 2, 2]  # over the 100 tasks: 5, 4, 3
