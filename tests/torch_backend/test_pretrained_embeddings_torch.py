"""model.embedding on torch, whose lean training loop (backends.torch) takes the trainable weights itself: a frozen
embedding keeps the file's vectors exactly, a trainable one learns from them (tests/test_pretrained_embeddings.py
has the file's checks)."""

from __future__ import annotations

from tests.test_pretrained_embeddings import (  # noqa: F401  (collected here: run on torch)
    test_a_frozen_embedding_keeps_the_files_vectors_and_a_trainable_one_learns_from_them,
)
