"""Regenerate config/tasks.tsv from the paper's task list and the shared mirror's catalogue.

Run from the repository root: `python tools/build_task_catalogue.py [--shared ../shared]`. The output is
committed; this script documents how it was made (and the organism -> taxonomic-group mapping, which is a
curation decision, not data from the sources). Rows of the current config/tasks.tsv that the tool does not
generate (tasks users added by hand, one row each: docs/adding-a-task.md) are kept, after the generated ones,
in their order, as tools/build_model_registry.py keeps hand-added models.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

# Organism text (as the sources write it) -> taxonomic group. First matching prefix wins.
TAXON_GROUP_RULES: list[tuple[str, str]] = [
    ("Homo sapiens vs Caenorhabditis elegans", "mixed"),
    ("Homo sapiens", "human"),
    ("human clinical metagenomes", "mixed"),
    ("Mus musculus", "mammal"),
    ("Bos taurus", "mammal"),
    ("Drosophila", "insect"),
    ("Caenorhabditis", "nematode"),
    ("Saccharomyces", "fungus"),
    ("Tolypocladium", "fungus"),
    ("fungi", "fungus"),
    ("Tetrahymena", "protist"),
    ("Xanthomonas", "bacterium"),
    ("Escherichia", "bacterium"),
    ("Geoalkalibacter", "bacterium"),
    ("Geobacter", "bacterium"),
    ("Bacillus", "bacterium"),
    ("Rhodobacter", "bacterium"),
    ("SARS-CoV-2", "virus"),
    ("viruses", "virus"),
    ("phage vs bacteria", "mixed"),
    ("prokaryotic viruses", "mixed"),
    ("multi (", "mixed"),
    ("Chlamydomonas", "plant"),  # green alga (Viridiplantae)
    ("A. thaliana / C. reinhardtii", "plant"),
    ("7 plants", "plant"),
    ("plant", "plant"),
    ("Arabidopsis", "plant"),
    ("Casuarina", "plant"),
    ("Fragaria", "plant"),
    ("Rosa", "plant"),
    ("Glycine", "plant"),
    ("Manihot", "plant"),
    ("Solanum", "plant"),
    ("Sorghum", "plant"),
    ("Triticum", "plant"),
    ("Zea", "plant"),
    ("Oryza", "plant"),
    ("Medicago", "plant"),
    ("Trifolium", "plant"),
]


def taxon_group(organism: str) -> str:
    """Taxonomic group for an organism string; 'unknown' where the source does not say."""
    for prefix, group in TAXON_GROUP_RULES:
        if organism.startswith(prefix):
            return group
    return "unknown"


def build(shared: Path, existing: pd.DataFrame | None = None) -> pd.DataFrame:
    """The whole catalogue: the paper's tasks, then the mirror's, then the rows of `existing` (the current
    config/tasks.tsv, read as text) whose task the tool does not generate, in their order (columns the tool
    does not write are dropped, missing ones left empty)."""
    spec = json.loads((shared / "reference/geneb_paper/benchmark_spec.json").read_text())
    source = f"hf:{spec['dataset']['repo_id']}@{spec['dataset']['revision']}"
    paper = pd.read_csv(shared / "reference/geneb_paper/tasks.tsv", sep="\t", dtype=str)
    mirror = pd.read_csv(shared / "data/tasks.tsv", sep="\t", dtype=str, keep_default_na=False)

    rows = []
    for r in paper.itertuples():
        n_cls = "".join(ch for ch in str(r.n_classes_inferred) if ch.isdigit())
        rows.append(
            dict(
                task=r.task_id,
                task_set="paper",
                category=r.category,
                label=r.label,
                geneb_task_id=r.task_id,
                same_split_as_geneb="yes",
                organism=r.organism_inferred,
                taxon_group=taxon_group(r.organism_inferred),
                n_classes=n_cls if n_cls and n_cls == str(r.n_classes_inferred).strip() else "",
                source_benchmark=r.source_benchmark,
                license="see the upstream benchmark (paper task data keeps upstream licences)",
                source=source,
                caveats="organism and class count inferred from the source dataset, not official",
            )
        )
    for r in mirror.itertuples():
        rows.append(
            dict(
                task=r.task,
                task_set="mirror",
                category=r.category,
                label=r.task,
                geneb_task_id=r.geneb_task_id,
                same_split_as_geneb=r.same_split_as_geneb or "no",
                organism=r.organism,
                taxon_group=taxon_group(r.organism),
                n_classes=r.n_classes,
                source_benchmark=r.source_benchmark,
                license=r.license,
                source="mirror",
                caveats=r.caveats,
            )
        )
    out = pd.DataFrame(rows)
    if existing is not None and len(existing):
        kept = existing[~existing["task"].isin(set(out["task"]))]
        out = pd.concat([out, kept.reindex(columns=out.columns, fill_value="")], ignore_index=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="config/tasks.tsv")
    args = ap.parse_args()
    out_path = Path(args.out)
    existing = pd.read_csv(out_path, sep="\t", dtype=str, keep_default_na=False) if out_path.exists() else None
    out = build(Path(args.shared), existing)
    unknown = out[out.taxon_group == "unknown"]
    out.to_csv(args.out, sep="\t", index=False)
    print(f"wrote {len(out)} tasks to {args.out}; taxon group unknown for: {', '.join(unknown.task) or 'none'}")


if __name__ == "__main__":
    main()
