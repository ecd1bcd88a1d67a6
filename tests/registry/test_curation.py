"""GENEB's curation tables (config/curation/*.yaml), which tools/build_model_registry.py reads: every row says why
(a non-empty `reason`), and a malformed file stops the build with an error naming the file and the row."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest
import yaml


@pytest.fixture(scope="module")
def tool(repo):
    spec = importlib.util.spec_from_file_location("build_model_registry", repo / "tools" / "build_model_registry.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture
def curation_copy(repo, tmp_path):
    folder = tmp_path / "curation"
    shutil.copytree(repo / "config" / "curation", folder)
    return folder


def _edit(path, table, index, change):
    doc = yaml.safe_load(path.read_text())
    change(doc[table][index])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return doc[table][index]


def test_every_curation_row_has_a_reason(repo, tool):
    """Each file is one the tool knows, each row carries a non-empty reason, and each file's header comment says
    what it is and how to add a row."""
    folder = repo / "config" / "curation"
    files = sorted(p.name for p in folder.glob("*.yaml"))
    assert files == sorted(tool.SCHEMAS)
    rows = 0
    for name in files:
        text = (folder / name).read_text()
        assert text.startswith("# ") and "To add a row" in text, name
        for table, entries in yaml.safe_load(text).items():
            for i, row in enumerate(entries):
                assert isinstance(row.get("reason"), str) and row["reason"].strip(), f"{name}: {table}[{i}]"
                rows += 1
    assert rows > 150  # the 40 paper models twice, 44 registry families, 14 pairs, ...
    tool.load_curation(folder)  # and all of them validate


def test_a_row_without_reason_is_an_error_naming_file_and_row(tool, curation_copy):
    path = curation_copy / "registry_families.yaml"
    _edit(path, "families", 2, lambda row: row.pop("reason"))
    with pytest.raises(tool.CurationError) as err:
        tool.load_curation(curation_copy)
    msg = str(err.value)
    assert str(path) in msg and "families[2] (Nucleotide Transformer v1)" in msg and "'reason' is a required" in msg


def test_an_empty_reason_is_an_error(tool, curation_copy):
    path = curation_copy / "supervised.yaml"
    _edit(path, "supervised", 0, lambda row: row.update(reason="  "))
    with pytest.raises(tool.CurationError, match=r"supervised\[0\] \(enformer-official-rough\).*reason is empty"):
        tool.load_curation(curation_copy)


def test_an_unknown_key_is_an_error_naming_file_and_row(tool, curation_copy):
    path = curation_copy / "paper_models.yaml"
    _edit(path, "models", 0, lambda row: row.update(familly="hf-encoder"))
    with pytest.raises(tool.CurationError) as err:
        tool.load_curation(curation_copy)
    msg = str(err.value)
    assert "paper_models.yaml" in msg and "models[0] (METAGENE-1)" in msg and "unknown key" in msg
    assert "familly" in msg


def test_a_duplicated_row_and_an_unknown_file_are_errors(tool, curation_copy):
    path = curation_copy / "supervised.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["supervised"].append(dict(doc["supervised"][0]))
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(tool.CurationError, match="a second row for 'enformer-official-rough'"):
        tool.load_curation(curation_copy)
    (curation_copy / "supervised.yaml").unlink()
    (curation_copy / "supervized.yaml").write_text("supervised: []\n")
    with pytest.raises(tool.CurationError, match=r"unknown curation file\(s\) \['supervized.yaml'\]"):
        tool.load_curation(curation_copy)


def test_a_paper_model_without_a_curation_row_names_the_file(tool, shared, curation_copy):
    path = curation_copy / "paper_models.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["models"] = [r for r in doc["models"] if r["model"] != "GROVER"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(tool.CurationError, match="paper_models.yaml: no row for models.tsv model 'GROVER'"):
        tool.build(shared, curation=curation_copy)


def test_a_paper_model_without_a_dtype_row_names_the_file_and_auto_is_refused(tool, shared, curation_copy):
    path = curation_copy / "paper_models.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["dtypes"] = [r for r in doc["dtypes"] if r["model"] != "GROVER"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(tool.CurationError, match=r"paper_models.yaml \(dtypes\): no row for models.tsv model 'GROVER'"):
        tool.build(shared, curation=curation_copy)
    doc["dtypes"].append({"model": "GROVER", "dtype": "auto", "reason": "device-dependent"})
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(tool.CurationError, match=r"dtypes\[39\] \(GROVER\), key dtype: 'auto' is not one of"):
        tool.load_curation(curation_copy)


def test_the_command_reports_a_curation_error(repo, shared, curation_copy, tmp_path):
    _edit(curation_copy / "matched_pairs.yaml", "pairs", 0, lambda row: row.pop("reason"))
    out = tmp_path / "models.yaml"
    run = subprocess.run(
        [sys.executable, "tools/build_model_registry.py", "--shared", str(shared), "--out", str(out)]
        + ["--curation", str(curation_copy)],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and not out.exists()
    assert "curation error" in run.stderr and "pairs[0] (nt-v2-50m-6mer-vs-3mer)" in run.stderr
