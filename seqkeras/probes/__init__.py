"""Training-free experiments that reproduce the lesson's printed numbers."""
