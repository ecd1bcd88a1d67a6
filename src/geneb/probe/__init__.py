"""The probing stage: shot draws, logistic-regression probes, metrics (docs/protocols.md).

Modules: `sampling` (pure k-shot draws), `protocols` (the two named protocols
built from config), `shots` (the persisted draws and the paper's
large-task subsample), `fit` (every regime and seed of one (model, task) in
memory), `metrics` (MCC and friends, bootstrap and seed CIs), `job` (the workflow steps, file in, file out).
"""
