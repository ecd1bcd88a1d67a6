"""Logging for workflow steps: everything a step says goes to its Snakemake log file, and a step that fails
puts its one-line error where the user looks (docs/footguns.md, "Errors reach the console").

A shim calls `log_to_file(snakemake.log[0])` first. An exception that leaves the shim then goes three ways:
the full traceback into the log file; one line `GENEB ERROR (<log>): <Type>: <message>` to the job's own
stderr, which Snakemake prints above its "Error in rule" block in a local run (its own report shows only
`CalledProcessError ... message: None`); and the same line as the log file's last line, which
`failure_lines` collects for the Snakefile's `onerror` handler, so a Slurm run (whose job stderr goes to the
Slurm log, not the console) shows it too.
"""

from __future__ import annotations

import logging
import re
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

#: the prefix of the one-line error a failed step writes (stderr and the log's last line)
ERROR_MARK = "GENEB ERROR"
#: longest message kept on the one line; a multi-line message (a grouped validation report) is kept whole
_MAX_LINE = 2000


def _error_line(err: BaseException, log_path: str) -> str:
    """The console form of a step's error: `GENEB ERROR (<log>): <Type>: <message>`."""
    text = str(err).strip() or repr(err)
    if len(text) > _MAX_LINE:
        text = text[:_MAX_LINE] + " …"
    return f"{ERROR_MARK} ({log_path}): {type(err).__name__}: {text}"


def log_to_file(path: str, level: int = logging.INFO, *, append: bool = False) -> None:
    """Send the root logger, warnings and stderr of this process to `path` (line-buffered), so a failing
    job's log holds its traceback, and install the hook that reports an uncaught error on one line (module
    docstring). The process still exits with status 1. append: add to the file (a job's second process, e.g.
    an extraction run in the model's venv, geneb.extract.job) instead of starting it anew."""
    console = sys.stderr
    stream = open(path, "a" if append else "w", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stderr = stream
    logging.basicConfig(
        level=level, stream=stream, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    logging.captureWarnings(True)

    def report(kind: type[BaseException], err: BaseException, tb: TracebackType | None) -> None:
        if not isinstance(err, Exception):  # KeyboardInterrupt, SystemExit: the default behaviour
            sys.__excepthook__(kind, err, tb)
            return
        line = _error_line(err, path)
        stream.write("".join(traceback.format_exception(kind, err, tb)))
        stream.write(line + "\n")
        stream.flush()
        console.write(line + "\n")
        console.flush()

    sys.excepthook = report


def failure_lines(log_paths: Iterable[str | Path], since: float) -> list[str]:
    """The one-line errors (ERROR_MARK lines) of the given log files written at or after `since` (a
    `time.time()`): what the Snakefile's `onerror` prints for the jobs of this run that failed in GENEB code."""
    lines = []
    for p in sorted(map(Path, log_paths)):
        try:
            if p.stat().st_mtime < since:
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        start = text.rfind(ERROR_MARK + " (")
        if start >= 0 and (start == 0 or text[start - 1] == "\n"):
            lines.append(text[start:].rstrip("\n"))
    return lines


#: `_error_line`'s form, read back: the log path, the error's type and its message
_ERROR_LINE = re.compile(rf"^{ERROR_MARK} \((?P<log>[^)]*)\): (?P<type>[A-Za-z_][\w.]*): ?(?P<message>.*)$", re.S)
#: how `geneb.run.partial.task_errors` joins the errors of several jobs of one task
_JOINED = " | "


def _problem(message: str) -> str:
    """The problem a message states, on one line: a grouped report (a header line, then per kind "kind (n):" and
    its problems, geneb.tasks.validation.Problems.summary) as its counts and each kind with its first problem;
    any other message as its first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    header, details = lines[0], lines[1:]
    kinds = [
        f"{line[:-1]}: {details[i + 1]}" if i + 1 < len(details) and not details[i + 1].endswith("):") else line[:-1]
        for i, line in enumerate(details)
        if line.endswith("):")
    ]
    if not kinds:
        return header
    return f"{header.split(';')[0]}: " + "; ".join(kinds)


def failure_reason(error: object, limit: int = 400) -> str:
    """What a board says of a failed job (a task's or a cell's recorded error, `failure_lines` joined): per job its
    error type and problem (`_problem`: the kind, split, rows and value, not the header), then its log path, on
    one line of at most about `limit` characters, cut inside the problem text ("…"), never the log path. "" for
    no error; a text that is not a GENEB error line is kept as its problem."""
    parts = []
    for one in str(error or "").strip().split(_JOINED):
        match = _ERROR_LINE.match(one.strip())
        kind, message, log = (match["type"] + ": ", match["message"], match["log"]) if match else ("", one, "")
        parts.append((kind + _problem(message), f" (log: {log})" if log else ""))
    budget = max(40, limit // max(1, len(parts)))
    return _JOINED.join(
        (body if len(body) + len(tail) <= budget else body[: max(20, budget - len(tail) - 1)] + "…") + tail
        for body, tail in parts
        if body or tail
    )
