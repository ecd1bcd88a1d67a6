"""Test-only helpers: nothing in the runtime package (extraction, probes, analyses) imports this subpackage.

`geneb.testing.tiny` builds tiny random-init checkpoints of every transformers family GENEB serves, and
remote-code folders, for the offline tests and for checking a new adapter before a full run
(docs/adding-a-model.md). It is installed with the package so that a user can run those checks, but it is
kept apart from `geneb.encoders`, the way MTEB keeps its mock models apart from the real ones.
"""
