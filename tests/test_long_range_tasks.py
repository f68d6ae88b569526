"""The long-range benchmarks as tasks: the adding problem and copy memory, with their memoryless baselines."""

from __future__ import annotations

import numpy as np
import pytest

from seqkeras.evaluation import regression
from seqkeras.training.predictions import Predictions
from seqkeras.evaluation.metrics import cross_entropy
from seqkeras.tasks import adding, copy_memory
from tests.helpers import run_cli


def test_adding_marks_one_number_in_each_half_and_targets_their_sum():
    data = adding.build(adding.Params(length=30, n_train=50, n_test=20), seed=0)
    assert data.x_train.shape == (50, 30, 2) and data.y_train.shape == (50, 1) and data.num_outputs == 1
    markers = data.x_train[:, :, 1]
    assert np.all(markers.sum(axis=1) == 2)
    assert np.all(markers[:, :15].sum(axis=1) == 1) and np.all(markers[:, 15:].sum(axis=1) == 1)
    np.testing.assert_allclose(data.y_train[:, 0], (data.x_train[:, :, 0] * markers).sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(adding.build(adding.Params(length=30, n_train=50, n_test=20), 0).x_test, data.x_test)


def test_adding_baseline_is_the_variance_of_the_sum():
    """Always predicting 1 (Le et al. 2015's baseline) scores 2/12; baseline_mse measures it from the data."""
    data = adding.build(adding.Params(length=10, n_train=20_000, n_test=20_000), seed=1)
    always_one = regression.mse(np.ones_like(data.y_test), data)
    assert always_one == pytest.approx(2 / 12, abs=0.005)
    assert regression.baseline_mse(np.ones_like(data.y_test), data) == pytest.approx(2 / 12, abs=0.005)
    assert regression.mse(data.y_test, data) == 0


def test_copy_memory_asks_for_the_ten_symbols_after_the_delimiter():
    lag = 7
    data = copy_memory.build(copy_memory.Params(lag=lag, n_train=64, n_test=16), seed=0)
    words, tags = data.vocabulary.tokens, data.labels.tokens
    assert data.x_train.shape == data.y_train.shape == (64, lag + 20)
    row_words = [words[i] for i in data.x_train[0]]
    row_tags = [tags[i] for i in data.y_train[0]]
    assert (row_words[10:lag + 9] == ["_"] * (lag - 1) and row_words[lag + 9] == ":"
            and row_words[lag + 10:] == ["_"] * 10)
    assert row_tags[:lag + 10] == ["_"] * (lag + 10) and row_tags[lag + 10:] == row_words[:10]


def test_copy_memory_baseline_is_the_memoryless_cross_entropy():
    """Blanks, then 1/8 for each symbol over the last 10 steps: 10·log 8 / (T + 20), computed by the suite's metric."""
    lag = 30
    data = copy_memory.build(copy_memory.Params(lag=lag, n_train=200, n_test=50), seed=0)
    tags = data.labels.tokens
    probabilities = np.zeros(data.y_test.shape + (len(tags),))
    probabilities[:, :lag + 10, tags.index("_")] = 1.0
    for symbol in copy_memory.SYMBOLS:
        probabilities[:, lag + 10:, tags.index(symbol)] = 1 / 8
    memoryless = cross_entropy(Predictions(probabilities, data.y_test, data.x_test != 0))
    assert memoryless == pytest.approx(copy_memory.baseline_cross_entropy(lag))
    assert copy_memory.baseline_cross_entropy(100) == pytest.approx(10 * np.log(8) / 120)


def test_both_tasks_train_and_report_end_to_end(write_spec, tmp_path, capsys):
    spec = write_spec("""
        version: 1
        name: long-range-tiny
        task: {name: adding, length: 12, n_train: 64, n_test: 32}
        model: {kind: regressor, cell: gru, units: 4, update_bias: 1.0}
        train: {epochs: 1, batch_size: 32, verbose: 0}
        matrix:
          model.recurrent_initializer: [orthogonal, identity]
        table: {rows: model.recurrent_initializer, value: mse}
    """)
    code, out, _ = run_cli(capsys, "run", spec, "--out", tmp_path / "r")
    assert (code == 0 and "2 runs: 2 ok" in out
            and "baseline_mse" in (tmp_path / "r" / "long-range-tiny" / "runs.csv").read_text())
    copy = write_spec("""
        version: 1
        name: copy-tiny
        task: {name: copy_memory, lag: 5, n_train: 64, n_test: 32}
        model: {kind: tagger, cell: lstm, units: 8, chrono: 25}
        train: {epochs: 1, batch_size: 32, verbose: 0}
        evaluate: {metrics: [cross_entropy, token_accuracy]}
        expect:
          - {claim: "a share", metric: token_accuracy, at_least: 0, at_most: 1}
    """, name="copy.yaml")
    code, out, _ = run_cli(capsys, "run", copy, "--out", tmp_path / "r")
    assert code == 0 and "Expectations (1 of 1 reproduced)" in out


def test_a_regressor_takes_no_embedding():
    from seqkeras.models.recurrent import RegressorParams

    with pytest.raises(ValueError, match="embedding_dim does not apply to a regressor"):
        RegressorParams(embedding_dim=8)
