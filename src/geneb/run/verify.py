"""`geneb verify`: check every content-digested file of a run offline (`geneb.core.integrity`).

The files checked are the run's own (`RunPlan.trusted_files` of its config: prepared tasks, shot files, embedding
files, probe and prediction tables, result tables) and every other file with a digest file under `resources/` and
the results folder (another config's caches, the published tables). Each is hashed whole (the plan's stamp store is
not used). A file without a digest among the run's own is reported as such (written before GENEB recorded digests);
`adopt` records its digest when its format's reader reads it whole, as the workflow's plan does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from geneb.core import integrity
from geneb.run.set_aside import StampStore, check_file

#: the prefixes of files GENEB itself set aside or is writing: never checked
SKIPPED_PREFIXES = (".corrupt-", ".partial-", ".tmp-")


@dataclass
class VerifyReport:
    """What `verify_files` found: checked (files hashed), n_bytes (their total size), bad ({file: reason}),
    no_digest (files without a digest, not adopted), adopted (files whose digest was recorded now)."""

    checked: int = 0
    n_bytes: int = 0
    bad: dict[Path, str] = field(default_factory=dict)
    no_digest: list[Path] = field(default_factory=list)
    adopted: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No bad file and none without a digest."""
        return not self.bad and not self.no_digest

    def lines(self) -> list[str]:
        """One line per bad or undigested file, then the one-line summary."""
        out = [f"BAD {path}: {reason}" for path, reason in self.bad.items()]
        out += [
            f"NO DIGEST {path}: written before GENEB recorded content digests (`geneb verify --adopt` records one)"
            for path in self.no_digest
        ]
        out += [f"ADOPTED {path}: read whole, digest recorded" for path in self.adopted]
        size = f"{self.n_bytes / 1e6:.1f} MB"
        if self.ok:
            out.append(f"geneb verify: {self.checked} files ({size}) checked, all match their digests")
        else:
            out.append(
                f"geneb verify: {self.checked} files ({size}) checked: {len(self.bad)} bad, "
                f"{len(self.no_digest)} without a digest"
            )
        return out


def digested_files(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every file under `roots` that has a digest file (`<file>.sha256`), sorted; set-aside and temporary files
    left out."""
    found: set[Path] = set()
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for side in root.rglob("*" + integrity.DIGEST_SUFFIX):
            path = side.with_name(side.name[: -len(integrity.DIGEST_SUFFIX)])
            if not path.name.startswith(SKIPPED_PREFIXES):
                found.add(path)
    return sorted(found)


def verify_files(
    own: Iterable[str | os.PathLike[str]],
    roots: Iterable[str | os.PathLike[str]] = (),
    *,
    adopt: bool = False,
    hdf5_locking: str = "auto",
) -> VerifyReport:
    """Check the run's own files `own` (the missing ones skipped: not built yet) and every digested file under
    `roots`; see the module docstring."""
    report = VerifyReport()
    store = StampStore(None)  # every file hashed
    own_paths = [Path(p) for p in own]
    for path in dict.fromkeys([*own_paths, *digested_files(roots)]):
        if not path.is_file():  # not built yet, or removed (a digest file left by a job that failed since)
            continue
        report.checked += 1
        report.n_bytes += path.stat().st_size
        state, error = check_file(path, store, hdf5_locking)
        if state == "bad":
            report.bad[path] = f"{type(error).__name__}: {error}"
        elif state == "adopt":
            if adopt:
                integrity.record_digest(path)
                report.adopted.append(path)
            else:
                report.no_digest.append(path)
    return report
