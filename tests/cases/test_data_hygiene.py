"""Failure cases of kind `data hygiene` (../shared/cases/CASES.md): reverse-complement keys that
keep soft-masking, and duplicate rows inside a split."""

import gzip

import pandas as pd
import pytest

from geneb.tasks.catalogue import read_catalogue, task_row
from geneb.tasks.prepare import prepare_task, train_test_overlap, within_split_duplicates
from geneb.tasks.sources import open_source
from geneb.tasks.validation import AlphabetPolicy, canonical_key, reverse_complement
from synth import write_mirror_task


def test_canonical_key_is_strand_and_case_blind_and_never_stored(tmp_path, repo):
    assert canonical_key("acgT") == canonical_key("Acgt") == canonical_key(reverse_complement("acgT"))
    assert reverse_complement("acgTN") == "NAcgt"  # case kept per base
    # a prepared task stores the sequence byte for byte (soft-masking kept); the key is only for comparisons
    task = "ienhancer2l_strong_vs_weak"
    rows = {"train": [("acgTacgTac", 0), ("GGGCCCAAAT", 1)], "test": [("GTACGTACGT", 0), ("atttgggccc", 1)]}
    write_mirror_task(tmp_path / "m", task, rows)
    catalogue = read_catalogue(repo / "config/tasks.tsv")
    card = prepare_task(
        task, task_row(catalogue, task), open_source(str(tmp_path / "m")), AlphabetPolicy(), {}, 0, tmp_path / "out"
    )
    stored = pd.read_parquet(tmp_path / "out" / "train.parquet")["sequence"].tolist()
    assert stored == ["acgTacgTac", "GGGCCCAAAT"]
    # both test rows are reverse complements (not exact copies) of train rows, whatever the case
    assert card.overlap.reverse_complement == 2 and card.overlap.exact == 0


def test_rc_overlap_counts_the_whole_kind():
    train = pd.DataFrame({"row": [0, 1, 2], "sequence": ["AACCGGTTA", "ACGTN", "ryACG"], "label": [0, 1, 0]})
    test = pd.DataFrame(
        {"row": [0, 1, 2, 3], "sequence": ["TAACCGGTT", "nacgt", "CGTRY", "aaccggtta"], "label": [0, 1, 0, 1]}
    )
    ov = train_test_overlap(train, test)
    assert ov["exact"] == 1 and ov["exact_rows"] == [3]  # same sequence, other case
    assert ov["reverse_complement"] == 3  # RC with N and IUPAC codes complemented
    assert ov["label_conflicts"] == 1  # row 3 carries label 1, its train copy 0


def test_within_split_duplicates_flagged_with_class_counts_before_and_after_dedup():
    test = pd.DataFrame(
        {"row": range(6), "sequence": ["AAAC", "AAAG", "AAAT", "CCCG", "CCCG", "cccg"], "label": [1, 1, 1, 0, 0, 0]}
    )
    rep = within_split_duplicates(test)
    assert rep["n_duplicate_rows"] == 2 and rep["duplicate_rows"] == [4, 5]
    assert rep["class_counts"] == {"0": 3, "1": 3}
    assert rep["class_counts_dedup"] == {"0": 1, "1": 3}
    assert rep["dedup_drop_rows"] == [4, 5]
    assert rep["conflicting_label_sequences"] == 0


def test_real_task_duplicates_match_the_mirror_statistics(shared):
    # every mirrored task's meta.json carries the mirror's own within-split duplicate count
    import json

    for task in ("gue_prom_core_all", "idna_ms_6ma_r_chinensis", "gb_human_ocr_ensembl__toy_resplit"):
        meta = json.loads((shared / f"data/tasks/{task}/meta.json").read_text())
        for split in ("train", "test"):
            raw = pd.read_csv(shared / f"data/tasks/{task}/{split}.csv.gz", dtype={"sequence": str})
            raw.insert(0, "row", range(len(raw)))
            rep = within_split_duplicates(raw)
            assert rep["n_duplicate_rows"] == meta["splits"][split]["within_split_dup"], (task, split)


def test_mcc_reported_as_given_and_deduplicated_both_labelled(tmp_path, repo):
    """A test split [1,1,1,0,0,0] whose three 0-rows are one sequence: the strict protocol scores it as given
    (MCC) and without the two repeats (MCC_dedup), through the real probe job on a real embedding cache."""
    import json

    import numpy as np
    import yaml

    from geneb.extract.step import extract_task
    from geneb.probe.job import fit_probes, write_shot_indices
    from geneb.registry.load import extraction_settings, load_registry

    task = "ienhancer2l_strong_vs_weak"
    src = tmp_path / "m" / task
    src.mkdir(parents=True)
    rng = np.random.default_rng(0)
    train = [("".join(rng.choice(list("ACGT"), 40)) + ("GGGGCC" if y else "ATATAT") * 3, y) for y in [0, 1] * 15]
    test = [("ACGTACGTGGGGCCGGGGCCGGGGCCTTGA", 1), ("TTGGCCGGGGCCGGGGCCAAGGTTCA", 1), ("CAGGGGCCGGGGCCGGGGCCAATGCA", 1)]
    test += [("ATATATATATATATATATGCAGCTAC", 0)] * 3
    for split, data in (("train", train), ("test", test)):
        with gzip.open(src / f"{split}.csv.gz", "wt") as f:
            f.write("sequence,label\n" + "".join(f"{s},{y}\n" for s, y in data))
    catalogue = read_catalogue(repo / "config/tasks.tsv")
    out = tmp_path / "tasks" / task
    card = prepare_task(task, task_row(catalogue, task), open_source(str(tmp_path / "m")), AlphabetPolicy(), {}, 0, out)
    assert card.splits["test"].class_counts == {"0": 3, "1": 3}
    assert card.splits["test"].class_counts_dedup == {"0": 1, "1": 3}
    settings = extraction_settings(load_registry(repo / "config/models.yaml"), "kmer-3", {})
    extract_task(settings, out, tmp_path / "emb.h5")
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    strict = {**config["probe"]["geneb-strict"], "seeds": [0, 1]}
    write_shot_indices(
        train=out / "train.parquet",
        card=out / "card.json",
        output=tmp_path / "shots.json",
        task=task,
        protocol="geneb-strict",
        settings=strict,
    )
    scores = fit_probes(
        train=out / "train.parquet",
        test=out / "test.parquet",
        card=out / "card.json",
        embeddings=tmp_path / "emb.h5",
        shots=tmp_path / "shots.json",
        scores_out=tmp_path / "s.parquet",
        predictions_out=tmp_path / "p.parquet",
        task=task,
        model="kmer-3",
        protocol="geneb-strict",
        settings=strict,
    )
    full = scores[scores["regime"] == "full"].set_index("metric")
    assert full.loc["MCC", "n_test"] == 6 and full.loc["MCC_dedup", "n_test"] == 4
    preds = pd.read_parquet(tmp_path / "p.parquet")
    kept = preds[(preds["regime"] == "full") & ~preds["row"].isin([4, 5])]
    from sklearn.metrics import matthews_corrcoef

    assert full.loc["MCC_dedup", "value"] == pytest.approx(matthews_corrcoef(kept["y_true"], kept["y_pred"]))
    # the paper protocol scores the split as given only
    assert not config["probe"]["geneb-paper"]["dedup_test"]
    assert json.loads((out / "card.json").read_text())["splits"]["test"]["dedup_drop_rows"] == [4, 5]


def test_rc_overlap_with_another_label_is_a_label_conflict():
    """A test row whose reverse complement sits in train with the other label conflicts just as an exact copy does."""
    train = pd.DataFrame({"row": [0, 1], "sequence": ["AACCGGTTAG", "GGGGAAAACC"], "label": [0, 1]})
    test = pd.DataFrame({"row": [0, 1], "sequence": ["CTAACCGGTT", "ggttttcccc"], "label": [1, 1]})
    ov = train_test_overlap(train, test)
    assert ov["reverse_complement_rows"] == [0, 1] and ov["exact"] == 0
    assert ov["label_conflicts"] == 1  # row 0: label 1, its RC in train has 0; row 1 agrees


def test_reverse_complement_copies_inside_a_split_are_reported():
    """[d, rc(d), d]: one exact repeat (dropped by dedup) and one reverse-complement copy (reported, kept)."""
    d = "ACGTTGCAAAGG"
    test = pd.DataFrame(
        {"row": range(4), "sequence": [d, reverse_complement(d), d.lower(), "TTTTGGGG"], "label": [0, 0, 0, 1]}
    )
    rep = within_split_duplicates(test)
    assert rep["n_duplicate_rows"] == 1 and rep["duplicate_rows"] == [2]
    assert rep["n_rc_duplicate_rows"] == 1 and rep["rc_duplicate_rows"] == [1]


def test_case_only_train_test_duplicates_are_counted_apart_from_exact():
    """A soft-masked copy of a train row in test is an exact overlap (case-insensitive) and also a case-only one;
    a byte-identical copy is exact only (case-only copies used to be hidden inside `exact`)."""
    train = pd.DataFrame({"row": [0, 1], "sequence": ["AACCGGTTAG", "GGGGAAAACC"], "label": [0, 1]})
    test = pd.DataFrame({"row": [0, 1, 2], "sequence": ["aaccGGTTAG", "GGGGAAAACC", "TTTTTTTTTT"], "label": [0, 1, 0]})
    ov = train_test_overlap(train, test)
    assert ov["exact"] == 2 and ov["exact_rows"] == [0, 1]
    assert ov["case_only"] == 1 and ov["case_only_rows"] == [0]
