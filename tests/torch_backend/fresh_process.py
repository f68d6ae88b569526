"""One fresh torch process for the torch tier's checks that TensorFlow stays out of a torch process.

A check that nothing imports TensorFlow needs a process of its own (a test of the pytest process may have imported
it), and each fresh process imports torch and Keras: seconds of CPU. The checks of test_probes_torch.py,
test_seeding.py and test_tensorboard_torch.py share one, run once per session (`fresh_torch_checks`), each step
followed by a line saying whether TensorFlow is imported yet. TensorFlow once imported stays imported, so a step
whose line says False imported nothing of it, and neither did any step before it.

The steps, in order:

1. every probe once at a tiny size (tests/probe_checks.py's EVERY_PROBE_WITHOUT_TENSORFLOW, unchanged: it selects
   the backend as a torch worker does, and its last line is its verdict);
2. a Bidirectional layer built and copied (Keras serializes it: its serializer asks about TensorFlow);
3. TensorBoard event files written with the suite's writer into a folder of the session;
4. a text task's data built (the Rotten Tomatoes sentences: words, vocabulary and ids, as TextVectorization makes
   them, in plain Python).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.probe_checks import EVERY_PROBE_WITHOUT_TENSORFLOW

BIDIRECTIONAL, EVENT_FILES, SENTENCES = "bidirectional layer:", "event files:", "sentences:"
STEPS = (BIDIRECTIONAL, EVENT_FILES, SENTENCES)

AFTER_THE_PROBES = f"""
from pathlib import Path

import keras

set_random_seed(0)
layer = keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True))  # copies its layer by serializing it
model = keras.Sequential([keras.Input((3, 2)), layer])
clone = keras.models.clone_model(model)  # serializes and deserializes the whole model
assert clone.layers[0].get_config() == layer.get_config()
assert clone.layers[0].backward_layer.go_backwards
print({BIDIRECTIONAL!r}, "tensorflow imported:", "tensorflow" in sys.modules)

from seqkeras.tracking.tensorboard import EventWriter
writer = EventWriter(Path(sys.argv[2]))
writer.scalars(1, {{"loss": 0.5}})
writer.close()
print({EVENT_FILES!r}, "tensorflow imported:", "tensorflow" in sys.modules)

from seqkeras.tasks import rotten_tomatoes
data = rotten_tomatoes.build(rotten_tomatoes.Params(), 0)
assert data.x_train.shape[0] > 10_000 and len(data.vocabulary) > 5_000
print({SENTENCES!r}, "tensorflow imported:", "tensorflow" in sys.modules)
"""


@dataclass(frozen=True)
class FreshTorchChecks:
    result: subprocess.CompletedProcess
    event_folder: Path  # where step 3 wrote its event files

    def verdict(self, step: str) -> str:
        """The line after `step` ("probes" or one of STEPS), without its label."""
        assert self.result.returncode == 0, self.result.stderr[-3000:]
        lines = self.result.stdout.strip().splitlines()
        labelled = {label: index for index, line in enumerate(lines) for label in STEPS if line.startswith(label)}
        assert set(labelled) == set(STEPS), self.result.stdout[-3000:]
        if step == "probes":  # its script's last line, just before the next step's
            return lines[labelled[BIDIRECTIONAL] - 1]
        return lines[labelled[step]].removeprefix(step).strip()


@functools.cache
def fresh_torch_checks() -> FreshTorchChecks:
    events = Path(tempfile.mkdtemp(prefix="seqkeras-fresh-torch-"))
    atexit.register(shutil.rmtree, events, ignore_errors=True)
    result = subprocess.run([sys.executable, "-c", EVERY_PROBE_WITHOUT_TENSORFLOW + AFTER_THE_PROBES, "torch",
                             str(events)], env={**os.environ, "KERAS_BACKEND": "torch"}, capture_output=True,
                            text=True, timeout=300)
    return FreshTorchChecks(result, events)
