"""`model.embedding`: a user's pretrained word vectors (GloVe, word2vec or fastText text files, written here).

The file is read and checked (a malformed line is one line naming the file and its line number), the
embedding starts from its vectors, frozen or fine-tuned, its dimension must be embedding_dim, the data card
says how much of the vocabulary it covers, and the file is part of the run's identity.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.execution.identity import input_files
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import word_vectors
from seqkeras.tasks.word_vectors import WordVectorsFile

WORDS = {"good": [0.5, -1.0, 0.25, 2.0], "bad": [-0.5, 1.0, -0.25, -2.0], "film": [1.0, 1.0, 1.0, 1.0]}


def glove(tmp_path, name="vectors.txt", words=WORDS, header=False) -> str:
    lines = [f"{len(words)} 4"] if header else []
    lines += [" ".join([word, *map(str, vector)]) for word, vector in words.items()]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("header", [False, True], ids=["glove", "word2vec-header"])
def test_a_file_gives_the_vectors_of_the_words_asked_for_under_their_spelling_or_in_lowercase(tmp_path, header):
    path = glove(tmp_path, words={**WORDS, "Film": [9.0, 9.0, 9.0, 9.0]}, header=header)
    dimension, vectors = word_vectors.read_vectors(path, ["good", "FILM", "absent"])
    assert dimension == 4 and sorted(vectors) == ["film", "good"]  # FILM: under its lowercase; Film: not asked
    start = np.zeros((4, 4), dtype="float32")
    rows = word_vectors.table(WordVectorsFile(path=path), ["<pad>", "good", "FILM", "absent"], start, 4)
    np.testing.assert_array_equal(rows, [[0, 0, 0, 0], WORDS["good"], WORDS["film"], [0, 0, 0, 0]])
    with pytest.raises(SpecError, match=r"have 4 numbers but model.embedding_dim is 8: set embedding_dim: 4"):
        word_vectors.table(WordVectorsFile(path=path), ["good"], np.zeros((1, 8)), 8)


def test_a_word_listed_twice_keeps_its_first_vector(tmp_path):
    path = tmp_path / "twice.vec"
    path.write_text("good 1 2\ngood 3 4\n", encoding="utf-8")
    _, vectors = word_vectors.read_vectors(str(path), ["good"])
    np.testing.assert_array_equal(vectors["good"], [1, 2])


@pytest.mark.parametrize(("content", "words"), [
    ("good 1 2\nbad 1 2 3\n", "line 2: 3 numbers after the word 'bad'; the file's vectors have 2"),
    ("good 1 2\nbad 1 x\n", "line 2: 'x' is not a number"),
    ("good 1 2\n\nbad 1 2\n", "line 2: an empty line"),
    ("good 1 nan\n", "line 1: a number that is not finite"),
    ("good 1 1e39\n", "line 1: a number that is not finite in float32"),  # 1e39 is finite only in float64
    # Another file's text (a secret, an escape) is quoted as a short escaped excerpt, never whole.
    ("ssh-rsa:AAAAB3NzaC1yc2EAAAADAQABAAABgQC7\x1b[31m\n", "a word with no numbers ('ssh-rsa:AAAAB3NzaC1yc2EA'…)"),
    ("good\n", "line 1: a word with no numbers ('good')"),
    ("3 0\ngood\n", "line 1: the header gives a dimension of 0"),
    ("", "holds no vectors"),
])
def test_a_malformed_file_is_one_line_naming_the_file_and_line(tmp_path, content, words):
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        word_vectors.read_vectors(str(path), ["good", "bad"])  # numbers are read for the words asked for
    message = str(caught.value)
    assert words in message and str(path) in message and "\n" not in message
    assert caught.value.path == "model.embedding.path"


def test_a_file_that_is_not_utf8_or_missing_is_one_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9 1 2\n".encode("latin-1"))
    with pytest.raises(SpecError, match=r"latin1.txt, line 1: byte 0xe9 is not UTF-8"):
        word_vectors.read_vectors(str(path), ["good"])
    with pytest.raises(SpecError, match="no such file"):
        word_vectors.read_vectors(str(tmp_path / "absent.txt"), ["good"])


def sentiment_spec(data_path: str, **embedding) -> dict:
    return {
        "version": 1, "name": "vectors",
        "task": {"name": "text_classification_file", "path": data_path},
        "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4, "embedding": embedding},
        "train": {"epochs": 2, "batch_size": 8, "verbose": 0, "optimizer": {"learning_rate": 0.1}},
        "evaluate": {"metrics": ["accuracy"]}, "seeds": [0],
    }


def reviews(tmp_path) -> str:
    rows = ["text,label"] + [f"a good film {i},pos" for i in range(12)] + [f"a bad film {i},neg" for i in range(12)]
    path = tmp_path / "reviews.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def trained_embedding(folder) -> tuple[np.ndarray, list[str]]:
    kept = seqkeras.load_model(folder)
    layer = kept.model.get_layer("embedding")
    return np.asarray(layer.embeddings), kept.preprocessing.vocabulary.tokens


@pytest.mark.slow
def test_a_frozen_embedding_keeps_the_files_vectors_and_a_trainable_one_learns_from_them(tmp_path):
    data, vectors = reviews(tmp_path), glove(tmp_path)
    frozen = seqkeras.run(sentiment_spec(data, path=vectors), out=tmp_path / "frozen")
    tuned = seqkeras.run(sentiment_spec(data, path=vectors, trainable=True), out=tmp_path / "tuned")
    for results in (frozen, tuned):
        assert results.runs["status"].tolist() == ["ok"], results.runs.get("error")
    (frozen_id,), (tuned_id,) = frozen.runs["run_id"], tuned.runs["run_id"]
    table, tokens = trained_embedding(frozen.folder / frozen_id)
    for word, vector in WORDS.items():
        np.testing.assert_array_equal(table[tokens.index(word)], vector)  # exactly the file's, after training
    table, tokens = trained_embedding(tuned.folder / tuned_id)
    assert not np.allclose(table[tokens.index("good")], WORDS["good"])  # fine-tuned from them

    card = json.loads((frozen.folder / frozen_id / "data_card.json").read_text())["embedding"]["tokens"]
    words = [token for token in tokens if token not in ("<pad>", "<unk>")]
    assert card["words"] == len(words) and card["words_with_vectors"] == 3  # good, bad, film
    assert card["word_coverage"] == pytest.approx(3 / len(words))
    # Training texts are "a good film N" and "a bad film N": 2 of 4 tokens have a vector.
    assert card["train_token_coverage"] == pytest.approx(0.5) and card["trainable"] is False
    page = (frozen.folder / "data_card.md").read_text(encoding="utf-8")  # the experiment's card shows them
    assert "| word vectors (embedding) | file " in page and "vectors.txt | 11 | 3 | 27.3% | 50.0% |" in page, page


def test_a_dimension_other_than_embedding_dim_fails_the_run_in_one_line(tmp_path):
    spec = sentiment_spec(reviews(tmp_path), path=glove(tmp_path))
    spec["model"]["embedding_dim"] = 8
    results = seqkeras.run(spec, out=tmp_path / "r")
    (error,) = results.runs["error"]
    assert results.runs["status"].tolist() == ["failed"]
    assert "have 4 numbers but model.embedding_dim is 8: set embedding_dim: 4" in error and "\n" not in error


def test_the_file_is_part_of_the_runs_identity_and_an_old_spec_keeps_its_id(tmp_path):
    data, vectors = reviews(tmp_path), glove(tmp_path)
    with_vectors = build_experiment(sentiment_spec(data, path=vectors), source="<dict>", overrides=[])
    (run,) = with_vectors.runs
    assert input_files(run)["model.embedding.path"].name == "vectors.txt"
    plain = sentiment_spec(data, path=vectors)
    del plain["model"]["embedding"]
    (plain_run,) = build_experiment(plain, source="<dict>", overrides=[]).runs
    assert "embedding" not in plain_run.model.params.hashed()  # unset: not in the id, as before the key existed
    assert plain_run.run_id != run.run_id


@pytest.mark.parametrize(("model", "words"), [
    ({"kind": "classifier", "input_encoding": "one_hot", "embedding": {"path": "v.txt"}},
     "embedding (a file of word vectors) needs input_encoding embedding"),
    ({"kind": "regressor", "embedding": {"path": "v.txt"}}, "embedding does not apply to a regressor"),
    ({"kind": "classifier", "embedding": {"path": "v.txt", "trainble": True}}, "model.embedding.trainble"),
    ({"kind": "classifier", "embedding": {"trainable": True}}, "model.embedding.path"),
])
def test_a_bad_embedding_key_is_one_line_naming_it(model, words):
    task = {"name": "adding"} if model["kind"] == "regressor" else {"name": "delayed_recall"}
    raw = {"version": 1, "name": "t", "task": task, "model": model,
           "evaluate": {"metrics": ["mse" if model["kind"] == "regressor" else "accuracy"]}}
    with pytest.raises(SpecError) as caught:
        build_experiment(raw, source="<dict>", overrides=[])
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_run_reads_the_file_once_for_its_data_card_and_both_of_an_encoder_decoders_embeddings(tmp_path,
                                                                                                    monkeypatch):
    from seqkeras.models.seq2seq import build
    from seqkeras.models.seq2seq_params import Seq2SeqParams
    from seqkeras.tasks import seq2seq_synthetic

    reads = []
    read = word_vectors._read
    monkeypatch.setattr(word_vectors, "_read", lambda path, wanted: reads.append(path) or read(path, wanted))
    monkeypatch.setattr(word_vectors, "_last_read", None)
    vectors = glove(tmp_path, words={"a": [1, 2, 3, 4], "b": [4, 3, 2, 1]})
    data = seq2seq_synthetic.build_reverse(seq2seq_synthetic.SymbolParams(n_train=8, n_test=2, symbols=3), seed=0)
    params = Seq2SeqParams(units=4, embedding_dim=4, embedding={"path": vectors})
    card = word_vectors.data_coverage(params.embedding, data)
    model = build(params, data)
    assert reads == [vectors] and card["target"]["words_with_vectors"] == 2
    np.testing.assert_array_equal(np.asarray(model.target_embedding.embeddings)[data.target_vocabulary.index["a"]],
                                  [1, 2, 3, 4])
    (tmp_path / "vectors.txt").write_text("a 4 4 4 4\n", encoding="utf-8")  # edited: read again
    build(params, data)
    assert reads == [vectors, vectors]


@pytest.mark.parametrize("kind", ["seq2seq", "transformer_seq2seq", "transformer_classifier", "lm"])
def test_every_kind_with_token_embeddings_starts_each_from_the_file(kind, tmp_path):
    import keras

    from seqkeras import catalog
    from seqkeras.tasks import char_lm, delayed_recall, seq2seq_synthetic

    file_words = {"a": [1, 2, 3, 4], "b": [4, 3, 2, 1], "SA": [0, 1, 0, 1], "n3": [2, 2, 2, 2]}
    vectors = glove(tmp_path, words=file_words)
    sizes = {"embedding_dim": 4, "embedding": {"path": vectors}}
    sizes |= {"num_heads": 2, "intermediate_dim": 4, "layers": 1} if kind.startswith("transformer") else {"units": 4}
    component = catalog.MODELS.get(kind)
    if kind.endswith("seq2seq"):
        data = seq2seq_synthetic.build_reverse(seq2seq_synthetic.SymbolParams(n_train=8, n_test=2, symbols=3), seed=0)
    elif kind == "lm":
        data = char_lm.build(char_lm.Params(n_train=4, n_test=2, seq_length=6), seed=0)
    else:
        data = delayed_recall.build(delayed_recall.Params(lag=2, n_train=4, n_test=2), seed=0)
    model = component.builder(component.params(**sizes), data)
    embeddings = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.Embedding)]
    assert len(embeddings) == (2 if kind.endswith("seq2seq") else 1)
    vocabularies = [data.vocabulary, data.target_vocabulary] if kind.endswith("seq2seq") else [data.vocabulary]
    for layer, vocabulary in zip(embeddings, vocabularies):
        assert not layer.trainable
        table = np.asarray(layer.embeddings)
        listed = [word for word in file_words if word in vocabulary.tokens]
        assert listed  # the data's words are among the file's
        for word in listed:
            np.testing.assert_array_equal(table[vocabulary.tokens.index(word)], file_words[word])
