"""runtime.set_random_seed draws what keras.utils.set_random_seed draws, and a torch process never imports
TensorFlow."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import numpy as np
import torch

from seqkeras.backends import runtime


def draws_after(seed_with) -> list[float]:
    seed_with(7)
    return [random.random(), float(np.random.rand()), float(torch.rand(1)),
            float(keras.random.normal(()))]  # Keras's global seed generator, recreated from the seed


def test_seeding_without_tensorflow_draws_what_keras_seeding_draws():
    assert draws_after(keras.utils.set_random_seed) == draws_after(runtime.set_random_seed)


def test_the_seeded_draws_differ_from_each_other():
    assert len(set(draws_after(keras.utils.set_random_seed))) == 4


def test_a_torch_process_builds_and_copies_a_bidirectional_layer_without_importing_tensorflow():
    """Keras's serializer asks whether TensorFlow is available (importing it: 3.2 s) to test for its types;
    runtime answers from what is imported (issue 20)."""
    from tests.torch_backend.fresh_process import BIDIRECTIONAL, fresh_torch_checks

    # In the tier's one fresh torch process (tests/torch_backend/fresh_process.py): a Bidirectional LSTM built
    # after set_random_seed(0), cloned (serialized and deserialized), its copy's config and backward layer checked.
    assert fresh_torch_checks().verdict(BIDIRECTIONAL) == "tensorflow imported: False"
