"""`run --reference`: results computed exactly are held to float rounding, trained ones to their seed spread.

Results folders are written with the suite's own writers (tests/test_result_readers.py's
`results_folder`), with chosen numbers. The lesson itself is computed once, by `make run` in CI
(.ci/run), as another machine computes it (oneDNN capped at AVX2, the runs in one process on two
threads instead of two one-thread workers), and checked there against the committed reference.
"""

from __future__ import annotations

import copy
import math

import pytest
import yaml

from seqkeras.reporting.reproduction import SPREAD_FACTOR, check_experiment, spread_allowance
from seqkeras.spec.loader import build_experiment
from tests.conftest import TINY_TRAINING_SPEC
from tests.test_result_readers import results_folder

TRAINED = yaml.safe_load(TINY_TRAINING_SPEC)  # model.cell: simple_rnn, lstm; seeds 0, 1; a claim 0 ≤ accuracy ≤ 1
PROBE = {"version": 1, "name": "probe-subset", "probe": {"name": "memory", "cell": "simple_rnn", "steps": 10},
         "matrix": {"probe.recurrent_weight": [0.5, 0.9]}, "seeds": [0]}


def reference_and_rerun(tmp_path, spec: dict, reference, rerun):
    """The experiment, its reference folder and its rerun folder, each run's accuracy given by a function of the run."""
    reference_folder, experiment = results_folder(tmp_path / "reference", spec, accuracy=reference)
    rerun_folder, _ = results_folder(tmp_path / "rerun", spec, accuracy=rerun)
    return experiment, reference_folder, rerun_folder


def base(run):
    return 0.5 + 0.1 * run.seed  # seeds 0 and 1: a spread of 0.0707 at each matrix point


def test_a_probe_is_held_to_float_rounding(tmp_path):
    experiment, reference, rerun = reference_and_rerun(tmp_path, PROBE, lambda run: 0.5,
                                                       lambda run: 0.5 * (1 + 1e-9))
    outcome = check_experiment(experiment, reference, rerun)
    assert outcome.reproduced and not outcome.trained
    experiment, reference, rerun = reference_and_rerun(tmp_path / "moved", PROBE, lambda run: 0.5,
                                                       lambda run: 0.5 * (1 + 1e-4))
    outcome = check_experiment(experiment, reference, rerun)
    assert not outcome.reproduced
    assert "accuracy at probe.recurrent_weight=0.5, seed=0: 0.5 → 0.50005" in outcome.reasons[0]
    assert "DIFFERS" in outcome.line(reference) and "computed exactly" in outcome.line(reference)


def test_a_trained_mean_may_move_within_its_seed_spread_and_no_further(tmp_path):
    allowed = spread_allowance(math.sqrt(0.005), seeds=2)  # std of (0.5, 0.6)
    assert allowed == pytest.approx(SPREAD_FACTOR * 0.0707107, rel=1e-5)
    experiment, reference, rerun = reference_and_rerun(tmp_path, TRAINED, base, lambda run: base(run) + 0.1)
    outcome = check_experiment(experiment, reference, rerun)
    assert outcome.trained and outcome.reproduced, outcome.reasons
    line = outcome.line(reference)
    assert "matches the reference" in line and "largest difference 0.1 (accuracy" in line
    assert f"allowed {allowed:.3g}" in line
    experiment, reference, rerun = reference_and_rerun(tmp_path / "far", TRAINED, base,
                                                       lambda run: base(run) - 1.5 * allowed)
    outcome = check_experiment(experiment, reference, rerun)
    assert not outcome.reproduced
    assert f"|difference| {1.5 * allowed:.3g} > allowed {allowed:.3g}" in outcome.reasons[0]


def test_a_claim_within_the_allowed_difference_of_its_threshold_is_fragile(tmp_path):
    spec = copy.deepcopy(TRAINED)
    spec["expect"] = [{"claim": "better than chance", "metric": "accuracy", "at_least": 0.5}]
    experiment, reference, rerun = reference_and_rerun(tmp_path, spec, base, base)  # mean 0.55: 0.05 above
    outcome = check_experiment(experiment, reference, rerun)
    assert not outcome.reproduced
    assert outcome.reasons == ["the claim 'better than chance' is fragile: accuracy 0.55 in the reference lies "
                               f"within the allowed difference {spread_allowance(math.sqrt(0.005), 2):.3g} of its "
                               "threshold 0.5"]


def test_one_seed_is_held_to_rounding_unless_the_spec_states_a_tolerance(tmp_path):
    spec = {**copy.deepcopy(TRAINED), "seeds": [0]}
    experiment, reference, rerun = reference_and_rerun(tmp_path, spec, base, lambda run: base(run) + 0.01)
    outcome = check_experiment(experiment, reference, rerun)
    assert not outcome.reproduced and "one seed and no reference_tolerance" in outcome.rule
    spec["reference_tolerance"] = 0.02
    experiment, reference, rerun = reference_and_rerun(tmp_path / "stated", spec, base, lambda run: base(run) + 0.01)
    outcome = check_experiment(experiment, reference, rerun)
    assert outcome.reproduced and "within reference_tolerance 0.02" in outcome.line(reference)


def test_a_row_missing_from_the_rerun_is_a_difference(tmp_path):
    experiment, reference, rerun = reference_and_rerun(tmp_path, TRAINED, base, base)
    runs = (rerun / "runs.csv").read_text().splitlines()
    (rerun / "runs.csv").write_text("\n".join(line for line in runs if ",lstm," not in line) + "\n")
    outcome = check_experiment(experiment, reference, rerun)
    assert any("a row only in the reference: model.cell=lstm" in reason for reason in outcome.reasons)


def test_a_probe_may_not_state_a_reference_tolerance():
    from seqkeras.errors import SpecError

    with pytest.raises(SpecError, match="reference_tolerance is for experiments that train"):
        build_experiment({**PROBE, "reference_tolerance": 0.1}, source="test", overrides=[])
