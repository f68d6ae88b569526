"""What the torch backend's tests share: layer twins with the same weights, scaled differences, token data.

Imported by the test modules after `pytest.importorskip("torch")`.
"""

from __future__ import annotations

import contextlib
import io

import keras
import numpy as np
import torch

from seqkeras.backends.torch import fused_rnn

TOLERANCE = 1e-5
KERAS = {"simple_rnn": keras.layers.SimpleRNN, "lstm": keras.layers.LSTM, "gru": keras.layers.GRU}
BATCH, STEPS, FEATURES, UNITS = 4, 6, 3, 5
# Right padding, with one full row and one row of padding only.
LENGTHS = [6, 3, 1, 0]


def padded_mask(lengths=LENGTHS) -> torch.Tensor:
    return torch.arange(STEPS)[None, :] < torch.tensor(lengths)[:, None]


def twins(kind: str, wrap=None, **options):
    """Keras's layer and the fused one, built, with the same weights."""
    keras.utils.set_random_seed(0)
    generic = KERAS[kind](UNITS, **options)
    fused = fused_rnn.FUSED[KERAS[kind]](UNITS, **options)
    if wrap:
        generic, fused = wrap(generic), wrap(fused)
    for layer in (generic, fused):
        layer.build((BATCH, STEPS, FEATURES))
    fused.set_weights(generic.get_weights())
    return generic, fused


def outputs_and_gradients(layer, x: np.ndarray, mask, training=False, initial_state=None):
    """Every output (sequence and states) and the gradients of a fixed random projection of them."""
    inputs = torch.tensor(x, requires_grad=True)
    outputs = layer(inputs, mask=mask, training=training, initial_state=initial_state)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    generator = torch.Generator().manual_seed(1)
    loss = sum((out * torch.randn(out.shape, generator=generator)).sum() for out in outputs)
    weights = [w.value for w in layer.trainable_weights]
    gradients = torch.autograd.grad(loss, [inputs, *weights])
    return [t.detach().numpy() for t in (*outputs, *gradients)]


def largest_difference(generic, fused, mask=None, training=False, initial_state=None) -> float:
    x = np.random.default_rng(0).normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    a = outputs_and_gradients(generic, x, mask, training, initial_state)
    b = outputs_and_gradients(fused, x, mask, training, initial_state)
    return scaled_difference(a, b)


def scaled_difference(expected: list[np.ndarray], found: list[np.ndarray], floor: float = 1.0) -> float:
    """The largest |difference| over all tensors, each relative to its own scale when that is above `floor`.

    Gradients sum over batch and time, so a weight's gradient can be ~10 where float32
    rounding differs in the 7th digit: an absolute 1e-5 would test the sum's size.
    """
    assert [t.shape for t in expected] == [t.shape for t in found]
    return max(float(np.max(np.abs(e - f)) / max(floor, float(np.max(np.abs(e))))) for e, f in zip(expected, found))


def said(call) -> tuple[object, str]:
    """What `call()` returns, and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = call()
    return result, printed.getvalue()


def token_data(problem: str, rows: int = 11, classes: int = 20):
    """Right-padded token ids of every length 0..STEPS and their targets (next token, tags or a class)."""
    from seqkeras.tasks.base import (
        CLASSIFICATION,
        LANGUAGE_MODELING,
        SequenceData,
        Vocabulary,
    )

    rng = np.random.default_rng(2)
    tokens = rng.integers(1, 20, size=(rows, STEPS)).astype("int32")
    tokens[np.arange(STEPS)[None, :] >= (np.arange(rows) % (STEPS + 1))[:, None]] = 0
    if problem == LANGUAGE_MODELING:
        targets, labels = np.concatenate([tokens[:, 1:], np.zeros((rows, 1), "int32")], axis=1), None
    elif problem == CLASSIFICATION:
        targets, labels = rng.integers(0, 3, size=rows).astype("int32"), Vocabulary(["a", "b", "c"])
    else:  # tagging: tags 1..3 on real tokens, 0 on padding
        targets, labels = np.where(tokens > 0, tokens % 3 + 1, 0).astype("int32"), Vocabulary(["<pad>", "a", "b", "c"])
    vocabulary = Vocabulary([f"w{i}" for i in range(classes)])
    return SequenceData(problem, tokens, targets, tokens[:2], targets[:2], vocabulary, labels)


def padded_lm_data(seed: int):
    """Right-padded token ids (rows of LENGTHS) as a language-modelling data set, 20 words."""
    from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary

    tokens = np.random.default_rng(seed).integers(1, 20, size=(BATCH, STEPS)).astype("int32")
    tokens[padded_mask().numpy() == 0] = 0
    return tokens, SequenceData(LANGUAGE_MODELING, tokens, tokens, tokens, tokens,
                                Vocabulary([f"w{i}" for i in range(20)]))
