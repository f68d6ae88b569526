"""Process set-up (seqkeras/runtime.py): freed memory kept for reuse on the torch backend, a lighter Keras import."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from tests.conftest import REPO

# In a process of its own: the setting is for the life of the process, and pytest's should keep glibc's defaults.
PAGE_FAULTS = """
import resource
import numpy as np
from seqkeras.backends.torch.memory import reuse_freed_memory

def page_faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        np.ones(8 << 20).sum()  # 64 MB allocated, written, freed: as a training step's big tensors
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = page_faults()
reuse_freed_memory()
page_faults()  # the heap grows to hold the block once
print(default, page_faults())
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="not glibc: no mallopt")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    result = subprocess.run([sys.executable, "-c", PAGE_FAULTS], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    default, kept = map(int, result.stdout.split())
    # glibc's default maps 64 MB fresh from the OS every time: at least one fault per 2 MB page, 20 × 32.
    assert default >= 500
    assert kept <= default / 20


# In a process of its own: pytest's process has imported Keras already.
KERAS_WITHOUT_EXTRAS = """
import sys
from seqkeras.backends.runtime import select_backend
select_backend(sys.argv[1])
import keras
skipped = [name for name in ("sklearn", "matplotlib") if name in sys.modules]
import matplotlib.figure, sklearn.exceptions  # importable afterwards (plots, seqeval)
layer = keras.layers.Dense(2)
print(skipped, tuple(layer(keras.ops.ones((1, 3))).shape))
"""


@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_keras_starts_without_its_scikit_learn_and_matplotlib_integrations(backend):
    """1.3 s of a 4.3 s start on TensorFlow, in every training process and `--jobs N` worker."""
    pytest.importorskip(backend)
    result = subprocess.run([sys.executable, "-c", KERAS_WITHOUT_EXTRAS, backend], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[-2] == "[] (1, 2)"
