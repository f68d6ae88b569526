"""runtime.set_random_seed draws what keras.utils.set_random_seed draws, without seeding TensorFlow."""

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
