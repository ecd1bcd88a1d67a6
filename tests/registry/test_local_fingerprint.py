"""A local model folder is identified by the files a model reads: a note beside the weights changes nothing, a
changed weight, config, tokenizer or code file gives a new cache key."""

from __future__ import annotations

import shutil

import pytest

from geneb.registry.python_entry import _is_model_file, folder_fingerprint


@pytest.fixture
def folder(shared, tmp_path):
    copy = tmp_path / "codon"
    shutil.copytree(shared / "models" / "mistral-codon-v1-1m-finetuned-mrfp", copy)
    return copy


def test_a_note_beside_the_model_changes_nothing(folder):
    before = folder_fingerprint(folder)
    (folder / "NOTES.txt").write_text("trained on a Tuesday")
    (folder / "README.md").write_text("# my model")
    (folder / "SOURCE.md").write_text("edited provenance note")
    (folder / "loss.png").write_bytes(b"\x89PNG")
    assert folder_fingerprint(folder) == before


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "model.safetensors"])
def test_a_changed_model_file_changes_the_fingerprint(folder, name):
    before = folder_fingerprint(folder)
    with open(folder / name, "ab") as f:
        f.write(b" ")
    assert folder_fingerprint(folder) != before


def test_vocabulary_text_files_and_remote_code_count():
    from pathlib import Path

    assert _is_model_file(Path("vocab.txt")) and _is_model_file(Path("merges.txt"))
    assert _is_model_file(Path("modeling_hyena.py")) and _is_model_file(Path("sub/pytorch_model.bin"))
    assert not _is_model_file(Path("NOTES.txt")) and not _is_model_file(Path(".cache/x.json"))


def test_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        folder_fingerprint(tmp_path / "nowhere")
