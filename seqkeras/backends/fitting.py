"""What the running backend changes in how a model trains: its data-parallel
strategy, building before TensorFlow traces, batches of their own widths, and the
torch backend's lean loop.

training/trainer.py drives every backend's training the same way and asks this
module where a backend needs its own: `distribution_scope` (TensorFlow's
MirroredStrategy), `build_before_tracing` (TensorFlow's variables created before
its train function is traced), `given_batches` (batches made beforehand, as
Keras's fit takes them here) and `lean_loop` (torch's epoch loop in place of
Keras's fit). Each backend's library or module is imported inside the function,
only on its own backend.
"""

from __future__ import annotations

import contextlib

import keras

from seqkeras.backends.runtime import note_once
from seqkeras.errors import SpecError


@contextlib.contextmanager
def distribution_scope(distribution: str):
    """Build (and so train) the model under a data-parallel strategy when asked.

    Yields the devices used ("" for the default placement). MirroredStrategy is
    TensorFlow's: other backends refuse it with a clear error.
    """
    if distribution == "none":
        yield ""
        return
    if keras.backend.backend() != "tensorflow":
        raise SpecError(f"train.distribution: mirrored needs the tensorflow backend, not {keras.backend.backend()}")
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        print("train.distribution: mirrored — no GPU found, running on the CPU")
    strategy = tf.distribute.MirroredStrategy() if gpus else tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        yield ", ".join(device.name for device in gpus) or "/cpu:0"


def build_before_tracing(model: keras.Model, batch: tuple) -> None:
    """Create the optimizer's and the metrics' variables before fit traces its train step.

    Without a distribution strategy, Keras on TensorFlow leaves them to be created
    while the train function is first traced, and a tf.function that creates
    variables is traced twice: once to create them, once to run. For the small runs
    of a sweep the second trace is a quarter of the run (0.9 s of 3.5 s). Keras's
    `_symbolic_build`, which its fit calls itself under a strategy, creates them
    from the shapes of one batch without touching any value. The other backends
    do not trace twice.
    """
    if keras.backend.backend() != "tensorflow" or not hasattr(model, "_symbolic_build"):
        return
    try:
        model._symbolic_build(data_batch=batch)
    except Exception:  # only a speed-up: fit builds whatever this could not, as before
        pass


class GivenBatches(keras.utils.PyDataset):
    """Batches made beforehand (by length: each of its own width), in order, for Keras's fit."""

    def __init__(self, batches: list[tuple]):
        super().__init__()
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> tuple:
        return self.batches[index]


def given_batches(batches: list[tuple]):
    """Batches made beforehand, each (x, y, weights or None) of its own width, as Keras's fit takes them on this
    backend: a PyDataset; on TensorFlow, a tf.data pipeline whose signature leaves every width open (Keras's
    PyDataset adapter reads a fixed one off the first two batches, and a later batch of another width fails)."""
    batches = [batch if batch[2] is not None else batch[:2] for batch in batches]  # fit reads a None as an input
    if keras.backend.backend() != "tensorflow":
        return GivenBatches(batches)
    import tensorflow as tf

    def open_width(array):
        return tf.TensorSpec((None,) * min(array.ndim, 2) + tuple(array.shape[2:]), tf.as_dtype(array.dtype))

    signature = keras.tree.map_structure(open_width, batches[0])
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=signature)
    return dataset.apply(tf.data.experimental.assert_cardinality(len(batches)))  # fit's epoch: these batches


def lean_loop(model: keras.Model):
    """The torch backend's lean epoch loop for this model (backends/torch/lean_loop.py), or None for Keras's fit.

    Only on torch: Keras's fit is what the other backends run (TensorFlow compiles
    its step into a graph, where the loop's overhead is small). On torch, a model
    the lean loop cannot train exactly as fit would (its own loss, several outputs,
    other metrics...) is trained by Keras's fit, and the note says why, once.
    The loop has `train_epoch(x, y, sample_weight, batch_size)` and
    `evaluate(x, y, sample_weight, batch_size)`, each returning Keras's history values.
    """
    if keras.backend.backend() != "torch":
        return None
    from seqkeras.backends.torch import lean_loop as torch_loop

    reason = torch_loop.unsupported(model)
    if reason is not None:
        note_once(f"training on Keras's fit loop, not the suite's lean torch loop: {reason}")
        return None
    return torch_loop.LeanLoop(model)
