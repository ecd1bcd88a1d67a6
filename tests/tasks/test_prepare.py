"""prepare_task on real mirrored tasks, from a folder, a local HTTP server and a saved Hugging Face dataset."""

from __future__ import annotations

import csv
import functools
import gzip
import hashlib
import http.server
import json
import shutil
import threading

import pandas as pd
import pytest

from geneb.tasks.catalogue import read_catalogue, source_string, task_row, validate_catalogue
from geneb.tasks.prepare import TaskDataError, prepare_task
from geneb.tasks.sources import HttpMirror, TaskSourceError, open_source
from geneb.tasks.validation import AlphabetPolicy

TASK = "ienhancer2l_strong_vs_weak"  # 1484 train / 200 test, 200 nt


@pytest.fixture(scope="module")
def catalogue(repo):
    return read_catalogue(repo / "config" / "tasks.tsv")


def prepare(tmp_path, source, catalogue, task=TASK, caps=None, policy=None):
    return prepare_task(
        task, task_row(catalogue, task), source, policy or AlphabetPolicy(), caps or {}, 0, tmp_path / task
    )


def test_catalogue_validates_and_holds_both_sets(repo, catalogue):
    import yaml

    validate_catalogue(catalogue, yaml.safe_load((repo / "workflow/schemas/tasks.schema.yaml").read_text()))
    counts = catalogue["task_set"].value_counts().to_dict()
    assert counts == {"paper": 100, "mirror": 80}
    assert catalogue.loc[catalogue.task_set == "mirror", "category"].nunique() == 13
    assert (
        catalogue.loc[catalogue.task_set == "paper", "source"].str.match(r"^hf:DeepPavlov/geneb-tasks@[0-9a-f]{40}$")
    ).all()


def test_prepare_real_task_from_folder(tmp_path, shared, catalogue):
    card = prepare(tmp_path, open_source(str(shared / "data/tasks")), catalogue)
    meta = json.loads((shared / f"data/tasks/{TASK}/meta.json").read_text())
    train = pd.read_parquet(tmp_path / TASK / "train.parquet")
    assert list(train.columns) == ["row", "sequence", "label"]
    assert card.splits["train"].n == meta["splits"]["train"]["n"] == len(train)
    assert card.splits["train"].class_counts == meta["splits"]["train"]["labels"]
    assert card.splits["train"].n_duplicate_rows == meta["splits"]["train"]["within_split_dup"]
    # no within-split duplicates in test, so test rows found in train = the mirror's shared-sequence count
    assert card.overlap.exact == meta["overlap_exact_seq"]["train&test"] == 100
    assert len(card.data_hash) == 64
    assert json.loads((tmp_path / TASK / "card.json").read_text()) == card.as_dict()


def test_overlap_and_conflicts_reported_on_a_task_with_known_leakage(tmp_path, shared, catalogue):
    task = "gue_prom_core_all"  # meta.json: train&test exact overlap 42, 64 sequences with >1 label
    card = prepare(tmp_path, open_source(str(shared / "data/tasks")), catalogue, task=task)
    meta = json.loads((shared / f"data/tasks/{task}/meta.json").read_text())
    test = pd.read_parquet(tmp_path / task / "test.parquet").set_index("row")["sequence"]
    shared_seqs = {s.upper() for s in test.loc[list(card.overlap.exact_rows)]}
    assert len(shared_seqs) == meta["overlap_exact_seq"]["train&test"] == 42  # distinct sequences, as meta.json counts
    assert card.splits["train"].n_duplicate_rows == meta["splits"]["train"]["within_split_dup"]
    assert card.splits["train"].n == meta["splits"]["train"]["n"]  # reported, nothing dropped
    conflicting = card.splits["train"].conflicting_label_sequences + card.splits["test"].conflicting_label_sequences
    assert conflicting > 0


def test_caps_are_recorded_and_deterministic(tmp_path, shared, catalogue):
    src = open_source(str(shared / "data/tasks"))
    a = prepare(tmp_path / "a", src, catalogue, caps={"max_train": 300, "max_test": 50})
    b = prepare(tmp_path / "b", src, catalogue, caps={"max_train": 300, "max_test": 50})
    assert a.data_hash == b.data_hash
    assert a.caps["train"].n_kept == 300 and a.caps["train"].n_source == 1484
    train = pd.read_parquet(tmp_path / "a" / TASK / "train.parquet")
    assert train["row"].is_monotonic_increasing and len(train) == 300


def _mirror_copy(shared, dst, task=TASK):
    (dst / task).mkdir(parents=True)
    for name in ("train.csv.gz", "test.csv.gz", "meta.json"):
        shutil.copy(shared / "data/tasks" / task / name, dst / task / name)
    return dst


def _write_split(path, rows):
    with gzip.open(path, "wt", newline="") as f:
        f.write("sequence,label\n" + "".join(f"{s},{y}\n" for s, y in rows))


def test_bad_character_error_names_task_split_row_and_character(tmp_path, shared, catalogue):
    root = _mirror_copy(shared, tmp_path / "m")
    df = pd.read_csv(root / TASK / "test.csv.gz", dtype=str)
    df.loc[5, "sequence"] = df.loc[5, "sequence"][:10] + "ACGT\r"
    with gzip.open(root / TASK / "test.csv.gz", "wt", newline="") as f:
        df.to_csv(f, index=False, quoting=csv.QUOTE_NONNUMERIC)  # the '\r' stays inside the quoted field
    with pytest.raises(TaskDataError, match=r"task 'ienhancer2l_strong_vs_weak', split 'test', row 5: character '\\r'"):
        prepare(tmp_path, open_source(str(root)), catalogue)


def test_label_and_class_errors(tmp_path, catalogue):
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    _write_split(root / TASK / "train.csv.gz", [("ACGT", 0), ("ACGA", 1)])
    _write_split(root / TASK / "test.csv.gz", [("ACGT", 0), ("ACGA", "x")])
    with pytest.raises(TaskDataError, match="split 'test', row 1: label 'x' is not an integer while other labels are"):
        prepare(tmp_path, open_source(str(root)), catalogue)
    _write_split(root / TASK / "test.csv.gz", [("ACGT", 0), ("ACGA", 2)])
    with pytest.raises(TaskDataError, match=r"label '2' \(row 1\) does not occur in train \(train labels: '0', '1'\)"):
        prepare(tmp_path, open_source(str(root)), catalogue)


@pytest.mark.parametrize(
    "bad, why",
    [
        ("1.0", "is a number but not a plain integer"),
        ("+1", "is a number but not a plain integer"),
        ("1e0", "is a number but not a plain integer"),
        (" 1", "has whitespace around it"),
        ("99999999999999999999", "outside the int64 range"),
        ("", "empty label"),
    ],
)
def test_labels_are_read_as_written_never_coerced(tmp_path, catalogue, bad, why):
    """'1.0', '+1', ' 1' next to '0' and '1' would all be read as class 1; each is an error naming the row."""
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    _write_split(root / TASK / "train.csv.gz", [("ACGT", 0), ("ACGA", 1), ("ACGG", bad)])
    _write_split(root / TASK / "test.csv.gz", [("ACGT", 0), ("ACGA", 1)])
    with pytest.raises(TaskDataError, match=rf"split 'train', row 2: .*{why}"):
        prepare(tmp_path, open_source(str(root)), catalogue)


def test_named_label_with_whitespace_is_not_merged_or_split(tmp_path, catalogue):
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    _write_split(root / TASK / "train.csv.gz", [("ACGT", "HepG2"), ("ACGA", "K562")])
    _write_split(root / TASK / "test.csv.gz", [("ACGT", "HepG2 "), ("ACGA", "K562")])
    with pytest.raises(TaskDataError, match=r"split 'test', row 0: label 'HepG2 ' has whitespace around it"):
        prepare(tmp_path, open_source(str(root)), catalogue)


@pytest.fixture()
def http_root(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_http_mirror_downloads_checks_sha256_and_matches_the_folder(tmp_path, shared, catalogue, http_root):
    root, url = http_root
    _mirror_copy(shared, root)
    meta = json.loads((root / TASK / "meta.json").read_text())
    meta["sha256"] = {n: _sha256(root / TASK / n) for n in ("train.csv.gz", "test.csv.gz")}
    (root / TASK / "meta.json").write_text(json.dumps(meta))
    via_http = prepare(tmp_path / "h", open_source(url, download_dir=tmp_path / "dl"), catalogue)
    via_folder = prepare(tmp_path / "f", open_source(str(shared / "data/tasks")), catalogue)
    assert via_http.data_hash == via_folder.data_hash
    assert len(list((tmp_path / "dl").glob(f"*/{TASK}/train.csv.gz"))) == 1  # cached under the mirror's URL hash


def test_http_mirrors_never_share_cached_files_and_serve_plain_csv(tmp_path, shared, catalogue, http_root):
    """Switching task_source from mirror A to mirror B must read B's data, not A's cached files; a mirror may
    serve {split}.csv instead of .csv.gz; an error page served as meta.json is named, not a bare JSON error."""
    root, url = http_root
    for name, flip in (("a", False), ("b", True)):
        (root / name / TASK).mkdir(parents=True)
        rows = [("ACGTACGTAC", 0), ("GGGGCCCCAA", 1), ("TTTTAAAACC", 0), ("CACACAGTGT", 1)]
        rows = [(s, 1 - y) for s, y in rows] if flip else rows
        _write_split(root / name / TASK / "train.csv.gz", rows)
        (root / name / TASK / "test.csv").write_text("sequence,label\n" + "".join(f"{s},{y}\n" for s, y in rows))
    dl = tmp_path / "dl"
    a = prepare(tmp_path / "a", open_source(f"{url}/a", download_dir=dl), catalogue)
    b = prepare(tmp_path / "b", open_source(f"{url}/b", download_dir=dl), catalogue)
    assert a.data_hash != b.data_hash and a.splits["test"].n == 4
    (root / "b" / TASK / "meta.json").write_text("<html>502 Bad Gateway</html>")
    with pytest.raises(TaskSourceError, match=r"meta.json is not JSON .*error page"):
        prepare(tmp_path / "b2", open_source(f"{url}/b", download_dir=dl), catalogue)


def test_http_mirror_refuses_a_file_with_the_wrong_sha256(tmp_path, shared, catalogue, http_root):
    root, url = http_root
    _mirror_copy(shared, root)
    meta = json.loads((root / TASK / "meta.json").read_text())
    meta["sha256"] = {"train.csv.gz": "0" * 64}
    (root / TASK / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(TaskSourceError, match="sha256"):
        prepare(tmp_path, HttpMirror(url, tmp_path / "dl"), catalogue)


def test_http_mirror_missing_task_is_a_clear_error(tmp_path, catalogue, http_root):
    _, url = http_root
    with pytest.raises(TaskSourceError, match="cannot download"):
        prepare(tmp_path, HttpMirror(url, tmp_path / "dl"), catalogue)


def test_hugging_face_dataset_saved_to_disk_gives_the_same_data(tmp_path, shared, catalogue):
    datasets = pytest.importorskip("datasets")
    parts = {
        split: datasets.Dataset.from_pandas(
            pd.read_csv(shared / f"data/tasks/{TASK}/{split}.csv.gz").rename(columns={"sequence": "text"})
        )
        for split in ("train", "test")
    }
    datasets.DatasetDict(parts).save_to_disk(str(tmp_path / "hf" / TASK))
    via_hf = prepare(tmp_path / "h", open_source(f"hf:{tmp_path / 'hf'}"), catalogue)
    via_folder = prepare(tmp_path / "f", open_source(str(shared / "data/tasks")), catalogue)
    assert via_hf.data_hash == via_folder.data_hash
    assert via_hf.source.startswith("hf:")


def test_hf_folder_class_labels_nulls_and_single_datasets(tmp_path, catalogue):
    """ClassLabel names are read as names (sorted, recorded), a null label names its row, a saved single
    Dataset (not a DatasetDict) is refused in one line."""
    datasets = pytest.importorskip("datasets")
    seqs = ["ACGTACGTAC", "GGGGCCCCAA", "TTTTAAAACC", "CACACAGTGT"]
    feats = datasets.Features(
        {"sequence": datasets.Value("string"), "label": datasets.ClassLabel(names=["pos", "neg"])}
    )
    part = datasets.Dataset.from_dict({"sequence": seqs, "label": [0, 1, 0, 1]}, features=feats)
    datasets.DatasetDict({"train": part, "test": part}).save_to_disk(str(tmp_path / "hf" / TASK))
    card = prepare(tmp_path / "c", open_source(f"hf:{tmp_path / 'hf'}"), catalogue)
    assert card.label_names == {"0": "neg", "1": "pos"}  # sorted names, as a CSV with named labels gives
    nulls = datasets.Dataset.from_dict({"sequence": seqs, "label": [0, 1, None, 1]})
    datasets.DatasetDict({"train": nulls, "test": nulls}).save_to_disk(str(tmp_path / "hf2" / TASK))
    with pytest.raises(TaskSourceError, match=r"split 'train' .*row 2: null label"):
        prepare(tmp_path / "n", open_source(f"hf:{tmp_path / 'hf2'}"), catalogue)
    datasets.Dataset.from_dict({"sequence": seqs, "label": [0, 1, 0, 1]}).save_to_disk(str(tmp_path / "hf3" / TASK))
    with pytest.raises(TaskSourceError, match="single Dataset, not a DatasetDict"):
        prepare(tmp_path / "s", open_source(f"hf:{tmp_path / 'hf3'}"), catalogue)


def test_hf_folder_identity_is_its_content(tmp_path):
    """Edited data in a local save_to_disk folder is new data (the task reruns); the same files moved are not."""
    import shutil

    from geneb.tasks.sources import source_identity

    datasets = pytest.importorskip("datasets")
    part = datasets.Dataset.from_dict({"sequence": ["ACGT", "GGCC"], "label": [0, 1]})
    datasets.DatasetDict({"train": part, "test": part}).save_to_disk(str(tmp_path / "a" / TASK))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    first = source_identity(f"hf:{tmp_path / 'a'}", TASK)
    assert first == source_identity(f"hf:{tmp_path / 'b'}", TASK) and first["files"]
    edited = datasets.Dataset.from_dict({"sequence": ["ACGT", "GGCA"], "label": [0, 1]})
    shutil.rmtree(tmp_path / "a" / TASK)
    datasets.DatasetDict({"train": edited, "test": part}).save_to_disk(str(tmp_path / "a" / TASK))
    assert source_identity(f"hf:{tmp_path / 'a'}", TASK) != first


def test_remote_hf_source_needs_a_pinned_revision():
    with pytest.raises(TaskSourceError, match="40-hex revision"):
        open_source("hf:DeepPavlov/geneb-tasks@main")


def test_source_resolution_env_overrides_config(monkeypatch, catalogue, tmp_path):
    row = task_row(catalogue, TASK)
    assert source_string(row, {"task_source": "cfg/path"}) == "cfg/path"
    monkeypatch.setenv("GENEB_TASK_SOURCE", str(tmp_path))
    assert source_string(row, {"task_source": "cfg/path"}) == str(tmp_path)
    paper = task_row(catalogue, "leannmlindsey_GUE_prom_core_all")
    assert source_string(paper, {"task_source": "x"}).startswith("hf:DeepPavlov/geneb-tasks@")
    monkeypatch.setenv("GENEB_PAPER_TASK_SOURCE", "hf:/local/copy")
    assert source_string(paper, {"task_source": "x"}) == "hf:/local/copy"


def test_named_labels_map_to_sorted_class_indices_and_are_recorded(tmp_path, shared, catalogue):
    task = "dnadiffusion_dhs_hepg2_vs_k562"  # labels 'HepG2' / 'K562'
    card = prepare(
        tmp_path,
        open_source(str(shared / "data/tasks")),
        catalogue,
        task=task,
        caps={"max_train": 200, "max_test": 100},
    )
    assert card.label_names == {"0": "HepG2", "1": "K562"}
    raw = pd.read_csv(shared / f"data/tasks/{task}/train.csv.gz")
    train = pd.read_parquet(tmp_path / task / "train.parquet")
    expected = raw.loc[train["row"], "label"].map({"HepG2": 0, "K562": 1}).to_numpy()
    assert (train["label"].to_numpy() == expected).all()


def test_blank_line_and_broken_csv_are_errors_naming_the_place(tmp_path, catalogue):
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    _write_split(root / TASK / "train.csv.gz", [("ACGT", 0), ("ACGA", 1)])
    with gzip.open(root / TASK / "test.csv.gz", "wt") as f:
        f.write("sequence,label\nACGT,0\n\nACGA,1\n")  # a blank line between two rows: not skipped silently
    with pytest.raises(TaskDataError, match="split 'test', row 1: empty label"):
        prepare(tmp_path, open_source(str(root)), catalogue)
    with gzip.open(root / TASK / "test.csv.gz", "wt") as f:
        f.write("sequence,label\nACGT,0\nACGA,1,extra\n")
    with pytest.raises(TaskSourceError, match=r"split 'test'.*Expected 2 fields in line 3, saw 3.*header being line 1"):
        prepare(tmp_path, open_source(str(root)), catalogue)


def test_unquoted_carriage_return_inside_a_row_is_named_not_split_into_rows(tmp_path, catalogue):
    """A stray CR in an LF file would make the CSV reader split the row in two ('empty label' on the wrong row,
    every later row id shifted); it is an error naming the line and data row instead."""
    root = tmp_path / "m"
    (root / TASK).mkdir(parents=True)
    _write_split(root / TASK / "train.csv.gz", [("ACGT", 0), ("ACGA", 1)])
    _write_split(root / TASK / "test.csv.gz", [("ACGT", 0), ("AC\rGA", 1), ("ACGG", 0)])
    with pytest.raises(TaskSourceError, match=r"split 'test'.*carriage return .* inside line 3 .*\(data row 1\)"):
        prepare(tmp_path, open_source(str(root)), catalogue)
    # CRLF line ends throughout are fine
    with gzip.open(root / TASK / "test.csv.gz", "wt", newline="") as f:
        f.write("sequence,label\r\nACGT,0\r\nACGA,1\r\n")
    assert prepare(tmp_path, open_source(str(root)), catalogue).splits["test"].n == 2
