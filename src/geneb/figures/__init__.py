"""The figures of a run (docs/analyses.md): `registry` (every figure, the tables it reads, its caption, and
rendering them to files; read it first), `style` (the shared look), and the drawings grouped by what they show:
`leaderboard`, `paper`, `evaluation`."""
