"""The step models of seqkeras/decoding/cached_step_models.py on PyTorch: the prefix model's log-probabilities.

On torch an `lm`'s recurrent layers are the fused subclasses (seqkeras/backends/torch/fused_rnn.py):
the step model advances their cells one token at a time, the prefix model runs the fused kernel.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras

from seqkeras.backends.torch import fused_rnn
from seqkeras.decoding.cached_step_models import (
    CachedTransformerStepModel,
    RecurrentStepModel,
    cached_step_model,
)
from seqkeras.evaluation.generation import PromptStepModel, log_probabilities
from seqkeras.models import recurrent, transformer
from tests.stepping import VOCABULARY, largest_difference, lm_data, stepped_tokens

TOLERANCE = 1e-4


def test_recurrent_step_model_matches_the_fused_prefix_model():
    keras.utils.set_random_seed(0)
    model = recurrent.build_lm(recurrent.LanguageModelParams(cell="lstm", layers=2, units=6, embedding_dim=5),
                               lm_data())
    assert all(isinstance(layer, fused_rnn.FusedLSTM) for layer in model.layers[2:-1])
    cached = cached_step_model(model, 1, 0, context=[3, 7], scores=log_probabilities)
    assert isinstance(cached, RecurrentStepModel)
    prefix = PromptStepModel(model, [3, 7, 1], VOCABULARY, window=1000)
    # Without padding the prefix runs PyTorch's fused kernel; with padding inside it, Keras's loop.
    assert largest_difference(prefix, cached, stepped_tokens(padding_at=None)) < TOLERANCE
    assert largest_difference(prefix, cached, stepped_tokens()) < TOLERANCE


def test_transformer_step_model_matches_the_prefix_model():
    keras.utils.set_random_seed(0)
    params = transformer.TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=16, layers=2)
    model = transformer.build_lm(params, lm_data())
    cached = cached_step_model(model, 1, 0, context=[3, 0, 7], scores=log_probabilities)
    assert isinstance(cached, CachedTransformerStepModel)
    prefix = PromptStepModel(model, [3, 0, 7, 1], VOCABULARY, window=1000)
    assert largest_difference(prefix, cached, stepped_tokens()) < TOLERANCE
