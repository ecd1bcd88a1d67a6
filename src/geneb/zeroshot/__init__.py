"""Zero-shot scoring: variant effects and likelihood preferences of a model with no training at all, beside the
probes (docs/zeroshot.md). `task` is the contract every part reads: what a zero-shot task is on disk and in memory; `scores` what a scorer
returns. The `llr` scorer: `llr` (rules, batching), `llr_tokens` (which tokens a variant changes), `llr_head` (the
model as the scorer sees it), `llr_load` (a registry model's head, through the embedding adapter's path)."""
