"""The figures and the HTML report of a merged results folder (`geneb merge`, after its tables): drawn by the
functions the workflow's rules `paper_figures` and `report` call, with the same arguments (docs/pooling.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from geneb.figures.render import render_figures
from geneb.pool.bundle import BundleError
from geneb.pool.merge import POOL_RECORD, checked_config
from geneb.report.captions import report_captions
from geneb.report.html import build_report
from geneb.run.rerun import report_config

#: the merged folder's report, as a run's (rule `report`)
REPORT = "report/geneb_report.html"
#: its title (a run's is "GENEB report")
TITLE = "GENEB report: merged results folder"


def merged_outputs(
    results_dir: str | os.PathLike[str],
    *,
    config_file: str | os.PathLike[str],
    captions_dir: str | os.PathLike[str],
) -> dict[str, Any]:
    """Draw every registered figure of the merged folder `results_dir` into `results_dir`/figures/ (PNG and PDF,
    `geneb.figures.render.render_figures`; the display names from its tables/models.parquet, which the analyses
    built from the merged registry) and write its report `results_dir`/report/geneb_report.html
    (`geneb.report.html.build_report`, with the "Pooled from" block of tables/pool.json). As the rules do: the
    config `config_file` validated (`checked_config`), its default protocol, the full regime, the report's
    config (`geneb.run.rerun.report_config`) and the captions of `captions_dir` (workflow/report,
    `report_captions`); no task cards and no zero-shot tables (a bundle has neither: the report says so).
    Returns {"figures": [PNG paths], "report": path}. Raises BundleError when `results_dir` has no pool record
    (not a merged folder), AnalysisInputError for a missing table or caption, ValueError for an invalid config."""
    root = Path(results_dir)
    record_path = root / POOL_RECORD
    if not record_path.is_file():
        raise BundleError(f"merge: {record_path} not found; not a merged results folder")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    config = checked_config(config_file)
    tables, figures = root / "tables", root / "figures"
    protocol = config["default_protocol"]
    pngs = render_figures(tables, figures, protocol=protocol, regime="full")
    audit = tables / "task_audit.parquet"
    report = build_report(
        tables,
        figures,
        root / REPORT,
        config=report_config(config),
        captions=report_captions(Path(captions_dir)),
        title=TITLE,
        protocol=protocol,
        regime="full",
        scores=tables / "scores.parquet",
        task_audit=audit if audit.is_file() else None,
        cards=None,
        zeroshot=None,
        pooled=record,
    )
    return {"figures": pngs, "report": report}
