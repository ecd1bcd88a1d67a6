"""The paper's analyses and its published results: scale, matched pairs, few-shot, task difficulty; the importer of
the published 40, the reproduction of its stated numbers, the comparison of a new model with them and the
submission file."""
