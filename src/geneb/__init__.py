"""GENEB: a benchmark harness for genomic (DNA) foundation models.

Frozen embeddings from each model, a logistic-regression probe on top, scored by the Matthews correlation
coefficient (MCC) on labelled DNA tasks in 13 functional categories (the GENEB paper, arXiv 2606.04525).
"""

__version__ = "0.1.0"
