"""The Python API: `geneb.evaluate` and `geneb.leaderboard` (`geneb.api.evaluate`), the workflow's steps in process."""
