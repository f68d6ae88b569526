"""The step models that carry a recurrent state or a key/value cache (seqkeras/decoding/cached_step_models.py).

Each gives the log-probabilities PrefixStepModel gives on the same model, at
every step of 20 tokens, through beam-style reorderings and a padding token;
the Transformer past its window does what PromptStepModel's window does; a
recurrent state keeps its size, a cache grows by the same bytes per token.
"""

from __future__ import annotations

import functools

import keras
import numpy as np
import pytest

from seqkeras.decoding import BeamDecoder, SampleDecoder
from seqkeras.decoding.cached_step_models import (
    GROWTH_MINIMUM,
    CachedTransformerStepModel,
    RecurrentStepModel,
    cached_step_model,
    state_size,
)
from seqkeras.decoding.step_model import PrefixStepModel
from seqkeras.evaluation.generation import (
    NextTokenLogProbabilities,
    PromptStepModel,
    log_probabilities,
    prompt_step_model,
)
from seqkeras.models import nplm, recurrent, transformer
from tests.stepping import VOCABULARY, largest_difference, lm_data, stepped_tokens

TOLERANCE = 1e-4

RECURRENT = {
    "lstm": {"cell": "lstm", "layers": 1},
    "2 lstm layers": {"cell": "lstm", "layers": 2},
    "2 gru layers": {"cell": "gru", "layers": 2},
    "simple_rnn": {"cell": "simple_rnn", "layers": 1},
}


def recurrent_lm(cell="lstm", layers=1, **options):
    keras.utils.set_random_seed(0)
    params = recurrent.LanguageModelParams(cell=cell, layers=layers, units=6, embedding_dim=5, **options)
    return recurrent.build_lm(params, lm_data())


def transformer_lm(positions="learned", normalize_first=False, length=24, layers=2):
    keras.utils.set_random_seed(0)
    params = transformer.TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=16, layers=layers,
                                           positions=positions, normalize_first=normalize_first)
    return transformer.build_lm(params, lm_data(length))


# Most of a test's time is building a model and tracing its compiled predict and step functions, the same for
# each test that reads the same (untrained, seeded) model: these hand out one model per configuration to the
# tests that only read it. A test that changes a model (its weights, a layer's option) builds its own.
def shared_recurrent_lm(cell="lstm", layers=1):
    return _shared(recurrent_lm, cell, layers)


def shared_transformer_lm(positions="learned", normalize_first=False, length=24, layers=2):
    return _shared(transformer_lm, positions, normalize_first, length, layers)


@functools.cache
def _shared(build, *arguments):
    return build(*arguments)


@pytest.mark.parametrize("name", list(RECURRENT))
def test_recurrent_step_model_matches_the_prefix_model(name):
    model = shared_recurrent_lm(**RECURRENT[name])
    cached = cached_step_model(model, 1, 0, context=[3, 0, 7], scores=log_probabilities)
    assert isinstance(cached, RecurrentStepModel)
    prefix = PromptStepModel(model, [3, 0, 7, 1], VOCABULARY, window=1000)
    assert largest_difference(prefix, cached, stepped_tokens()) < TOLERANCE


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("positions", ["learned", "sine", "none"])
def test_transformer_step_model_matches_the_prefix_model(positions, normalize_first):
    model = shared_transformer_lm(positions, normalize_first)
    cached = cached_step_model(model, 1, 0, context=[3, 0, 7], scores=log_probabilities)
    assert isinstance(cached, CachedTransformerStepModel)
    prefix = PromptStepModel(model, [3, 0, 7, 1], VOCABULARY, window=1000)
    assert largest_difference(prefix, cached, stepped_tokens()) < TOLERANCE


@pytest.mark.parametrize("build", [lambda: shared_recurrent_lm("lstm", layers=2), lambda: shared_transformer_lm()],
                         ids=["lm", "transformer"])
def test_by_default_the_outputs_are_log_softmaxed_as_prefix_step_model_does(build):
    model = build()
    assert largest_difference(PrefixStepModel(model, 1, 2), cached_step_model(model, 1, 2), stepped_tokens()) < 1e-6


def test_a_recurrent_layer_with_zero_output_for_mask_outputs_zeros_at_padding():
    model = recurrent_lm("gru", layers=2)
    for layer in model.layers[2:-1]:
        layer.zero_output_for_mask = True
    assert largest_difference(PromptStepModel(model, [1], VOCABULARY, 1000),
                              cached_step_model(model, 1, 0, scores=log_probabilities), stepped_tokens()) < TOLERANCE


@pytest.mark.parametrize("positions", ["learned", "none"])
def test_past_its_window_the_transformer_sees_what_the_prompt_step_model_sees(positions):
    """Window 6 (a context of 4 tokens, 20 more): from the 3rd step on, the last 6 tokens at positions 0..5."""
    model = shared_transformer_lm(positions)
    context = [3, 5, 7, 9]
    prefix = PromptStepModel(model, [*context, 1], VOCABULARY, window=6)
    cached = prompt_step_model(model, [*context, 1], VOCABULARY, window=6, own_step_model=CachedTransformerStepModel)
    assert isinstance(cached, CachedTransformerStepModel) and cached.max_length == 6
    assert largest_difference(prefix, cached, stepped_tokens()) < TOLERANCE
    # A context longer than the window: the first step already sees only the last 6 tokens.
    long_context = list(range(1, 12))
    assert largest_difference(PromptStepModel(model, [*long_context, 1], VOCABULARY, window=6),
                              prompt_step_model(model, [*long_context, 1], VOCABULARY, window=6,
                                                own_step_model=CachedTransformerStepModel),
                              stepped_tokens()) < TOLERANCE


def test_the_learned_position_table_bounds_the_cache():
    model = shared_transformer_lm("learned", length=8)  # a table of 8 positions
    assert cached_step_model(model, 1, 0).max_length == 8
    assert cached_step_model(model, 1, 0, window=32).max_length == 8
    assert cached_step_model(model, 1, 0, window=5).max_length == 5
    assert cached_step_model(shared_transformer_lm("sine", length=8), 1, 0).max_length is None
    # 20 tokens through a table of 8: the last 8 tokens at its 8 positions, as a window of 8 gives.
    prefix = PrefixStepModel(NextTokenLogProbabilities(model, window=8), 1, 0, VOCABULARY)
    assert largest_difference(prefix, cached_step_model(model, 1, 0, scores=log_probabilities),
                              stepped_tokens()) < TOLERANCE


@pytest.mark.parametrize(("build", "own", "window"),
                         [(lambda: shared_recurrent_lm("lstm", layers=2), RecurrentStepModel, 100),
                          (lambda: shared_transformer_lm("learned"), CachedTransformerStepModel, 100),
                          (lambda: shared_transformer_lm("learned"), CachedTransformerStepModel, 8)],
                         ids=["lm", "transformer", "transformer past its window"])
def test_decoders_continue_a_prompt_as_through_the_prefix(build, own, window):
    model = build()
    prompt = [4, 8, 2]
    for decoder in (BeamDecoder(width=3), SampleDecoder(temperature=1.0, seed=3)):
        expected = decoder.decode(PromptStepModel(model, prompt, VOCABULARY, window=window), 1, 12)
        found = decoder.decode(prompt_step_model(model, prompt, VOCABULARY, window=window, own_step_model=own), 1, 12)
        np.testing.assert_array_equal(found.tokens[0], expected.tokens[0])
        np.testing.assert_allclose(found.log_probs, expected.log_probs, atol=TOLERANCE)


def test_a_recurrent_state_keeps_its_size_and_a_cache_grows_by_the_same_bytes_per_token():
    batch = 2

    def size_after(model, tokens: int, **options) -> int:
        step_model = cached_step_model(model, 1, 0, context=[3] * tokens, **options)
        return state_size(step_model.start(batch))

    lstm, gru = shared_recurrent_lm("lstm", layers=2), shared_recurrent_lm("gru", layers=2)
    assert size_after(lstm, 3) == size_after(lstm, 30) == 2 * 2 * batch * 6 * 4  # h and c, float32
    assert size_after(gru, 3) == size_after(gru, 30) == 2 * batch * 6 * 4
    attention = shared_transformer_lm("none")
    per_token = batch * (4 + 2 * 2 * 8 * 4)  # the token id, and a key and a value of width 8 per block
    assert [size_after(attention, n) for n in (0, 3, 30)] == [0, 3 * per_token, 30 * per_token]
    # Stepping, a full cache doubles (at least GROWTH_MINIMUM more positions), up to its max_length.
    step_model = cached_step_model(attention, 1, 0, context=[3] * 30, window=70)
    state = step_model.start(batch)
    capacities = []
    for _ in range(40):
        _, state = step_model.step(np.ones(batch, "int32"), state)
        capacities.append(state["caches"].shape[3])
    assert sorted(set(capacities)) == [60, 70] and state["tokens"].shape[1] == 70
    # Past max_length only the window is kept: the model reruns on it.
    _, state = step_model.step(np.ones(batch, "int32"), state)
    assert state["caches"] is None and state["tokens"].shape[1] == 70
    assert cached_step_model(attention, 1, 0).grown(step_model.graph.empty_caches(batch, 0)).shape[3] == GROWTH_MINIMUM


def test_only_the_lm_kinds_get_a_cached_step_model():
    data = lm_data()
    assert cached_step_model(nplm.build(nplm.NplmParams(order=3, embedding_dim=4, units=5), data), 1, 0) is None
    assert cached_step_model(object(), 1, 0) is None  # not a Keras model (n-gram counts)
    classifier = recurrent.build_classifier(recurrent.ClassifierParams(units=4, embedding_dim=3), data)
    assert cached_step_model(classifier, 1, 0) is None  # its last layer returns the final state only
    with pytest.raises(ValueError, match="not an Embedding → recurrent layers → Dense chain"):
        RecurrentStepModel(shared_transformer_lm(), 1, 0)
    with pytest.raises(ValueError, match="not a causal Transformer LM"):
        CachedTransformerStepModel(shared_recurrent_lm(), 1, 0)


def test_the_step_models_use_the_models_own_layers():
    model = recurrent_lm("lstm", layers=2)
    step_model = cached_step_model(model, 1, 0, scores=log_probabilities)
    assert all(cell is model.get_layer(f"lstm_{i}").cell for i, cell in enumerate(step_model.cells))
    attention = shared_transformer_lm()
    blocks = cached_step_model(attention, 1, 0).graph.blocks
    assert len(blocks) == 2 and all(block is attention.get_layer(f"decoder_{i}") for i, block in enumerate(blocks))
    # Changed weights change what the step model predicts: nothing was copied.
    state = step_model.start(1)
    before, _ = step_model.step(np.array([3]), state)
    layer = model.get_layer("lstm_0")
    layer.set_weights([w * 3 for w in layer.get_weights()])
    after, _ = step_model.step(np.array([3]), state)
    assert np.abs(after - before).max() > 1e-3


def test_frozen_word_vectors_and_learned_positions_step_and_load_with_keras_frozen(tmp_path):
    """With frozen word vectors the learned positions are keras-hub's PositionEmbedding beside a frozen Keras
    Embedding (models.transformer: TokenAndPositionEmbedding's config forgets its table's `trainable`): the step
    graph reads that layout, its table bounds the cache, and Keras alone loads the table frozen."""
    from seqkeras.tasks.word_vectors import WordVectorsFile

    vectors = tmp_path / "vectors.txt"
    vectors.write_text("t3 " + " ".join(["0.5"] * 8) + "\nt7 " + " ".join(["-0.25"] * 8) + "\n", encoding="utf-8")
    keras.utils.set_random_seed(0)
    params = transformer.TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=16, layers=2,
                                           embedding=WordVectorsFile(path=str(vectors)))
    model = transformer.build_lm(params, lm_data(24))
    layers = {layer.name: layer for layer in model.layers}
    assert type(layers["embedding"]) is keras.layers.Embedding and not layers["embedding"].trainable
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layers["embedding"].embeddings)[3], 0.5)
    assert transformer.model_shape(model).positions == 24
    cached = cached_step_model(model, 1, 0, context=[3, 0, 7], scores=log_probabilities)
    assert isinstance(cached, CachedTransformerStepModel) and cached.max_length == 24
    prefix = PromptStepModel(model, [3, 0, 7, 1], VOCABULARY, window=1000)
    assert largest_difference(prefix, cached, stepped_tokens()) < TOLERANCE
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert not loaded.get_layer("embedding").trainable
    assert len(loaded.trainable_weights) == len(model.trainable_weights)
