"""The Python API (docs/api.md): `geneb.evaluate` and `geneb.leaderboard` (`evaluate`) and
`geneb.evaluate_zeroshot` (`zeroshot`), the workflow's steps in process for a notebook."""
