"""A torch run computes on one thread unless its model is large enough for more to pay (seqkeras.backends.threads)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import keras
import torch

from seqkeras.backends import threads


def lstm_model(units: int, features: int = 16) -> keras.Model:
    return keras.Sequential([keras.Input((10,), dtype="int32"), keras.layers.Embedding(1000, features),
                             keras.layers.LSTM(units), keras.layers.Dense(4)])


def test_step_work_counts_the_weights_outside_embeddings_times_the_batch():
    model = lstm_model(32)
    lstm = 4 * 32 * (16 + 32 + 1)
    dense = 32 * 4 + 4
    assert threads.step_work(model, 32) == 32 * (lstm + dense)  # the 16,000-weight embedding is a lookup


def test_small_models_run_on_one_thread_large_ones_on_the_process_share(monkeypatch):
    monkeypatch.setattr(threads, "_share", 2)
    monkeypatch.setattr(threads, "idle_cores", lambda: 2)  # an idle machine; the load is the next test's
    saved = torch.get_num_threads()
    try:
        assert threads.for_run(lstm_model(32), batch_size=32) == 1 and torch.get_num_threads() == 1
        # batch 32 × 128 units: 2.4 million multiply-adds a step, where a second thread lost
        assert threads.for_run(lstm_model(128), batch_size=32) == 1
        # batch 32 × 256 units: 8.9 million, where it paid
        assert threads.for_run(lstm_model(256), batch_size=32) == 2 and torch.get_num_threads() == 2
        assert threads.current() == 2
    finally:
        torch.set_num_threads(saved)


def test_seqkeras_threads_overrides_the_rule(monkeypatch):
    monkeypatch.setattr(threads, "_share", 2)
    monkeypatch.setenv("SEQKERAS_THREADS", "1")
    saved = torch.get_num_threads()
    try:
        assert threads.for_run(lstm_model(256), batch_size=32) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(saved)


def test_a_large_model_takes_no_more_threads_than_the_idle_cores(monkeypatch):
    """With one of two cores held by other work, a second thread would wait for it (1.9× slower a step)."""
    monkeypatch.setattr(threads, "_share", 2)
    monkeypatch.setattr(threads, "idle_cores", lambda: 1)
    saved = torch.get_num_threads()
    try:
        assert threads.for_run(lstm_model(256), batch_size=32) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(saved)
