"""`geneb leaderboard --model`, `geneb recommend --model`, `recommend` on a one-model run, and `geneb models`
naming a python entry's factory."""

import shutil

import pandas as pd

from geneb.cli import main
from geneb.core.categories import CATEGORIES


def _tables(synthetic_run):
    return synthetic_run["root"] / "results" / "tables"


def test_leaderboard_model_lists_its_rows_per_regime_and_category_with_rank_out_of_n(synthetic_run, capsys):
    t = _tables(synthetic_run)
    board = pd.read_parquet(t / "leaderboard.parquet")
    model = sorted(board["model"].unique())[0]
    assert main(["leaderboard", "--table", str(t / "leaderboard.parquet"), "--model", model]) == 0
    out = capsys.readouterr().out
    mine = board[(board["model"] == model) & (board["protocol"] == "geneb-paper")]
    assert set(board["protocol"]) == {"geneb-paper"}
    assert out.count("\n") == len(mine) + 2  # a title line, a header, one line per row
    assert "<NA>" not in out
    # a table that holds the model under a second protocol shows the first and names the other
    both = pd.concat([board, board.assign(protocol="geneb-strict")], ignore_index=True)
    both.to_parquet(t.parent / "two_protocols.parquet")
    assert main(["leaderboard", "--table", str(t.parent / "two_protocols.parquet"), "--model", model]) == 0
    two = capsys.readouterr().out
    assert two.splitlines()[0].startswith(f"{model} (geneb-paper)") and two.count("\n") == len(mine) + 3
    assert (
        two.rstrip().splitlines()[-1] == f"{model} is also scored under geneb-strict: --protocol NAME shows those rows"
    )
    macro = mine[(mine["regime"] == "full") & (mine["category"] == "macro")].iloc[0]
    n = (
        board[(board["protocol"] == "geneb-paper") & (board["regime"] == "full") & (board["category"] == "macro")][
            "rank"
        ]
        .notna()
        .sum()
    )
    assert f"{int(macro['rank'])} of {n}" in out
    assert "tier" in out.splitlines()[1]  # the run's leaderboard has tiers (Friedman + Nemenyi): shown
    # a table without a tier column (written before tiers, or by another tool) shows none
    untiered = board.drop(columns=["tier"])
    untiered.to_parquet(t.parent / "untiered.parquet")
    assert main(["leaderboard", "--table", str(t.parent / "untiered.parquet"), "--model", model]) == 0
    assert "tier" not in capsys.readouterr().out.splitlines()[1]


def test_leaderboard_model_with_a_category_shows_that_category_only_ranked_among_all(synthetic_run, capsys):
    t = _tables(synthetic_run)
    board = pd.read_parquet(t / "leaderboard.parquet")
    model = sorted(board["model"].unique())[0]
    argv = ["leaderboard", "--table", str(t / "leaderboard.parquet"), "--model", model, "--regime", "full"]
    assert main([*argv, "--category", "MACRO"]) == 0  # any case, like the plain board
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].split()[:2] == ["full", "macro"], lines
    every = board[(board["protocol"] == "geneb-paper") & (board["regime"] == "full") & (board["category"] == "macro")]
    assert f"of {every['rank'].notna().sum()}" in lines[2]  # out of every ranked model, not of the one row shown
    assert main([*argv, "--category", "nope"]) == 2
    assert "unknown category 'nope'" in capsys.readouterr().err


def test_unknown_model_names_the_close_matches(synthetic_run, capsys):
    t = _tables(synthetic_run)
    model = sorted(pd.read_parquet(t / "leaderboard.parquet")["model"].unique())[0]
    for cmd, table in (("leaderboard", "leaderboard.parquet"), ("recommend", "recommendations.parquet")):
        assert main([cmd, "--table", str(t / table), "--model", model + "x"]) == 2
        err = capsys.readouterr().err
        assert f"model '{model}x' is not in" in err and f"did you mean: {model}" in err


def test_recommend_model_states_rank_ci_and_distance_to_the_best(synthetic_run, capsys):
    t = _tables(synthetic_run)
    board = pd.read_parquet(t / "leaderboard.parquet")
    b = board[(board["protocol"] == "geneb-paper") & (board["regime"] == "full") & board["rank"].notna()]
    worst = b[b["category"] == "macro"].sort_values("rank").iloc[-1]
    best = b[b["category"] == "macro"].sort_values("rank").iloc[0]
    argv = ["recommend", "--table", str(t / "recommendations.parquet"), "--model", worst["model"], "--regime", "full"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    macro = next(line for line in lines if line.startswith("full macro:"))
    n = int((b["category"] == "macro").sum())
    assert f"rank {int(worst['rank'])} of {n}" in macro
    assert f"{best['value'] - worst['value']:.4f} below the best ({best['model']})" in macro
    # the worst model is neither best nor tied: its CI is the rank-interval table's value interval
    ri = pd.read_parquet(t / "rank_intervals.parquet")
    own = ri[(ri["model"] == worst["model"]) & (ri["regime"] == "full") & (ri["category"] == "macro")].iloc[0]
    assert f"CI {own['ci_low']:.4f}-{own['ci_high']:.4f})" in macro and own["ci_low"] <= own["value"] <= own["ci_high"]
    cats = {line.split(":")[0].removeprefix("full ") for line in lines[1:]}
    assert cats <= {*CATEGORIES, "macro", "micro"} and "macro" in cats
    argv = ["recommend", "--table", str(t / "recommendations.parquet"), "--model", best["model"]]
    assert main([*argv, "--category", "macro", "--regime", "full"]) == 0
    out = capsys.readouterr().out
    assert "the best" in out and "CI" in out


def test_recommend_on_a_one_model_run_answers(synthetic_run, tmp_path, capsys):
    t = _tables(synthetic_run)
    board = pd.read_parquet(t / "leaderboard.parquet")
    model = sorted(board["model"].unique())[0]
    one = board[board["model"] == model].copy()
    one["rank"] = one["rank"].where(one["rank"].isna(), 1)
    one["of"] = one["rank"].notna().astype("Int64")  # ranked rows: 1 of 1
    one.to_parquet(tmp_path / "leaderboard.parquet")
    recs = pd.read_parquet(t / "recommendations.parquet").iloc[0:0]
    recs.to_parquet(tmp_path / "recommendations.parquet")  # what a one-model run writes: no rows
    argv = ["recommend", "--table", str(tmp_path / "recommendations.parquet"), "--category", "macro"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert model in out and "only ranked model" in out and "best by default" in out
    assert main(["recommend", "--table", str(tmp_path / "recommendations.parquet"), "--model", model]) == 0
    assert "best by default" in capsys.readouterr().out


def test_models_names_a_python_entrys_factory(tmp_path, capsys, monkeypatch):
    (tmp_path / "enc.py").write_text("def make():\n    raise NotImplementedError('never called by the listing')\n")
    (tmp_path / "models.yaml").write_text(
        "schema_version: 1\nmodels:\n  mine:\n    family: python\n    load: {entry: enc.py:make}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["models", "--sheet", str(tmp_path / "models.yaml"), "--pins", str(tmp_path / "none.yaml")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("mine"))
    assert "python file enc.py:make" in line and "builtin" not in line


def test_recommend_without_category_or_model_is_a_clear_error(synthetic_run, tmp_path, capsys):
    t = _tables(synthetic_run)
    shutil.copy(t / "recommendations.parquet", tmp_path)
    assert main(["recommend", "--table", str(tmp_path / "recommendations.parquet")]) == 2
    assert "needs --category (or --model" in capsys.readouterr().err


def test_a_changed_table_is_one_error_line_naming_the_file_not_a_traceback(synthetic_run, capsys, tmp_path):
    t = _tables(synthetic_run)
    for cmd, table, extra in (
        ("leaderboard", "leaderboard.parquet", []),
        ("recommend", "recommendations.parquet", ["--category", CATEGORIES[0]]),
    ):
        changed = tmp_path / table
        shutil.copy(t / table, changed)
        shutil.copy(t / (table + ".sha256"), tmp_path / (table + ".sha256"))
        data = bytearray(changed.read_bytes())
        data[len(data) // 2] ^= 0xFF  # one byte changed: the digest no longer matches
        changed.write_bytes(bytes(data))
        assert main([cmd, "--table", str(changed), *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("geneb: error: ") and err.count("\n") == 1 and str(changed) in err, err
        assert "Traceback" not in err


def test_error_lines_join_a_line_that_introduces_the_next_with_a_space():
    from geneb.cli.app import _one_line as one_line

    assert one_line("cannot plan:\n - a\n - b\n") == "cannot plan: - a; - b"
    assert ":;" not in one_line("problems (1):\n- results_dir: no")


def test_standing_never_prints_a_rank_outside_its_interval_from_another_model_set(synthetic_run, tmp_path, capsys):
    """A rank-interval table bootstrapped over fewer models than the leaderboard ranks (as GENEB wrote it before
    rank and interval were computed together: the models complete on every task): `recommend --model` shows no
    interval where its rank or `of` differ."""
    import re

    t = _tables(synthetic_run)
    for name in ("leaderboard.parquet", "recommendations.parquet"):
        shutil.copy(t / name, tmp_path)
    ri = pd.read_parquet(t / "rank_intervals.parquet")
    old = ri[ri["model"] != "enc-big"].drop(columns=["of"])  # the best model left out of the interval's set
    old["rank"] = old.groupby(["protocol", "regime", "category"])["value"].rank(method="min", ascending=False)
    old.to_parquet(tmp_path / "rank_intervals.parquet")
    shown = 0
    for model in sorted(set(ri["model"]) - {"enc-big"}):
        assert main(["recommend", "--table", str(tmp_path / "recommendations.parquet"), "--model", model]) == 0
        for r, lo, hi in re.findall(r"rank (\d+) of \d+ \(rank interval (\d+)-(\d+)\)", capsys.readouterr().out):
            shown += 1
            assert int(lo) <= int(r) <= int(hi)
    assert shown == 0  # the old table ranks every model out of one fewer: none of its intervals is shown


def test_counts_and_ranks_print_as_integers_and_an_unranked_row_shows_no_rank(synthetic_run, tmp_path, capsys):
    """A leaderboard with an unranked model (its rank and tier missing, so float columns): every rank, tier, count
    and Borda rank prints as an integer, and the unranked row shows "-" for each rank, never 1.0000 or <NA>."""
    board = pd.read_parquet(_tables(synthetic_run) / "leaderboard.parquet")
    last = sorted(board["model"].unique())[-1]
    mine = board["model"] == last
    board.loc[mine, ["rank", "tier"]] = float("nan")
    board["borda_rank"] = board["borda_rank"].astype("Int64").mask(mine)
    board.loc[mine, "complete"] = False
    path = tmp_path / "leaderboard.parquet"
    board.to_parquet(path)
    assert main(["leaderboard", "--table", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1].split()
    rows = [dict(zip(header, line.split(), strict=True)) for line in lines[2 : 2 + board["model"].nunique()]]
    assert {r["model"] for r in rows} == set(board["model"])
    for r in rows:
        counts = [r[c] for c in ("rank", "n_tasks", "borda_rank", "tier")]
        if r["model"] == last:
            assert (r["rank"], r["borda_rank"], r["tier"]) == ("-", "-", "-") and r["n_tasks"].isdigit()
        else:
            assert all(v.isdigit() for v in counts), r
