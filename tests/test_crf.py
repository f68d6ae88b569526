"""Tests of the linear-chain CRF layer and the CRFTagger model (seqkeras.layers.crf)."""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
from keras import ops

from seqkeras.evaluation.tagging import entity_scores, ids_to_tags, invalid_transitions
from seqkeras.layers.crf import CRF, CRFTagger, bio_transition_constraints
from tests.helpers import assert_config_round_trip

BIO_TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _np(x):
    return ops.convert_to_numpy(x)


def _random_crf(num_tags, seed, **kwargs):
    rng = np.random.default_rng(seed)
    crf = CRF(num_tags, **kwargs)
    crf.build((None, None, num_tags))
    crf.set_weights(
        [
            rng.normal(size=(num_tags, num_tags)).astype("float32"),
            rng.normal(size=num_tags).astype("float32"),
            rng.normal(size=num_tags).astype("float32"),
        ]
    )
    return crf


def _brute_force(crf, emissions, mask, allowed=None, allowed_start=None, allowed_end=None):
    """For each sequence, {tag tuple: score} over every tag sequence of its true length.

    Sequences that use a forbidden transition are left out, so with constraints
    the result is the distribution over allowed sequences only.
    """
    transitions, start, end = crf.get_weights()  # transitions, start_scores, end_scores
    k = crf.num_tags
    result = []
    for e, m in zip(emissions, mask):
        length = int(m.sum())
        scores = {}
        for y in itertools.product(range(k), repeat=length):
            if allowed_start is not None and not allowed_start[y[0]]:
                continue
            if allowed_end is not None and not allowed_end[y[-1]]:
                continue
            if allowed is not None and not all(allowed[a, b] for a, b in zip(y, y[1:])):
                continue
            score = start[y[0]] + e[0, y[0]] + end[y[-1]]
            for t in range(1, length):
                score += transitions[y[t - 1], y[t]] + e[t, y[t]]
            scores[y] = float(score)
        result.append(scores)
    return result


# K=3, T=4; the second and third sequences are padded (lengths 2 and 1).
MASK = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=bool)


def _example(seed=0):
    rng = np.random.default_rng(seed)
    emissions = rng.normal(size=(3, 4, 3)).astype("float32")
    tags = rng.integers(0, 3, size=(3, 4))
    tags[~MASK] = 0
    return emissions, tags


def test_log_likelihood_matches_brute_force_enumeration():
    crf = _random_crf(3, seed=1)
    emissions, tags = _example()
    tags[1, 2:] = -1  # labels at padded positions must be ignored, whatever they are
    log_likelihood = _np(crf.log_likelihood(emissions, tags, MASK))
    for b, scores in enumerate(_brute_force(crf, emissions, MASK)):
        gold = tuple(int(t) for t in tags[b, : MASK[b].sum()])
        log_z = np.logaddexp.reduce(list(scores.values()))
        assert log_likelihood[b] == pytest.approx(scores[gold] - log_z, abs=1e-4)
        assert _np(crf.log_partition(emissions, MASK))[b] == pytest.approx(log_z, abs=1e-4)
    # The NLL loss is the batch mean of -log p(y|x).
    nll = float(_np(crf.negative_log_likelihood(emissions, tags, MASK)))
    assert nll == pytest.approx(-log_likelihood.mean(), abs=1e-5)


def test_viterbi_matches_brute_force_argmax_with_padding():
    for seed in range(3):
        crf = _random_crf(3, seed=seed)
        emissions, _ = _example(seed + 10)
        path = _np(crf.viterbi_decode(emissions, MASK))
        assert path.dtype == np.int32 and path.shape == (3, 4)
        for b, scores in enumerate(_brute_force(crf, emissions, MASK)):
            length = MASK[b].sum()
            assert tuple(path[b, :length]) == max(scores, key=scores.get)
            assert (path[b, length:] == 0).all()


def test_constrained_likelihood_and_viterbi_match_enumeration_of_allowed_sequences():
    allowed, allowed_start, allowed_end = bio_transition_constraints(["O", "B-X", "I-X"])
    constraints = dict(allowed=allowed, allowed_start=allowed_start, allowed_end=allowed_end)
    crf = _random_crf(
        3, seed=4, allowed_transitions=allowed, allowed_start=allowed_start, allowed_end=allowed_end
    )
    emissions, _ = _example(5)
    tags = np.array([[1, 2, 2, 0], [0, 1, 0, 0], [1, 0, 0, 0]])  # allowed BIO sequences
    log_likelihood = _np(crf.log_likelihood(emissions, tags, MASK))
    path = _np(crf.viterbi_decode(emissions, MASK))
    for b, scores in enumerate(_brute_force(crf, emissions, MASK, **constraints)):
        length = MASK[b].sum()
        gold = tuple(int(t) for t in tags[b, :length])
        log_z = np.logaddexp.reduce(list(scores.values()))
        assert log_likelihood[b] == pytest.approx(scores[gold] - log_z, abs=1e-4)
        assert tuple(path[b, :length]) == max(scores, key=scores.get)


def test_single_step_and_empty_sequences():
    crf = _random_crf(3, seed=7)
    rng = np.random.default_rng(7)
    emissions = rng.normal(size=(2, 1, 3)).astype("float32")
    mask = np.array([[True], [False]])
    scores = _brute_force(crf, emissions[:1], mask[:1])[0]
    assert tuple(_np(crf.viterbi_decode(emissions, mask))[0]) == max(scores, key=scores.get)
    assert _np(crf.viterbi_decode(emissions, mask))[1, 0] == 0
    log_likelihood = _np(crf.log_likelihood(emissions, np.array([[2], [1]]), mask))
    assert log_likelihood[0] == pytest.approx(scores[(2,)] - np.logaddexp.reduce(list(scores.values())), abs=1e-5)
    assert log_likelihood[1] == 0.0  # an empty sequence contributes nothing


def test_mask_defaults_to_no_padding_and_accepts_ints():
    crf = _random_crf(3, seed=8)
    emissions, tags = _example(8)
    full = np.ones((3, 4), dtype="int32")
    np.testing.assert_allclose(
        _np(crf.log_likelihood(emissions, tags)), _np(crf.log_likelihood(emissions, tags, full)), atol=1e-6
    )
    np.testing.assert_allclose(
        _np(crf.log_likelihood(emissions, tags, MASK.astype("float32"))),
        _np(crf.log_likelihood(emissions, tags, MASK)),
        atol=1e-6,
    )


def test_bio_transition_constraints():
    allowed, allowed_start, allowed_end = bio_transition_constraints(BIO_TAGS)
    index = {tag: i for i, tag in enumerate(BIO_TAGS)}
    assert allowed.shape == (5, 5) and allowed.dtype == bool
    for previous in BIO_TAGS:
        for tag in BIO_TAGS:
            ok = allowed[index[previous], index[tag]]
            if tag == "I-PER":
                assert ok == (previous in ("B-PER", "I-PER")), (previous, tag)
            elif tag == "I-LOC":
                assert ok == (previous in ("B-LOC", "I-LOC")), (previous, tag)
            else:
                assert ok, (previous, tag)
    assert list(allowed_start) == [True, True, False, True, False]
    assert allowed_end.all()
    with pytest.raises(ValueError):
        bio_transition_constraints(["O", "S-PER"])


def test_forbidden_transitions_are_never_predicted():
    allowed, allowed_start, allowed_end = bio_transition_constraints(BIO_TAGS)
    rng = np.random.default_rng(0)
    emissions = rng.normal(size=(4, 6, 5)).astype("float32")
    # Emissions strongly prefer invalid paths: I-PER everywhere (so I-PER starts the
    # sentence), O then I-LOC, and I-LOC after B-PER.
    emissions[0, :, 2] += 50.0
    emissions[1, 0, 0] += 50.0
    emissions[1, 1:, 4] += 50.0
    emissions[2, 0, 1] += 50.0
    emissions[2, 1:, 4] += 50.0
    emissions[3, :, 4] += 50.0
    mask = np.ones((4, 6), dtype=bool)
    mask[3, 3:] = False

    unconstrained = CRF(5)  # zero transition scores: Viterbi = per-position argmax
    raw = ids_to_tags(_np(unconstrained.viterbi_decode(emissions, mask)), mask, BIO_TAGS)
    assert invalid_transitions(raw) >= 4  # the test really tempts the decoder

    crf = CRF(5, allowed, allowed_start, allowed_end)
    path = _np(crf.viterbi_decode(emissions, mask))
    assert invalid_transitions(ids_to_tags(path, mask, BIO_TAGS)) == 0
    # The gold-like invalid sequence is (numerically) impossible under the CRF.
    invalid_tags = np.full((4, 6), 2)
    assert (_np(crf.log_likelihood(emissions, invalid_tags, mask)) < -1000).all()

    # An end constraint is applied at each sequence's true last position.
    no_o_at_end = np.array([False, True, True, True, True])
    end_crf = CRF(5, allowed_end=no_o_at_end)
    emissions_o = np.zeros((2, 4, 5), dtype="float32")
    emissions_o[:, :, 0] = 20.0
    end_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=bool)
    end_path = _np(end_crf.viterbi_decode(emissions_o, end_mask))
    assert end_path[0, 3] != 0 and end_path[1, 1] != 0
    assert list(end_path[0, :3]) == [0, 0, 0] and end_path[1, 0] == 0


@pytest.mark.tensorflow  # graph mode with a dynamic length is TensorFlow's (tf.function)
def test_graph_mode_with_dynamic_length_matches_eager():
    import tensorflow as tf

    crf = _random_crf(3, seed=9)
    emissions, tags = _example(9)
    spec = [
        tf.TensorSpec([None, None, 3], tf.float32),
        tf.TensorSpec([None, None], tf.int32),
        tf.TensorSpec([None, None], tf.bool),
    ]

    @tf.function(input_signature=spec)
    def both(e, y, m):
        return crf.log_likelihood(e, y, m), crf.viterbi_decode(e, m)

    log_likelihood, path = both(emissions, tags.astype("int32"), MASK)
    np.testing.assert_allclose(log_likelihood.numpy(), _np(crf.log_likelihood(emissions, tags, MASK)), atol=1e-5)
    np.testing.assert_array_equal(path.numpy(), _np(crf.viterbi_decode(emissions, MASK)))
    # The same traced function on a different length.
    _, short = both(emissions[:, :2], tags[:, :2].astype("int32"), MASK[:, :2])
    np.testing.assert_array_equal(short.numpy(), _np(crf.viterbi_decode(emissions[:, :2], MASK[:, :2])))


def test_call_is_identity_with_mask_propagation():
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(10, 4, mask_zero=True)(inputs)
    emissions = keras.layers.Dense(3)(embedded)
    crf = CRF(3)
    model = keras.Model(inputs, [emissions, crf(emissions)])
    x = np.array([[1, 2, 0], [3, 0, 0]])
    before, after = model.predict(x, verbose=0)
    np.testing.assert_array_equal(before, after)
    mask = crf.compute_mask(None, ops.convert_to_tensor(x > 0))
    np.testing.assert_array_equal(_np(mask), x > 0)
    with pytest.raises(ValueError):
        CRF(4)(emissions)  # wrong number of tags


def test_config_round_trip_gives_the_same_outputs():
    allowed, allowed_start, allowed_end = bio_transition_constraints(BIO_TAGS)
    crf = CRF(
        5,
        allowed_transitions=allowed,
        allowed_start=allowed_start,
        allowed_end=allowed_end,
        transitions_initializer=keras.initializers.RandomNormal(stddev=1.0, seed=3),
        name="my_crf",
    )
    crf.build((None, None, 5))
    clone, restored = assert_config_round_trip(crf)  # the config is plain JSON
    assert clone.name == "my_crf" and clone.num_tags == 5
    np.testing.assert_array_equal(clone.allowed_transitions, allowed)
    clone.build((None, None, 5))
    clone.set_weights(crf.get_weights())

    rng = np.random.default_rng(1)
    emissions = rng.normal(size=(2, 6, 5)).astype("float32")
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2], dtype=bool)
    tags = np.array([[0, 1, 2, 0, 3, 4], [3, 4, 0, 1, 0, 0]])
    for layer in (clone, restored):
        if not layer.built:
            layer.build((None, None, 5))
            layer.set_weights(crf.get_weights())
        np.testing.assert_allclose(
            _np(layer.log_likelihood(emissions, tags, mask)), _np(crf.log_likelihood(emissions, tags, mask)), atol=1e-6
        )
        np.testing.assert_array_equal(
            _np(layer.viterbi_decode(emissions, mask)), _np(crf.viterbi_decode(emissions, mask))
        )


# ---------------------------------------------------------------------------
# CRFTagger on a toy BIO problem


def _toy_bio_data(n, max_len=10, seed=0):
    """Token ids (0 = padding) and BIO tag ids. Words 1-10 are person names, 11-20
    places, 21-40 other words. Whether a name word is B- or I- depends on the
    previous word, which is what the CRF's transitions capture."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, max_len), dtype="int32")
    y = np.zeros((n, max_len), dtype="int32")
    for i in range(n):
        length = int(rng.integers(3, max_len + 1))
        t, after_entity = 0, False
        while t < length:
            if not after_entity and rng.random() < 0.4:
                kind = int(rng.integers(2))  # 0: PER, 1: LOC
                for j in range(min(int(rng.integers(1, 4)), length - t)):
                    x[i, t] = 1 + 10 * kind + rng.integers(10)
                    y[i, t] = 1 + 2 * kind + (j > 0)
                    t += 1
                after_entity = True
            else:
                x[i, t] = 21 + rng.integers(20)
                t += 1
                after_entity = False
    return x, y


def _build_tagger():
    inputs = keras.Input((None,), dtype="int32")
    hidden = keras.layers.Embedding(41, 16, mask_zero=True)(inputs)
    hidden = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(hidden)
    emissions = keras.layers.Dense(len(BIO_TAGS))(hidden)
    encoder = keras.Model(inputs, emissions, name="encoder")
    crf = CRF(len(BIO_TAGS), *bio_transition_constraints(BIO_TAGS), name="crf")
    return CRFTagger(encoder, crf, name="tagger")


@pytest.fixture(scope="module")
def trained():
    keras.utils.set_random_seed(0)
    x, y = _toy_bio_data(300)
    model = _build_tagger()
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    history = model.fit(x, y, epochs=4, batch_size=32, verbose=0)
    return model, x, y, history.history["loss"]


@pytest.mark.slow
def test_tagger_training_lowers_the_nll_and_predicts_viterbi_tags(trained):
    model, x, y, losses = trained
    assert losses[-1] < 0.3 * losses[0], losses
    pred = model.predict(x[:100], verbose=0)
    assert pred.shape == (100, 10) and pred.dtype == np.int32
    mask = x[:100] > 0
    assert (pred[~mask] == 0).all()  # padding filled with 0
    true_tags = ids_to_tags(y[:100], mask, BIO_TAGS)
    pred_tags = ids_to_tags(pred, mask, BIO_TAGS)
    assert entity_scores(true_tags, pred_tags)["entity_f1"] > 0.9
    assert invalid_transitions(pred_tags) == 0


@pytest.mark.slow
def test_tagger_loss_uses_the_encoder_mask(trained):
    model, x, y, _ = trained
    x, y = x[:64], y[:64]
    emissions = model(x)
    masked = -np.mean(_np(model.crf.log_likelihood(emissions, y, x > 0)))
    unmasked = -np.mean(_np(model.crf.log_likelihood(emissions, y, np.ones_like(x, dtype=bool))))
    evaluated = model.evaluate(x, y, batch_size=64, verbose=0)  # graph mode (tf.function)
    assert evaluated == pytest.approx(masked, rel=1e-4, abs=1e-5)
    assert abs(masked - unmasked) > 1e-3
    # sample_weight weighs whole sequences; the loss is still divided by the batch size.
    weights = np.array([1.0] * 32 + [0.0] * 32, dtype="float32")
    nll = -_np(model.crf.log_likelihood(emissions, y, x > 0))
    weighted = model.evaluate(x, y, sample_weight=weights, batch_size=64, verbose=0)
    assert weighted == pytest.approx(nll[:32].sum() / 64, rel=1e-4, abs=1e-5)
    # predict (graph mode) equals eager Viterbi on the same emissions.
    np.testing.assert_array_equal(model.predict(x, verbose=0), _np(model.crf.viterbi_decode(emissions)))


@pytest.mark.slow
def test_tagger_saves_and_loads(trained, tmp_path):
    model, x, y, _ = trained
    path = tmp_path / "tagger.keras"
    keras.saving.save_model(model, path)
    loaded = keras.saving.load_model(path)  # safe_mode=True by default
    assert isinstance(loaded, CRFTagger) and isinstance(loaded.crf, CRF)
    np.testing.assert_array_equal(loaded.crf.allowed_transitions, model.crf.allowed_transitions)
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(loaded.predict(x[:50], verbose=0), model.predict(x[:50], verbose=0))
    assert loaded.evaluate(x[:64], y[:64], verbose=0) == pytest.approx(
        model.evaluate(x[:64], y[:64], verbose=0), rel=1e-4, abs=1e-5
    )


@pytest.mark.slow
def test_tagger_rejects_a_compiled_loss():
    model = _build_tagger()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = _toy_bio_data(8)
    with pytest.raises(ValueError, match="without a `loss`"):
        model.fit(x, y, epochs=1, verbose=0)
