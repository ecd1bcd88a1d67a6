"""Shortcut encoders: features a classifier can use without reading a sequence as DNA, probed like any model.

A shortcut "model" (family `shortcut`) embeds a sequence as one or more feature groups of
`geneb.tasks.audit` (the definitions, units and sources are there):

| group | d | embedding column(s) | unit in the embedding |
|---|---|---|---|
| `length` | 1 | number of characters | **kilobases** (bases / 1000, so an unscaled probe sees a value near 1) |
| `gc` | 1 | (C + G) / (A + C + G + T) | fraction |
| `mono` | 4 | A, C, G, T frequencies | fraction |
| `di` | 16 | overlapping dinucleotide frequencies | fraction |
| `tri` | 64 | overlapping trinucleotide frequencies | fraction |
| `cpg_oe` | 1 | CpG observed / expected (Gardiner-Garden & Frommer 1987) | ratio |

No download, no training, no torch: the registry entries (`config/curation/builtin_models.yaml`) name the groups
in `builtin.groups`, and the family is `uses_torch: False`, so its extraction jobs never ask for a GPU.

**Undefined features (NaN).** A feature with no denominator (`gc`, `mono` of a row without A/C/G/T; `di`/`tri` of
a row without one unambiguous k-mer; `cpg_oe` of a row without C or without G) is NaN in
`geneb.tasks.audit`. The encoder replaces it, deterministically, by **0.0** (for `cpg_oe`: no CpG was
observed; for the compositions: the k-mer encoders' zero block) and flags the row `empty` (the HDF5 `empty`
dataset, `n_empty_rows`, a warning naming the rows), so the probe sees every row, all models see the same rows,
and the substitution is on record. `n_tokens` counts the row's A/C/G/T letters (its length for `length` alone);
letters other than A/C/G/T are counted as unknown tokens, as the k-mer encoders count them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from geneb.encoders.protocol import EmbedCounters, EmbedResult, sequence_batch
from geneb.registry.spec import Extraction, ExtractionSettings
from geneb.tasks.audit import GROUPS, feature_matrix, feature_names

_log = logging.getLogger(__name__)

#: the embedding's length column is in kilobases (module docstring)
_LENGTH_UNIT_BASES = 1000.0
#: the value an undefined (NaN) feature takes in the embedding (module docstring)
_UNDEFINED_VALUE = 0.0


@dataclass
class ShortcutEncoder:
    """Shortcut feature encoder. `groups`: feature groups of `geneb.tasks.audit.GROUPS`, distinct, in
    the order their columns are stacked. `embed` returns float32 (n, d), d = sum of the groups' widths. Meets the
    `Encoder` protocol with no token options and no load-time probes. Raises ValueError for an empty, repeated or
    unknown group."""

    groups: tuple[str, ...]
    load_check_names: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        groups = tuple(self.groups)
        unknown = [g for g in groups if g not in GROUPS]
        if not groups or unknown or len(set(groups)) != len(groups):
            raise ValueError(f"shortcut groups must be distinct names from {list(GROUPS)}, got {list(groups)}")
        self.groups = groups
        self.extraction: Extraction | None = None  # counts of letters: no tokenizer, chunking or layer options

    def run_load_checks(self) -> tuple[str, ...]:
        """No load-time probes: returns ()."""
        return self.load_check_names

    def identity(self) -> dict[str, object]:
        """The encoder's definition, stored in the extraction key."""
        return {
            "encoder": "shortcut-features",
            "groups": list(self.groups),
            "columns": [c for g in self.groups for c in feature_names(g)],
            "length_unit_bases": _LENGTH_UNIT_BASES,
            "undefined_value": _UNDEFINED_VALUE,
            "definitions": "geneb.tasks.audit",
        }

    def embed(self, sequences: list[str], rows: list[int] | None = None, *, desc: str | None = None) -> EmbedResult:
        """Features float32 (n, d) in input order (`desc` unused). NaN features become 0.0 and flag the row
        `empty` (module docstring). Raises TypeError for a bare string; ShortcutInputError (naming the row) for a
        sequence that is not ASCII text."""
        name = "shortcut-" + "+".join(self.groups)
        sequences, rows = sequence_batch(sequences, rows, model=name)
        matrix, names = feature_matrix(sequences, self.groups, where=f"model {name}, ")
        if "length" in self.groups:
            matrix[:, names.index("length")] /= _LENGTH_UNIT_BASES
        undefined = ~np.isfinite(matrix)
        empty = undefined.any(axis=1)
        matrix[undefined] = _UNDEFINED_VALUE
        acgt = np.fromiter((sum(map(s.upper().count, "ACGT")) for s in sequences), np.int64, len(sequences))
        lengths = np.fromiter((len(s) for s in sequences), np.int64, len(sequences))
        n_tokens = (lengths if self.groups == ("length",) else acgt).astype(np.int32)
        if empty.any():
            first = [rows[i] for i in np.flatnonzero(empty)[:5]]
            _log.warning(
                "%s: %d row(s) with an undefined feature (no A/C/G/T, or no C or G for cpg_oe) get %s there (rows %s%s)",
                name,
                int(empty.sum()),
                _UNDEFINED_VALUE,
                first,
                " ..." if empty.sum() > 5 else "",
            )
        unknown = lengths - acgt
        n = len(sequences)
        counters = EmbedCounters(unknown_rows=int((unknown > 0).sum()), unknown_tokens=int(unknown.sum()))
        return EmbedResult(
            matrix.astype(np.float32), n_tokens, np.ones(n, np.int32), np.zeros(n, bool), counters=counters, empty=empty
        )


def from_settings(settings: ExtractionSettings, **_execution: object) -> ShortcutEncoder:
    """Adapter entry point (geneb.registry.families): `builtin.groups` of the registry entry. Execution knobs
    (device, batch size) do not apply. Raises ValueError naming the model for a missing or bad `groups`."""
    groups = settings.builtin.get("groups")
    if not isinstance(groups, (list, tuple)) or not groups:
        raise ValueError(f"model {settings.model}: family shortcut needs builtin.groups, a list of {list(GROUPS)}")
    try:
        return ShortcutEncoder(tuple(str(g) for g in groups))
    except ValueError as err:
        raise ValueError(f"model {settings.model}: {err}") from None
