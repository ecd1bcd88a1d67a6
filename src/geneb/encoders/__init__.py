"""The torch side: the encoder contract (`protocol`), the token-model engine (`engine`: chunking, batching,
pooling, checks), weight loading (`loading`), one adapter per family (`families`) and GENEB's own networks
(`networks`). Nothing here is imported while the workflow plans."""
