"""The probing stage (docs/protocols.md): `protocols` (the two named protocols built from config), `shots`
(k-shot draws and the shot files), `fit` (every regime and seed of one (model, task) in memory), `metrics` (MCC
and friends with bootstrap and seed CIs, the clean subset), `views` (the view columns), `job` (the workflow steps,
file in, file out; read it first) and `worker` (the warm per-node probe worker)."""
