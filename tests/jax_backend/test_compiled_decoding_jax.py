"""On JAX an encoder-decoder decodes through compiled functions, and a language model's step model through
`predict_on_batch`, on rows padded to a power of two (`seqkeras.backends.compiled`): what the decoders see is
what the model's own eager methods, or its prefix rerun, give.

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend/test_compiled_decoding_jax.py
"""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
from keras import ops

from seqkeras.backends import compiled
from seqkeras.backends.compiled import compiled_method, pad_rows, padded_rows
from seqkeras.decoding import GreedyDecoder
from seqkeras.decoding.cached_step_models import CachedTransformerStepModel, RecurrentStepModel, cached_step_model
from seqkeras.evaluation.generation import log_probabilities
from seqkeras.models import recurrent, transformer
from seqkeras.models.seq2seq import Seq2SeqParams, build, rows_of
from seqkeras.tasks import seq2seq_synthetic as synthetic
from tests.stepping import VOCABULARY, lm_data


@pytest.fixture(scope="module")
def model_and_sources():
    keras.utils.set_random_seed(0)
    data = synthetic.build_reverse(
        synthetic.SymbolParams(n_train=24, n_test=7, min_length=2, max_length=5, symbols=4), seed=0)
    model = build(Seq2SeqParams(units=8, embedding_dim=4, attention="bahdanau"), data)
    return model, data.x_test["source"], data


def eager_log_probs(model, sources: np.ndarray, steps: list[np.ndarray], keep: list[np.ndarray]) -> list[np.ndarray]:
    """The model's own methods, uncompiled and unpadded: encode, then one step per token array, rows kept after each."""
    state = model.encode(ops.convert_to_tensor(sources))
    out = []
    for tokens, rows in zip(steps, keep):
        log_probs, carry = model.next_token_log_probs(ops.convert_to_tensor(tokens), state)
        out.append(ops.convert_to_numpy(log_probs))
        state = rows_of({**state, "carry": carry}, ops.convert_to_tensor(rows))
    return out


def test_rows_are_padded_to_a_power_of_two_by_repeating_the_first():
    assert [padded_rows(n) for n in (1, 2, 3, 5, 8, 9)] == [1, 2, 4, 8, 8, 16]
    padded = pad_rows(np.array([[1, 2], [3, 4], [5, 6]]), 4)
    assert padded.tolist() == [[1, 2], [3, 4], [5, 6], [1, 2]]


def test_the_padded_compiled_step_model_gives_the_eager_log_probabilities(model_and_sources):
    model, sources, data = model_and_sources
    assert len(sources) == 7  # padded to 8 rows; then 5 rows kept, padded to 8; then 3, padded to 4
    step_model = model.step_model(sources, data.start_id, data.end_id)
    tokens = [np.full(7, data.start_id), np.array([4, 5, 6, 4, 5, 6, 4]), np.array([5, 5, 4, 6, 4])]
    keep = [np.arange(7), np.array([0, 2, 3, 5, 6]), np.array([1, 3, 4])]
    expected = eager_log_probs(model, sources, tokens, keep)
    state = step_model.start(len(sources))
    for step, (these, rows) in enumerate(zip(tokens, keep)):
        log_probs, state = step_model.step(these, state)
        assert log_probs.shape == (len(these), step_model.vocab_size)
        np.testing.assert_allclose(log_probs, expected[step], atol=1e-5, err_msg=f"step {step}")
        state = step_model.select(state, rows)
    assert len(state["carry"]["features"]) == 4  # three rows left, held padded


def test_a_greedy_decode_compiles_each_padded_shape_once_and_reuses_it_across_step_models(model_and_sources):
    model, sources, data = model_and_sources
    first = GreedyDecoder().decode(model.step_model(sources, data.start_id, data.end_id), len(sources), 6)
    step = compiled_method(model, "next_token_log_probs")
    compiled = step.traces
    again = GreedyDecoder().decode(model.step_model(sources, data.start_id, data.end_id), len(sources), 6)
    assert again.tokens == first.tokens
    assert step.traces == compiled  # nothing compiled again for the second step model
    assert compiled <= 4  # 8 rows, and at most 4, 2, 1 as outputs end: never one program per row count



@pytest.mark.parametrize("kind", ["lstm", "transformer"])
def test_a_language_models_step_on_padded_rows_gives_what_its_rows_alone_give(kind, monkeypatch):
    """Three rows (padded to four) after a context, padding id included; the same step unpadded, compared."""
    keras.utils.set_random_seed(0)
    if kind == "lstm":
        model = recurrent.build_lm(recurrent.LanguageModelParams(cell="lstm", layers=2, units=6, embedding_dim=5),
                                   lm_data())
    else:
        params = transformer.TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=16, layers=2)
        model = transformer.build_lm(params, lm_data())
    cached = cached_step_model(model, 1, 0, context=[3, 7], scores=log_probabilities)
    assert isinstance(cached, RecurrentStepModel if kind == "lstm" else CachedTransformerStepModel)
    state = cached.start(3)
    tokens = np.array([4, 0, 6], dtype="int32")
    padded, padded_state = cached.advance(tokens, state)
    monkeypatch.setattr(compiled, "padded_rows", lambda rows: rows)
    alone, alone_state = cached.advance(tokens, state)
    assert padded.shape == alone.shape == (3, VOCABULARY)
    np.testing.assert_allclose(padded, alone, atol=1e-5)
    for found, expected in zip(keras.tree.flatten(padded_state), keras.tree.flatten(alone_state)):
        np.testing.assert_allclose(found, expected, atol=1e-5)
