"""Token ids → vectors: a learned embedding, or the fixed one-hot vectors papers feed their networks.

A one-hot input is an `Embedding` whose table is the identity and is not trained:
row i is e_i. Being Keras's own layer, it masks padding (id 0) as the learned
embedding does, keeps every fast path that reads an Embedding (the torch layer
chain, the cached step models), and a kept model loads in plain Keras.
"""

from __future__ import annotations

import keras


def token_inputs(vocabulary: int, embedding_dim: int, encoding: str, *, name: str = "embedding",
                 mask_zero: bool = True) -> keras.layers.Embedding:
    """The layer that turns token ids into vectors: `encoding` embedding (learned, `embedding_dim` wide) or
    one_hot (the identity, `vocabulary` wide, fixed)."""
    if encoding == "one_hot":
        return keras.layers.Embedding(vocabulary, vocabulary, embeddings_initializer="identity", trainable=False,
                                      mask_zero=mask_zero, name=name)
    return keras.layers.Embedding(vocabulary, embedding_dim, mask_zero=mask_zero, name=name)

