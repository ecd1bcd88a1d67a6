"""docs/adding-a-model.md's four routes, run as written: every block marked `<!-- run: ... -->` (registry entries
appended to a copy of config/models.yaml, the user's module saved beside it, the vectors written, the notebook cell
executed) in one scratch folder beside a link to ../shared, on one real capped task."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "adding-a-model.md"
ID = "idna_ms_4mc_c_equisetifolia"


def blocks() -> list[tuple[str, str]]:
    """[(label, code)] of the marked blocks, in document order."""
    return re.findall(r"<!-- run: ([\w.-]+) -->\n```\w+\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_four_routes_of_the_page_run_as_written(tmp_path, shared, monkeypatch):
    found = blocks()
    assert [label for label, _ in found] == [
        "registry-entry",
        "my_cnn.py",
        "registry-entry",
        "vectors",
        "registry-entry",
        "notebook",
    ]
    (tmp_path / "shared").symlink_to(shared)
    work = tmp_path / "work"
    (work / "config").mkdir(parents=True)
    monkeypatch.chdir(work)
    registry = yaml.safe_load((REPO / "config" / "models.yaml").read_text())
    namespace: dict = {"ID": ID}
    for label, code in found:
        if label == "registry-entry":
            registry["models"].update(yaml.safe_load(code))
        elif label.endswith(".py"):
            (work / "config" / label).write_text(code)
        else:
            if label == "notebook":
                (work / "config" / "models.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
                caps = {"seed": 0, "default": {"max_train": 200, "max_test": 100}, "per_task": {}}
                run = {"model_sheet": "config/models.yaml", "caps": caps, "task_sheet": str(REPO / "config/tasks.tsv")}
                (work / "my-run.yaml").write_text(yaml.safe_dump(run))
            exec(compile(code, f"{DOC.name}:{label}", "exec"), namespace)  # noqa: S102 - the page's own example
    scores, mine, vectors = namespace["scores"], namespace["mine"], namespace["vectors"]
    for frame, model in ((scores, "gc-and-bases"), (mine, "my-cnn"), (vectors, "my-vectors")):
        assert set(frame["model"]) == {model} and set(frame["regime"]) == {"full", "10shot", "1shot"}
        assert np.isfinite(frame.loc[frame["metric"] == "MCC", "value"]).all()
    # the vectors of the page are gc-and-bases' first four columns: every 'full' MCC is a real fit, not a constant
    assert (scores.loc[scores["metric"] == "MCC", "n_test"] == 100).all()
    from geneb.registry.load import extraction_settings, load_registry

    settings = extraction_settings(load_registry(work / "config" / "models.yaml"), "my-mistral-dna", {})
    assert settings["source"]["fingerprint"]
