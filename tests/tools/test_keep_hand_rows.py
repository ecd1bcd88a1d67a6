"""Both generator tools keep what users add by hand: a row appended to config/tasks.tsv survives a rerun of
tools/build_task_catalogue.py, and an entry appended to config/models.yaml one of tools/build_model_registry.py
(the generated rows stay exactly the committed ones)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import yaml

HAND_TASK = {
    "task": "my_lab_enhancers",
    "task_set": "mirror",
    "category": "Enhancers",
    "label": "my_lab_enhancers",
    "geneb_task_id": "",
    "same_split_as_geneb": "no",
    "organism": "Homo sapiens",
    "taxon_group": "human",
    "n_classes": "2",
    "source_benchmark": "in-house",
    "license": "CC-BY-4.0",
    "source": "mirror",
    "caveats": "",
}


def _run(repo, tool, shared, out):
    return subprocess.run(
        [sys.executable, str(repo / "tools" / tool), "--shared", str(shared), "--out", str(out)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )


def test_task_catalogue_tool_keeps_a_hand_added_row(repo, shared, tmp_path):
    committed = (repo / "config" / "tasks.tsv").read_text()
    sheet = tmp_path / "tasks.tsv"
    table = pd.read_csv(repo / "config" / "tasks.tsv", sep="\t", dtype=str, keep_default_na=False)
    pd.concat([table, pd.DataFrame([HAND_TASK])], ignore_index=True).to_csv(sheet, sep="\t", index=False)
    with_row = sheet.read_text()
    _run(repo, "build_task_catalogue.py", shared, sheet)
    assert sheet.read_text() == with_row  # the hand row is kept, last, and the generated rows are unchanged
    assert sheet.read_text().startswith(committed)
    fresh = tmp_path / "fresh.tsv"
    _run(repo, "build_task_catalogue.py", shared, fresh)
    assert fresh.read_text() == committed  # without an existing sheet: exactly the committed catalogue


def test_model_registry_tool_keeps_a_hand_added_entry(repo, shared, tmp_path):
    doc = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    entry = {**doc["models"]["kmer-3"], "display": "my k-mer model"}
    sheet = tmp_path / "models.yaml"
    header = (repo / "config" / "models.yaml").read_text().split("schema_version:")[0]
    doc["models"]["my-kmer"] = entry
    sheet.write_text(header + yaml.safe_dump(doc, sort_keys=False))
    _run(repo, "build_model_registry.py", shared, sheet)
    rebuilt = yaml.safe_load(sheet.read_text())
    assert list(rebuilt["models"])[-1] == "my-kmer" and rebuilt["models"]["my-kmer"] == entry
    committed = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    assert {k: v for k, v in rebuilt["models"].items() if k != "my-kmer"} == committed["models"]
