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


BUILD_WITHOUT_TENSORFLOW = """
import sys
from seqkeras.backends.runtime import select_backend, set_random_seed
select_backend("torch")
import keras
set_random_seed(0)
layer = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))  # copies its layer by serializing it
model = keras.Sequential([keras.Input((3, 2)), layer])
clone = keras.models.clone_model(model)  # serializes and deserializes the whole model
assert clone.layers[0].get_config() == layer.get_config()
assert clone.layers[0].backward_layer.go_backwards
print("tensorflow imported:", "tensorflow" in sys.modules)
"""


def test_a_torch_process_builds_and_copies_a_bidirectional_layer_without_importing_tensorflow():
    """Keras's serializer asks whether TensorFlow is available (importing it: 3.2 s) to test for its types;
    runtime answers from what is imported (issue 20)."""
    import os
    import subprocess
    import sys

    environment = {**os.environ, "KERAS_BACKEND": "torch"}
    result = subprocess.run([sys.executable, "-c", BUILD_WITHOUT_TENSORFLOW], env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "tensorflow imported: False"
