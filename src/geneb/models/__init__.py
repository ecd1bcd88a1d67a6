"""The model registry and the encoders (adapters) that turn sequences into pooled embeddings."""
