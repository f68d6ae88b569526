"""Keras layers and models that seqkeras adds on top of Keras (e.g. the CRF output layer)."""
