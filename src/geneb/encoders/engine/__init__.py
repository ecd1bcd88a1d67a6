"""The token-model engine: tokenize, chunk, batch, run, pool and check, shared by every token-model family."""
