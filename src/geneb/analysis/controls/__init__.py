"""Controls: is the task measuring the model (the task audit: shortcuts, leakage) and does pretraining help (each
model against its random-init twin)."""
