"""The Python API (docs/api.md): `geneb.evaluate` and `geneb.leaderboard` (`evaluate`) and
`geneb.evaluate_zeroshot` (`zeroshot`), the workflow's steps in process for a notebook.

Exports nothing: its functions are exported by `geneb` itself, which imports this package's modules when they are
called (and the function `evaluate` could not be exported here: `geneb.api.evaluate` is its module)."""

__all__: list[str] = []
