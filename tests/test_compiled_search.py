"""Greedy and beam search as one compiled loop (`decoding.compiled_search`) give the outputs of the decoders that
drive a step model from Python (`GreedyDecoder`, `BeamDecoder` with all_hypotheses=False): the same tokens, the
same log-probabilities to 1e-5, on each attention kind of the recurrent encoder-decoder and on the Transformer's.

And a language model's continuation of a prompt (generation), recurrent or Transformer, likewise. Here on torch;
tests/jax_backend/test_compiled_search_jax.py runs the same cases on JAX, and the cases marked `tensorflow` below
on TensorFlow.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from seqkeras.decoding import compiled_search
from seqkeras.decoding.decoders import BeamChoice, GreedyChoice, SampleChoice, build_decoder
from seqkeras.tasks import seq2seq_synthetic as synthetic

RECURRENT = {
    "none-lstm": {"attention": "none", "cell": "lstm"},
    "bahdanau-gru-bidirectional": {"attention": "bahdanau", "cell": "gru", "bidirectional": True},
    "luong-dot-lstm-2-layers": {"attention": "luong", "luong_score": "dot", "cell": "lstm", "layers": 2},
    "encoder-vector": {"attention": "none", "cell": "lstm", "decoder_reads": "encoder_vector"},
}
TRANSFORMER = {"embedding_dim": 8, "num_heads": 2, "intermediate_dim": 16, "layers": 2}
CHOICES = {
    "greedy": GreedyChoice(),
    "beam-1": BeamChoice(width=1),
    "beam-3": BeamChoice(width=3),
    "beam-4-penalty": BeamChoice(width=4, length_penalty=0.6),
    "beam-6-penalty-1": BeamChoice(width=6, length_penalty=1.0),
    "beam-16-wider-than-the-vocabulary": BeamChoice(width=16, length_penalty=0.6),  # 10 target tokens
}
MAX_LENGTH = 9


def task_data():
    return synthetic.build_reverse(
        synthetic.SymbolParams(n_train=16, n_test=40, min_length=2, max_length=7, symbols=6), seed=0)


def model_of(kind: str, data, sharpness: float = 4.0):
    """A small untrained model whose next-token distributions are as peaked as a trained one's: its output layer's
    weights multiplied by `sharpness`."""
    import keras

    keras.utils.set_random_seed(0)
    if kind == "transformer":
        from seqkeras.models.seq2seq_params import TransformerSeq2SeqParams
        from seqkeras.models.transformer_seq2seq import build

        model = build(TransformerSeq2SeqParams(**TRANSFORMER), data)
    else:
        from seqkeras.models.seq2seq import Seq2SeqParams, build

        model = build(Seq2SeqParams(units=8, embedding_dim=6, **RECURRENT[kind]), data)
    kernel = model.output_layer.kernel
    kernel.assign(ops.convert_to_numpy(kernel) * sharpness)
    return model


def decoded_both_ways(model, data, choice, sources=None, max_length=MAX_LENGTH):
    sources = data.x_test["source"] if sources is None else sources
    expected = build_decoder(choice.name, choice).decode(
        model.step_model(sources, data.start_id, data.end_id), len(sources), max_length, all_hypotheses=False)
    tokens, log_probs, lengths = compiled_search.search(model, sources, choice, data.start_id, data.end_id,
                                                        max_length)
    return expected, tokens, log_probs, lengths


def check_the_same_outputs(kind: str, choice_name: str, max_length: int = MAX_LENGTH) -> list[list[int]]:
    data = task_data()
    model = model_of(kind, data)
    expected, tokens, log_probs, lengths = decoded_both_ways(model, data, CHOICES[choice_name],
                                                             max_length=max_length)
    assert tokens == expected.tokens
    np.testing.assert_allclose(log_probs, expected.log_probs, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(lengths, expected.lengths)
    return tokens


@pytest.mark.parametrize("choice_name", CHOICES)
@pytest.mark.parametrize("kind", [*RECURRENT, "transformer"])
def test_the_compiled_search_gives_the_decoders_outputs(kind, choice_name):
    check_the_same_outputs(kind, choice_name)


@pytest.mark.parametrize("choice_name", ["greedy", "beam-4-penalty"])
def test_outputs_cut_at_max_length_are_the_decoders_too(choice_name):
    """At the last step every kept hypothesis competes, finished or not."""
    tokens = check_the_same_outputs("bahdanau-gru-bidirectional", choice_name, max_length=2)
    assert any(output[-1:] != [task_data().end_id] for output in tokens)  # some were cut


@pytest.mark.tensorflow
@pytest.mark.parametrize("choice_name", ["greedy", "beam-4-penalty"])
@pytest.mark.parametrize("kind", ["bahdanau-gru-bidirectional", "transformer"])
def test_the_compiled_search_gives_the_decoders_outputs_on_tensorflow(kind, choice_name):
    check_the_same_outputs(kind, choice_name)


def test_sources_decode_alike_alone_and_together():
    """Each source's output depends on it alone: the beams of one input never see another's."""
    data = task_data()
    model = model_of("luong-dot-lstm-2-layers", data)
    sources = data.x_test["source"][:6]
    together, _, _ = compiled_search.search(model, sources, CHOICES["beam-3"], data.start_id, data.end_id, 7)
    for row in range(len(sources)):
        alone, _, _ = compiled_search.search(model, sources[row : row + 1], CHOICES["beam-3"], data.start_id,
                                             data.end_id, 7)
        assert alone[0] == together[row]


def test_evaluation_decodes_through_the_compiled_search_on_jax_and_tensorflow(monkeypatch):
    import keras

    from seqkeras.decoding import decoders
    from seqkeras.evaluation.seq2seq import decode_sources

    data = task_data()
    model = model_of("none-lstm", data)
    sources = data.x_test["source"]
    expected = decode_sources(model, sources, data.start_id, data.end_id, CHOICES["beam-3"], MAX_LENGTH)
    compiled = keras.backend.backend() in compiled_search.COMPILED_ON
    assert compiled_search.searches_compiled(CHOICES["greedy"], len(sources), MAX_LENGTH) == compiled
    if compiled:
        monkeypatch.setattr(decoders.BeamDecoder, "decode", lambda *args, **kwargs: pytest.fail("not compiled"))
    else:
        monkeypatch.setattr(compiled_search, "search", lambda *args, **kwargs: pytest.fail("compiled on torch"))
    outputs = decode_sources(model, sources, data.start_id, data.end_id, CHOICES["beam-3"], MAX_LENGTH)
    assert outputs[0] == expected[0]
    # What the loop cannot do goes through the decoders: sampling, beams wider than MAX_COMPILED_WIDTH, searches
    # whose history would outgrow MAX_HISTORY (a max_output_length of millions).
    assert not compiled_search.searches_compiled(SampleChoice(), len(sources), MAX_LENGTH)
    wide = BeamChoice(width=compiled_search.MAX_COMPILED_WIDTH + 1)
    assert not compiled_search.searches_compiled(wide, len(sources), MAX_LENGTH)
    longest = compiled_search.MAX_HISTORY // (3 * 256)
    assert compiled_search.searches_compiled(CHOICES["beam-3"], 256, longest) == compiled
    assert not compiled_search.searches_compiled(CHOICES["beam-3"], 256, longest + 1)


@pytest.mark.tensorflow
def test_evaluation_decodes_through_the_compiled_search_on_tensorflow(monkeypatch):
    test_evaluation_decodes_through_the_compiled_search_on_jax_and_tensorflow(monkeypatch)


def test_a_search_writes_at_least_one_token():
    data = task_data()
    with pytest.raises(ValueError, match="max_length must be at least 1"):
        compiled_search.search(model_of("none-lstm", data), data.x_test["source"], CHOICES["greedy"], data.start_id,
                               data.end_id, 0)


def test_a_transformer_refuses_more_steps_than_its_caches_hold():
    from seqkeras.models.seq2seq_params import TransformerSeq2SeqParams
    from seqkeras.models.transformer_seq2seq import build

    data = task_data()
    model = build(TransformerSeq2SeqParams(**TRANSFORMER, max_output_length=3), data)
    capacity = int(model.config["target_positions"])
    sources = data.x_test["source"][:2]
    tokens, _, _ = compiled_search.search(model, sources, CHOICES["greedy"], data.start_id, data.end_id, capacity)
    assert max(len(output) for output in tokens) <= capacity
    with pytest.raises(ValueError, match="writes at most"):
        compiled_search.search(model, sources, CHOICES["greedy"], data.start_id, data.end_id, capacity + 1)


def test_a_beam_that_finishes_nothing_returns_nothing_as_the_decoder_does():
    """A model whose every log-probability is impossible (NaN) keeps no hypothesis: an empty output with
    log-probability -inf, as BeamDecoder returns."""
    data = task_data()
    model = model_of("none-lstm", data)
    model.blocked_logits = np.full_like(model.blocked_logits, np.nan)
    expected, tokens, log_probs, lengths = decoded_both_ways(model, data, CHOICES["beam-3"], max_length=4)
    assert tokens == expected.tokens == [[] for _ in tokens]
    assert np.all(np.isneginf(log_probs)) and np.all(np.isneginf(expected.log_probs))
    assert np.all(lengths == 0)


def language_model(kind: str):
    """A small untrained LM of `kind` (a recurrent cell, or the Transformer with a position table of 24), its output
    layer's weights multiplied by 4: as peaked as a trained model's."""
    import keras

    from seqkeras.models import recurrent, transformer
    from tests.stepping import lm_data

    keras.utils.set_random_seed(0)
    if kind == "transformer":
        model = transformer.build_lm(transformer.TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=16,
                                                                   layers=2), lm_data(24))
    else:
        model = recurrent.build_lm(recurrent.LanguageModelParams(cell=kind, layers=2, units=6, embedding_dim=5),
                                   lm_data())
    kernel = model.layers[-1].kernel
    kernel.assign(ops.convert_to_numpy(kernel) * 4)
    return model


@pytest.mark.parametrize("choice_name", ["greedy", "beam-3", "beam-4-penalty"])
@pytest.mark.parametrize("kind", ["lstm", "gru", "transformer"])
def test_a_language_model_continues_a_prompt_as_the_decoders_do(kind, choice_name):
    """Generation's continuation of a prompt (its context fed first, its last token the start), 12 tokens, no end
    token: the compiled loop's tokens and log-probability are the decoder's on the kind's step model."""
    from seqkeras.decoding.cached_step_models import cached_step_model
    from seqkeras.evaluation.generation import NEVER, log_probabilities

    choice = CHOICES[choice_name]
    step_model = cached_step_model(language_model(kind), 7, 0, context=[3, 5, 2, 9], scores=log_probabilities)
    assert compiled_search.continues_compiled(step_model, choice, 12) == (
        __import__("keras").backend.backend() in compiled_search.COMPILED_ON)
    expected = build_decoder(choice.name, choice).decode(step_model, 1, 12)
    tokens, log_prob = compiled_search.continue_prompt(step_model, choice, 12, NEVER)
    assert tokens == expected.tokens[0] and len(tokens) == 12
    assert log_prob == pytest.approx(expected.log_probs[0], abs=1e-5)


def test_a_transformer_language_model_past_its_window_keeps_its_step_model():
    """Past its window the step model reruns the model on the last `window` tokens: not the loop's computation."""
    from seqkeras.decoding.cached_step_models import cached_step_model

    model = language_model("transformer")
    short = cached_step_model(model, 7, 0, context=[3, 5, 2, 9], window=16)
    assert not compiled_search.continues_compiled(short, CHOICES["greedy"], 13)
    assert compiled_search.continues_compiled(short, CHOICES["greedy"], 12) == (
        __import__("keras").backend.backend() in compiled_search.COMPILED_ON)
    # Without a window or a position table (sine positions), the caches' length is unbounded: the step model stays.
    short.max_length = None
    assert not compiled_search.continues_compiled(short, CHOICES["greedy"], 12)


@pytest.mark.tensorflow
@pytest.mark.parametrize("kind", ["lstm", "transformer"])
def test_a_language_model_continues_a_prompt_as_the_decoders_do_on_tensorflow(kind):
    test_a_language_model_continues_a_prompt_as_the_decoders_do(kind, "beam-4-penalty")


def test_a_new_decoder_is_one_class_and_one_line_and_decodes_every_encoder_decoder(monkeypatch):
    """contributing.md's recipe: a `Decoder` subclass with its params, name and summary, and its line in DECODERS.
    This one takes the most probable token as greedy does, but through keras-hub's TopKSampler(k=1), and has no
    compiled search: evaluation drives the model's step model with it, and its outputs are greedy's."""
    import keras_hub

    from seqkeras.decoding import decoders
    from seqkeras.decoding.decoders import Decoder, GreedyParams
    from seqkeras.evaluation.seq2seq import decode_sources

    class ModeDecoder(Decoder):
        params_class = GreedyParams
        name = "mode"
        summary = "The most probable token at each step, by a top-1 sampler."

        def make_sampler(self, vocab_size: int):
            return keras_hub.samplers.TopKSampler(k=1)

    monkeypatch.setitem(decoders.DECODERS, ModeDecoder.name, ModeDecoder)
    choice = GreedyChoice().model_copy(update={"name": "mode"})
    assert not compiled_search.searches_compiled(choice, 4, MAX_LENGTH)  # no compiled search: the step model
    data = task_data()
    for kind in ("none-lstm", "transformer"):
        model = model_of(kind, data)
        sources = data.x_test["source"]
        greedy = decode_sources(model, sources, data.start_id, data.end_id, CHOICES["greedy"], MAX_LENGTH)
        mode = decode_sources(model, sources, data.start_id, data.end_id, choice, MAX_LENGTH)
        assert mode[0] == greedy[0]
        np.testing.assert_allclose(mode[1], greedy[1], rtol=1e-5)
