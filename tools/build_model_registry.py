"""Regenerate config/models.yaml from the shared reference facts plus GENEB's curation (config/curation/*.yaml).

Run from the repository root: `python tools/build_model_registry.py [--shared ../shared]`. The output is
committed; this script documents how it was made. Facts come from `../shared/reference/geneb_paper/models.tsv`
(the paper's 40 models: official ids, hub ids or other sources, parameter counts, architecture, tokenizer,
the reference extractor's input cap, hidden-state tap, pooling, width and known defects) and
`../shared/reference/registry.yaml` (111 public models: hub ids, sizes, context, pretraining data, loader
notes, licences). The curation decisions live in config/curation/*.yaml, one row each with its `reason`: which
GENEB adapter family serves a model, the transformers range its remote code needs, the paper's reference
extraction as each paper model's default, what GENEB does differently where the reference is known to be
wrong, and the declared matched pairs (each file's header says what it holds and how to add a row).
config/models.yaml is this script's output: never edit it by hand; change a curation row and rerun (a test
compares the committed file with a fresh build).

Where the two sources disagree about a paper model, the verified fact wins and the entry's notes say so:
* the three factors matched-pair derivation compares (architecture family, tokenizer type, pretraining
  domain; geneb.analysis.paper): `reconcile` takes registry.yaml's value where its record is verified (V),
  the paper's sheet's where it is not (K), and notes the disagreement either way; the run prints each one;
* the hub id: `resolve_hub_id` takes registry.yaml's verified id (GenomeOcean: pGenomeOcean/, not DOEJGI/);
* an input cap above the trained context (extraction.max_tokens > context_tokens) is refused by
  geneb.registry.load.check_registry unless the entry says why (`beyond_trained_context`,
  config/curation/context.yaml).

No hub revision is known for any hub model in these sources, so every hub entry is written as
`source.kind: hub-unpinned` (not runnable): pinning one is adding `revision: <40-hex commit>` and
changing the kind to `hub`. No commit hash is ever made up here.

The code is in tools/registry_build/: curation.py (reads and validates the curation files), parse.py (the
shared sources' free text into GENEB's fields), facts.py (reconciling the two sources), entries.py (one
entry), assemble.py (the document and its text).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from registry_build.assemble import HEADER, build, render  # noqa: E402
from registry_build.curation import CURATION_DIR, SCHEMAS, CurationError, load_curation  # noqa: E402
from registry_build.facts import FACT_LABEL, reconcile, resolve_hub_id  # noqa: E402
from registry_build.parse import arch_family_of, clean_hub_id, parse_params, parse_tokens, tokenizer_type_of  # noqa: E402

__all__ = [
    "CURATION_DIR",
    "FACT_LABEL",
    "HEADER",
    "SCHEMAS",
    "CurationError",
    "arch_family_of",
    "build",
    "clean_hub_id",
    "load_curation",
    "parse_params",
    "parse_tokens",
    "reconcile",
    "render",
    "resolve_hub_id",
    "tokenizer_type_of",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default="../shared", type=Path)
    ap.add_argument("--out", default="config/models.yaml", type=Path)
    ap.add_argument("--curation", default=CURATION_DIR, type=Path, help="folder of the curation tables")
    args = ap.parse_args()
    log: list[str] = []
    existing = yaml.safe_load(args.out.read_text()) if args.out.exists() else None
    try:
        doc = build(args.shared, log, existing, curation=args.curation)
    except CurationError as err:
        raise SystemExit(f"curation error: {err}") from None
    args.out.write_text(render(doc))
    print(f"wrote {args.out}: {len(doc['models'])} models, {len(doc['matched_pairs'])} matched pairs")
    print(f"models.tsv vs registry.yaml: {len(log)} resolved disagreement(s)")
    for line in log:
        print(f"  {line}")


if __name__ == "__main__":
    main()
