"""A python entry through the real workflow: its cache key sees the files its options name and the helpers its
factory imports, by content. Retraining into the same weights file re-extracts under a new settings hash; a
comment in a file the factory does not import leaves "Nothing to be done"; an edit to an imported helper
re-extracts; an error raised in the helper names its file and line on the `GENEB ERROR` line. One task, capped,
the extraction step only (`--until extract_embeddings`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import yaml

from geneb.extract.cache import read_embeddings
from workflow_support import dry_run, run_plan, run_snakemake, write_run_config

TASK = "idna_ms_4mc_c_equisetifolia"

MODEL = """
import numpy as np

from helpers import featurize


class Encoder:
    def __init__(self, weights):
        self.weights = weights

    def embed(self, sequences):
        return featurize(sequences) @ self.weights


def build(options):
    return Encoder(np.load(options["weights"]))
"""
HELPERS = """
import numpy as np


def featurize(sequences):
    return np.array([[s.count(b) / max(len(s), 1) for b in "ACGT"] for s in sequences])
"""


def embedding_files(run: Path) -> list[Path]:
    """resources/embeddings/mine/{xhash}/{TASK}/{thash}.h5: one file per extraction settings hash."""
    return sorted((run / "resources" / "embeddings" / "mine").glob(f"*/{TASK}/*.h5"))


def extract(run: Path, *args: str) -> str:
    proc = run_snakemake(run, "--until", "extract_embeddings", *args)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return proc.stdout


def test_retraining_reextracts_an_unrelated_comment_does_not_a_helper_edit_does(tmp_path, shared, repo):
    """Its own run: a python-entry model of the test's own (the shared run has k-mer models only), one task capped
    to 60/40 rows, extraction only. The dry runs are planned in process (`dry_run`)."""
    run = tmp_path / "run"
    write_run_config(run, shared / "data" / "tasks", [TASK], ["mine"])
    code = run / "config" / "my_model"
    code.mkdir()
    (code / "my_model.py").write_text(textwrap.dedent(MODEL))
    (code / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (code / "train.py").write_text("# how the weights were trained (imported by nothing)\n")
    weights = code / "weights.npy"
    np.save(weights, np.eye(4)[:, :3])
    sheet = code / "models.yaml"
    entry = {"family": "python", "load": {"entry": "my_model.py:build", "options": {"weights": "weights.npy"}}}
    registry = yaml.safe_load((repo / "config" / "models.yaml").read_text())
    registry["models"]["mine"] = entry
    sheet.write_text(yaml.safe_dump(registry, sort_keys=False))
    config = yaml.safe_load((run / "config" / "config.yaml").read_text())
    config["model_sheet"] = str(sheet)
    config["caps"] = {"seed": 0, "default": {"max_train": 60, "max_test": 40}, "per_task": {}}
    (run / "config" / "config.yaml").write_text(yaml.safe_dump(config))

    extract(run)
    (first,) = embedding_files(run)
    vectors = read_embeddings(first).splits["train"][0]

    np.save(weights, 2 * np.eye(4)[:, :3])  # retrained into the same file
    extract(run)
    (second,) = set(embedding_files(run)) - {first}
    assert second.parents[1].name != first.parents[1].name  # a new settings hash
    assert second.name == first.name  # of the same prepared task
    np.testing.assert_allclose(read_embeddings(second).splits["train"][0], 2 * vectors, rtol=1e-6)

    (code / "train.py").write_text("# how the weights were trained (imported by nothing)\n# a second comment\n")
    # what `-n --until extract_embeddings` plans: the extraction of the file the plan names now (one task, one model)
    dry = dry_run(run, run_plan(run).layout.embedding_file("mine", TASK))
    assert dry == [] and "extract_embeddings" not in {job["rule"] for job in dry}, dry
    # the file of the current settings hash is up to date (a path of another hash would be refused by the plan)
    assert dry_run(run, str(second.relative_to(run))) == []

    (code / "helpers.py").write_text(textwrap.dedent(HELPERS).replace('"ACGT"', '"TGCA"'))
    extract(run)
    assert len(embedding_files(run)) == 3

    # an error in the user's helper: the one-line error names the helper's file and line
    broken = textwrap.dedent(HELPERS).replace(
        "    return np.array(", "    raise ValueError('no weights for N')\n    return ("
    )
    (code / "helpers.py").write_text(broken)
    proc = run_snakemake(run, "--until", "extract_embeddings")
    line = broken.splitlines().index("    raise ValueError('no weights for N')") + 1
    assert proc.returncode != 0
    (error,) = {x for x in proc.stdout.splitlines() if x.startswith("GENEB ERROR")}
    assert f"in {code / 'helpers.py'}:{line}, in featurize: ValueError: no weights for N" in error, error
