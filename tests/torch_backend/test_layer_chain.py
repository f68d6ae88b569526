"""LayerChain (seqkeras/backends/torch/layer_chain.py: layer calls without Layer.__call__) versus the model's call.

Outputs, output mask and every weight's gradient, in inference and in training
(the same dropout draws), exactly; and the models it leaves alone.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import torch

from seqkeras.backends.torch import layer_chain as chain_module
from seqkeras.models import nplm, transformer
from seqkeras.models.recurrent import (
    ClassifierParams,
    LanguageModelParams,
    TaggerParams,
    build_classifier,
    build_lm,
    build_tagger,
)
from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, TAGGING
from tests.torch_backend.common import FEATURES, UNITS, scaled_difference, token_data

# Each model and the tensors compared: outputs, every weight's gradient and, where there is one, the output mask.
MODELS = {
    "tagger, 2 bidirectional gru layers with dropout": (17, lambda: build_tagger(TaggerParams(  # 15 gradients
        cell="gru", units=UNITS, layers=2, embedding_dim=FEATURES, bidirectional=True, dropout=0.4),
        token_data(TAGGING))),
    "lm, 2 lstm layers with dropout": (11, lambda: build_lm(LanguageModelParams(
        cell="lstm", units=UNITS, layers=2, embedding_dim=FEATURES, dropout=0.4), token_data(LANGUAGE_MODELING))),
    "classifier, simple_rnn": (7, lambda: build_classifier(ClassifierParams(  # a class per row: no mask
        cell="simple_rnn", units=UNITS, embedding_dim=FEATURES, dropout=0.4), token_data(CLASSIFICATION))),
    "nplm (conv1d, dropout layer)": (6, lambda: nplm.build(nplm.NplmParams(
        order=3, embedding_dim=4, units=6, dropout=0.4), token_data(LANGUAGE_MODELING))),
}


def tokens() -> torch.Tensor:
    # the models' Input is int32: both convert
    return torch.tensor(token_data(LANGUAGE_MODELING).x_train.astype("int64"))


@pytest.mark.parametrize("name", MODELS)
def test_layer_chain_takes_the_model(name):
    _, build = MODELS[name]
    assert chain_module.unsupported(build()) is None


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", MODELS)
def test_layer_chain_gives_the_models_call_exactly(name, training):
    count, build = MODELS[name]
    model = build()
    chain = chain_module.LayerChain(model)
    found = []
    for forward in (model, chain):
        # The same dropout draws: layers without a seed draw from torch's global generator.
        generator = torch.get_rng_state()
        outputs = forward(tokens(), training=training)
        torch.set_rng_state(generator)
        mask = getattr(outputs, "_keras_mask", None)
        loss = -torch.log(outputs).mean()
        gradients = torch.autograd.grad(loss, [w.value for w in model.trainable_weights])
        found.append([outputs.detach().numpy(), *(g.numpy() for g in gradients)]
                     + ([] if mask is None else [mask.numpy().astype("float32")]))
    assert [len(found[0]), len(found[1])] == [count, count]
    assert scaled_difference(*found, floor=1e-12) == 0.0


@pytest.mark.parametrize("name", MODELS)
def test_layer_chain_dropout_changes_the_output(name):
    _, build = MODELS[name]
    chain = chain_module.LayerChain(build())
    assert not torch.equal(chain(tokens(), training=True), chain(tokens(), training=False))


def left_alone():
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(20, 4)(inputs)
    shared = keras.layers.Dense(4, name="shared")
    regularized = keras.layers.Dense(4, activity_regularizer="l2", name="regularized")
    return {
        "transformer": lambda: transformer.build_lm(transformer.TransformerParams(
            layers=1, num_heads=1, embedding_dim=8, intermediate_dim=8), token_data(LANGUAGE_MODELING)),
        "shared layer": lambda: keras.Model(inputs, shared(shared(embedded))),
        "activity regularizer": lambda: keras.Model(inputs, regularized(embedded)),
        "sequential": lambda: keras.Sequential([keras.Input((None,), dtype="int32"), keras.layers.Embedding(20, 4)]),
    }


@pytest.mark.parametrize(("name", "reason"), [
    ("transformer", "layer 'embedding' is a TokenAndPositionEmbedding"),
    ("shared layer", "layer 'shared' is called more than once"),
    ("activity regularizer", "layer 'regularized' has an activity regularizer"),
    ("sequential", "the model is not a plain Functional model"),
])
def test_layer_chain_leaves_the_model_alone_and_says_why(name, reason):
    assert chain_module.unsupported(left_alone()[name]()) == reason
