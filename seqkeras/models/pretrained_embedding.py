"""`model.embedding`: a model kind's token embedding started from a user's pretrained vectors (GloVe, word2vec,
fastText; tasks.word_vectors reads the file).

    model: {kind: classifier, embedding_dim: 50, embedding: {path: glove.6B.50d.txt, trainable: false}}

The kinds with learned token embeddings take it (their Params mix in `PretrainedEmbeddingParams`): each builder
builds its model as always, then `start_from_file` replaces the rows of the tokens the file lists (under their
spelling or in lowercase) and leaves the others at their random start; with `trainable: false` (the default) the
embedding is frozen, as the Keras example with GloVe freezes it. The file's dimension must be `embedding_dim`
(one line saying which to set, when the run's model is built). An encoder-decoder's source and target embeddings
both start from the file, each for its own vocabulary.

The file is part of the run's identity (`input_files`): an edited file means the run is run again. A kept
model holds the trained table itself, so it loads without the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, model_validator

from seqkeras.registry import Params
from seqkeras.tasks import word_vectors
from seqkeras.tasks.word_vectors import WordVectorsFile


class PretrainedEmbeddingParams(Params):
    """The `embedding` key of a model kind whose tokens enter through a learned embedding."""

    # Added after results existed: in a run's id only when set (registry.Params).
    hashed_only_when_set: ClassVar[tuple[str, ...]] = ("embedding",)

    embedding: WordVectorsFile | None = Field(
        None, description="Start the token embeddings from a file of pretrained word vectors (GloVe, word2vec or "
        "fastText text format): {path: FILE, trainable: false}; its dimension must be embedding_dim.")

    @model_validator(mode="after")
    def _vectors_need_a_learned_embedding(self) -> "PretrainedEmbeddingParams":
        if self.embedding is not None and getattr(self, "input_encoding", "embedding") != "embedding":
            raise ValueError("embedding (a file of word vectors) needs input_encoding embedding, not "
                             f"{self.input_encoding!r}")
        return self

    def input_files(self) -> dict[str, Path]:
        return {**super().input_files(), **word_vectors.input_files(self.embedding)}


def frozen(embedding: WordVectorsFile | None) -> bool:
    """Whether the embeddings started from the file stay as the file has them (`trainable: false`). A subclassed
    model (the encoder-decoders) keeps this in its config and freezes its embeddings when it is made, so that the
    model Keras loads has the trainable weights, and so the optimizer state, it was saved with."""
    return embedding is not None and not embedding.trainable


def start_from_file(layer, embedding: WordVectorsFile | None, tokens: list[str]) -> None:
    """Give a built Keras `Embedding` layer the file's vectors for `tokens` (its rows, in id order), and freeze it
    unless the file is `trainable`. Nothing without a file."""
    if embedding is None:
        return
    from keras import ops

    start = ops.convert_to_numpy(layer.embeddings)
    layer.embeddings.assign(word_vectors.table(embedding, tokens, start, int(start.shape[1])))
    layer.trainable = embedding.trainable
