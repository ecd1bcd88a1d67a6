"""Logging for workflow steps: everything a step says goes to its Snakemake log file."""

from __future__ import annotations

import logging
import sys


def log_to_file(path: str, level: int = logging.INFO) -> None:
    """Send the root logger, warnings and stderr of this process to `path` (line-buffered), so a failing
    job's log holds its traceback."""
    stream = open(path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stderr = stream
    logging.basicConfig(
        level=level, stream=stream, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    logging.captureWarnings(True)
