"""The 13 functional task categories of the GENEB paper, spelled and ordered as the official benchmark does.

Source: `benchmark_spec.json` (`category_order`) of the official GENEB release (arXiv 2606.04525).
"""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = (
    "Histone Mod.",
    "Promoters",
    "Enhancers",
    "DNA Methyl.",
    "Splice Sites",
    "lncRNA",
    "Mouse Enh.",
    "TF Binding",
    "Species Clf.",
    "Regulatory",
    "Virus/Phage",
    "Coding/NC",
    "Chromatin Acc.",
)


def check_category(name: str) -> str:
    """Return `name` if it is one of the 13 categories, else raise ValueError listing the valid spellings."""
    if name not in CATEGORIES:
        raise ValueError(f"unknown category {name!r}; expected one of: {', '.join(CATEGORIES)}")
    return name
