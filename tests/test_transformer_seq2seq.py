"""The Transformer encoder-decoder (`transformer_seq2seq`): its cached decoding step gives what its teacher-forced
call gives, its attention maps are keras-hub's own cross-attention, and its parameters are checked as a spec's.

The kind's whole life (trained, evaluated with every decoder, kept, loaded, predicted) is the model-kind case
`transformer_seq2seq` of tests/model_kind_specs.py, run on every backend.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import seq2seq_synthetic

PARAMS = {"embedding_dim": 8, "num_heads": 2, "intermediate_dim": 16, "layers": 2}


def tiny_data():
    return seq2seq_synthetic.build_reverse(
        seq2seq_synthetic.SymbolParams(n_train=24, n_test=8, min_length=2, max_length=6, symbols=5), seed=0)


def tiny_model(data, **params):
    from seqkeras.models.seq2seq_params import TransformerSeq2SeqParams
    from seqkeras.models.transformer_seq2seq import build

    return build(TransformerSeq2SeqParams(**{**PARAMS, **params}), data)


@pytest.mark.parametrize("params", [{}, {"positions": "sine", "normalize_first": True}],
                         ids=["learned-post-ln", "sine-pre-ln"])
def test_each_cached_step_gives_the_teacher_forced_log_probabilities_with_beams_reordered(params):
    data = tiny_data()
    model = tiny_model(data, **params)
    source = data.x_test["source"][:5]
    decoder_input = data.x_test["decoder_input"][:5]
    forced = ops.convert_to_numpy(ops.log_softmax(model.teacher_forced(source, decoder_input), axis=-1))

    step_model = model.step_model(source, data.start_id, data.end_id)
    state = step_model.start(len(source))
    order = np.arange(len(source))
    for position in range(decoder_input.shape[1]):
        log_probs, state = step_model.step(decoder_input[order, position], state)
        real = decoder_input[order, position] != 0  # after a row's end its padding is read, not compared
        np.testing.assert_allclose(log_probs[real], forced[order, position][real], atol=1e-5)
        # Beams are reordered between steps: each row's caches go with it.
        shuffled = np.random.default_rng(position).permutation(len(source))
        state, order = step_model.select(state, shuffled), order[shuffled]


@pytest.mark.parametrize("decoder", [{"name": "greedy"}, {"name": "beam", "width": 3, "length_penalty": 0.6}],
                         ids=["greedy", "beam"])
def test_decoding_sources_together_gives_what_each_gives_alone(decoder):
    from seqkeras.decoding import StepModel, score_sequences
    from seqkeras.decoding.decoders import build_decoder

    data = tiny_data()
    model = tiny_model(data)
    decoder = build_decoder(decoder["name"], {k: v for k, v in decoder.items() if k != "name"})
    sources = data.x_test["source"][:5]
    step_model = model.step_model(sources, data.start_id, data.end_id)
    assert isinstance(step_model, StepModel)  # the protocol every decoder drives
    together = decoder.decode(step_model, len(sources), max_length=7)
    for row, source in enumerate(sources):
        alone = decoder.decode(model.step_model(source[None], data.start_id, data.end_id), 1, max_length=7)
        assert together.tokens[row] == alone.tokens[0]
        assert together.log_probs[row] == pytest.approx(alone.log_probs[0], abs=1e-4)
    # Scoring the outputs step by step gives back the log-probabilities the decoder reported.
    rescored = score_sequences(model.step_model(sources, data.start_id, data.end_id), together.tokens)
    np.testing.assert_allclose(rescored, together.log_probs, atol=1e-4)


def test_a_step_past_the_position_table_is_refused():
    data = tiny_data()
    model = tiny_model(data, max_output_length=3)
    step_model = model.step_model(data.x_test["source"][:2], data.start_id, data.end_id)
    state = step_model.start(2)
    tokens = np.full(2, data.start_id, dtype="int32")
    for _ in range(model.config["target_positions"]):
        _, state = step_model.step(tokens, state)
    with pytest.raises(ValueError, match="writes at most"):
        step_model.step(tokens, state)


def test_the_attention_map_is_the_last_blocks_cross_attention_as_keras_hub_computes_it():
    from keras_hub.src.layers.modeling.transformer_layer_utils import merge_padding_and_attention_mask

    data = tiny_data()
    model = tiny_model(data)
    source, decoder_input = data.x_test["source"][:4], data.x_test["decoder_input"][:4]
    weights = model.attention_weights(source, decoder_input)
    assert weights.shape == (*decoder_input.shape, source.shape[1])
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)  # each output position's weights
    assert np.all(weights[np.broadcast_to(source[:, None, :] == 0, weights.shape)] < 1e-6)  # no weight on padding

    # The query keras-hub's own block hands its cross-attention, recorded during the model's call, gives the
    # same scores: the map reproduces the block's computation.
    last = model.decoder_blocks[-1]
    attention = last._cross_attention_layer
    seen = {}
    call = attention.call

    def recording(query, value, *args, **kwargs):
        seen["query"] = query
        return call(query, value, *args, **kwargs)

    attention.call = recording
    try:
        model({"source": source, "decoder_input": decoder_input})
    finally:
        del attention.call
    memory = model.encode_memory(source)
    _, scores = attention(query=seen["query"], value=memory["memory"], return_attention_scores=True,
                          attention_mask=merge_padding_and_attention_mask(memory["memory"], memory["mask"], None))
    np.testing.assert_allclose(weights, ops.convert_to_numpy(ops.mean(scores, axis=1)), atol=1e-6)


def test_a_kept_model_reads_back_with_its_configuration_and_weights(tmp_path):
    import keras

    import seqkeras  # noqa: F401  (registers the suite's classes, as for any kept model)

    data = tiny_data()
    model = tiny_model(data, positions="sine")
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    batch = {name: array[:3] for name, array in data.x_test.items()}
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(batch)), ops.convert_to_numpy(model(batch)), atol=1e-6)
    assert loaded.get_config()["positions"] == "sine"


@pytest.mark.parametrize(("model", "words"), [
    ({"embedding_dim": 10, "num_heads": 3}, "embedding_dim 10 must be divisible by num_heads 3"),
    ({"positions": "rotary"}, "model.positions"),
    ({"cell": "lstm"}, "model.cell"),
    ({"max_output_length": 0}, "model.max_output_length"),
    ({"num_head": 4}, "Did you mean 'num_heads'?"),
])
def test_bad_parameters_are_one_line_naming_the_key(model, words):
    raw = {"version": 1, "name": "t", "task": {"name": "reverse"}, "model": {"kind": "transformer_seq2seq", **model},
           "evaluate": {"metrics": ["bleu"]}}
    with pytest.raises(SpecError) as caught:
        build_experiment(raw, source="<dict>", overrides=[])
    assert words in str(caught.value) and "\n" not in str(caught.value)
