"""Results bundles and merging (docs/pooling.md): one archive per run (`bundle`: scores, provenance, model
cards, a manifest of sha256 digests), and one results folder built from several (`merge`), refusing rows that are
not comparable."""
