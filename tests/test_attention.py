"""Bahdanau and Luong attention: weights are a distribution over the real source positions."""

from __future__ import annotations

import numpy as np
import pytest
from keras.ops import convert_to_numpy

from seqkeras.layers.attention import BahdanauAttention, LuongAttention
from tests.helpers import assert_config_round_trip

RNG = np.random.default_rng(0)
VALUES = RNG.normal(size=(3, 5, 8)).astype("float32")
QUERY = RNG.normal(size=(3, 8)).astype("float32")
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=bool)

LAYERS = [
    lambda: BahdanauAttention(6),
    lambda: LuongAttention("dot"),
    lambda: LuongAttention("general"),
    lambda: LuongAttention("general", units=8),
]


@pytest.mark.parametrize("make", LAYERS, ids=["bahdanau", "luong_dot", "luong_general", "luong_general_units"])
def test_weights_sum_to_one_over_real_positions_and_padding_gets_none(make):
    layer = make()
    context, weights = layer(QUERY, VALUES, source_mask=MASK)
    weights = convert_to_numpy(weights)
    assert weights.shape == (3, 5) and convert_to_numpy(context).shape == (3, 8)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-6)
    assert np.all(weights[~MASK] == 0.0)
    assert np.all(weights[MASK] > 0.0)
    np.testing.assert_allclose(weights[2, 0], 1.0)  # a one-token source: all weight on it
    # The context is the weighted average of the values.
    np.testing.assert_allclose(convert_to_numpy(context), np.einsum("bs,bsd->bd", weights, VALUES), atol=1e-5)


@pytest.mark.parametrize("make", LAYERS, ids=["bahdanau", "luong_dot", "luong_general", "luong_general_units"])
def test_many_queries_at_once_equal_one_at_a_time_and_precomputed_keys(make):
    layer = make()
    _, single = layer(QUERY, VALUES, source_mask=MASK)
    queries = np.stack([QUERY, QUERY[::-1]], axis=1)  # [B, 2, d]
    _, many = layer(queries, VALUES, source_mask=MASK)
    assert many.shape == (3, 2, 5)
    np.testing.assert_allclose(convert_to_numpy(many)[:, 0], convert_to_numpy(single), atol=1e-6)
    _, with_keys = layer(QUERY, VALUES, keys=layer.keys(VALUES), source_mask=MASK)
    np.testing.assert_allclose(convert_to_numpy(with_keys), convert_to_numpy(single), atol=1e-6)


def test_padding_values_do_not_change_the_result():
    layer = BahdanauAttention(4)
    context, weights = layer(QUERY, VALUES, source_mask=MASK)
    noisy = VALUES.copy()
    noisy[~MASK] = 1e3  # whatever sits at padded positions
    context2, weights2 = layer(QUERY, noisy, source_mask=MASK)
    np.testing.assert_allclose(convert_to_numpy(weights2), convert_to_numpy(weights), atol=1e-6)
    np.testing.assert_allclose(convert_to_numpy(context2), convert_to_numpy(context), atol=1e-5)


@pytest.mark.parametrize("make", LAYERS, ids=["bahdanau", "luong_dot", "luong_general", "luong_general_units"])
def test_get_config_round_trip(make):
    layer = make()
    context, weights = layer(QUERY, VALUES, source_mask=MASK)
    # from_config's copy and, registered, the deserialized one: the same class and config.
    clone, _ = assert_config_round_trip(layer)
    clone(QUERY, VALUES, source_mask=MASK)
    clone.set_weights(layer.get_weights())
    context2, weights2 = clone(QUERY, VALUES, source_mask=MASK)
    np.testing.assert_allclose(convert_to_numpy(weights2), convert_to_numpy(weights), atol=1e-6)


def test_bad_arguments_name_what_was_received():
    with pytest.raises(ValueError, match="score must be 'dot' or 'general', received 'cosine'"):
        LuongAttention("cosine")
    with pytest.raises(ValueError, match="units must be at least 1, received 0"):
        BahdanauAttention(0)
    with pytest.raises(ValueError, match="same width, received 4 and 8"):
        LuongAttention("dot")(QUERY[:, :4], VALUES)
