"""Reading the shared sources' free text into GENEB's fields: sizes, token counts, vocabulary classes, hub ids."""

from __future__ import annotations

import re
from typing import Any

_UNIT = {"K": 1e3, "M": 1e6, "B": 1e9}


def parse_params(text: Any) -> int | None:
    """'~86M' -> 86000000; '1.2B (0.33B active)' -> 1200000000; 'unverified', '25M / 250M' -> None."""
    s = str(text).strip()
    if "/" in s.split("(")[0]:
        return None
    m = re.match(r"^~?\s*([0-9]+(?:\.[0-9]+)?)\s*([KMB])\b", s)
    return int(round(float(m.group(1)) * _UNIT[m.group(2)])) if m else None


def parse_tokens(text: Any) -> int | None:
    """'512 tokens (~512 bp)' -> 512; '16,384 tokens' -> 16384; anything not stated in tokens -> None."""
    m = re.match(r"^\s*([0-9][0-9,]*)\s+tokens\b", str(text))
    return int(m.group(1).replace(",", "")) if m else None


def arch_family_of(architecture: str) -> str:
    a = architecture.lower()
    if "stripedhyena" in a.replace(" ", ""):
        return "striped-hyena"
    if a.startswith("hyena"):
        return "hyena"
    if "hybrid" in a:
        return "hybrid"
    if "mamba" in a:
        return "ssm"
    if a.startswith("cnn"):
        return "cnn"
    if "decoder" in a:
        return "transformer-decoder"
    if "encoder" in a or "transformer" in a:
        return "transformer-encoder"
    return "unknown"


def tokenizer_type_of(tokenizer: str) -> str:
    t = tokenizer.lower()
    for key, value in (
        ("mixed", "mixed"),
        ("one-hot", "one-hot"),
        ("codon", "codon"),
        ("bpe", "bpe"),
        ("sentencepiece", "bpe"),
        ("mer", "k-mer"),
        ("single nucleotide", "single-nucleotide"),
        ("char", "single-nucleotide"),
        ("byte", "single-nucleotide"),
    ):
        if key in t:
            return value
    return "unknown"


def clean_hub_id(hf_id: Any) -> tuple[str | None, bool]:
    """(hub id, verified?) from registry.yaml's hf_id ('x/y (unverified)' -> ('x/y', False))."""
    if not hf_id:
        return None, False
    s = str(hf_id)
    return s.split(" (")[0].strip(), "unverified" not in s
