"""The sequence alphabet policy, applied in one place (docs/alphabet.md).

Policy (every choice configurable under `alphabet:` in config.yaml, and recorded in the task card):

* Case is kept in the stored sequence (soft-masking survives); models see `model_input(seq)`, the uppercase form.
* A, C, G, T and N are always allowed (either case).
* IUPAC ambiguity codes R Y S W K M B D H V are allowed when `allow_iupac` (default true), else an error.
* U (RNA) is an error unless `u_to_t`, which reads U/u as T/t.
* Whitespace anywhere is an error, unless `strip_whitespace`, which removes leading and trailing whitespace
  (spaces, tabs, '\\r', '\\n'); whitespace inside a sequence is always an error.
* An empty sequence (after stripping) is an error. Anything else (gaps '-', '.', digits, header text) is an error.

Errors never drop or alter a row silently: SequenceError names task, split, row, position and the character
(escaped, e.g. '\\r').
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

ALWAYS_ALLOWED = "ACGTN"
#: what `strip_whitespace` removes at the ends of a sequence: space, tab, CR, LF (nothing else)
STRIPPABLE = " \t\r\n"
#: IUPAC nucleotide ambiguity codes (NC-IUB 1984), N excluded (always allowed)
IUPAC_AMBIGUITY = "RYSWKMBDHV"


class SequenceError(ValueError):
    """A sequence that breaks the alphabet policy; the message names task, split, row and character. `kind`
    names the rule it breaks (the group of a task's validation report, geneb.tasks.validation)."""

    def __init__(self, message: str, kind: str = "sequence") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class AlphabetPolicy:
    """See the module docstring. Build from config with `AlphabetPolicy.from_config(config["alphabet"])`."""

    strip_whitespace: bool = False
    u_to_t: bool = False
    allow_iupac: bool = True

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> AlphabetPolicy:
        section = dict(section or {})
        unknown = set(section) - {"strip_whitespace", "u_to_t", "allow_iupac"}
        if unknown:
            raise ValueError(f"unknown alphabet policy keys: {sorted(unknown)}")
        return cls(**section)

    def as_dict(self) -> dict[str, bool]:
        return asdict(self)

    def allowed_letters(self) -> str:
        letters = ALWAYS_ALLOWED + (IUPAC_AMBIGUITY if self.allow_iupac else "") + ("U" if self.u_to_t else "")
        return letters + letters.lower()

    def _reason(self, ch: str, at_end: bool) -> tuple[str, str]:
        """(kind, reason) of a refused character."""
        if ch.isspace() and ch not in STRIPPABLE:
            return "other whitespace or separator", (
                "a whitespace or separator character other than space, tab, CR and LF (never allowed)"
            )
        if ch.isspace():
            if at_end:
                return "whitespace at the ends", "whitespace (set alphabet.strip_whitespace to strip it at the ends)"
            return "whitespace inside a sequence", "whitespace inside a sequence (never allowed)"
        if ch.upper() == "U":
            return "RNA base U", "RNA base U (set alphabet.u_to_t to read it as T)"
        if ch.upper() in IUPAC_AMBIGUITY:
            return "IUPAC ambiguity code", "IUPAC ambiguity code (alphabet.allow_iupac is false)"
        return "not a nucleotide code", "not a nucleotide code"

    def apply(self, seq: Any, *, task: str, split: str, row: int) -> str:
        """Check one sequence and return it as stored (case kept; stripped/U->T only where configured).

        Raises SequenceError for a non-string or empty sequence or a character outside the policy.
        """
        if not isinstance(seq, str):
            raise SequenceError(
                f"task {task!r}, split {split!r}, row {row}: sequence is {seq!r} (not text)", "sequence not text"
            )
        if self.strip_whitespace:
            seq = seq.strip(STRIPPABLE)  # not str.strip(): that also eats NBSP, U+2028, \x1c-\x1f
        if not seq:
            raise SequenceError(f"task {task!r}, split {split!r}, row {row}: empty sequence", "empty sequence")
        if self.u_to_t:
            seq = seq.replace("U", "T").replace("u", "t")
        m = self._bad_char(seq)
        if m is not None:
            ch = m.group(0)
            at_end = not seq[: m.start()].strip() or not seq[m.start() :].strip()
            kind, reason = self._reason(ch, at_end)
            raise SequenceError(
                f"task {task!r}, split {split!r}, row {row}: character {ch!r} at position {m.start()} "
                f"is not allowed ({reason}); sequence begins {seq[:30]!r}",
                kind,
            )
        return seq

    def _bad_char(self, seq: str) -> re.Match[str] | None:
        return _pattern(self.allowed_letters()).search(seq)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(allowed: str) -> re.Pattern[str]:
    if allowed not in _PATTERNS:
        _PATTERNS[allowed] = re.compile(f"[^{re.escape(allowed)}]")
    return _PATTERNS[allowed]


def model_input(seq: str) -> str:
    """The form every model sees: uppercase. Stored sequences keep their case (soft-masking)."""
    return seq.upper()
