"""What a run says while it trains and a sweep while it runs: the bar on a terminal, labelled lines on a pipe or
when workers share the output, and the time left from measured run durations."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace

import pytest

from seqkeras.execution.progress import Progress, matrix_label, run_label
from seqkeras.training import progress as training_progress
from seqkeras.training.progress import EpochProgress, ProgressOutput
from tests.helpers import FakeTerminal

LOGS = {"accuracy": 0.5, "loss": 1.25}
# A redraw of the bar after some steps: steps done of the epoch's, then [elapsed<time left, rate].
BAR_WITH_RATE_AND_TIME_LEFT = re.compile(r"Epoch 1/2:.*\| [1-4]/4 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+(step/s|s/step)\]")


def said_over_one_epoch(verbose: int, stream, shared: bool = False) -> str:
    """What an EpochProgress wrote for an epoch of 4 steps (its label: `lstm, seed=0`)."""
    said = EpochProgress(verbose, epochs=2, output=ProgressOutput("cell=lstm, seed=0", shared), stream=stream)
    with said.bar(1, steps=4):
        for _ in range(4):
            if said.shows_steps:
                said.step_done()
    said.epoch_ended(1, 3.2, LOGS)
    return stream.getvalue()


@pytest.fixture
def every_step_drawn(monkeypatch):
    """The bar redrawn at every step, not at most every 0.1 s: what it shows does not depend on the clock."""
    monkeypatch.setattr(training_progress, "BAR_REFRESH_SECONDS", 0)


def test_verbose_1_on_a_terminal_draws_a_bar_with_rate_and_time_left_then_the_epoch_line(every_step_drawn):
    said = said_over_one_epoch(1, FakeTerminal())
    redraws = said.split("\r")
    assert len(redraws) > 4  # the bar is redrawn in place, one step after another
    assert any(BAR_WITH_RATE_AND_TIME_LEFT.search(redraw) for redraw in redraws), said
    # The finished bar is erased and the epoch's line stays: no label, the "started run" line above says whose.
    assert said.endswith("\rEpoch 1/2 - 3s - accuracy: 0.5000 - loss: 1.2500\n")


@pytest.mark.parametrize("verbose, stream, shared", [
    (2, FakeTerminal, False),  # verbose 2: a line per epoch, even on a terminal
    (1, io.StringIO, False),  # a pipe or a log file: a bar redrawn in place is unreadable there
    (1, FakeTerminal, True),  # a terminal shared by --jobs N workers: their bars would overwrite each other
], ids=["verbose 2 on a terminal", "verbose 1 on a pipe", "verbose 1 on a shared terminal"])
def test_one_line_per_epoch_where_no_bar_can_be_read(verbose, stream, shared):
    said = said_over_one_epoch(verbose, stream(), shared)
    labelled = stream is io.StringIO or shared
    prefix = "[cell=lstm, seed=0] " if labelled else ""
    assert said == f"{prefix}Epoch 1/2 - 3s - accuracy: 0.5000 - loss: 1.2500\n"


@pytest.mark.parametrize("stream", [FakeTerminal, io.StringIO])
def test_verbose_0_says_nothing(stream):
    assert said_over_one_epoch(0, stream()) == ""


def test_a_stream_without_isatty_is_no_terminal():
    class Bare:  # a notebook's or a wrapper's stream: write and flush only
        def __init__(self):
            self.text = ""

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    stream = Bare()
    said = EpochProgress(1, epochs=1, output=ProgressOutput("seed=0"), stream=stream)
    assert not said.shows_steps
    said.epoch_ended(1, 0.0, {"loss": 1.0})
    assert stream.text == "[seed=0] Epoch 1/1 - 0s - loss: 1.0000\n"


def test_the_trainer_steps_the_bar_once_per_batch_and_leaves_stdout_alone(every_step_drawn, monkeypatch, capsys):
    """Keras's fit (this process's backend) with a bar: its steps reach it through the trainer's callback."""
    import keras

    from seqkeras.tasks.delayed_recall import Params, build
    from seqkeras.training import trainer
    from seqkeras.training.settings import TrainSpec

    data = build(Params(lag=3, n_train=40, n_test=8), seed=0)  # 40 examples in batches of 16: 3 steps
    model = keras.Sequential([keras.layers.Embedding(len(data.vocabulary), 4), keras.layers.GRU(4),
                              keras.layers.Dense(data.num_outputs, activation="softmax")])
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    trainer.fit(model, data, TrainSpec(epochs=2, batch_size=16, verbose=1))
    said = terminal.getvalue()
    for epoch in (1, 2):
        assert f"Epoch {epoch}/2:" in said and re.search(rf"Epoch {epoch}/2:.*\| 3/3 \[", said), said
        assert re.search(rf"\rEpoch {epoch}/2 - \d+s - accuracy: [\d.]+ - loss: [\d.]+\n", said), said
    assert "4/3" not in said  # no step counted twice
    # stdout holds results only (and the suite's notes: on torch, that this unbuilt model trains on Keras's fit)
    assert all(line.startswith("note: ") for line in capsys.readouterr().out.splitlines())


def test_the_time_left_is_the_mean_measured_run_time_of_the_runs_left_over_the_runs_at_once():
    clock = iter([0.0, 40.0, 45.0, 50.0, 61.0]).__next__  # the workers' start-up made the first run end at 40 s
    progress = Progress(total=6, slots=2, clock=clock)
    assert progress.seconds_left() is None  # nothing measured yet: no guess
    progress.finished(failed=False, seconds=8.0)
    # 5 left, 2 at once, 8 s each: 20 s (from the time elapsed, 40 s × 5, it was 200 s).
    assert progress.seconds_left() == pytest.approx(20.0)
    assert str(progress) == "1 of 6 done, 40 s elapsed, about 20 s left"
    progress.finished(failed=False, seconds=12.0)
    assert progress.seconds_left() == pytest.approx(10.0 * 4 / 2)
    progress.finished(failed=True, seconds=0.1)  # failed at its start: not a run's duration
    progress.finished(failed=False, seconds=None)  # another process trained it: took this sweep no time
    assert progress.seconds_left() == pytest.approx(10.0 * 2 / 2)
    assert str(progress) == "4 of 6 done, 1 failed, 45 s elapsed, about 10 s left"
    progress.finished(failed=False, seconds=13.0)
    assert progress.seconds_left() == pytest.approx(11.0 * 1 / 1)  # one left: one worker, not two, works on it
    progress.finished(failed=False, seconds=11.0)
    assert progress.seconds_left() is None and str(progress) == "6 of 6 done, 1 failed, 50 s elapsed"


def test_a_run_is_labelled_by_its_matrix_point_and_seed():
    run = SimpleNamespace(matrix_values={"model.cell": "lstm", "task.lag": 50, "model.attention": None}, seed=1)
    assert run_label(run) == "cell=lstm, lag=50, seed=1"
    assert run_label(SimpleNamespace(matrix_values={}, seed=0)) == "seed=0"
    # Two keys ending alike keep their sections, or the label would not tell them apart.
    assert matrix_label({"model.units": 4, "task.units": 8, "train.epochs": 2}) == \
        "model.units=4, task.units=8, epochs=2"


@pytest.mark.slow
def test_two_workers_label_each_epoch_line_on_stderr(write_spec, tmp_path, capfd):
    """`--jobs 2`: both workers write to one stderr; each epoch line says whose it is, in order per run."""
    from seqkeras.cli import main

    spec = write_spec("""
        version: 1
        name: two
        task: {name: delayed_recall, lag: 3, n_train: 32, n_test: 8}
        model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
        train: {epochs: 2, batch_size: 16, verbose: 1}
        matrix:
          model.cell: [simple_rnn, lstm]
        seeds: [0]
    """)
    assert main(["run", str(spec), "--out", str(tmp_path), "--jobs", "2"]) == 0
    captured = capfd.readouterr()
    epochs = [line for line in captured.err.splitlines() if "Epoch " in line]
    assert "\r" not in "".join(epochs)  # no bar: the workers share the output
    by_run: dict[str, list[str]] = {}
    for line in epochs:
        label, _, rest = line.partition("] ")
        by_run.setdefault(label.removeprefix("["), []).append(rest.split(" - ")[0])
    assert by_run == {"cell=simple_rnn, seed=0": ["Epoch 1/2", "Epoch 2/2"],
                      "cell=lstm, seed=0": ["Epoch 1/2", "Epoch 2/2"]}, captured.err
    assert "Epoch" not in captured.out  # progress on stderr; stdout keeps the run lines and the tables
    assert "[2/2] " in captured.out and "| model.cell" in captured.out

