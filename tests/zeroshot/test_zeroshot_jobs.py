"""The zero-shot workflow jobs (geneb.zeroshot.job) and tables (geneb.zeroshot.tables) on a real built task: score
files are checked when read back (digest, task, rows), the Markov baselines refuse a leaked background, and the
tables turn the files into metrics, a leaderboard and the rank correlation with a probe leaderboard."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from geneb.core import integrity
from geneb.core.integrity import IntegrityError
from geneb.zeroshot.build import build_into
from geneb.zeroshot.job import (
    _SCORE_FILE_ATTR,
    ZeroShotFileError,
    _baselines_job,
    _write_score_file,
    read_score_file,
    run_build_rule,
    task_of_rows_file,
)
from geneb.zeroshot.scorers import BackgroundLeakError
from geneb.zeroshot.shortcuts import write_shortcuts
from geneb.zeroshot.tables import _zeroshot_tables
from geneb.zeroshot.task import NotApplicable, catalogue_entry, row_scores

CATALOGUE = Path(__file__).resolve().parents[2] / "config" / "zeroshot_tasks.tsv"


@pytest.fixture(scope="module")
def built(shared, tmp_path_factory):
    """zs_stop_gain_vs_synonymous built small from the real Coding/NC task, in a hashed folder as the rule does."""
    folder = tmp_path_factory.mktemp("zs") / "zs_stop_gain_vs_synonymous" / "0123456789ab"
    entry = catalogue_entry(CATALOGUE, "zs_stop_gain_vs_synonymous")
    return build_into(entry, shared / "data" / "tasks", folder, seed=0, params={"n_transcripts": 20})


def _background(tmp_path, shared, task: str):
    sequences = pd.read_csv(shared / "data" / "tasks" / task / "train.csv.gz")["sequence"].head(200)
    path = tmp_path / "tasks" / task / "0123456789ab" / "train.parquet"
    integrity.write_parquet(pd.DataFrame({"sequence": sequences}), path)
    return path


def test_a_score_file_reads_back_only_for_its_task_and_unchanged(built, tmp_path):
    rng = np.random.default_rng(0)
    frames = [row_scores(built, "embedding-cosine", rng.random(built.n))]
    na = [NotApplicable("m", built.name, "llr", "no head")]
    out = tmp_path / "scores.parquet"
    _write_score_file(out, built, "m", frames, na, {"settings_hash": "abc"})
    read = read_score_file(out, built)
    assert read.model == "m" and read.not_applicable == tuple(na)
    assert np.allclose(read.scores["score"], frames[0]["score"])
    # the same rows under another task's name or data: refused
    other = type(built)(name="other", kind=built.kind, rows=built.rows, data_sha256=built.data_sha256)
    with pytest.raises(ZeroShotFileError, match="read for task 'other'"):
        read_score_file(out, other)
    # one changed byte: the digest says so
    data = bytearray(out.read_bytes())
    data[len(data) // 2] ^= 0xFF
    out.write_bytes(bytes(data))
    with pytest.raises(IntegrityError):
        read_score_file(out, built)


def test_the_baselines_refuse_the_task_the_rows_were_built_from(built, tmp_path, shared):
    source = _background(tmp_path, shared, "prelnc_ath_lncrna_vs_mrna__resplit")
    with pytest.raises(BackgroundLeakError, match="prelnc_ath_lncrna_vs_mrna__resplit"):
        _baselines_job(
            built, {"prelnc_ath_lncrna_vs_mrna__resplit": source}, tmp_path / "b.parquet", orders=[1], pseudocount=1.0
        )
    other = _background(tmp_path, shared, "idna_ms_5hmc_h_sapiens")
    out = tmp_path / "b.parquet"
    _baselines_job(built, {"idna_ms_5hmc_h_sapiens": other}, out, orders=[0, 2], pseudocount=1.0)
    read = read_score_file(out, built)
    assert sorted(set(read.scores["scorer"])) == ["markov-0", "markov-2"]
    assert read.provenance["background_tasks"] == ["idna_ms_5hmc_h_sapiens"]


def test_tables_from_score_files(built, tmp_path, shared):
    rng = np.random.default_rng(1)
    labels = built.rows["label"].to_numpy()
    files = []
    for model, signal in (("good", 2.0), ("fair", 0.7), ("poor", 0.0)):
        path = tmp_path / "scores" / model / "x" / built.name / "h.parquet"
        frame = row_scores(built, "embedding-cosine", labels * signal + rng.normal(size=built.n))
        _write_score_file(path, built, model, [frame], [], {"settings_hash": model})
        files.append(path)
    baseline = tmp_path / "baselines" / built.name / "h.parquet"
    bg = _background(tmp_path, shared, "idna_ms_5hmc_h_sapiens")
    _baselines_job(built, {"idna_ms_5hmc_h_sapiens": bg}, baseline, orders=[1], pseudocount=1.0)
    probe = pd.DataFrame(
        [dict(protocol="geneb-paper", regime="full", model=m, category="macro", value=v, complete=True)
         for m, v in (("good", 0.6), ("fair", 0.5), ("poor", 0.1))]
    )  # fmt: skip
    tables = _zeroshot_tables([built], [*files, baseline], probe, n_boot=200, seed=0)
    auroc = tables.scores[(tables.scores["metric"] == "auroc") & (tables.scores["group"] == "all")].set_index("model")
    assert auroc.loc["good", "value"] > auroc.loc["fair", "value"] > 0.5
    assert "markov-1" in auroc.index and auroc.loc["good", "scores_sha256"]
    macro = tables.leaderboard[tables.leaderboard["task"] == "macro"].set_index("model")
    assert macro.loc["good", "rank"] == 1
    vs = tables.vs_probe.set_index("scorer")
    assert vs.loc["embedding-cosine", "n_models"] == 3
    assert len(tables.row_scores) == 4 * built.n


def test_the_build_rule_writes_into_its_hashed_folder(shared, tmp_path):
    entry = catalogue_entry(CATALOGUE, "zs_copy_recall")
    rows = tmp_path / "resources" / "zeroshot" / "tasks" / "zs_copy_recall" / "fedcba987654" / "rows.tsv"
    config = {"task_source": str(shared / "data" / "tasks"), "zeroshot": {"build_source": None, "task_source": None}}
    params = {"entry": {**entry.__dict__, "source_tasks": list(entry.source_tasks)}, "seed": 3}
    run_build_rule(params, rows, config=config)
    task = task_of_rows_file(rows)
    assert task.name == "zs_copy_recall" and task.n > 0
    meta = json.loads((rows.parent / "meta.json").read_text())
    assert meta["provenance"]["seed"] == 3
    assert _SCORE_FILE_ATTR == "geneb_zeroshot"


def test_the_figure_and_the_report_section_from_the_tables(built, tmp_path, shared):
    from geneb.figures.evaluation import _draw_zeroshot as draw_zeroshot
    from geneb.figures.style import paper_style, save
    from geneb.report.sections import zeroshot_section
    from geneb.zeroshot.tables import _write_zeroshot_tables as write_zeroshot_tables

    labels = built.rows["label"].to_numpy()
    files = []
    for model, signal in (("good", 2.0), ("fair", 0.7), ("poor", 0.0)):
        path = tmp_path / "scores" / model / "x" / built.name / "h.parquet"
        frame = row_scores(built, "embedding-cosine", labels * signal + np.random.default_rng(2).normal(size=built.n))
        _write_score_file(path, built, model, [frame], [NotApplicable(model, built.name, "llr", "no head")], {})
        files.append(path)
    probe = pd.DataFrame(
        [dict(protocol="geneb-paper", regime="full", model=m, category="macro", value=v, complete=True)
         for m, v in (("good", 0.6), ("fair", 0.5), ("poor", 0.1))]
    )  # fmt: skip
    tables = _zeroshot_tables([built], files, probe, n_boot=100, seed=0)
    outputs = {
        name: tmp_path / f"{name}.parquet"
        for name in ("scores", "row_scores", "leaderboard", "vs_probe", "not_applicable", "shortcuts")
    }
    # the model-free baselines beside the models, their flag on every leaderboard row (as run_tables_rule does)
    board = write_shortcuts(tables.leaderboard, [built], outputs["shortcuts"], {"n_boot": 100, "seed": 0})
    assert set(board["shortcut_flag"]) == {"pass"}  # the matched stop-gain task: no model-free rule solves it
    tables = dataclasses.replace(tables, leaderboard=board)
    write_zeroshot_tables(tables, outputs)
    png = tmp_path / "zeroshot.png"
    with paper_style():
        save(draw_zeroshot(tables.leaderboard, tables.vs_probe, probe, {}, protocol="geneb-paper"), png)
    assert png.stat().st_size > 1000 and png.with_suffix(".pdf").exists()
    files_in = {
        "zeroshot_leaderboard": outputs["leaderboard"],
        "zeroshot_vs_probe": outputs["vs_probe"],
        "zeroshot_not_applicable": outputs["not_applicable"],
        "zeroshot_figure": png,
        "zeroshot_shortcuts": outputs["shortcuts"],
    }
    html = "\n".join(zeroshot_section(files_in, lambda df, *a: df.to_html(), lambda p, n, c: f"<img {n}>", "cap"))
    assert "Zero-shot scoring" in html and "no head" in html and "good" in html and "<img zeroshot>" in html
    assert "Model-free baselines" in html and "codon_position" in html and "shortcut_flag" in html
    assert zeroshot_section(None, lambda df, *a: "", lambda p, n, c: "", "cap") == []


def test_a_users_own_task_is_read_from_its_source_and_checked(tmp_path):
    from geneb.tasks.sources import TaskDigestError
    from geneb.zeroshot.task import read_zeroshot_catalogue, write_zeroshot_task, zeroshot_source_identity

    source = tmp_path / "mine"
    rows = pd.DataFrame(
        {"sequence": ["ACGTACGTAA", "TTGCAACGTA"], "pos": [2, 5], "ref": ["G", "A"], "alt": ["T", "C"], "label": [1, 0]}
    )
    write_zeroshot_task(source / "my_variants", rows, {"kind": "variant", "name": "my_variants", "description": "d"})
    catalogue = tmp_path / "zeroshot_tasks.tsv"
    catalogue.write_text("task\tkind\tbuilder\tsource_tasks\tdescription\nmy_variants\tvariant\tsource\t-\tmine\n")
    (entry,) = read_zeroshot_catalogue(catalogue)
    assert entry.source_tasks == ()
    identity = zeroshot_source_identity(str(source), "my_variants")
    assert set(identity["files"]) == {"rows.tsv", "meta.json"}
    out = tmp_path / "resources" / "zeroshot" / "tasks" / "my_variants" / "aaaaaaaaaaaa" / "rows.tsv"
    params = {"entry": {**entry.__dict__, "source_tasks": []}}
    run_build_rule(
        params, out, config={"task_source": None, "zeroshot": {"task_source": str(source), "build_source": None}}
    )
    assert task_of_rows_file(out).n == 2
    # a changed row in the source: its recorded digest refuses it
    text = (source / "my_variants" / "rows.tsv").read_text().replace("ACGTACGTAA", "ACGTACGTAC")
    (source / "my_variants" / "rows.tsv").write_text(text)
    with pytest.raises(TaskDigestError):
        run_build_rule(
            params, out, config={"task_source": None, "zeroshot": {"task_source": str(source), "build_source": None}}
        )


def test_the_baselines_leave_out_a_background_sequence_held_in_a_row_under_another_name(built, tmp_path, shared):
    """The check by name passes (another task's name); the content check finds the planted piece of a row."""
    comp = str.maketrans("ACGT", "TGCA")
    planted = built.rows["sequence"].iloc[3][100:170].translate(comp)[::-1]  # a 70-base piece, other strand
    sequences = pd.read_csv(shared / "data" / "tasks" / "idna_ms_5hmc_h_sapiens" / "train.csv.gz")["sequence"]
    path = tmp_path / "tasks" / "gue_prom_core_all" / "0123456789ab" / "train.parquet"
    integrity.write_parquet(pd.DataFrame({"sequence": [*sequences.head(200), planted]}), path)
    out = tmp_path / "planted.parquet"
    _baselines_job(built, {"gue_prom_core_all": path}, out, orders=[1], pseudocount=1.0)
    check = read_score_file(out, built).provenance["background_content_check"]
    assert check["sequences_left_out_sharing_kmer"] == 1 and check["sequences_held_whole_by_rows"] == 1
    assert read_score_file(out, built).provenance["background_sequences"] == 200
