"""One adapter per model family: tokenizer glue and `from_settings`. The family table that names them is
`geneb.registry.families`."""
