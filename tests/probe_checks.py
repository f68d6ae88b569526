"""What the torch and JAX processes check of the probes: the committed TensorFlow numbers, on their backend.

The lesson's probe experiments (results/lesson-*, but lesson-exposure-bias, which
trains a model) were computed on TensorFlow. Each of their runs becomes a
`ProbeCase`: the run as the suite resolves it from the committed spec
(results/<experiment>/experiment.yaml, the probe's parameters and seed) and the
metrics of its row in the experiment's runs.csv. The torch and JAX processes run
each case on their backend and compare with `differences`, at the tolerance
`seqkeras run --reference` allows results computed exactly, so the numbers
checked are the committed ones, never numbers copied into a test.

Also shared by those processes: a closed form for the one measurement whose
committed numbers depend on the backend's random initialisation, and a script
that runs every probe in a fresh process to see whether it imports TensorFlow.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from seqkeras.spec.loader import load_experiment
from seqkeras.spec.runs import RunSpec

RESULTS = Path(__file__).resolve().parent.parent / "results"
# `seqkeras run --reference` for results computed exactly: |difference| ≤ ABSOLUTE + RELATIVE·|reference|.
ABSOLUTE, RELATIVE = 1e-12, 1e-6


@dataclass(frozen=True)
class ProbeCase:
    experiment: str
    run: RunSpec  # its probe (component and parameters) and seed
    expected: dict[str, Any]  # metric name → the committed value

    @property
    def id(self) -> str:
        return f"{self.experiment}/{self.run.run_id}"

    @property
    def probe(self) -> str:
        return self.run.probe.name


def lesson_probe_experiments() -> list[str]:
    """The results/lesson-* folders whose experiment runs a probe."""
    return sorted(folder.name for folder in RESULTS.glob("lesson-*")
                  if "probe" in yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8")))


def probe_cases(experiment: str, only: list[str] | None = None) -> list[ProbeCase]:
    """One case per committed run of `experiment` (a folder of results/), or of the runs `only` selects (as --only)."""
    folder = RESULTS / experiment
    runs = load_experiment(folder / "experiment.yaml", only=only).runs
    committed = pd.read_csv(folder / "runs.csv").set_index("run_id")
    # A run id is a digest of the resolved spec: a run without its row means the spec no longer resolves as it did.
    missing = [run.run_id for run in runs if run.run_id not in committed.index]
    assert not missing, f"{folder}/runs.csv has no row for {missing}"
    cases = []
    for run in runs:
        row = committed.loc[run.run_id]
        # The probe's metric names, where `*` stands for a data-dependent part (p_next_* of ngram_counts).
        patterns = run.probe.component.metric_names(run.probe.params)
        metrics = [column for column in committed.columns if any(fnmatchcase(column, p) for p in patterns)]
        cases.append(ProbeCase(experiment, run, {metric: _plain(row[metric]) for metric in metrics}))
    return cases


def lesson_probe_cases() -> list[ProbeCase]:
    return [case for experiment in lesson_probe_experiments() for case in probe_cases(experiment)]


def run_case(case: ProbeCase) -> dict[str, Any]:
    """The case's probe, run on this process's backend as a run calls it (seeded first): its metrics."""
    from seqkeras.backends.runtime import set_random_seed

    set_random_seed(case.run.seed)
    return case.run.probe.component.load()(case.run.probe.params, case.run.seed).metrics


def differences(case: ProbeCase, measured: dict[str, Any]) -> list[str]:
    """What in `measured` differs from the committed metrics of `case` (empty: it reproduces them)."""
    found = []
    for metric, expected in case.expected.items():
        value = measured.get(metric)
        if isinstance(expected, str) or isinstance(value, str):
            same = value == expected
        elif math.isnan(expected) or math.isinf(expected):
            same = value is not None and (value == expected or (math.isnan(expected) and math.isnan(value)))
        else:
            same = value is not None and abs(value - expected) <= ABSOLUTE + RELATIVE * abs(expected)
        if not same:
            found.append(f"{case.id} {metric}: {value!r}, committed {expected!r}")
    return found


def linear_recurrence_gradient_path() -> tuple[np.ndarray, np.ndarray]:
    """recurrence_vs_attention's gradient path through a linear SimpleRNN, and its closed form.

    For the measurement whose committed numbers depend on each backend's random initialisation:
    h_t = x_t U + h_{t−1} W (Keras's row vectors), so ∂h_T/∂x_{T−k} = (U W^k)ᵀ and the norm is ‖U W^k‖_F.
    Returns (measured norms, closed-form norms), index k = steps back.
    """
    import keras

    from seqkeras.probes import recurrence_vs_attention

    rng = np.random.default_rng(0)
    width_in, units, steps = 3, 4, 12
    U = rng.normal(size=(width_in, units))
    W = rng.normal(size=(units, units))
    W *= 0.9 / max(abs(np.linalg.eigvals(W)))
    inputs = keras.Input(shape=(steps, width_in))
    layer = keras.layers.SimpleRNN(units, activation="linear", use_bias=False, return_sequences=True)
    model = keras.Model(inputs, layer(inputs))
    layer.set_weights([U, W])
    norms = recurrence_vs_attention.gradient_path(model, rng.normal(size=(1, steps, width_in)))
    return norms, np.array([np.linalg.norm(U @ np.linalg.matrix_power(W, k)) for k in range(steps)])


# Every probe once, at a tiny size, in a fresh process on the backend named by argv[1]; the last line
# says whether TensorFlow was imported (a test's own process may have imported it for another test).
EVERY_PROBE_WITHOUT_TENSORFLOW = """
import sys
from seqkeras.backends.runtime import select_backend, set_random_seed
select_backend(sys.argv[1])
from seqkeras.catalog import PROBES
TINY = {
    "memory": {"cell": "lstm", "steps": 3},
    "gradient_flow": {"units": 2, "steps": 3, "report_steps": [1]},
    "unroll": {"sentence": "a b a"},
    "decoding": {},
    "ngram_counts": {},
    "recurrence_vs_attention": {"model": "transformer", "width": 4, "num_heads": 2, "intermediate_dim": 4,
                                "measure": {"name": "gradient_path", "seq_length": 3}},
}
assert set(TINY) == set(PROBES.names()), "a probe without a tiny size here"
for name, params in TINY.items():
    component = PROBES.get(name)
    set_random_seed(0)
    component.load()(component.params(**params), 0)
print("tensorflow imported:", "tensorflow" in sys.modules)
"""


def tensorflow_imported_by_every_probe(backend: str) -> str:
    """The last line of EVERY_PROBE_WITHOUT_TENSORFLOW run in a fresh process on `backend`."""
    result = subprocess.run([sys.executable, "-c", EVERY_PROBE_WITHOUT_TENSORFLOW, backend],
                            env={**os.environ, "KERAS_BACKEND": backend}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


def _plain(value: Any) -> Any:
    """A runs.csv cell as the probe reports it: str, or a Python number."""
    return value if isinstance(value, str) else float(value)
