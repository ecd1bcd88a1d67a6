"""The model registry, torch-free and read while the workflow plans: typed entries (`spec`) in a `Registry`
(`registry`), read from config/models.yaml by `load` and checked by `checks`; whether an entry can run now
(`runnable`); its resolved extraction settings and their cache key (`extraction`, typed in `settings`); the family
table (`families`), hub pins (`pins`), and weights from outside the hub (`weights`; their cache folders are built
by `weights_fetch`)."""
