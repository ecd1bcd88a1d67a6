"""The model registry, torch-free and read while the workflow plans: `load` (`load_registry`, the only reader
of config/models.yaml, its checks, runnability and each model's resolved extraction settings; read it first),
`registry` (the typed `Registry`), `spec` (`ModelSpec`, `ExtractionSettings`, views), `families` (the family table,
requirements, random-init twins, zero-shot scorers), `python_entry` (entries a user writes without editing
GENEB) and `weights` (hub pins and weights from outside the hub)."""
