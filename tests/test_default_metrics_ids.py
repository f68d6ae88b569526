"""A metric added to a problem's DEFAULT_METRICS, or a new train.verbose default, changes no run id
(spec.loader.hashed_spec).

A run that names no metrics computes its problem's DEFAULT_METRICS and lists them in its spec.yaml, but its id
hashes `metric_catalog.DEFAULTS_IN_RUN_IDS` in their place: the defaults as they were when run ids began.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seqkeras.evaluation import metric_catalog
from seqkeras.kept.saving import KeptModel
from seqkeras.spec.loader import build_experiment, load_experiment
from seqkeras.tasks.base import CLASSIFICATION

REPOSITORY = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted((REPOSITORY / "experiments").rglob("*.yaml"))
# One metric more for every problem, as a contributor's `DEFAULT_METRICS` line would add it.
ADDED = {"classification": "macro_f1", "tagging": "cross_entropy", "language_modeling": "cross_entropy",
         "regression": "baseline_mse", "seq2seq": "distinct_1"}

SPEC = {"version": 1, "name": "defaults", "seeds": [0, 1],
        "task": {"name": "delayed_recall", "lag": 2, "n_train": 16, "n_test": 8},
        "model": {"kind": "classifier", "units": 4, "embedding_dim": 3}}


def with_more_defaults(monkeypatch) -> None:
    for problem, metric in ADDED.items():
        defaults = metric_catalog.DEFAULT_METRICS[problem]
        monkeypatch.setitem(metric_catalog.DEFAULT_METRICS, problem, [*defaults, metric] if metric not in defaults
                            else [name for name in defaults if name != metric])


def run_ids() -> dict[str, list[str]]:
    return {str(path): [run.run_id for run in load_experiment(path).runs] for path in EXPERIMENTS}


def test_the_committed_experiments_keep_their_run_ids_when_every_problem_gains_a_default(monkeypatch):
    assert len(EXPERIMENTS) >= 20
    before = run_ids()
    with_more_defaults(monkeypatch)
    assert run_ids() == before


def test_a_run_naming_no_metrics_computes_and_lists_the_defaults_of_today_under_its_id(monkeypatch, tmp_path):
    before = build_experiment(SPEC, source="defaults", overrides=[]).runs
    monkeypatch.setitem(metric_catalog.DEFAULT_METRICS, CLASSIFICATION, ["accuracy", "macro_f1"])
    after = build_experiment(SPEC, source="defaults", overrides=[]).runs
    assert [run.run_id for run in after] == [run.run_id for run in before]
    assert after[0].metrics == after[0].resolved["evaluate"]["metrics"] == ["accuracy", "macro_f1"]  # spec.yaml
    assert after[0].hashed["evaluate"]["metrics"] == ["accuracy"]
    # Read again from its spec.yaml, the run names no metrics, as it did: the same id.
    again = KeptModel(None, None, after[0].resolved, tmp_path).run_spec()
    assert again.run_id.rsplit("_", 1)[1] == after[0].run_id.rsplit("_", 1)[1]
    # Metrics a spec names are hashed as named: the defaults' list and another are two runs.
    named = {**SPEC, "evaluate": {"metrics": ["accuracy", "macro_f1"]}}
    (explicit, _) = build_experiment(named, source="defaults", overrides=[]).runs
    assert explicit.run_id != after[0].run_id and explicit.metrics == after[0].metrics


@pytest.mark.parametrize("problem", sorted(metric_catalog.INPUTS))
def test_the_hashed_defaults_are_metrics_of_their_problem(problem):
    assert all(problem in metric_catalog.METRICS.get(name).problems
               for name in metric_catalog.DEFAULTS_IN_RUN_IDS[problem])


def test_a_run_leaving_verbose_unset_keeps_the_id_it_had_when_the_default_was_2(tmp_path):
    (defaulted, _) = build_experiment(SPEC, source="defaults", overrides=[]).runs
    assert defaulted.train.verbose == 1  # today's default: a bar on a terminal
    assert "verbose" not in defaulted.resolved["train"]  # spec.yaml leaves it out, as the spec did
    named_2 = build_experiment({**SPEC, "train": {"verbose": 2}}, source="defaults", overrides=[]).runs[0]
    named_1 = build_experiment({**SPEC, "train": {"verbose": 1}}, source="defaults", overrides=[]).runs[0]
    assert defaulted.run_id == named_2.run_id != named_1.run_id
    # Read again from its spec.yaml, each run keeps its id.
    for run in (defaulted, named_1, named_2):
        assert KeptModel(None, None, run.resolved, tmp_path).run_spec().run_id == run.run_id
