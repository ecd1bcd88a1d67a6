"""The torch side: the encoder contract (`protocol`, read it first), the token-model engine (`engine`),
weight loading (`loading`) and one adapter per family (`families`, GENEB's own networks beside the adapter that
loads them). Nothing here is imported while the workflow plans."""
