"""Why an analysis section of the report is empty: the reason must be the run's own, not a guess (a run with all
three regimes was once told it had no k-shot regime)."""

from __future__ import annotations

from geneb.analysis.registry import Section
from geneb.report.sections import empty_reason


def _summary(**protocol: object) -> dict[str, object]:
    regimes = {r: {} for r in ("full", "10shot", "1shot")}
    return {"protocols": {"geneb-paper": {"regimes": regimes, **protocol}}}


def test_a_fewshot_section_says_why_it_is_empty():
    inverse = Section("Inverse pattern", "fewshot_inverse", by=("protocol",))
    drops = Section("Few-shot drops", "fewshot_drops", by=("protocol",))
    # every regime present: the inverse pattern is empty for too few models, not for a missing regime
    why = empty_reason(inverse, _summary(), "geneb-paper", "full")
    assert "at least 3 models" in why and "no k-shot regime" not in why
    assert "no model has a macro MCC" in empty_reason(drops, _summary(), "geneb-paper", "full")
    # the analysis recorded why it skipped: that is the reason shown
    skipped = _summary(fewshot_skipped="protocol geneb-paper has no k-shot regime beside the full one")
    assert empty_reason(drops, skipped, "geneb-paper", "full").startswith("protocol geneb-paper has no k-shot")
