"""The report's "Statistically tied tiers" section (geneb.report.sections) on a tiered leaderboard."""

import html

import pandas as pd

from geneb.analysis import tiers
from geneb.analysis.ranking import leaderboard
from geneb.report.html import table_html
from geneb.report.sections import _OWN_FINDING, _headline, tiers_section


def _sep() -> pd.DataFrame:
    cats = {**{f"p{i}": "Promoters" for i in range(6)}, "s1": "Splice Sites", "e1": "Enhancers"}
    rows = [
        {"protocol": "p", "model": m, "task": t, "category": c, "regime": "full", "source": "x",
         "value": 0.9 if m == "best" else 0.3 + 0.01 * ((i + j) % 3)}
        for j, m in enumerate(("best", "m1", "m2", "m3"))
        for i, (t, c) in enumerate(cats.items())
    ]  # fmt: skip
    cells = pd.DataFrame(rows)
    return tiers.rank_separability(tiers.add_tiers(leaderboard(cells), cells, 0.95))


def test_the_headline_states_the_defensible_number_ones_and_the_separable_adjacent_pairs():
    sep = _sep()
    macro = sep.set_index("category").loc["macro"]
    text = _headline(sep, "full")
    assert text.startswith(f"full: {macro['n_defensible_top']} of 4 models are a defensible #1 on macro")
    assert f"{macro['n_separable_adjacent']} of 3 adjacent macro ranks are separable" in text
    assert "1 of 1 tiered categories have a single defensible #1, 2 have no tiers" in text
    assert _headline(sep, "1shot") == ""


def test_the_published_report_marks_the_section_as_geneb_s_own_finding():
    sep = _sep()
    own = "\n".join(tiers_section(sep, "p", table_html, own_finding=True))
    run = "\n".join(tiers_section(sep, "p", table_html, own_finding=False))
    banner = html.escape(_OWN_FINDING.split(":")[0])
    assert "Statistically tied tiers" in own and banner in own
    assert banner not in run and "defensible #1" in run
    assert "(macro: categories, micro: tasks, category rows: tasks)" in run  # the blocks of each kind of row
    assert tiers_section(sep, "other", table_html, own_finding=True) == []
