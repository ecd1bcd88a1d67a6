"""The token-model engine shared by every token-model family: `tokenmodel` (the adapter contract and the engine;
read it first), `chunking` (chunks and pooling), `batching` (execution knobs, batch planning, progress), `checks`
(output and tokenizer checks) and `views` (per-base positions and multi-view passes)."""
