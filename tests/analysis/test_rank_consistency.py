"""Rank, `of`, rank interval and best model computed together: per (protocol, regime, category)
the point rank and its bootstrap interval come from the same models and the same replicates, so no row shows a
rank outside its own interval, and the recommendation's best model is the leaderboard's rank 1.

A property test over random score tables (ties, missing cells, cells left out as contaminated, one-task
categories, test-row replicates biased against the point value) and a regression test on the quickstart's case (one
model's Promoters cell left out as contaminated)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import matthews_corrcoef

from geneb.analysis import ranking, registry, run
from geneb.analysis.inputs import task_categories, task_matrix
from geneb.core.categories import CATEGORIES
from geneb.tables.scores import AnalysisInputError, check_scores
from synth import analysis_config, meta, scores_from_values

#: the analyses that rank: what these tests run of the registry
_RANKING = tuple(a for a in registry.analyses() if a.name in ("rank_intervals", "recommendation"))
#: score levels drawn from a short list, so that models often tie
_LEVELS = (0.1, 0.2, 0.3, 0.3, 0.5, 0.7)


def _settings(n_resamples: int = 100, seed: int = 3) -> dict:
    return run.resolve_settings(analysis_config({"bootstrap": {"n_resamples": n_resamples, "seed": seed}}), "geneb")


def _ranked_analyses(values: dict, cats: dict, trained: dict[str, list[str]], settings: dict) -> dict:
    models = sorted({m for m, _, _ in values})
    scores = check_scores(scores_from_values(values, cats))
    model_meta = meta({m: {"trained_on_tasks": trained.get(m, [])} for m in models})
    tables, _ = run.run_analyses(
        scores, model_meta=model_meta, task_meta=None, declared_pairs=[], settings=settings, analyses=_RANKING
    )
    keys = ["regime", "category", "model", "rank", "of", "value"]
    empty = {"rank_intervals": [*keys, "rank_low", "rank_high", "interval_reason"], "recommendations": [*keys, "role"]}
    return {k: (v if len(v) or k not in empty else pd.DataFrame(columns=empty[k])) for k, v in tables.items()}


def _random_table(rng: np.random.Generator) -> tuple[dict, dict, dict[str, list[str]]]:
    """({(model, task, regime): MCC}, {task: category}, {model: tasks it was trained on}): 2 to 6 models, 1 to 4
    categories of 1 to 3 tasks, cells missing at random, some cells contaminated."""
    n_models = int(rng.integers(2, 7))
    models = [f"m{i}" for i in range(n_models)]
    cats = {}
    for c in rng.choice(len(CATEGORIES), size=int(rng.integers(1, 5)), replace=False):
        for k in range(int(rng.integers(1, 4))):
            cats[f"t{c}_{k}"] = CATEGORIES[c]
    tied = rng.random() < 0.5
    values = {}
    for m in models:
        for t in cats:
            if rng.random() < 0.12:  # a missing cell: the model lacks the task
                continue
            values[(m, t, "full")] = float(rng.choice(_LEVELS)) if tied else float(rng.uniform(-0.2, 0.9))
    if not values:
        values[(models[0], next(iter(cats)), "full")] = 0.5
    trained = {m: [t for t in cats if rng.random() < 0.06] for m in models}
    return values, cats, trained


def _assert_consistent(board: pd.DataFrame, ri: pd.DataFrame, rec: pd.DataFrame, where: str) -> None:
    """The properties of one analysed table: every ranked row of a column with >= 2 ranked models has its rank
    interval row with the leaderboard's rank and `of`, the interval contains the rank, and the recommendation's
    best has rank 1 and every other model of rank 1 is tied."""
    ranked = board[board["rank"].notna() & (board["category"] != "micro")]
    ranking.check_rank_intervals(ri, where)
    for (regime, col), g in ranked.groupby(["regime", "category"]):
        of = len(g)
        assert (g["of"] == of).all(), where
        got = ri[(ri["regime"] == regime) & (ri["category"] == col)].set_index("model")
        if of < 2:
            assert got.empty, where
            continue
        assert set(got.index) == set(g["model"]), (where, col)
        assert (got["of"] == of).all(), (where, col)
        for r in g.itertuples():
            assert got.loc[r.model, "rank"] == r.rank, (where, col, r.model)
            lo, hi = got.loc[r.model, "rank_low"], got.loc[r.model, "rank_high"]
            if pd.notna(lo):
                assert lo <= r.rank <= hi <= of, (where, col, r.model)
            else:
                assert got.loc[r.model, "interval_reason"], (where, col, r.model)
        rc = rec[(rec["regime"] == regime) & (rec["category"] == col)]
        firsts = set(g.loc[g["rank"] == 1, "model"])
        assert list(rc.loc[rc["role"] == "best", "model"]) and set(rc.loc[rc["role"] == "best", "model"]) <= firsts
        assert firsts <= set(rc["model"]), (where, col)
        assert (rc.loc[rc["model"].isin(firsts), "rank"] == 1).all(), (where, col)
    # a model not ranked in a column has no interval there
    unranked = board[board["rank"].isna()]
    keys = ["regime", "category", "model"]
    assert not set(map(tuple, unranked[keys].to_numpy())) & set(map(tuple, ri[keys].to_numpy())), where


def test_rank_of_and_interval_agree_on_random_score_tables():
    rng = np.random.default_rng(20260843)
    settings = _settings()
    seen = {"missing": 0, "contaminated": 0, "one_task": 0, "ties": 0, "incomplete_ranked": 0}
    for i in range(80):
        values, cats, trained = _random_table(rng)
        tables = _ranked_analyses(values, cats, trained, settings)
        board, ri, rec = tables["leaderboard"], tables["rank_intervals"], tables["recommendations"]
        _assert_consistent(board, ri, rec, f"table {i}")
        models = {m for m, _, _ in values}
        seen["missing"] += len(values) < len(models) * len(cats)
        seen["contaminated"] += any(trained.values())
        seen["one_task"] += min(pd.Series(cats).value_counts()) == 1
        seen["ties"] += bool(ri.duplicated(["regime", "category", "rank"]).any()) if len(ri) else 0
        macro = board[(board["category"] == "macro") & board["rank"].isna()]
        seen["incomplete_ranked"] += bool(set(macro["model"]) & set(ri["model"]))
    # the sample covers each case the property is about, many times
    assert min(seen.values()) >= 20, seen  # 80 tables: each case 26 to 59 times


def test_intervals_over_biased_test_row_replicates_still_contain_the_rank():
    """Test-row replicates biased against the point value (as MCC recomputed on resampled rows can be) can leave
    the rank on the unresampled data outside the replicates' percentile interval: the interval is widened to it
    and says so."""
    rng = np.random.default_rng(7)
    widened = 0
    for i in range(80):
        values, cats, _ = _random_table(rng)
        cells = pd.DataFrame(
            [
                {"protocol": "p", "regime": r, "model": m, "task": t, "category": cats[t], "value": v}
                for (m, t, r), v in values.items()
            ]
        )
        board = ranking.leaderboard(cells.assign(source="geneb"))
        matrix = task_matrix(cells, "full")
        b = 40
        bias = rng.uniform(-0.3, 0.3, size=(1, len(matrix), matrix.shape[1]))
        rows = matrix.to_numpy()[None] + bias + rng.normal(0, 0.05, size=(b, *matrix.shape))
        reps = ranking.ranked_replicates(
            matrix, task_categories(cells), rows, ranking.ranked_sets(board, "p", "full"), n_resamples=b, seed=i
        )
        for column, rep in reps.items():
            ri = ranking.rank_intervals(rep, 0.95)
            ri = ri[ri["category"] == column]
            ranking.check_rank_intervals(ri.assign(protocol="p", regime="full"), f"table {i}")
            own = board[(board["category"] == column) & board["rank"].notna()].set_index("model")["rank"]
            assert (ri.set_index("model")["rank"] == own.reindex(ri["model"])).all(), (i, column)
            widened += int(ri["rank_interval_widened"].sum())
    assert widened > 0  # the bias did move some intervals off the point rank, and they were widened


#: the quickstart's five models and their planted accuracy (full regime; 1-shot lower)
_QUICKSTART = {"kmer": 0.72, "random-tiny": 0.55, "ft-prom": 0.80, "ft-tf0": 0.79, "ft-tf1": 0.80}


def _quickstart_run(root) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The quickstart's shape, with per-row predictions under root/geneb-paper (so that one-task categories have an
    interval, from the test rows): one task per category plus a second Histone Mod. task, five models, ft-prom
    trained on the Promoters task (contamination: exclude leaves that cell out), random-tiny lacking the second
    Histone Mod. task (full regime). Returns (score table, {model: tasks trained on})."""
    cats = {f"q_{c.split()[0].lower().strip('.').replace('/', '')}": c for c in CATEGORIES}
    cats["q_histone_2"] = "Histone Mod."
    rng = np.random.default_rng(43)
    values = {}
    for task in cats:
        y = rng.integers(0, 2, 80)
        for model, acc in _QUICKSTART.items():
            frames = []
            for regime, drop in (("full", 0.0), ("1shot", 0.12)):
                if (model, task, regime) == ("random-tiny", "q_histone_2", "full"):
                    continue
                right = rng.random(len(y)) < acc - drop
                yp = np.where(right, y, 1 - y)
                frames.append(
                    pd.DataFrame({"regime": regime, "seed": 13, "row": np.arange(len(y)), "y_true": y, "y_pred": yp})
                )
                values[(model, task, regime)] = float(matthews_corrcoef(y, yp))
            path = root / "geneb-paper" / model / f"{task}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pd.concat(frames).assign(score=np.nan).to_parquet(path, index=False)
    return check_scores(scores_from_values(values, cats, seeds=(13,))), {"ft-prom": ["q_promoters"]}


def test_the_quickstart_case_ranks_every_model_with_an_interval_containing_its_rank(tmp_path):
    scores, trained = _quickstart_run(tmp_path)
    tables, _ = run.run_analyses(
        scores,
        model_meta=meta({m: {"trained_on_tasks": trained.get(m, [])} for m in _QUICKSTART}),
        task_meta=None,
        declared_pairs=[],
        settings=_settings(n_resamples=200),
        predictions_root=tmp_path,
        analyses=_RANKING,
    )
    board, ri, rec = tables["leaderboard"], tables["rank_intervals"], tables["recommendations"]
    _assert_consistent(board, ri, rec, "quickstart")
    full = board[board["regime"] == "full"].set_index(["category", "model"])
    # ft-prom lacks Promoters (contaminated): unranked there and on macro, with the reason, and no interval there
    for col in ("Promoters", "macro"):
        assert pd.isna(full.loc[(col, "ft-prom"), "rank"]) and full.loc[(col, "ft-prom"), "incomplete_reason"]
        assert ri[(ri["regime"] == "full") & (ri["category"] == col) & (ri["model"] == "ft-prom")].empty
    # random-tiny lacks one of the two Histone Mod. tasks: unranked there with the reason
    assert pd.isna(full.loc[("Histone Mod.", "random-tiny"), "rank"])
    assert "q_histone_2" in full.loc[("Histone Mod.", "random-tiny"), "incomplete_reason"]
    # everywhere else every model is ranked out of five, with an interval over the same five that contains its rank
    ri_full = ri[ri["regime"] == "full"].set_index(["category", "model"])
    for col in ("Enhancers", "Regulatory", "DNA Methyl."):
        assert (full.xs(col)["of"] == 5).all() and full.xs(col)["rank"].notna().all()
        for model in _QUICKSTART:
            r = ri_full.loc[(col, model)]
            assert r["of"] == 5 and r["rank"] == full.loc[(col, model), "rank"] and r["interval_reason"] == ""
            assert r["rank_low"] <= r["rank"] <= r["rank_high"]
    assert (ri_full.xs("Histone Mod.")["of"] == 4).all() and (ri_full.xs("macro")["of"] == 3).all()
    # the best of each column is the leaderboard's rank 1 there, ft-prom included where it is ranked
    for regime in ("full", "1shot"):
        for col in ("Enhancers", "DNA Methyl.", "macro"):
            first = board[(board["regime"] == regime) & (board["category"] == col) & (board["rank"] == 1)]["model"]
            best = rec[(rec["regime"] == regime) & (rec["category"] == col) & (rec["role"] == "best")]["model"]
            assert list(best) and set(best) <= set(first), (regime, col)


def test_readers_take_an_interval_only_from_the_same_models():
    cats = {"p1": "Promoters", "p2": "Promoters", "e1": "Enhancers", "e2": "Enhancers"}
    level = {"kmer": 0.3, "ft-prom": 0.5, "ft-tf0": 0.45, "random": 0.1}
    values = {(m, t, "full"): v + 0.02 * i for m, v in level.items() for i, t in enumerate(cats)}
    tables = _ranked_analyses(values, cats, {"ft-prom": ["p1"]}, _settings())
    board, ri = tables["leaderboard"], tables["rank_intervals"]
    shown = ranking.attach_rank_intervals(board, ri)
    ranked = shown[shown["rank"].notna() & (shown["category"] != "micro")]
    assert ranked["rank_low"].notna().all() and (ranked["interval_reason"] == "").all()
    ranking.check_rank_intervals(shown, "attached")
    # a rank-interval table computed over other models (the old bootstrap over the complete models only): the
    # reader shows no interval, and says why, instead of one from another model set
    old = ri[ri["model"] != "ft-prom"].drop(columns="of").copy()
    old["rank"] = old.groupby(["regime", "category"])["value"].rank(method="min", ascending=False).astype("Int64")
    shown = ranking.attach_rank_intervals(board, old).set_index(["regime", "category", "model"])
    row = shown.loc[("full", "Enhancers", "kmer")]  # 3rd of 4 on the board, 2nd of 3 in the old table
    assert row["rank"] == 3 and pd.isna(row["rank_low"]) and "computed over other models" in row["interval_reason"]
    ranking.check_rank_intervals(shown.reset_index(), "attached")


def test_writing_a_rank_outside_its_interval_names_the_row():
    bad = pd.DataFrame(
        {
            "protocol": ["geneb-paper"],
            "regime": ["full"],
            "category": ["Histone Mod."],
            "model": ["random-esm-tiny"],
            "rank": [5],
            "of": [5],
            "rank_low": [4],
            "rank_high": [4],
        }
    )
    with pytest.raises(
        AnalysisInputError, match="geneb-paper, regime full, category Histone Mod., model random-esm-tiny"
    ):
        ranking.check_rank_intervals(bad, "rank_intervals")
    with pytest.raises(AnalysisInputError, match="rank_intervals: 1 row"):
        run.write_tables({"rank_intervals": bad}, None, "/nonexistent-never-written", ("rank_intervals",))
    ranking.check_rank_intervals(bad.assign(rank_low=pd.NA, rank_high=pd.NA), "no interval: passes")
