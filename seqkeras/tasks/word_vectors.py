"""A user's pretrained word vectors (`model.embedding`): GloVe, word2vec or fastText text files, read and checked.

    word v1 v2 … vd          one word and d numbers per line, separated by spaces (GloVe)
    count d                  first line of word2vec's and fastText's text format (.vec), then as above

Every vector must have the same d numbers, each a finite number; a line that does
not is a one-line error naming the file and its line number. A word listed twice
keeps its first vector (fastText's .vec files list a few words twice). The file is
read as every user's file is (`tasks.files.utf8_pieces`: a regular UTF-8 file, a
bounded line length, no NUL byte), streamed, and only the vectors of the words
asked for are kept, so a 2 GB file costs the memory of the vocabulary's rows.

A token finds its vector under its own spelling, else under its lowercase (GloVe's
words are lowercase; a task may keep case). `data_coverage` gives the data card's
figures: the share of the vocabulary's words with a vector, and the share of the
training tokens they make up.

The last file read is remembered (by path, size and modification time), with the
words it was read for: the data card and the builder, which both ask, and an
encoder-decoder's two vocabularies, asked for together first, read it once.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from pydantic import Field

from seqkeras.errors import SpecError, excerpt
from seqkeras.registry import Params
from seqkeras.problems import problem_named
from seqkeras.tasks.base import PAD, UNK, SequenceData
from seqkeras.tasks.seq2seq_data import END, START
from seqkeras.tasks.files import utf8_pieces

KEY = "model.embedding.path"
RESERVED = (PAD, UNK, START, END)  # the suite's own tokens: no file's words


class WordVectorsFile(Params):
    """`model.embedding`: the file of pretrained vectors the embedding starts from."""

    path: str = Field(description="GloVe, word2vec or fastText text file: a word and its numbers per line "
                                  "(word2vec's and fastText's `count dimension` first line is read as such).")
    trainable: bool = Field(False, description="Fine-tune the vectors with the rest of the model (true), or keep "
                                               "them as the file gives them (false, the default).")


def input_files(embedding: WordVectorsFile | None) -> dict[str, Path]:
    """The file, by its key in the model section, for a run's identity (an edited file means the run is run
    again)."""
    return {} if embedding is None else {"embedding.path": Path(embedding.path).expanduser()}


# The last file read: (its path, size and modification time; the words looked for; its dimension and vectors).
_last_read: tuple[tuple, set[str], tuple[int, dict[str, np.ndarray]]] | None = None


def read_vectors(path: str, words: list[str]) -> tuple[int, dict[str, np.ndarray]]:
    """The file's dimension d and the vectors [d] float32 of those of `words` it lists (spelled as listed or in
    lowercase, see the module docstring; the result may hold more words); a SpecError at model.embedding.path for
    a file that cannot be read or a line that is not a word and d numbers.

    The last file read is not read again for words it was read for: ask once for every vocabulary's words (an
    encoder-decoder's source and target), and each vocabulary's later question is answered from memory."""
    global _last_read
    expanded = Path(path).expanduser()
    wanted = set(words) | {word.lower() for word in words}
    try:
        status = os.stat(expanded)
        key = (str(expanded.resolve()), status.st_size, status.st_mtime_ns)
    except (OSError, ValueError):
        key = None  # utf8_pieces says why, naming the file
    if key is not None and _last_read is not None and _last_read[0] == key and wanted <= _last_read[1]:
        return _last_read[2]
    result = _read(path, wanted)
    if key is not None:
        _last_read = (key, wanted, result)
    return result


def _read(path: str, wanted: set[str]) -> tuple[int, dict[str, np.ndarray]]:
    dimension: int | None = None
    found: dict[str, np.ndarray] = {}
    for number, line in enumerate(utf8_pieces(path, KEY), start=1):
        fields = line.rstrip("\r\n").rstrip(" ").split(" ")
        if number == 1 and len(fields) == 2 and all(field.isdigit() for field in fields):
            dimension = int(fields[1])  # word2vec's and fastText's header: count, dimension
            if dimension < 1:
                raise _line_error(path, number, "the header gives a dimension of 0")
            continue
        if fields == [""]:
            raise _line_error(path, number, "an empty line")
        if dimension is None:
            dimension = len(fields) - 1
            if dimension < 1:
                raise _line_error(path, number, f"a word with no numbers ({excerpt(fields[0])})")
        if len(fields) != dimension + 1:
            raise _line_error(path, number, f"{len(fields) - 1} numbers after the word {excerpt(fields[0])}; the "
                                            f"file's vectors have {dimension}")
        word = fields[0]
        if word in wanted and word not in found:
            found[word] = _numbers(path, number, fields[1:])
    if dimension is None:
        raise SpecError(f"{path} holds no vectors", path=KEY)
    return dimension, found


def _numbers(path: str, number: int, fields: list[str]) -> np.ndarray:
    try:
        values = [float(field) for field in fields]
    except ValueError:
        bad = next(field for field in fields if not _is_number(field))
        raise _line_error(path, number, f"{excerpt(bad)} is not a number") from None
    with np.errstate(over="ignore"):  # the overflow is the finding, said below
        vector = np.asarray(values, dtype="float32")  # checked as it will be used: 1e39 is inf in float32
    if not np.isfinite(vector).all():
        raise _line_error(path, number, "a number that is not finite in float32 (inf, nan, or beyond ±3.4e38)")
    return vector


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _line_error(path: str, number: int, what: str) -> SpecError:
    return SpecError(f"{path}, line {number}: {what}; each line must be a word and its numbers, separated by "
                     "spaces", path=KEY)


def vector_of(token: str, vectors: dict[str, np.ndarray]) -> np.ndarray | None:
    """The token's vector: under its spelling, else its lowercase; None for the suite's own tokens and others."""
    if token in RESERVED:
        return None
    found = vectors.get(token)
    return vectors.get(token.lower()) if found is None else found


def table(embedding: WordVectorsFile, tokens: list[str], start: np.ndarray, embedding_dim: int) -> np.ndarray:
    """The embedding table to start from: `start` [V, d] (the layer's own initial rows) with each token's row
    replaced by its pretrained vector; a SpecError when the file's dimension is not `embedding_dim`."""
    dimension, vectors = read_vectors(embedding.path, tokens)
    if dimension != embedding_dim:
        raise SpecError(f"{embedding.path}'s vectors have {dimension} numbers but model.embedding_dim is "
                        f"{embedding_dim}: set embedding_dim: {dimension}", path=KEY)
    rows = np.array(start, dtype="float32", copy=True)
    for index, token in enumerate(tokens):
        vector = vector_of(token, vectors)
        if vector is not None:
            rows[index] = vector
    return rows


def vocabulary_coverage(embedding: WordVectorsFile, tokens: list[str], train_ids: np.ndarray) -> dict[str, object]:
    """The data card's figures for one vocabulary: its words with a vector (of those that are words: the suite's
    own tokens are left out), and the share of the training tokens (ids; padding, start and end left out, an
    unknown word in: it has no vector) that have one."""
    _, vectors = read_vectors(embedding.path, tokens)
    has_vector = np.array([vector_of(token, vectors) is not None for token in tokens], dtype=bool)
    words = sum(token not in RESERVED for token in tokens)
    counted = np.array([token not in RESERVED or token == UNK for token in tokens], dtype=bool)
    ids = np.asarray(train_ids).reshape(-1)
    ids = ids[counted[ids]]
    return {
        "file": embedding.path,
        "trainable": embedding.trainable,
        "words": int(words),
        "words_with_vectors": int(has_vector.sum()),
        "word_coverage": float(has_vector.sum() / words) if words else 0.0,
        "train_token_coverage": float(has_vector[ids].mean()) if len(ids) else 0.0,
    }


def data_coverage(embedding: WordVectorsFile, data: SequenceData) -> dict[str, dict]:
    """The data card's `embedding` entry: how much of each vocabulary the file covers (`vocabulary_coverage`),
    per embedding: `tokens`, or an encoder-decoder's `source` and `target`."""
    if problem_named(data.problem).source_to_target:
        read_vectors(embedding.path, data.vocabulary.tokens + data.target_vocabulary.tokens)  # one read for both
        return {"source": vocabulary_coverage(embedding, data.vocabulary.tokens, data.x_train["source"]),
                "target": vocabulary_coverage(embedding, data.target_vocabulary.tokens, data.y_train)}
    return {"tokens": vocabulary_coverage(embedding, data.vocabulary.tokens, data.x_train)}
