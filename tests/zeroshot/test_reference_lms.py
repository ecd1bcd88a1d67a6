"""GENEB's reference language models (geneb.zeroshot.reference_lms): never pretrained on a zero-shot task's source,
kept when already made from the same file with the same settings, and declined by the llr scorer for a task built
from their pretraining task."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from geneb.zeroshot import reference_lms
from geneb.zeroshot.llr import llr_scores
from geneb.zeroshot.task import CatalogueEntry, NotApplicable, ZeroShotModel, ZeroShotTask, read_zeroshot_catalogue

REPO = Path(__file__).resolve().parents[2]


def test_the_pretraining_task_is_no_source_of_a_catalogued_task():
    reference_lms.check_pretraining_task(read_zeroshot_catalogue(REPO / "config" / "zeroshot_tasks.tsv"))
    built = [CatalogueEntry("zs_x", "paired", "copy_recall", (reference_lms.PRETRAINING_TASK,), "d")]
    with pytest.raises(ValueError, match="zs_x"):
        reference_lms.check_pretraining_task(built)


def test_a_folder_made_with_the_same_settings_from_the_same_file_is_kept(shared, tmp_path):
    train = shared / "data" / "tasks" / reference_lms.PRETRAINING_TASK / "train.csv.gz"
    for name, kind in reference_lms._REFERENCE_LMS.items():
        folder = tmp_path / name
        folder.mkdir()
        record = {**reference_lms._wanted(kind, train), "loss_every_10_steps": [1.0]}
        (folder / reference_lms._PROVENANCE_FILE).write_text(json.dumps(record))
    done = reference_lms.build_reference_lms(shared / "data" / "tasks", tmp_path)
    assert [status for _, _, status in done] == ["kept", "kept"]
    assert reference_lms.pretraining_task_of(tmp_path / "geneb-tiny-mlm") == reference_lms.PRETRAINING_TASK
    assert reference_lms.pretraining_task_of(tmp_path) is None
    with pytest.raises(FileNotFoundError, match=reference_lms.PRETRAINING_TASK):
        reference_lms.build_reference_lms(tmp_path / "no-mirror", tmp_path)


def test_llr_declines_a_task_built_from_the_models_pretraining_task(tmp_path):
    from geneb.registry.load import extraction_settings
    from geneb.registry.spec import ExtractionSettings

    folder = tmp_path / "geneb-tiny-clm"
    folder.mkdir()
    (folder / reference_lms._PROVENANCE_FILE).write_text(json.dumps({"data": {"task": "src_task"}}))
    entry = {
        "display": "t", "family": "hf-decoder", "source": {"kind": "local", "path": str(folder)},
        "architecture_family": "test", "tokenizer_type": "single-nucleotide", "params": 0,
        "pretraining_domain": "none", "license": "test", "extraction": {"max_tokens": 64},
    }  # fmt: skip
    settings = ExtractionSettings.of(extraction_settings({"models": {"geneb-tiny-clm": entry}}, "geneb-tiny-clm", {}))
    model = ZeroShotModel("geneb-tiny-clm", encoder=object(), settings=settings, lm_head="causal")  # type: ignore[arg-type]
    rows = pd.DataFrame({"sequence_a": ["ACGT"], "sequence_b": ["TTTT"]})
    task = ZeroShotTask(name="zs", kind="paired", rows=rows, data_sha256="0" * 64, source_tasks=("src_task",))
    out = llr_scores(model, task)
    assert isinstance(out, NotApplicable) and "pretrained on src_task" in out.reason
