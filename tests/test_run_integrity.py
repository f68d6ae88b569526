"""Nothing silently wrong: names, sizes and matrices checked before training; results are what they say.

Each class of mistake is tried with several inputs; each must be refused by
`validate` (exit 2, one sentence naming the key path) before anything trains, or,
for results, never reused or mixed where it does not belong.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment, load_experiment
from seqkeras.spec.outputs import output_rows
from seqkeras.spec.runs import MAX_READABLE_ID, make_run_id
from tests.helpers import process_backend, run_cli

REPO = Path(__file__).resolve().parent.parent

CLASSIFIER = {
    "version": 1,
    "name": "names",
    "task": {"name": "delayed_recall", "n_train": 40, "n_test": 20, "lag": 3},
    "model": {"kind": "classifier", "cell": "lstm", "units": 4, "embedding_dim": 4},
    "train": {"epochs": 1, "verbose": 0},
    "matrix": {"model.cell": ["lstm", "gru"], "task.lag": [3, 6]},
}
MEMORY_PROBE = {
    "version": 1,
    "name": "probe-names",
    "probe": {"name": "memory", "cell": "simple_rnn", "steps": 10, "input_weight": 2.0},
    "matrix": {"probe.recurrent_weight": [0.9, 1.5]},
}


def with_keys(base: dict, **sections) -> dict:
    raw = copy.deepcopy(base)
    raw.update(sections)
    return raw


def refused(raw: dict) -> SpecError:
    with pytest.raises(SpecError) as caught:
        build_experiment(raw, source="spec.yaml", overrides=[])
    return caught.value


# --------------------------------------------------------------------------- #
# Names that no run will have: refused before training
# --------------------------------------------------------------------------- #

NAME_MISTAKES = [
    # (spec, the key path named, a phrase of the message)
    (with_keys(CLASSIFIER, table={"rows": "model.cell", "value": "acuracy"}), "table.value", "Did you mean 'accuracy'"),
    (with_keys(CLASSIFIER, table=[{"rows": "model.cell", "columns": "task.lag", "value": "accuracy"},
                                  {"rows": "task.lag", "value": "bleu"}]),
     "table[1].value", "do not report 'bleu'"),
    (with_keys(CLASSIFIER, expect=[{"claim": "c", "metric": "acuracy", "at_least": 0.5}]),
     "expect[0].metric", "Did you mean 'accuracy'"),
    (with_keys(CLASSIFIER, expect=[{"claim": "c", "metric": "accuracy", "relative_to": "acuracy", "at_least": 0.5}]),
     "expect[0].relative_to", "Did you mean 'accuracy'"),
    # a metric of another kind of model: a classifier has no perplexity
    (with_keys(CLASSIFIER, expect=[{"claim": "c", "metric": "perplexity", "at_most": 5}]),
     "expect[0].metric", "do not report 'perplexity'"),
    (with_keys(CLASSIFIER, expect=[{"claim": "c", "where": {"model.cell": "lstmm"}, "metric": "accuracy",
                                    "at_least": 0.5}]), "expect[0].where.model.cell", "its values are: lstm, gru"),
    (with_keys(CLASSIFIER, expect=[{"claim": "c", "where": {"task.lag": 4}, "metric": "accuracy", "at_least": 0.5}]),
     "expect[0].where.task.lag", "no run has task.lag = 4"),
    (with_keys(CLASSIFIER, expect=[{"claim": "c", "where": {"model.cell": "lstm"}, "metric": "accuracy",
                                    "greater_than": {"where": {"model.cell": "rnn"}}}]),
     "expect[0].greater_than.where.model.cell", "no run has model.cell = 'rnn'"),
    (with_keys(CLASSIFIER, table={"rows": "model.cell", "value": "accuracy", "where": {"task.lag": "3x"}}),
     "table.where.task.lag", "no run has task.lag"),
    (with_keys(CLASSIFIER, plots=[{"x": "task.lag", "y": ["accuracy", "acc"]}]), "plots[0].y", "do not report 'acc'"),
    (with_keys(CLASSIFIER, plots=[{"x": "task.lag", "y": "accuracy", "where": {"seed": 3}}]),
     "plots[0].where.seed", "no run has seed = 3"),
    # a table pools only over seeds: a key that varies within its cells is an error, or pooled on purpose
    (with_keys(CLASSIFIER, table={"rows": "model.cell", "value": "accuracy"}), "table", "task.lag varies within"),
    (with_keys(CLASSIFIER, table={"rows": "seed", "value": "accuracy"}), "table", "model.cell, task.lag vary"),
    (with_keys(CLASSIFIER, table={"rows": "model.cell", "value": "accuracy", "pool": ["task.lagg"]}), "table.pool",
     "Did you mean 'task.lag'"),
    # a line or bar of a plot is a mean over seeds too
    (with_keys(CLASSIFIER, plots=[{"x": "task.lag", "y": "accuracy"}]), "plots[0]",
     "model.cell varies within the plot"),
    (with_keys(CLASSIFIER, plots=[{"x": "seed", "y": "accuracy", "kind": "bar"}]), "plots[0]",
     "model.cell, task.lag vary"),
    # probes: their metrics depend on their parameters
    (with_keys(MEMORY_PROBE, expect=[{"claim": "c", "metric": "forget_gate", "at_least": 0.5}]),
     "expect[0].metric", "They report: memory, decay_per_step"),
    (with_keys(MEMORY_PROBE, table={"rows": "probe.recurrent_weight", "value": "memroy"}),
     "table.value", "Did you mean 'memory'"),
    (with_keys(MEMORY_PROBE, expect=[{"claim": "c", "where": {"probe.recurrent_weight": 0.5}, "metric": "memory",
                                      "at_least": 0}]), "expect[0].where.probe.recurrent_weight", "0.9, 1.5"),
]


@pytest.mark.parametrize("raw, path, phrase", NAME_MISTAKES)
def test_names_no_run_will_have_are_refused_before_training(raw, path, phrase):
    error = refused(raw)
    assert error.path == path
    assert phrase in error.message


def test_a_table_that_pools_on_purpose_or_names_every_key_is_accepted():
    for table in ({"rows": "model.cell", "value": "accuracy", "pool": ["task.lag"]},
                  {"rows": "model.cell", "columns": "task.lag", "value": "accuracy"},
                  {"rows": "model.cell", "value": "accuracy", "where": {"task.lag": 3}}):
        build_experiment(with_keys(CLASSIFIER, table=table), source="s", overrides=[])


def test_a_plot_that_shows_every_key_or_every_run_is_accepted():
    for plot in ({"x": "task.lag", "y": "accuracy", "hue": "model.cell"},
                 {"x": "task.lag", "y": "accuracy", "facet": "model.cell", "kind": "bar"},
                 {"x": "task.lag", "y": "accuracy", "kind": "scatter"},
                 {"x": "task.lag", "y": "accuracy", "where": {"model.cell": "gru"}}):
        build_experiment(with_keys(CLASSIFIER, plots=[plot]), source="s", overrides=[])


def test_a_claim_must_read_a_metric_every_selected_run_reports(tmp_path):
    # by_length columns exist per decoder row; a claim over "every seq2seq row" is fine, but a
    # claim over the probe's sampling-only metric on a greedy run is not.
    raw = {
        "version": 1, "name": "decoding-mix",
        "probe": {"name": "decoding"},
        "matrix": {"probe.decoder": [{"name": "greedy"}, {"name": "sample", "seed": 1}]},
        "expect": [{"claim": "c", "metric": "distinct_outputs", "at_least": 1}],
    }
    error = refused(raw)
    assert error.path == "expect[0].metric" and "only 1 of the 2 rows" in error.message
    raw["expect"][0]["where"] = {"probe.decoder.name": "sample"}
    build_experiment(raw, source="spec.yaml", overrides=[])  # narrowed: accepted


def test_the_cli_refuses_a_misspelt_metric_without_training(write_spec, capsys):
    spec = write_spec(yaml.safe_dump(with_keys(CLASSIFIER, table={"rows": "model.cell", "value": "acuracy"})))
    code, out, err = run_cli(capsys, "run", spec, "--out", spec.parent / "out")
    assert code == 2 and "table.value" in err and "Traceback" not in err
    assert not (spec.parent / "out").exists()


def committed_runs():
    """(experiment file, run, its committed record) for every run whose record is in results/.

    Matched by the readable part of the run id (matrix values and seed): a parameter added to a
    component since the results were written changes the digest of every resolved spec, not
    which metrics a run reports.
    """
    for path in sorted((REPO / "experiments").rglob("*.yaml")):
        experiment = load_experiment(path)
        folder = REPO / "results" / experiment.spec.name
        recorded = {p.parent.name.rsplit("_", 1)[0]: p for p in folder.glob("*/metrics.json")}
        for run in experiment.runs:
            record_path = recorded.get(run.run_id.rsplit("_", 1)[0])
            if record_path is not None:
                record = json.loads(record_path.read_text())
                if record.get("status") == "ok":
                    yield path.name, run, record


def test_declared_metric_names_are_what_the_committed_runs_wrote():
    """The names validate checks against (spec/outputs.py, each probe's metric_names) are the real ones."""
    seen = set()
    for file, run, record in committed_runs():
        written = [row["metrics"] for row in record.get("rows") or [{"metrics": record["metrics"]}]]
        declared = output_rows(run)
        assert len(declared) == len(written), (file, run.run_id)
        for row, metrics in zip(declared, written):
            for name in metrics:
                assert row.has(name), f"{file} {run.run_id}: writes {name!r}, not declared"
            for name in row.metrics:
                if "*" not in name and name not in ("params", "train_seconds"):
                    assert name in metrics, f"{file} {run.run_id}: declares {name!r}, never written"
        seen.add(run.probe.name if run.probe else run.model.name)
    # Every probe and the common model kinds are covered by a committed record.
    assert {"memory", "gradient_flow", "decoding", "ngram_counts", "unroll", "recurrence_vs_attention"} <= seen
    assert {"classifier", "tagger", "seq2seq", "lm"} <= seen


# --------------------------------------------------------------------------- #
# Sizes that multiply past the machine; seeds the backends refuse
# --------------------------------------------------------------------------- #

SIZE_MISTAKES = [
    ({"task": {"name": "delayed_recall", "n_train": 5_000_000, "lag": 100_000}}, "task", "tokens per example"),
    ({"task": {"name": "agreement", "n_train": 4_000_000, "n_test": 1_000_000, "distance": 1000}}, "task", "GB"),
    ({"task": {"name": "reverse", "n_train": 5_000_000, "max_length": 10_000}, "model": {"kind": "seq2seq"}},
     "task", "reduce n_train"),
    ({"model": {"kind": "transformer_classifier", "embedding_dim": 65_536, "num_heads": 4,
                "intermediate_dim": 262_144, "layers": 64}}, "model", "parameters"),
    ({"model": {"kind": "classifier", "units": 65_536, "layers": 32}}, "model", "parameters"),
    ({"seeds": [2**32]}, "seeds", "between 0 and"),
    ({"seeds": [0, 1_000_000]}, "seeds", "between 0 and"),
    ({"seeds": [-1]}, "seeds", "between 0 and"),
]


@pytest.mark.parametrize("sections, path, phrase", SIZE_MISTAKES)
def test_sizes_past_the_machine_are_refused(sections, path, phrase):
    raw = with_keys(CLASSIFIER, matrix={}, **sections)
    error = refused(raw)
    assert error.path == path and phrase in error.message
    assert len(str(error)) < 400


def test_a_sampling_decoders_seed_stays_in_range():
    raw = {"version": 1, "name": "s", "probe": {"name": "decoding", "decoder": {"name": "sample", "seed": 2**40}}}
    assert "probe.decoder" in refused(raw).path


def test_the_transformer_estimate_is_the_built_models_parameter_count():
    from seqkeras.models import transformer
    from seqkeras.models.transformer import TransformerParams
    from seqkeras.tasks import char_lm, delayed_recall

    classification = delayed_recall.build(delayed_recall.Params(n_train=8, n_test=4, lag=4), 0)
    language = char_lm.build(char_lm.Params(n_train=8, n_test=4, seq_length=8), 0)
    for build, data in ((transformer.build_classifier, classification), (transformer.build_lm, language)):
        for options in ({}, {"normalize_first": True}, {"positions": "sine"}, {"max_length": 20}):
            params = TransformerParams(embedding_dim=8, num_heads=2, intermediate_dim=12, layers=2, **options)
            model = build(params, data)
            estimate = transformer.estimated_parameters(params, len(data.vocabulary), data.num_outputs,
                                                        data.x_train.shape[1])
            assert estimate == model.count_params(), (build.__name__, options)


# --------------------------------------------------------------------------- #
# Matrices that lie
# --------------------------------------------------------------------------- #

MATRIX_MISTAKES = [
    ({"model.units": [4, 4]}, "resolve to the same spec"),
    ({"train.optimizer.learning_rate": [0.001, 1.0e-3]}, "resolve to the same spec"),
    ({"model": [{"units": 4}, {"cell": "lstm"}]}, "resolve to the same spec"),  # both are the base spec
    ({"model": [{"cell": "lstm"}, {"cell": "gru"}], "model.cell": ["simple_rnn"]}, "both set model.cell"),
    ({"task": [{"lag": 3}, {"lag": 5}], "task.lag": [7]}, "both set task.lag"),
    ({"train": [{"optimizer": {"learning_rate": 0.1}}], "train.optimizer.learning_rate": [0.2, 0.3]},
     "both set train.optimizer.learning_rate"),
    ({"train.optimizer.learning_rate": [0.1, 0.2], "model.units": list(range(1, 101)),
      "task.lag": list(range(1, 101))}, "more than the 10,000"),
]


@pytest.mark.parametrize("matrix, phrase", MATRIX_MISTAKES)
def test_matrices_that_lie_are_refused(matrix, phrase):
    error = refused(with_keys(CLASSIFIER, matrix=matrix))
    assert error.path.startswith("matrix") and phrase in error.message


HOSTILE_POINTS = [
    {"probe.table": {"../../outside": 1}},
    {"probe.table": {"/etc/passwd": 1, "..": 2}},
    {"task.name": "../../x"},
    {"model.cell": "a" * 5000},
    {f"model.k{i}": "v" * 39 for i in range(20)},
    {"task": {"..": "/", "name": "x/../../y"}},
    {".": "."},
]


@pytest.mark.parametrize("point", HOSTILE_POINTS)
def test_no_run_id_is_a_path_or_too_long(point, tmp_path):
    run_id = make_run_id(point, seed=0, digest="1a2b3c4d")
    assert re.fullmatch(r"[A-Za-z0-9_.+=-]+", run_id), run_id
    assert not run_id.startswith(".") and ".." not in run_id
    assert len(run_id) <= MAX_READABLE_ID + len("_seed=0_1a2b3c4d")
    folder = tmp_path / "experiment"
    assert (folder / run_id).resolve().parent == folder.resolve()


def test_a_wide_matrix_gives_short_distinct_run_ids():
    raw = with_keys(MEMORY_PROBE, matrix={"probe.steps": [10, 20], "probe.input_weight": [1.5, 2.5],
                                          "probe.recurrent_weight": [0.11111111111111, 0.2222222222222222]},
                    seeds=list(range(3)))
    runs = build_experiment(raw, source="s", overrides=[]).runs
    assert len({run.run_id for run in runs}) == len(runs) == 24
    assert all(len(run.run_id) < 200 for run in runs)


# --------------------------------------------------------------------------- #
# --set on a matrix axis, and --only
# --------------------------------------------------------------------------- #

CELLS = REPO / "experiments" / "compare" / "cells_long_range.yaml"
SENTIMENT = REPO / "experiments" / "compare" / "sentiment.yaml"


def test_set_on_a_key_some_axis_values_lack_says_which_set_and_points_to_only(capsys):
    code, _, err = run_cli(capsys, "validate", CELLS, "--set", "task.lag=10")
    assert code == 2 and "from --set task.lag" in err and "--only task.lag=VALUE" in err


def test_set_that_takes_a_claims_runs_out_of_the_matrix_skips_it_and_says_so(capsys):
    code, out, _ = run_cli(capsys, "validate", SENTIMENT, "--set",
                           "model=[{cell: gru}, {cell: lstm, bidirectional: false}]")
    assert code == 0
    assert ("""skipped claim 'even the SimpleRNN beats always answering "fresh" (0.58)': """
            "--set leaves none of its runs") in out
    assert "skipped claim 'a GRU has fewer parameters" not in out
    # a value no run has for any other reason stays an error
    raw = with_keys(CLASSIFIER, expect=[{"claim": "c", "where": {"model.cell": "lstmm"}, "metric": "accuracy",
                                         "at_least": 0.5}])
    with pytest.raises(SpecError, match="no run has model.cell = 'lstmm'"):
        build_experiment(raw, source="s", overrides=["task.lag=[3]"])


def test_only_selects_a_subset_of_the_matrix_and_says_what_no_longer_applies(capsys):
    code, out, _ = run_cli(capsys, "validate", CELLS, "--only", "task.lag=100", "--only", "seed=0")
    assert code == 0
    assert "(cells-long-range: 6 runs)" in out and "6 of 108 runs" in out
    assert "skipped claim 'every model handles a short gap (lag 5)" in out
    assert "skipped table 'agreement: accuracy by distance (chance 0.5)'" in out
    assert "skipped claim 'the LSTM with forget bias 5 keeps the signal across 100 steps'" not in out
    # one key twice: either value
    code, out, _ = run_cli(capsys, "validate", CELLS, "--only", "task.lag=5", "--only", "task.lag=25")
    assert code == 0 and "(cells-long-range: 36 runs)" in out


@pytest.mark.parametrize("only, phrase", [
    ("task.lagg=5", "unknown matrix key 'task.lagg'"),
    ("task.lag=7", "no run has task.lag = 7"),
    ("model.units=32", "unknown matrix key"),  # fixed, not varied
    ("task.lag", "--only expects KEY=VALUE"),
    ("../x=1", "--only expects KEY=VALUE"),
])
def test_only_mistakes_are_clear_errors(only, phrase, capsys):
    code, _, err = run_cli(capsys, "validate", CELLS, "--only", only)
    assert code == 2 and phrase in err and "Traceback" not in err


def test_only_with_keys_that_exist_apart_but_not_together(capsys):
    code, _, err = run_cli(capsys, "validate", CELLS, "--only", "task.lag=5", "--only", "task.distance=5")
    assert code == 2 and "not together" in err


PROBE_SPEC = """\
version: 1
name: memory-subset
probe: {name: memory, cell: simple_rnn, steps: 10, input_weight: 2.0}
matrix:
  probe.recurrent_weight: [0.9, 1.5]
expect:
  - {claim: fades, where: {probe.recurrent_weight: 0.9}, metric: memory, at_most: 0.5}
  - {claim: saturates, where: {probe.recurrent_weight: 1.5}, metric: memory, at_least: 0.5}
"""


def test_only_runs_the_subset_and_keeps_the_other_records(write_spec, tmp_path, capsys):
    spec, out = write_spec(PROBE_SPEC), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "run", spec, "--out", out, "--only", "probe.recurrent_weight=0.9", "--force")
    assert code == 0
    assert "[1/1]" in stdout and "skipped claim 'saturates'" in stdout
    assert "Expectations (1 of 1 reproduced)" in stdout
    runs = (out / "memory-subset" / "runs.csv").read_text().splitlines()
    assert len(runs) == 3  # header and both runs: the subset erased nothing


# --------------------------------------------------------------------------- #
# A run's identity: what a reused record must match
# --------------------------------------------------------------------------- #


def test_a_record_of_another_backend_is_not_reused(write_spec, tmp_path, capsys, monkeypatch):
    from seqkeras.execution import identity

    spec, out = write_spec(PROBE_SPEC), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out)[0] == 0
    code, stdout, _ = run_cli(capsys, "run", spec, "--out", out)
    here = process_backend()
    assert "2 of 2 runs done before, reused: seqkeras" in stdout and here in stdout, stdout
    monkeypatch.setattr(identity, "current_backend", lambda: "jax")
    code, stdout, _ = run_cli(capsys, "run", spec, "--out", out, "--dry-run")
    assert f"recorded under a different backend: {here} → jax" in stdout and "2 to run, 0 reused" in stdout


def test_a_changed_data_file_changes_the_identity(tmp_path):
    from seqkeras.execution.identity import run_identity

    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "".join(f"good film {i},pos\nbad film {i},neg\n" for i in range(10)))
    raw = with_keys(CLASSIFIER, matrix={}, task={"name": "text_classification_file", "path": str(data)})
    run = build_experiment(raw, source="s", overrides=[]).runs[0]
    before = run_identity(run)
    data.write_text(data.read_text().replace("good film 3,pos", "good film 3,neg"))
    after = run_identity(run)
    assert before["task.path"] != after["task.path"]
    assert {k: v for k, v in before.items() if k != "task.path"} == {k: v for k, v in after.items() if k != "task.path"}


def test_an_old_record_without_identity_is_run_again(write_spec, tmp_path, capsys):
    spec, out = write_spec(PROBE_SPEC), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out)[0] == 0
    for path in (out / "memory-subset").glob("*/metrics.json"):
        record = json.loads(path.read_text())
        del record["identity"]
        path.write_text(json.dumps(record))
    _, stdout, _ = run_cli(capsys, "run", spec, "--out", out, "--dry-run")
    assert "predates run identities" in stdout and "2 to run" in stdout


# --------------------------------------------------------------------------- #
# Where results go
# --------------------------------------------------------------------------- #


def test_out_inside_the_spec_folder_is_refused(tmp_path, capsys):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "memory.yaml").write_text(PROBE_SPEC)
    for out in (specs, specs / "results", specs / "a" / "b"):
        code, _, err = run_cli(capsys, "run", specs, "--out", out)
        assert code == 2 and "inside the spec folder" in err
    assert not (specs / "results").exists()


def test_an_experiment_folder_that_is_a_file_is_refused(write_spec, tmp_path, capsys):
    spec, out = write_spec(PROBE_SPEC), tmp_path / "out"
    out.mkdir()
    (out / "memory-subset").write_text("not a folder")
    code, _, err = run_cli(capsys, "run", spec, "--out", out)
    assert code == 2 and "is a file, not a folder" in err
    code, _, err = run_cli(capsys, "run", spec, "--out", out / "memory-subset")
    assert code == 2 and "is a file" in err


def test_a_run_folder_that_cannot_be_written_is_a_failed_run(write_spec, tmp_path, capsys):
    spec, out = write_spec(PROBE_SPEC), tmp_path / "out"
    run_id = load_experiment(spec).runs[0].run_id
    (out / "memory-subset").mkdir(parents=True)
    (out / "memory-subset" / run_id).write_text("in the way")  # root ignores permissions, not this
    code, stdout, err = run_cli(capsys, "run", spec, "--out", out)
    assert code == 1 and "Traceback" not in err
    assert "cannot write the run folder" in stdout and "1 failed run(s)" in err
    assert "1 ok, 1 failed" in (out / "memory-subset" / "table.md").read_text()


def test_jobs_beyond_the_cores_are_bounded():
    import os

    from seqkeras.execution.executors import make_executor

    executor = make_executor("local", "tensorflow", runs=200, jobs=100)
    assert executor.slots == max(os.cpu_count() or 1, 2)  # this machine's memory holds more than that
    assert f"--jobs 100, capped at this machine's {os.cpu_count()} cores" in executor.describe()


# --------------------------------------------------------------------------- #
# run --reference: the lesson checked against its committed results
# --------------------------------------------------------------------------- #


def test_run_checks_each_experiment_against_a_reference(write_spec, tmp_path, capsys):
    spec, reference, rerun = write_spec(PROBE_SPEC), tmp_path / "reference", tmp_path / "rerun"
    assert run_cli(capsys, "run", spec, "--out", reference)[0] == 0
    code, out, _ = run_cli(capsys, "run", spec, "--out", rerun, "--reference", reference)
    assert code == 0 and "- memory-subset: matches the reference" in out
    # a changed number in the reference is found, named, and fails the command
    runs = reference / "memory-subset" / "runs.csv"
    frame = pd.read_csv(runs)
    frame.loc[0, "memory"] = frame.loc[0, "memory"] * (1 + 1e-3)
    frame.to_csv(runs, index=False)
    code, out, err = run_cli(capsys, "run", spec, "--out", rerun, "--reference", reference)
    assert (code == 1 and "memory-subset: DIFFERS from the reference" in out
            and "memory at probe.recurrent_weight=0.9" in out)
    assert "1 experiment(s) differ from the reference" in err
    # rounding-level differences are not a difference
    frame.loc[0, "memory"] = frame.loc[0, "memory"] / (1 + 1e-3) * (1 + 1e-9)
    frame.to_csv(runs, index=False)
    assert run_cli(capsys, "run", spec, "--out", rerun, "--reference", reference)[0] == 0


def test_reference_mistakes_are_clear(write_spec, tmp_path, capsys):
    spec, out = write_spec(PROBE_SPEC), tmp_path / "out"
    code, _, err = run_cli(capsys, "run", spec, "--out", out, "--reference", tmp_path / "nowhere")
    assert code == 2 and "is not a folder of results" in err
    out.mkdir()
    code, _, err = run_cli(capsys, "run", spec, "--out", out, "--reference", out)
    assert code == 2 and "is the --out folder itself" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(capsys, "run", spec, "--out", out, "--reference", empty)
    assert code == 2 and "holds no results of 'memory-subset'" in err  # before anything runs


def test_an_infinite_metric_survives_its_record(write_spec, tmp_path, capsys):
    """A saturated unit's half-life is infinite: a reused record must give the runs.csv a fresh run gives."""
    spec, out = write_spec(PROBE_SPEC.replace("steps: 10", "steps: 100")), tmp_path / "out"
    assert run_cli(capsys, "run", spec, "--out", out)[0] == 0
    fresh = (out / "memory-subset" / "runs.csv").read_text()
    assert ",inf," in fresh
    assert run_cli(capsys, "run", spec, "--out", out)[0] == 0  # every record reused
    assert (out / "memory-subset" / "runs.csv").read_text() == fresh
    assert run_cli(capsys, "table", out / "memory-subset", "--rebuild")[0] == 0
    assert (out / "memory-subset" / "runs.csv").read_text() == fresh


def test_compare_relative_tolerance_and_timings(tmp_path, capsys):
    rows = {"experiment": ["e", "e"], "run_id": ["a", "b"], "status": ["ok", "ok"], "model.cell": ["lstm", "gru"],
            "seed": [0, 0], "accuracy": [0.5, 1000.0], "seconds_per_sequence": [0.1, 0.2]}
    for side, scale, seconds in (("A", 1.0, 1.0), ("B", 1 + 1e-7, 3.0)):
        folder = tmp_path / side / "e"
        folder.mkdir(parents=True)
        frame = pd.DataFrame(rows)
        frame["accuracy"] *= scale
        frame["seconds_per_sequence"] *= seconds
        frame.to_csv(folder / "runs.csv", index=False)
    a, b = tmp_path / "A" / "e", tmp_path / "B" / "e"
    assert run_cli(capsys, "compare", a, b, "--tolerance", "1e-9")[0] == 1  # 1000 × 1e-7 and the timings
    assert run_cli(capsys, "compare", a, b, "--tolerance", "1e-9", "--relative-tolerance", "1e-6")[0] == 1
    code, out, _ = run_cli(capsys, "compare", a, b, "--tolerance", "1e-9", "--relative-tolerance", "1e-6",
                           "--no-timings")
    assert code == 0 and "timings left out: seconds_per_sequence" in out
