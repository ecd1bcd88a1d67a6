"""Primitives that import no other GENEB layer: atomic writes, provenance, schemas, env files, logs, errors,
inter-process locks and sockets, functional categories, and the one home of repository paths."""
