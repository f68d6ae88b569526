"""Decoded validation scores (train.validation_decoding): BLEU, chrF and exact match of greedy outputs on the
validation pairs, every N epochs, watched by early stopping and recorded in history.csv and the training summary.

The scorer is checked against the evaluator: scoring the test pairs with it gives the test's own greedy BLEU and
exact match (two code paths, one number). Then a run stops early on val_bleu, and the spec's rules are refused in
one line each. tests/torch_backend and tests/jax_backend run the training checks on their backends.
"""

from __future__ import annotations

import dataclasses
import json
import math

import keras
import pandas as pd
import pytest

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment


def spec(train: dict, task: dict | None = None) -> dict:
    return {"version": 1, "name": "decoded",
            "task": {"name": "reverse", "n_train": 200, "n_test": 30, "min_length": 2, "max_length": 4, "symbols": 4,
                     **(task or {})},
            "model": {"kind": "seq2seq", "cell": "gru", "units": 16, "embedding_dim": 8},
            "train": {"epochs": 2, "batch_size": 32, "verbose": 0, "validation_split": 0.2,
                      "optimizer": {"learning_rate": 0.01}, **train},
            "evaluate": {"metrics": ["bleu", "chrf", "exact_match"]},
            "seeds": [0]}


def test_the_scorer_gives_the_evaluators_greedy_scores_on_the_same_pairs(tmp_path):
    from seqkeras.evaluation.seq2seq import evaluate, validation_scorer
    from seqkeras.training import trainer

    longer = {"n_train": 400, "min_length": 4, "max_length": 6}  # 4-grams to count: BLEU above 0
    decoding = {"metrics": ["bleu", "chrf", "exact_match"]}
    experiment = build_experiment(spec({"epochs": 3, "validation_decoding": decoding}, longer), source="<dict>",
                                  overrides=[])
    (run,) = experiment.runs
    data = run.task.component.load()(run.task.params, run.seed)
    model = run.model.component.load()(run.model.params, data)
    scorer = validation_scorer(model, data, run)
    history, _ = trainer.fit(model, data, run.train, seed=0, score_decoded=scorer)
    assert history["val_bleu"].notna().all() and history["val_chrf"].between(0, 100).all()
    (row,) = evaluate(model, data, run, tmp_path)
    on_test = scorer(data.x_test, data.y_test)
    assert on_test["bleu"] == pytest.approx(row.metrics["bleu"]) and on_test["bleu"] > 0
    assert on_test["exact_match"] == pytest.approx(row.metrics["exact_match"])
    assert on_test["chrf"] == pytest.approx(row.metrics["chrf"])
    three = run.train.validation_decoding.model_copy(update={"max_pairs": 3})
    first = validation_scorer(model, data, dataclasses.replace(
        run, train=run.train.model_copy(update={"validation_decoding": three})))
    assert first(data.x_test, data.y_test)["exact_match"] in (0.0, 1 / 3, 2 / 3, 1.0)  # three pairs decoded


def test_early_stopping_watches_val_bleu_decoded_every_second_epoch(tmp_path):
    train = {"epochs": 6, "validation_decoding": {"metrics": ["bleu"], "every": 2},
             "early_stopping": {"monitor": "val_bleu", "patience": 1}}
    results = seqkeras.run(spec(train), out=tmp_path, backend=keras.backend.backend())
    assert results.runs["status"].tolist() == ["ok"], results.runs.get("error")
    (run_id,) = results.runs["run_id"]
    history = pd.read_csv(results.folder / run_id / "history.csv")
    decoded = history["val_bleu"].tolist()
    assert [math.isnan(value) for value in decoded[:4]] == [True, False, True, False]  # epochs 2, 4, 6 decoded
    measured = [(epoch, value) for epoch, value in zip(history["epoch"], decoded) if not math.isnan(value)]
    best = max(value for _, value in measured)
    summary = json.loads((results.folder / run_id / "metrics.json").read_text())["training"]
    assert summary["monitor"] == "val_bleu" and summary["best"] == pytest.approx(best)
    assert summary["best_epoch"] % 2 == 0  # only a decoded epoch can be the best
    best_so_far, stop_at = -math.inf, 6  # the rule, by hand: the first decoding without a new best stops it
    for epoch, value in measured:
        if value <= best_so_far:
            stop_at = epoch
            break
        best_so_far = value
    assert len(history) == stop_at
    assert summary["stopped_by"] == ("early_stopping" if stop_at < 6 else "budget")


def refused(train: dict, **other) -> str:
    with pytest.raises(SpecError) as caught:
        build_experiment({**spec(train), **other}, source="<dict>", overrides=[])
    return str(caught.value)


def test_specs_that_cannot_decode_validation_pairs_are_refused_naming_the_key():
    classifier = {"task": {"name": "delayed_recall", "lag": 3}, "model": {"kind": "classifier"},
                  "evaluate": {"metrics": ["accuracy"]}}
    assert "train.validation_decoding" in refused({"validation_decoding": {}}, **classifier)
    assert "seq2seq tasks only" in refused({"validation_decoding": {}}, **classifier)
    blind = refused({"validation_split": 0.0, "validation_decoding": {}})
    assert "train.validation_decoding" in blind and "validation pairs" in blind
    unmeasured = refused({"early_stopping": {"monitor": "val_chrf"}, "validation_decoding": {"metrics": ["bleu"]}})
    assert "train.early_stopping.monitor" in unmeasured and "must list 'chrf'" in unmeasured
    assert "train.reduce_on_plateau.monitor" in refused({"reduce_on_plateau": {"monitor": "val_bleu"}})
    assert "train.validation_decoding.metrics" in refused({"validation_decoding": {"metrics": ["rouge"]}})


def test_runs_without_validation_decoding_keep_their_run_ids():
    plain = build_experiment(spec({}), source="<dict>", overrides=[]).runs[0]
    assert "validation_decoding" not in plain.resolved["train"]
    decoded = build_experiment(spec({"validation_decoding": {}}), source="<dict>", overrides=[]).runs[0]
    assert decoded.resolved["train"]["validation_decoding"]["metrics"] == ["bleu"]
    assert decoded.run_id != plain.run_id
