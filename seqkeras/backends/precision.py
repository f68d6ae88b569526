"""float64 computation on every Keras backend, for the lesson's probes.

The probes that rebuild the lesson's hand-computed numbers (memory,
gradient_flow, unroll) run their layers in float64, so that a number of the
lesson (a gradient norm of 3.5e-13, a state of 1.48e-05 after 100 steps) is not
float32 rounding, and so that every backend gives the committed numbers
(computed on TensorFlow) to float64 rounding. Off TensorFlow two things stand
between a float64 layer and a float64 result; `float64_computation()` lifts
both for the block it guards.

- JAX truncates every float64 array to float32 unless its `jax_enable_x64`
  flag is on. The flag is turned on with JAX's scoped context manager
  `jax.enable_x64(True)`, not `jax.config.update("jax_enable_x64", True)`: a
  worker process runs one experiment after another, and a process-wide switch
  would change what every later run in it computes (JAX's default integer and
  float types become 64-bit, so a training run's arrays and speed would depend
  on whether a probe ran before it). The scoped flag is thread-local and
  restored on exit. Arrays made inside the block lose their float64 when used
  outside it, so the whole probe, from building its layers to reading its
  numbers into NumPy, runs inside.
- Keras's own type promotion (`keras.backend.result_type`, which `ops.matmul`,
  `ops.add`, `ops.multiply` ... apply) turns float64 into float32 on every
  backend but TensorFlow (Keras 3.15.1's `BIT64_TO_BIT32_DTYPE`; an open Keras
  issue, keras-team/keras#23704, with no setting to turn it off). A float64
  SimpleRNN on torch thus computes its matmuls in float32 and returns float64
  tensors holding float32 roundings: 1.4771488e-05 after the lesson's 100
  steps, where float64 gives 1.4771524e-05. Inside the block that table maps
  float64 to itself, as on TensorFlow. The table is the process's, not the
  thread's, but the change only affects an operation that has a float64
  operand already (no other combination of dtypes promotes to float64), and it
  is undone when the last block open in the process closes.

On entry the block checks that Keras then keeps float64 through a matmul and an
add, so that a Keras release that moves its promotion table fails here, loudly,
rather than as numbers that differ in their seventh digit.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

_lock = threading.Lock()
_open_blocks = 0  # float64_computation blocks open in this process, in any thread
_saved_promotion: str | None = None  # what Keras's table mapped float64 to before the first block opened


@contextlib.contextmanager
def float64_computation() -> Iterator[None]:
    """A block in which Keras computes float64 from float64 inputs on the running backend."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        yield  # TensorFlow keeps float64 as asked: the committed results were computed so
        return
    with _keras_keeps_float64(), _jax_x64(backend):
        _check_float64(backend)
        yield


@contextlib.contextmanager
def _keras_keeps_float64() -> Iterator[None]:
    """Keras's promotion table maps float64 to float64 while any block is open in the process."""
    global _open_blocks, _saved_promotion
    from keras.src.backend.common import dtypes

    # A Keras without the table may promote float64 as asked; `_check_float64` says whether it does.
    table = getattr(dtypes, "BIT64_TO_BIT32_DTYPE", None)
    if table is None:
        yield
        return
    with _lock:
        if _open_blocks == 0:
            _saved_promotion = table.get("float64")
            table["float64"] = "float64"
        _open_blocks += 1
    try:
        yield
    finally:
        with _lock:
            _open_blocks -= 1
            if _open_blocks == 0:
                if _saved_promotion is None:  # the table had no float64 entry: leave it without one
                    table.pop("float64", None)
                else:
                    table["float64"] = _saved_promotion


@contextlib.contextmanager
def _jax_x64(backend: str) -> Iterator[None]:
    if backend != "jax":
        yield
        return
    import jax

    with jax.enable_x64(True):
        yield


def _check_float64(backend: str) -> None:
    import keras
    from keras import ops

    one = ops.convert_to_tensor(np.ones((1, 1)), dtype="float64")
    kept = [keras.backend.standardize_dtype(result.dtype) for result in (ops.matmul(one, one), ops.add(one, one))]
    if kept != ["float64", "float64"]:
        raise RuntimeError(
            f"Keras on {backend} computes {kept} from float64 operands even inside float64_computation: "
            "its type promotion has changed (see seqkeras/backends/precision.py)"
        )
