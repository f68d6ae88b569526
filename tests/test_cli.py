"""The command line end to end: run, validate, table, list; files, columns, exit codes."""

from __future__ import annotations

import contextlib
import io
import json
import re
import textwrap

import pandas as pd
import pytest

from seqkeras.cli import main
from tests.conftest import TINY_TRAINING_SPEC
from tests.helpers import process_backend, run_cli


@pytest.fixture(scope="module")
def tiny_cli_run(tmp_path_factory):
    """`seqkeras run` of the tiny spec (4 runs), once for this module's tests that only read what it wrote:
    its exit code, stdout and results folder."""
    root = tmp_path_factory.mktemp("tiny-cli-run")
    spec = root / "spec.yaml"
    spec.write_text(textwrap.dedent(TINY_TRAINING_SPEC), encoding="utf-8")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["run", str(spec), "--out", str(root / "results")])
    return code, stdout.getvalue(), root / "results" / "tiny"


def test_tiny_end_to_end_run_writes_every_file(tiny_cli_run):
    code, stdout, folder = tiny_cli_run
    assert code == 0
    runs = pd.read_csv(folder / "runs.csv")
    assert list(runs.columns) == [
        "experiment", "run_id", "status", "model.cell", "seed", "accuracy",
        "epochs_trained", "best_epoch", "still_improving", "params", "train_seconds", "backend", "error",
    ]
    assert len(runs) == 4 and set(runs["status"]) == {"ok"} and set(runs["backend"]) == {process_backend()}
    assert runs["params"].gt(0).all() and runs["train_seconds"].gt(0).all()
    for run_id in runs["run_id"]:
        for name in ("spec.yaml", "metrics.json", "history.csv", "vocabulary.json"):
            assert (folder / run_id / name).is_file(), name
        record = json.loads((folder / run_id / "metrics.json").read_text())
        assert record["status"] == "ok" and "keras" in record["versions"]
        history = pd.read_csv(folder / run_id / "history.csv")
        assert list(history["epoch"]) == [1] and "loss" in history
    page = (folder / "table.md").read_text()
    assert "## accuracy by model.cell" in page and "reproduced" in page
    assert "[4/4]" in stdout
    assert "tiny: Still improving when they ended: 4 of 4 finished runs" in stdout  # one epoch each


def test_same_spec_and_seed_give_identical_metrics(tiny_cli_run, trained_runs):
    """The command line's tiny runs and the same spec's runs trained apart by `seqkeras.run` (once per session,
    tests/trained_runs.py: in another process under pytest-xdist), seed by seed."""
    code, _, second = tiny_cli_run
    assert code == 0
    first = trained_runs.experiment(TINY_TRAINING_SPEC)
    a = pd.read_csv(first / "runs.csv")
    b = pd.read_csv(second / "runs.csv")
    assert len(a) == 4 and list(a["run_id"]) == list(b["run_id"])
    assert list(a["accuracy"]) == list(b["accuracy"])


def test_finished_runs_are_skipped_unless_forced(tiny_spec, tmp_path, capsys, trained_runs):
    out = tmp_path / "r"
    trained_runs.copied_experiment(TINY_TRAINING_SPEC, out)  # the tiny spec's runs, finished
    code, stdout, _ = run_cli(capsys, "run", tiny_spec, "--out", out, "--set", "seeds=[0]")
    assert code == 0 and "2 of 2 runs done before, reused" in stdout
    code, stdout, _ = run_cli(capsys, "run", tiny_spec, "--out", out, "--set", "seeds=[0]", "--force")
    assert code == 0 and "done before" not in stdout and "[2/2]" in stdout


def test_set_and_table_from_the_command_line(tiny_spec, tmp_path, capsys):
    out = tmp_path / "r"
    code, stdout, _ = run_cli(capsys, "run", tiny_spec, "--out", out, "--set", "model.cell=gru", "--set", "seeds=[0,1]",
                              "--set", "task.lag=2")
    # The spec's expectation selects model.cell=lstm, which --set removed: skipped, and said so.
    assert code == 0
    assert "skipped claim 'accuracy is a share': --set leaves none of its runs" in stdout
    assert "Expectations" not in (out / "tiny" / "table.md").read_text()
    runs = pd.read_csv(out / "tiny" / "runs.csv")
    assert list(runs["model.cell"]) == ["gru", "gru"] and list(runs["seed"]) == [0, 1]
    code, stdout, _ = run_cli(capsys, "table", out / "tiny", "--rows", "model.cell", "--value", "accuracy")
    assert code == 0 and "| gru" in stdout and "±" in stdout
    code, stdout, _ = run_cli(capsys, "table", out / "tiny", "--rows", "seed", "--columns", "model.cell",
                              "--value", "accuracy", "--format", "csv")
    # CSV is data: a column per statistic, numbers in them (one seed per cell: no std); the corner names both keys.
    assert code == 0 and stdout.splitlines()[0] == "seed \\ model.cell,gru mean,gru std,gru n"
    first = stdout.splitlines()[1].split(",")
    assert first[0] == "0" and float(first[1]) == runs["accuracy"][0] and first[2:] == ["", "1"]
    code, stdout, _ = run_cli(capsys, "table", out / "tiny", "--rows", "model.cell", "--value", "accuracy",
                              "--format", "csv")
    header, row = stdout.splitlines()[:2]
    assert header == "model.cell,accuracy mean,accuracy std,accuracy n" and row.startswith("gru,")
    assert float(row.split(",")[2]) == pytest.approx(runs["accuracy"].std()) and row.endswith(",2")
    code, _, stderr = run_cli(capsys, "table", out / "tiny", "--rows", "model.cel", "--value", "accuracy")
    assert code == 2 and "Did you mean 'model.cell'?" in stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("model:", "modle:"), "Did you mean 'model'?"),
        (lambda t: t.replace("units: 4", "units: four"), "model.units"),
        (lambda t: t.replace("[simple_rnn, lstm]", "[simple_rnn, lsmt]"), "Did you mean 'lstm'?"),
        (lambda t: t.replace("model.cell: [", "model.cel: ["), "matrix.model.cel"),
    ],
)
def test_spec_errors_exit_2_without_traceback(write_spec, tmp_path, capsys, edit, message):
    path = write_spec(edit(TINY_TRAINING_SPEC))
    code, stdout, stderr = run_cli(capsys, "run", path, "--out", tmp_path / "r")
    assert code == 2
    assert message in stderr and str(path) in stderr
    assert "Traceback" not in stderr + stdout
    assert not (tmp_path / "r" / "tiny").exists()  # nothing ran


def test_a_wrong_expectation_exits_1_and_says_not_reproduced(write_spec, tmp_path, capsys):
    path = write_spec(
        """
        version: 1
        name: wrong-claim
        probe: {name: memory, cell: simple_rnn, recurrent_weight: 0.9}
        expect:
          - {claim: "memory is 0.5 (it is not)", metric: memory, value: 0.5, decimals: 3}
          - {claim: "memory is tiny", metric: memory, at_most: 1.0e-4}
        """
    )
    code, stdout, stderr = run_cli(capsys, "run", path, "--out", tmp_path)
    assert code == 1
    page = (tmp_path / "wrong-claim" / "table.md").read_text()
    assert "| memory is 0.5 (it is not) | 0.500      | 0.000      | NOT reproduced |" in page
    assert "1 of 2 reproduced" in page and "1 expectation(s) not reproduced" in stderr


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(write_spec, tmp_path, capsys):
    text_file = tmp_path / "text.txt"
    text_file.write_text("abcdefghij" * 60)
    short_file = tmp_path / "short.txt"  # exists, so it validates; too short for a window: fails when built
    short_file.write_text("abc")
    path = write_spec(
        f"""
        version: 1
        name: one-fails
        task: {{name: char_lm, seq_length: 8, n_train: 32, n_test: 8}}
        model: {{kind: lm, cell: simple_rnn, units: 4}}
        train: {{epochs: 1, batch_size: 16, verbose: 0}}
        matrix:
          task.path: ["{short_file}", "{text_file}"]
        """
    )
    code, stdout, stderr = run_cli(capsys, "run", path, "--out", tmp_path / "r")
    assert code == 1
    runs = pd.read_csv(tmp_path / "r" / "one-fails" / "runs.csv")
    assert list(runs["status"]) == ["failed", "ok"]
    assert "too few for windows of 8" in runs["error"][0]
    assert runs["perplexity"][1] > 1
    assert "## Failed runs" in (tmp_path / "r" / "one-fails" / "table.md").read_text()
    assert "1 failed run(s)" in stderr


def test_validate_and_list(tiny_spec, capsys):
    code, stdout, _ = run_cli(capsys, "validate", tiny_spec)
    assert code == 0 and "tiny: 4 runs" in stdout
    code, stdout, _ = run_cli(capsys, "list")
    assert code == 0
    for heading in ("TASKS:", "MODEL KINDS:", "CELLS:", "PROBES:", "METRICS:", "DECODERS:"):
        assert heading in stdout
    assert "gradient_flow" in stdout and "forget_bias" in stdout and "one of simple_rnn|lstm|gru" in stdout
    # Every section's options, from the models that validate them, not only the components.
    sections = stdout[stdout.index("SECTIONS:"):stdout.index("TASKS:")]
    for heading in ("(top level)", "train", "train.optimizer", "train.early_stopping", "evaluate", "table",
                    "expect", "plots"):
        assert f"\n  {heading}\n" in sections
    for option in ("validation_split (float, default 0.0, ≥ 0, < 0.5)", "early_stopping (EarlyStoppingSpec | None",
                   "verbose (one of 0|1|2, default 1)", "distribution (one of none|mirrored", "tensorboard (bool",
                   "patience (int, default 2, ≥ 1)", "decoders (list[GreedyChoice | BeamChoice | SampleChoice]"):
        assert option in sections, option


def test_missing_path_is_a_clear_error(tmp_path, capsys):
    code, _, stderr = run_cli(capsys, "validate", tmp_path / "nope.yaml")
    assert code == 2 and "no such file or folder" in stderr


def test_dry_run_lists_what_would_run_and_reuse_and_writes_nothing(write_spec, tmp_path, capsys):
    path = write_spec(
        """
        version: 1
        name: planned
        probe: {name: memory, cell: simple_rnn}
        matrix:
          probe.recurrent_weight: [0.5, 0.9]
        """
    )
    out = tmp_path / "results"

    def plan(*extra):
        code, stdout, _ = run_cli(capsys, "run", path, "--out", out, "--dry-run", *extra)
        assert code == 0
        return [line.split()[0] for line in stdout.splitlines() if line.startswith("  ") and "_seed=" in line]

    assert plan() == ["run", "run"]
    assert not out.exists()
    assert run_cli(capsys, "run", path, "--out", out)[0] == 0
    written = sorted(out.rglob("*"))
    assert plan() == ["reuse", "reuse"]
    assert plan("--force") == ["run", "run"]
    assert sorted(out.rglob("*")) == written


def test_progress_names_each_run_when_it_starts_and_counts_done_failed_and_time_left(tiny_spec, tmp_path, capsys):
    code, stdout, stderr = run_cli(capsys, "run", tiny_spec, "--out", tmp_path, "--set", "train.epochs=2",
                                   "--set", "train.verbose=2")
    assert code == 0
    lines = stdout.splitlines()
    runs = pd.read_csv(tmp_path / "tiny" / "runs.csv")["run_id"].tolist()
    started = [line for line in lines if line.startswith("started run ")]
    assert started == [f"started run {i} of 4: {run_id}" for i, run_id in enumerate(runs, start=1)]
    # Each run's epochs, counted as the spec counts them, on TensorFlow as on torch: on stderr, which is no
    # terminal here, so each line names its run (tests/test_progress.py has the bar).
    epochs = {}
    for line in stderr.splitlines():
        if match := re.match(r"\[(.+)\] (Epoch \d+/\d+) - ", line):
            epochs.setdefault(match[1], []).append(match[2])
    assert epochs == {f"cell={cell}, seed={seed}": ["Epoch 1/2", "Epoch 2/2"]
                      for cell in ("simple_rnn", "lstm") for seed in (0, 1)}, stderr
    assert "Epoch" not in stdout
    done = [line for line in lines if line.startswith("[")]
    assert "; 1 of 4 done, " in done[0] and " elapsed, about " in done[0] and done[0].endswith(" left")
    assert "; 4 of 4 done, " in done[-1] and "left" not in done[-1]
