"""Loading weights: transformers folders, checkpoint key checks, folder models."""
