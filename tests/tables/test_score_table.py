"""The score-table contract: validation errors name the problem; cells are seed means."""

import numpy as np
import pandas as pd
import pytest

from geneb.analysis.inputs import cell_scores, task_matrix
from geneb.tables.scores import AnalysisInputError, check_scores
from synth import grid, scores_from_values

CATS = {"t1": "Promoters", "t2": "Promoters", "t3": "Enhancers"}


def _scores(noise=0.05):
    return scores_from_values(grid(["a", "b"], list(CATS), lambda m, t, r: 0.5 if m == "a" else 0.3), CATS, noise=noise)


def test_cells_are_seed_means_and_source_defaults_to_geneb():
    cells = cell_scores(check_scores(_scores()))
    assert len(cells) == 6 and set(cells["n_seeds"]) == {3}
    assert np.allclose(cells.loc[cells["model"] == "a", "value"], 0.5)
    assert set(cells["source"]) == {"geneb"}
    m = task_matrix(cells, "full")
    assert m.shape == (2, 3) and m.loc["b", "t3"] == pytest.approx(0.3)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.drop(columns="category"), "missing columns"),
        (lambda d: d.assign(category="Promoter"), "unknown categories"),
        (lambda d: d.assign(regime="5shot"), "unknown regimes"),
        (lambda d: pd.concat([d, d.iloc[:1]]), "duplicated rows"),
        (lambda d: d.assign(value=np.where(d["metric"] == "MCC", 1.5, d["value"])), "within \\[-1, 1\\]"),
    ],
)
def test_bad_tables_are_refused_with_the_reason(mutate, message):
    with pytest.raises(AnalysisInputError, match=message):
        check_scores(mutate(_scores()))


def test_a_task_under_two_categories_is_refused():
    d = _scores()
    d.loc[(d["task"] == "t1") & (d["model"] == "b"), "category"] = "Enhancers"
    with pytest.raises(AnalysisInputError, match="two categories"):
        check_scores(d)
