"""Primitives that import no other GENEB layer: `integrity` (atomic writes and content digests), `provenance`,
`paths` (the one home of repository paths and the workflow's JSON schemas), `envs` (runtime environment files and
their venvs), `logs`, `errors`, `ipc` (what the model server and its clients agree on), `download` and
`categories` (the 13 functional categories)."""
