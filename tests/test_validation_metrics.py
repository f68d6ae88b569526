"""Validation data scored by the task's metrics (train.validation_metrics): BLEU, chrF and exact match of greedy
outputs on the validation pairs, a classifier's macro F1, a tagger's entity F1, every N evaluations, watched by early
stopping and recorded in history.csv and the training summary.

Each scorer is checked against its evaluator: scoring the test data with it gives the test's own metrics (two code
paths, one number). Then a run stops early on val_bleu, and the spec's rules are refused in one line each.
tests/torch_backend and tests/jax_backend run the training checks on their backends (tests/training_controls.py).
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


def test_the_seq2seq_scorer_gives_the_evaluators_greedy_scores_on_the_same_pairs(tmp_path):
    from seqkeras.evaluation.seq2seq import evaluate, validation_scorer
    from seqkeras.training import trainer

    longer = {"n_train": 400, "min_length": 4, "max_length": 6}  # 4-grams to count: BLEU above 0
    decoding = {"metrics": ["bleu", "chrf", "exact_match"]}
    experiment = build_experiment(spec({"epochs": 3, "validation_metrics": decoding}, longer), source="<dict>",
                                  overrides=[])
    (run,) = experiment.runs
    data = run.task.component.load()(run.task.params, run.seed)
    model = run.model.component.load()(run.model.params, data)
    scorer = validation_scorer(model, data, run)
    history, _ = trainer.fit(model, data, run.train, seed=0, score_validation=scorer)
    assert history["val_bleu"].notna().all() and history["val_chrf"].between(0, 100).all()
    (row,) = evaluate(model, data, run, tmp_path)
    on_test = scorer(data.x_test, data.y_test)
    assert on_test["bleu"] == pytest.approx(row.metrics["bleu"]) and on_test["bleu"] > 0
    assert on_test["exact_match"] == pytest.approx(row.metrics["exact_match"])
    assert on_test["chrf"] == pytest.approx(row.metrics["chrf"])
    three = run.train.validation_metrics.model_copy(update={"max_examples": 3})
    first = validation_scorer(model, data, dataclasses.replace(
        run, train=run.train.model_copy(update={"validation_metrics": three})))
    assert first(data.x_test, data.y_test)["exact_match"] in (0.0, 1 / 3, 2 / 3, 1.0)  # three pairs decoded


def test_early_stopping_watches_val_bleu_decoded_every_second_epoch(tmp_path):
    train = {"epochs": 6, "validation_metrics": {"metrics": ["bleu"], "every": 2},
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


def test_specs_that_cannot_score_validation_data_are_refused_naming_the_key():
    classifier = {"task": {"name": "delayed_recall", "lag": 3}, "model": {"kind": "classifier"},
                  "evaluate": {"metrics": ["accuracy"]}}
    bleu = refused({"validation_metrics": {}}, **classifier)
    assert bleu.startswith("train.validation_metrics.metrics[0]") and "'bleu' cannot be scored" in bleu
    assert "macro_f1" in bleu and "accuracy" not in bleu.split(":", 2)[-1]
    accuracy = refused({"validation_metrics": {"metrics": ["accuracy"]}}, **classifier)
    assert "val_accuracy is in the history already" in accuracy
    counted = {"task": {"name": "char_lm"}, "model": {"kind": "ngram"}, "evaluate": {"metrics": ["perplexity"]}}
    assert "model kind 'ngram' cannot be scored" in refused({"validation_metrics": {"metrics": ["perplexity"]}},
                                                             **counted)
    blind = refused({"validation_split": 0.0, "validation_metrics": {}})
    assert "train.validation_metrics" in blind and "validation_split > 0" in blind
    unmeasured = refused({"early_stopping": {"monitor": "val_chrf"}, "validation_metrics": {"metrics": ["bleu"]}})
    assert "train.early_stopping.monitor" in unmeasured and "must list 'chrf'" in unmeasured
    assert "train.reduce_on_plateau.monitor" in refused({"reduce_on_plateau": {"monitor": "val_bleu"}})
    assert "train.validation_metrics.metrics[0]" in refused({"validation_metrics": {"metrics": ["rouge"]}})


def test_every_scorable_metric_improves_the_way_early_stopping_reads_it():
    # Early stopping reads a monitor's direction from its name (training may not import the metric catalog): for
    # every metric a kind can score, that reading must be the catalog's direction.
    from seqkeras import catalog
    from seqkeras.evaluation.metric_catalog import METRICS
    from seqkeras.spec.checks import validation_metric_names
    from seqkeras.spec.runs import ResolvedComponent
    from seqkeras.training.convergence import higher_is_better

    checked = 0
    for kind in catalog.MODELS:
        model = ResolvedComponent(kind, kind.params())
        for name in validation_metric_names(model):
            assert higher_is_better(f"val_{name}") == (METRICS.get(name).direction == "maximize"), name
            checked += 1
    assert checked >= 12


@pytest.mark.parametrize("task,model,metrics", [
    ({"name": "delayed_recall", "lag": 3, "n_train": 96, "n_test": 32},
     {"kind": "classifier", "cell": "gru", "units": 8, "embedding_dim": 4}, ["macro_f1", "cross_entropy"]),
    ({"name": "bio_toy", "n_train": 96, "n_test": 32},
     {"kind": "tagger", "cell": "gru", "units": 8, "embedding_dim": 4}, ["entity_f1", "token_accuracy"]),
])
def test_a_classifier_and_a_tagger_are_scored_on_validation_data_as_on_the_test_set(task, model, metrics, tmp_path):
    from seqkeras.evaluation.rows import evaluate_predictions, validation_scorer
    from seqkeras.training import trainer

    experiment = build_experiment(
        {"version": 1, "name": "scored", "task": task, "model": model, "seeds": [0],
         "train": {"epochs": 2, "batch_size": 16, "verbose": 0, "validation_split": 0.25,
                   "validation_metrics": {"metrics": metrics},
                   "early_stopping": {"monitor": f"val_{metrics[0]}", "patience": 2}},
         "evaluate": {"metrics": metrics}}, source="<dict>", overrides=[])
    (run,) = experiment.runs
    data = run.task.component.load()(run.task.params, run.seed)
    built = run.model.component.load()(run.model.params, data)
    scorer = validation_scorer(built, data, run)
    history, _ = trainer.fit(built, data, run.train, seed=0, score_validation=scorer)
    assert history[[f"val_{name}" for name in metrics]].notna().all().all()
    (row,) = evaluate_predictions(built, data, run, tmp_path)
    assert scorer(data.x_test, data.y_test) == pytest.approx(row.metrics)


@pytest.mark.parametrize("task,model,metrics,evaluator", [
    ({"name": "char_lm", "seq_length": 12, "n_train": 64, "n_test": 16},
     {"kind": "lm", "cell": "gru", "units": 8, "embedding_dim": 4}, ["perplexity", "token_accuracy"],
     "language_model"),
    ({"name": "char_lm", "seq_length": 12, "n_train": 64, "n_test": 16},
     {"kind": "transformer", "layers": 1, "num_heads": 2, "embedding_dim": 8, "intermediate_dim": 8},
     ["perplexity", "cross_entropy"], "language_model"),
    ({"name": "adding", "length": 10, "n_train": 64, "n_test": 16},
     {"kind": "regressor", "cell": "gru", "units": 8}, ["mse", "success_rate"], "regression"),
], ids=["lm", "transformer", "regressor"])
def test_a_language_model_and_a_regressor_are_scored_on_validation_data_and_tuned_on_it(task, model, metrics,
                                                                                        evaluator, tmp_path):
    """Perplexity (and a regressor's success rate) per epoch on the validation data, computed as the test's are:
    what `tune.objective: val_perplexity` studies."""
    import importlib

    from seqkeras.training import trainer

    module = importlib.import_module(f"seqkeras.evaluation.{evaluator}")
    raw = {"version": 1, "name": "scored", "task": task, "model": model, "seeds": [0],
           "train": {"epochs": 2, "batch_size": 16, "verbose": 0, "validation_split": 0.25,
                     "validation_metrics": {"metrics": metrics}},
           "evaluate": {"metrics": metrics}}
    (run,) = build_experiment(raw, source="<dict>", overrides=[]).runs
    data = run.task.component.load()(run.task.params, run.seed)
    built = run.model.component.load()(run.model.params, data)
    scorer = module.validation_scorer(built, data, run)
    history, _ = trainer.fit(built, data, run.train, seed=0, score_validation=scorer)
    assert history[[f"val_{name}" for name in metrics]].notna().all().all()
    (row,) = module.evaluate(built, data, run, tmp_path)
    assert scorer(data.x_test, data.y_test) == pytest.approx({name: row.metrics[name] for name in metrics})
    search = {"train.optimizer.learning_rate": {"log_uniform": [1e-3, 1e-2]}}
    tuned = build_experiment({**raw, "tune": {"search": search, "trials": 2, "objective": f"val_{metrics[0]}"}},
                             source="<dict>", overrides=[])
    assert tuned.spec.tune.objective == f"val_{metrics[0]}"


def test_runs_without_validation_metrics_keep_their_run_ids():
    plain = build_experiment(spec({}), source="<dict>", overrides=[]).runs[0]
    assert "validation_metrics" not in plain.resolved["train"]
    decoded = build_experiment(spec({"validation_metrics": {}}), source="<dict>", overrides=[]).runs[0]
    assert decoded.resolved["train"]["validation_metrics"]["metrics"] == ["bleu"]
    assert decoded.run_id != plain.run_id
