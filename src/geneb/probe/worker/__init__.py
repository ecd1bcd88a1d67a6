"""A per-node probe worker: one warm process with the probing stack imported forks a child per probe job.
`client.fit_probes_via_worker` is what a probe job calls; `server.serve` is the process it starts when none runs
for its interpreter and code; `spec` is what both agree on."""
