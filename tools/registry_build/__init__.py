"""tools/build_model_registry.py in parts: curation, parsing, reconciling the sources, entries, assembly."""
