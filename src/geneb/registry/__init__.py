"""The model registry, torch-free and read while the workflow plans: typed entries (`spec`), resolved
extraction settings and their cache key (`settings`, `registry`), the family table (`families`), hub pins,
weights from outside the hub, and runnability."""
