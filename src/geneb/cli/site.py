"""`geneb site`: the static leaderboard site of one or more runs' results folders (geneb.site.build)."""

from __future__ import annotations

import argparse
from pathlib import Path

from geneb.report.render import report_captions
from geneb.site.build import build_site, site_summary

#: the caption files of the figures, where the command runs from a checkout (the workflow's report folder)
CAPTION_DIR = Path("workflow/report")


def cmd_site(args: argparse.Namespace) -> str:
    """Build the site of every --results-dir into --out; the figures' captions from --captions (default
    workflow/report when it exists, else the figures go without captions)."""
    folder = Path(args.captions) if args.captions else CAPTION_DIR
    captions = report_captions(folder) if (args.captions or folder.is_dir()) else {}
    index = build_site(args.results_dir, args.out, labels=args.label, captions=captions)
    return site_summary(index)
