"""A per-node model server: one process loads a model once and embeds every task the node's extraction jobs
send it (issue 14). `client.extract_via_server` is what an extraction job calls; `server.serve` is the
process it starts when none runs for its model, settings and code; `protocol` holds what both agree on."""
