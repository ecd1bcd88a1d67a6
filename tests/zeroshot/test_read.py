"""Reading, checking and writing a zero-shot task folder: every problem named with its row and value, at once."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from geneb.tasks.sources import TaskDigestError
from geneb.zeroshot.task import ZeroShotTaskError, _rows_sha256, read_zeroshot_task, write_zeroshot_task

SEQ = "ACGTACGTAC"


def variant_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sequence": [SEQ, SEQ, "GGGGCCCC"],
            "pos": [0, 4, 3],
            "ref": ["A", "A", "G"],
            "alt": ["C", "T", "A"],
            "label": [1, 0, 1],
            "group": ["g1", "g1", "g2"],
        }
    )


def write_raw(folder: Path, header: list[str], lines: list[list[str]], meta: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "\t".join(header) + "\n" + "".join("\t".join(line) + "\n" for line in lines)
    (folder / "rows.tsv").write_text(text)
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


def test_round_trip_keeps_rows_and_digest(tmp_path):
    meta = {"kind": "variant", "name": "toy", "description": "d", "provenance": {"source_tasks": [{"task": "t1"}]}}
    folder = write_zeroshot_task(tmp_path / "toy", variant_rows(), meta)
    task = read_zeroshot_task(folder)
    assert task.name == "toy" and task.kind == "variant" and task.n == 3 and task.has_groups
    assert task.rows["pos"].dtype == "int64" and task.rows["pos"].tolist() == [0, 4, 3]
    assert task.source_tasks == ("t1",)
    import hashlib

    assert task.data_sha256 == hashlib.sha256((folder / "rows.tsv").read_bytes()).hexdigest()
    assert task.meta["sha256"]["rows.tsv"] == task.data_sha256
    assert _rows_sha256(task.rows, "variant") == task.data_sha256


def test_column_order_and_crlf_do_not_change_the_digest(tmp_path):
    rows = variant_rows()
    a = read_zeroshot_task(write_zeroshot_task(tmp_path / "a", rows, {"kind": "variant"}))
    folder = tmp_path / "b"
    folder.mkdir()
    shuffled = rows[["label", "group", "alt", "ref", "pos", "sequence"]]
    (folder / "rows.tsv").write_bytes(shuffled.to_csv(sep="\t", index=False, lineterminator="\r\n").encode())
    (folder / "meta.json").write_text('{"kind": "variant"}')
    assert read_zeroshot_task(folder).data_sha256 == a.data_sha256


def test_every_variant_problem_is_named_at_once(tmp_path):
    header = ["sequence", "pos", "ref", "alt", "label", "group"]
    lines = [
        ["ACGT", "1", "G", "T", "1", "g"],  # row 0: ref does not match (window has C)
        ["ACGT", "9", "A", "T", "0", "g"],  # row 1: pos outside
        ["ACGT", "1.0", "C", "T", "0", "g"],  # row 2: non-integer pos
        ["ACGT", "0", "R", "T", "0", "g"],  # row 3: ref not a base
        ["ACGT", "0", "A", "A", "0", "g"],  # row 4: alt == ref
        ["ACGT", "0", "A", "G", "2", "g"],  # row 5: label
        ["", "0", "A", "C", "1", "g"],  # row 6: empty sequence
        ["ACgT", "0", "A", "C", "1", "g"],  # row 7: lower case
        ["ACGT", "0", "A", "T", "1", ""],  # row 8: empty group
        ["ACGT", "2", "G", "C", "1", "g"],  # row 9
        ["ACGT", "2", "G", "C", "1", "g"],  # row 10: duplicates row 9
        ["ACGT", "2", "G", "C", "0", "h"],  # row 11: the same variant as row 9 with another label
    ]
    folder = write_raw(tmp_path / "bad", header, lines, {"kind": "variant"})
    with pytest.raises(ZeroShotTaskError) as err:
        read_zeroshot_task(folder)
    text = str(err.value)
    expected = [
        "row 0: ref 'G' does not match the window at pos 1, which has 'C'",
        "row 1: pos 9 is outside the window (length 4",
        "row 2: pos '1.0' is not a non-negative integer",
        "row 3: ref 'R' is not one of A/C/G/T",
        "row 4: alt 'A' equals ref",
        "row 5: label '2' is not 0 or 1",
        "row 6: empty sequence",
        "row 7: sequence has letters outside A/C/G/T/N: 'g'",
        "row 8: empty group value",
        "row 10: duplicates row 9 (same sequence, pos, ref, alt)",
        "row 11: duplicates row 9 (same sequence, pos, ref, alt; other columns differ)",
    ]
    for piece in expected:
        assert piece in text, piece
    assert "task 'bad'" in text and len(err.value.problems) == len(expected)
    assert isinstance(err.value, ValueError)


def test_missing_columns_unknown_kind_and_paired_problems(tmp_path):
    folder = write_raw(tmp_path / "m", ["sequence", "pos"], [["ACGT", "0"]], {"kind": "variant"})
    with pytest.raises(ZeroShotTaskError, match="lacks column\\(s\\) ref, alt, label"):
        read_zeroshot_task(folder)
    folder = write_raw(tmp_path / "k", ["sequence_a", "sequence_b"], [["AC", "GT"]], {"kind": "pairs"})
    with pytest.raises(ZeroShotTaskError, match="kind 'pairs' is not one of variant, paired"):
        read_zeroshot_task(folder)
    folder = write_raw(tmp_path / "n", ["sequence_a", "sequence_b"], [["AC", "GT"]], {"name": "n"})
    with pytest.raises(ZeroShotTaskError, match="has no `kind`"):
        read_zeroshot_task(folder)
    folder = write_raw(
        tmp_path / "p", ["sequence_a", "sequence_b", "extra"], [["AC", "AC", "x"], ["AXC", "", "y"]], {"kind": "paired"}
    )
    with pytest.raises(ZeroShotTaskError) as err:
        read_zeroshot_task(folder)
    text = str(err.value)
    assert "column(s) extra that a paired task does not have" in text
    folder = write_raw(tmp_path / "q", ["sequence_a", "sequence_b"], [["AC", "AC"], ["AXC", ""]], {"kind": "paired"})
    with pytest.raises(ZeroShotTaskError) as err:
        read_zeroshot_task(folder)
    text = str(err.value)
    assert "row 0: sequence_a equals sequence_b" in text
    assert "row 1: sequence_a has letters outside A/C/G/T/N: 'X'" in text and "row 1: empty sequence_b" in text


def test_write_names_floats_and_missing_values_as_written(tmp_path):
    rows = variant_rows().astype({"pos": object})
    rows.loc[0, "pos"] = 0.0
    rows.loc[1, "label"] = None
    with pytest.raises(ZeroShotTaskError) as err:
        write_zeroshot_task(tmp_path / "f", rows, {"kind": "variant"})
    assert "row 0: pos '0.0' is not a non-negative integer" in str(err.value)
    assert "row 1: label " in str(err.value) and "is not 0 or 1" in str(err.value)


def test_write_refuses_bad_rows_before_writing(tmp_path):
    rows = variant_rows()
    rows.loc[1, "ref"] = "G"
    with pytest.raises(ZeroShotTaskError, match="row 1: ref 'G' does not match the window at pos 4, which has 'A'"):
        write_zeroshot_task(tmp_path / "w", rows, {"kind": "variant"})
    assert not (tmp_path / "w").exists()


def test_a_changed_rows_file_fails_its_digest(tmp_path):
    folder = write_zeroshot_task(tmp_path / "d", variant_rows(), {"kind": "variant"})
    text = (folder / "rows.tsv").read_text().replace("\t1\tg2", "\t0\tg2")
    (folder / "rows.tsv").write_text(text)
    with pytest.raises(TaskDigestError, match="rows.tsv"):
        read_zeroshot_task(folder)


def test_a_line_with_another_field_count_is_named(tmp_path):
    header = ["sequence", "pos", "ref", "alt", "label"]
    folder = write_raw(
        tmp_path / "r", header, [["ACGT", "0", "A", "C", "1", "9"], ["ACGT", "1", "C"]], {"kind": "variant"}
    )
    with pytest.raises(ZeroShotTaskError) as err:
        read_zeroshot_task(folder)
    assert "row 0: 6 tab-separated field(s), the header has 5" in str(err.value)
    assert "row 1: 3 tab-separated field(s), the header has 5" in str(err.value)


def test_na_stays_text_and_a_blank_line_is_a_row(tmp_path):
    folder = write_raw(
        tmp_path / "na", ["sequence_a", "sequence_b"], [["NA", "AC"], [""], ["AC", "GT"]], {"kind": "paired"}
    )
    with pytest.raises(ZeroShotTaskError, match="row 1: 1 tab-separated field"):
        read_zeroshot_task(folder)
    folder = write_raw(tmp_path / "na2", ["sequence_a", "sequence_b"], [["NA", "AC"]], {"kind": "paired"})
    assert read_zeroshot_task(folder).rows["sequence_a"].tolist() == ["NA"]  # text, not a missing value
