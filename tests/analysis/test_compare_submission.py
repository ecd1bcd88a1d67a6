"""compare_published and the schema-1.0 submission writer, on a synthetic user run and the real reference."""

import json

import pandas as pd
import pytest

from geneb.analysis import published
from geneb.analysis.inputs import load_task_meta
from geneb.tables.scores import AnalysisInputError, check_scores
from synth import grid, scores_from_values

PAPER_PROM = "leannmlindsey_GUE_prom_core_all"


@pytest.fixture(scope="module")
def paper(shared):
    return shared / "reference" / "geneb_paper"


@pytest.fixture(scope="module")
def catalogue(repo):
    return load_task_meta(repo / "config" / "tasks.tsv")


@pytest.fixture(scope="module")
def pub(paper):
    return published.import_published(paper)


def _user(catalogue, model="my-model"):
    same = catalogue[(catalogue["same_split_as_geneb"] == "yes") & (catalogue["task_set"] == "mirror")]
    subset = catalogue[catalogue["same_split_as_geneb"] == "subset"]
    other = catalogue[(catalogue["task_set"] == "mirror") & (catalogue["geneb_task_id"] == "")]
    tasks = [same.index[0], same.index[1], subset.index[0], other.index[0]]
    cats = catalogue.loc[tasks, "category"].to_dict()
    return tasks, check_scores(scores_from_values(grid([model], tasks, lambda m, t, r: 0.99, ("full", "10shot")), cats))


def test_user_model_is_placed_beside_the_40_on_the_common_tasks(catalogue, pub):
    tasks, user = _user(catalogue)
    board, left = published.compare_with_published(user, pub, catalogue)
    common = {catalogue.loc[t, "geneb_task_id"] for t in tasks[:2]}
    assert board["model"].nunique() == 41 and set(board.loc[board["origin"] == "user", "model"]) == {"my-model"}
    macro = board[(board["regime"] == "full") & (board["category"] == "macro")].set_index("model")
    assert macro.loc["my-model", "rank"] == 1 and macro.loc["my-model", "n_tasks"] == 2
    # every model is scored on the same 2 common tasks, not on its 100
    assert (macro["n_tasks"] == 2).all() and (macro["n_tasks_paper"] == 100).all()
    pub_cells = pub[(pub["metric"] == "MCC") & (pub["regime"] == "full") & pub["task"].isin(common)]
    some = pub_cells["model"].iloc[0]
    per_cat = pub_cells[pub_cells["model"] == some].groupby("category")["value"].mean()
    assert macro.loc[some, "value"] == pytest.approx(per_cat.mean())
    reasons = left.set_index("task")["reason"]
    assert "subset" in reasons[tasks[2]] and "no paper task" in reasons[tasks[3]]
    assert (left["reason"] == "paper task not run by the user").sum() == 98
    # full and 10shot were run on both common tasks; the regime the model never ran (1shot) is listed per task
    gaps = left[left["model"] == "my-model"]
    assert sorted(gaps["paper_task"]) == sorted(common) and set(gaps["reason"]) == {"no 1shot result for this model"}
    gap = user[~((user["task"] == tasks[1]) & (user["regime"] == "10shot"))]
    _, left = published.compare_with_published(gap, pub, catalogue)
    row = left[(left["model"] == "my-model") & (left["reason"] != "no 1shot result for this model")]
    assert row[["paper_task", "reason"]].values.tolist() == [
        [catalogue.loc[tasks[1], "geneb_task_id"], "no 10shot result for this model"]
    ]


def test_capped_tasks_and_a_mirror_beside_its_paper_task_are_left_out_and_listed(catalogue, pub, tmp_path):
    """A capped run is a subsample, not the paper's split; one paper task reached twice keeps the paper's own."""
    import json

    tasks, user = _user(catalogue)
    cards = []
    for task, caps in (
        (tasks[0], {"train": {"cap": 2000, "n_source": 47356, "n_kept": 2000}}),
        (tasks[1], {"train": {"cap": 5000, "n_source": 3000, "n_kept": 3000}}),
    ):
        path = tmp_path / f"{task}.json"
        path.write_text(json.dumps({"task": task, "category": "Promoters", "data_hash": "0" * 64, "caps": caps}))
        cards.append(path)
    capped = published.capped_tasks(cards)
    assert list(capped) == [tasks[0]] and "train 2000 of 47356 rows" in capped[tasks[0]]
    board, left = published.compare_with_published(user, pub, catalogue, capped=capped)
    assert left.set_index("task").loc[tasks[0], "reason"] == capped[tasks[0]]
    assert board.loc[board["category"] == "macro", "n_tasks"].max() == 1  # only the uncapped common task
    # the paper task itself and its same-split mirror, both run by the model: the paper task's value is used
    paper_id = catalogue.loc[tasks[1], "geneb_task_id"]
    both = check_scores(
        scores_from_values(
            {("my-model", tasks[1], "full"): 0.2, ("my-model", paper_id, "full"): 0.8},
            {tasks[1]: catalogue.loc[tasks[1], "category"], paper_id: catalogue.loc[paper_id, "category"]},
        )
    )
    board, left = published.compare_with_published(both, pub, catalogue)
    cell = board[(board["model"] == "my-model") & (board["regime"] == "full") & (board["category"] == "macro")]
    assert cell["value"].item() == pytest.approx(0.8)
    shadow = left[(left["model"] == "my-model") & (left["task"] == tasks[1])]
    assert shadow["reason"].str.contains("also ran the paper task itself").all() and len(shadow) == 1


def test_colliding_ids_are_prefixed_and_nothing_comparable_is_an_error(catalogue, pub):
    _, user = _user(catalogue, model="DNABERT-S")
    board, _ = published.compare_with_published(user, pub, catalogue)
    assert "user:DNABERT-S" in set(board["model"]) and "DNABERT-S" in set(board["model"])
    other = catalogue[(catalogue["task_set"] == "mirror") & (catalogue["geneb_task_id"] == "")].index[0]
    lone = check_scores(scores_from_values({("m", other, "full"): 0.5}, {other: catalogue.loc[other, "category"]}))
    with pytest.raises(AnalysisInputError, match="nothing to compare"):
        published.compare_with_published(lone, pub, catalogue)


def test_every_official_submission_validates_and_a_broken_one_does_not(paper):
    spec = published.load_spec(paper)
    for path in sorted((paper / "submissions").glob("*.json")):
        assert published.validate_submission(json.loads(path.read_text()), spec) == [], path.name
    bad = json.loads((paper / "submissions" / "DNABERT-S.json").read_text())
    bad["schema_version"] = "2.0"
    bad["meta"].pop("url")
    bad["results"]["full"]["not_a_task"] = {"MCC": 2.0}
    problems = published.validate_submission(bad, spec)
    assert len(problems) >= 4


def test_written_submissions_reproduce_the_official_files_of_all_40_models(paper, pub, catalogue, tmp_path):
    """Import the published results, export every model with its official meta: 37 official files hold
    unrounded seed means and come back identical; 3 were rounded to 4 decimals upstream and agree to 5e-5."""
    spec = published.load_spec(paper)
    identical = 0
    for path in sorted((paper / "submissions").glob("*.json")):
        official = json.loads(path.read_text())
        sub = published.build_submission(pub, official["model_id"], spec, catalogue, meta=official["meta"])
        assert published.validate_submission(sub, spec) == [] and sub["meta"] == official["meta"]
        assert set(sub["results"]) == set(official["results"])
        for regime, tasks in official["results"].items():
            assert set(sub["results"][regime]) == set(tasks)
            for task, metrics in tasks.items():
                for k, v in metrics.items():
                    assert sub["results"][regime][task][k] == pytest.approx(v, abs=5.1e-5), (path.name, regime, task, k)
        identical += sub["results"] == official["results"] and sub["harness_version"] == official["harness_version"]
    assert identical == 37
    published.write_submission(sub, tmp_path / "s.json")
    assert json.loads((tmp_path / "s.json").read_text()) == sub


def test_user_submission_maps_mirrored_tasks_to_paper_ids_and_leaves_out_training_tasks(catalogue, paper):
    spec = published.load_spec(paper)
    tasks, user = _user(catalogue)
    sub = published.build_submission(user, "my-model", spec, catalogue, meta={"params": 1000})
    want = {catalogue.loc[t, "geneb_task_id"] for t in tasks[:2]}
    assert set(sub["results"]["full"]) == want and set(sub["results"]) == {"full", "10shot"}
    assert sub["results"]["full"][next(iter(want))]["MCC"] == pytest.approx(0.99) and sub["meta"]["params"] == 1000
    assert published.validate_submission(sub, spec) == []
    partial = published.build_submission(user, "my-model", spec, catalogue, meta={}, exclude={tasks[0]})
    assert set(partial["results"]["full"]) == {catalogue.loc[tasks[1], "geneb_task_id"]}
    with pytest.raises(AnalysisInputError, match="no geneb-paper result"):
        published.build_submission(user, "someone-else", spec, catalogue, meta={})


def test_contaminated_cells_are_left_out_of_the_comparison_and_listed(catalogue, pub):
    tasks, user = _user(catalogue)
    board, left = published.compare_with_published(user, pub, catalogue, {("my-model", tasks[0])})
    macro = board[(board["regime"] == "full") & (board["category"] == "macro")].set_index("model")
    assert macro.loc["my-model", "n_tasks"] == 1
    left = left[left["reason"] != "no 1shot result for this model"]  # the regime this user never ran
    row = left[left["model"] == "my-model"]
    assert row["reason"].tolist() == ["left out: the model was trained on this task"] and row["task"].tolist() == [
        tasks[0]
    ]
    # with a second model that ran both tasks, the excluded task stays common but is not listed twice
    two = pd.concat([user, user.assign(model="other")])
    _, left = published.compare_with_published(two, pub, catalogue, {("my-model", tasks[0])})
    left = left[left["reason"] != "no 1shot result for this model"]
    assert left[left["model"] == "my-model"]["reason"].tolist() == ["left out: the model was trained on this task"]


def test_submission_leaves_out_every_task_with_the_data_the_model_was_trained_on(catalogue, paper):
    """Listing only the mirror id of a training task must still keep its paper task out of the submission."""
    spec = published.load_spec(paper)
    same = catalogue[(catalogue["same_split_as_geneb"] == "yes") & (catalogue["task_set"] == "mirror")]
    mirror, other = same.index[0], same.index[1]
    paper_id = catalogue.loc[mirror, "geneb_task_id"]
    cats = {paper_id: catalogue.loc[paper_id, "category"], other: catalogue.loc[other, "category"]}
    scores = check_scores(scores_from_values({("m", paper_id, "full"): 0.5, ("m", other, "full"): 0.6}, cats))
    sub = published.build_submission(scores, "m", spec, catalogue, meta={"params": 1}, exclude={mirror})
    assert set(sub["results"]["full"]) == {catalogue.loc[other, "geneb_task_id"]}


@pytest.mark.parametrize(
    "damage",
    [
        "bool metric",
        "bool params",
        "negative params",
        "empty task",
        "empty regime",
        "model_id int",
        "display None",
        "extra key",
        "results list",
        "not an object",
    ],
)
def test_validate_submission_lists_every_malformed_field_and_never_raises(paper, damage):
    spec = published.load_spec(paper)
    sub = json.loads(sorted((paper / "submissions").glob("*.json"))[0].read_text())
    assert published.validate_submission(sub, spec) == []
    regime = next(iter(sub["results"]))
    task = next(iter(sub["results"][regime]))
    edits = {
        "bool metric": lambda: sub["results"][regime][task].update(MCC=True),
        "bool params": lambda: sub["meta"].update(params=True),
        "negative params": lambda: sub["meta"].update(params=-5),
        "empty task": lambda: sub["results"][regime].update({task: {}}),
        "empty regime": lambda: sub["results"].update({regime: {}}),
        "model_id int": lambda: sub.update(model_id=123),
        "display None": lambda: sub["meta"].update(display=None),
        "extra key": lambda: sub.update(extra=1),
        "results list": lambda: sub.update(results=[]),
    }
    if damage == "not an object":
        assert published.validate_submission([sub], spec)
        return
    edits[damage]()
    assert published.validate_submission(sub, spec)


@pytest.mark.parametrize("model", ["METAGENE-1", "mistral-dna-1m-ft-prom", "not-in-the-registry"])
def test_submission_step_takes_the_facts_from_the_typed_registry(model, repo, catalogue, paper, tmp_path):
    """submission_step reads the model's ModelSpec (display, params, hub id or origin, pretraining data,
    trained_on_tasks); a model the registry does not have gets the plain defaults."""
    from geneb.analysis.inputs import registry
    from geneb.analysis.steps import submission_step

    sheet = repo / "config" / "models.yaml"
    spec = registry(sheet).models.get(model)
    tasks, user = _user(catalogue, model=model)
    trained = set(spec.trained_on_tasks) if spec is not None else set()
    user = user[~user["task"].isin(trained)] if trained else user
    user.to_parquet(tmp_path / "scores.parquet", index=False)
    out = tmp_path / "sub.json"
    submission_step(
        scores=str(tmp_path / "scores.parquet"),
        models_yaml=str(sheet),
        tasks_tsv=str(repo / "config" / "tasks.tsv"),
        spec_dir=str(paper),
        model=model,
        submitted_by="me",
        output=str(out),
    )
    meta = json.loads(out.read_text())["meta"]
    if spec is None:
        want = {"display": model, "params": 0, "url": "", "training_data": ""}
    else:
        url = f"https://huggingface.co/{spec.source.hub_id}" if spec.source.hub_id else spec.source.origin
        want = {"display": spec.display, "params": int(spec.params), "url": url, "training_data": spec.pretraining_data}
    assert {k: meta[k] for k in want} == want
