"""GENEB's own torch networks of the families with no installable package (one module each); their adapters,
which read the weights and tokenize, are in geneb.encoders.families."""
