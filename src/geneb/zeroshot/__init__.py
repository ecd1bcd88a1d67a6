"""Zero-shot scoring: variant effects and likelihood preferences of a model with no training at all, beside the
probes (docs/zeroshot.md). `task` is the contract every part reads: what a zero-shot task is on disk and in memory;
`plan` is the stage's part of the run plan (its tasks, models and paths, torch-free)."""
