"""TensorBoard event files of a run (`train: {tensorboard: true}` or `seqkeras run --tensorboard`), on every backend.

Keras's TensorBoard callback writes through `tf.summary`, so only on TensorFlow,
and only from Keras's fit. The suite writes the events itself with TensorBoard's
own pure-Python writer (the `tensorboard` package, which needs no TensorFlow),
from the suite's epoch loop, so the lean torch loop's epochs are logged as Keras's
fit's are:

- each epoch's history values (`loss`, `accuracy`, `val_loss`, …) at step = epoch;
- the test metrics (`test/<metric>`, one row's: `test/<decoder …>/<metric>`) at the last epoch;
- the lesson's diagnostics where the run measured them: the gradient-flow curve as
  `gradient_flow/at_init` and `gradient_flow/trained` at step = steps back.

The files go into the run's folder, `<run>/tensorboard/`:
`tensorboard --logdir results/<name>` shows every run of the experiment side by side.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
import types
from pathlib import Path

FOLDER = "tensorboard"


class EventWriter:
    """Scalars into one event file under `folder` (created on first use)."""

    def __init__(self, folder: Path):
        if "tensorflow" not in sys.modules:
            # TensorBoard's own switch to its TensorFlow stub (its file I/O): without it, the writer imports
            # TensorFlow whenever it is installed, 3 s and its log lines in a torch worker that never uses it.
            sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        folder.mkdir(parents=True, exist_ok=True)
        self._writer = EventFileWriter(str(folder))

    def scalars(self, step: int, values: dict[str, float], prefix: str = "") -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        numbers = [Summary.Value(tag=f"{prefix}{name}", simple_value=float(value)) for name, value in values.items()
                   if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)]
        if numbers:
            self._writer.add_event(Event(wall_time=time.time(), step=int(step), summary=Summary(value=numbers)))

    def close(self) -> None:
        self._writer.close()


@contextlib.contextmanager
def events(run_folder: Path, wanted: bool):
    """The run's one event file (`<run>/tensorboard/`) while the block runs, closed after it; None unless wanted."""
    if not wanted:
        yield None
        return
    writer = EventWriter(run_folder / FOLDER)
    try:
        yield writer
    finally:
        writer.close()


def write_results(writer: EventWriter, last_epoch: int, rows, curve=None) -> None:
    """The test metrics of each evaluation row, and the gradient-flow curve, into the run's event file."""
    for row in rows:
        label = "/".join(f"{key}={value}" for key, value in row.keys.items()) if row.keys else ""
        writer.scalars(last_epoch, row.metrics, prefix=f"test/{label}/" if label else "test/")
    if curve is not None:
        for record in curve.to_dict("records"):
            writer.scalars(int(record["steps_back"]), {k: v for k, v in record.items() if k != "steps_back"},
                           prefix="gradient_flow/")
