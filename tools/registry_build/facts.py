"""Where models.tsv and registry.yaml disagree about a paper model: which value is used, and the note saying so."""

from __future__ import annotations

from typing import Any

from .parse import clean_hub_id


def reg_verified(reg: dict[str, Any] | None) -> bool:
    """registry.yaml's `verified: V ...` (checked against the model card or repo files); K is not."""
    return bool(reg) and str(reg.get("verified", "")).strip().upper().startswith("V")


#: the factors matched-pair derivation compares (geneb.analysis.paper.FACTORS), as named in the notes
FACT_LABEL = {
    "architecture_family": "architecture family",
    "tokenizer_type": "tokenizer type",
    "pretraining_domain": "pretraining domain",
}


def reconcile(
    field: str, paper_value: str, paper_text: str, reg: dict[str, Any] | None, reg_value: str, reg_text: str
) -> tuple[str, str | None]:
    """One pair-derivation factor of a paper model: (value, note on a disagreement or None).

    The paper's sheet (models.tsv) and registry.yaml are compared as GENEB classifies them. Agreement,
    or "unknown" on one side (that source does not say), takes the known value. On a disagreement a verified (V)
    registry record wins: it was checked against the model card or the repository's files, while the paper's
    sheet was filled in by hand (PlantCaduceus_l32's tokenizer was copied as bpe there). An unverified (K) record
    loses to the sheet, which names the exact checkpoint the paper ran (registry.yaml's DNAGPT record covers the
    0.1B human and the 3B multi-species models at once). Either way the note names both sources.
    """
    if reg is None or reg_value in ("unknown", "", None) or reg_value == paper_value:
        return paper_value, None
    if paper_value in ("unknown", "", None):
        return reg_value, None
    label = FACT_LABEL[field]
    paper_says = paper_value if paper_text in ("", paper_value) else f"{paper_value} ({paper_text})"
    both = (
        f"{label}: models.tsv says {paper_says}, registry.yaml says {reg_value} ({reg_text}, "
        f"verified {str(reg.get('verified', '?')).split(' ')[0]})"
    )
    if reg_verified(reg):
        return reg_value, both + "; the verified registry.yaml value is used"
    return paper_value, both + "; registry.yaml is unverified there, so the paper's record of this checkpoint is used"


def resolve_hub_id(
    paper_hub: str, reg: dict[str, Any] | None, verified_orgs: dict[str, set[str]]
) -> tuple[str, str | None]:
    """The hub id of a paper model whose models.tsv source is a hub id: (hub id, note or None).

    registry.yaml's hub id wins when it differs and is verified, either on its own record (V) or because every
    verified record of its family lives under the same organisation (GenomeOcean-500M is K, but the verified
    GenomeOcean-100M and -4B are under pGenomeOcean/); that id is what `geneb pin-revisions` asks the hub for.
    """
    hub, hub_ok = clean_hub_id(reg.get("hf_id")) if reg else (None, False)
    if not hub or not hub_ok or hub == paper_hub:
        return paper_hub, None
    org = hub.split("/")[0]
    if reg_verified(reg):
        why = f"registry.yaml's record is verified ({reg['verified']})"
    elif org in verified_orgs.get(reg["family"], set()):
        why = (
            f"registry.yaml's record is unverified ({reg['verified']}), but every verified {reg['family']} record "
            f"is under {org}/, so the family is kept under one organisation"
        )
    else:
        return (
            paper_hub,
            f"registry.yaml lists the hub id as {hub} (unverified there); models.tsv's {paper_hub} is used",
        )
    note = f"hub id {hub} from registry.yaml, not models.tsv's {paper_hub}: {why}"
    if reg["family"] == "GenomeOcean":
        note += (
            "; the GenomeOcean README lists the checkpoints as pGenomeOcean/... but links them to "
            "huggingface.co/DOEJGI/..., so DOEJGI looks like the organisation's later name, which the hub "
            "redirects to; check that the pinned commit is the same under both names"
        )
    return hub, note
