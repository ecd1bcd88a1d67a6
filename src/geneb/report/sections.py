"""Why an analysis section of the run report has no rows for the report's protocol and regime: the one line the
report shows instead of an empty table (`geneb.report.render.not_applicable`). Read from the analysis summary
(analysis_summary.json) where it states the reason, else from what the section's table and filter are."""

from __future__ import annotations

from typing import Any

from geneb.analysis.registry import Section


def _regime(summary: dict[str, Any], protocol: str, regime: str) -> dict[str, Any]:
    return ((summary.get("protocols") or {}).get(protocol) or {}).get("regimes", {}).get(regime) or {}


def empty_reason(section: Section, summary: dict[str, Any], protocol: str, regime: str) -> str:
    """The reason `section` shows no row in a run of `summary` (the analysis summary JSON) for (`protocol`,
    `regime`), as one sentence."""
    r = _regime(summary, protocol, regime)
    table = section.table
    if table in ("scale", "in_domain"):
        return "not run: " + str(
            r.get("scale_skipped") or "the scale analysis needs >= 3 models with different parameter counts"
        )
    if table == "reversals":
        ratio = ((summary.get("settings") or {}).get("scale") or {}).get("reversal_ratio")
        among = f"among the {r['n_in_domain']} in-domain models" if "n_in_domain" in r else "in this run"
        bigger = f"one at least {ratio:g}× its size" if isinstance(ratio, (int, float)) else "a larger one"
        return f"none: no model beats {bigger} {among}"
    if table == "matched_pairs":
        tested = r.get("matched_pairs_tested")
        if not tested:
            return "no matched pair could be tested (none declared in the registry or derivable, or too few tasks)"
        return f"none of the {tested} tested pairs differs significantly after Benjamini-Hochberg"
    if table.startswith("fewshot"):
        return "the run has no k-shot regime beside the full one (regimes: full, 10shot, 1shot)"
    if table == "recommendations":
        return "fewer than 2 complete models: nothing to choose between"
    for key in ("best_layer", "sensitivity", "pretraining_gain"):
        if table == key:
            note = (summary.get(key) or {}).get("note") if isinstance(summary.get(key), dict) else None
            if note:
                return str(note)
            if key == "pretraining_gain":
                return "no model of this run has its random-init twin beside it (twins: true)"
    if section.only is not None:
        return f"none: no row of {table} has {section.only.replace('_', ' ')} for {protocol} / {regime}"
    return f"the {table} table has no rows for {protocol} / {regime}"
