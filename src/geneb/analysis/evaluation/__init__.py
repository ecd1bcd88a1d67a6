"""Evaluation choices: which view (pooling, layer, protocol) a score comes from, how much of a ranking each choice
moves (sensitivity), and the best layer per model."""
