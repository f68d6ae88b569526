"""Evaluate a trained language model (any kind): test perplexity, and generation when asked.

The test metrics come from the probability each model gives every test target
and its most probable token (`TargetScores`), computed batch by batch, so the
full [N, L, V] distribution over a word vocabulary is never held in memory at
once (the generic evaluator's way); the run's metrics are computed from them
through the metric registry (`language_model_metrics`). A model kind that
declares it scores targets itself (`Abilities.scores`: the n-gram counts) is
asked with `model.score(x, y)`; every other model is a Keras model, read
through its softmax.

With `evaluate.generate` or `evaluate.decoders`, the model also continues the
prompts with every decoder (`seqkeras.evaluation.generation`): one row per decoder,
holding the test metrics and the samples' metrics, and `samples.csv` in the
run folder lists every continuation.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from seqkeras.decoding.decoders import GreedyChoice, decoder_keys, decoder_label
from seqkeras.evaluation.generation import SECONDS_PER_SAMPLE, generate, sample_metrics, text_of
from seqkeras.evaluation.language_model_metrics import TargetScores
from seqkeras.evaluation.metric_catalog import compute
from seqkeras.evaluation.metrics import perplexity_of
from seqkeras.evaluation.rows import EvaluationRow
from seqkeras.evaluation.settings import GenerateSpec
from seqkeras.registry import Abilities
from seqkeras.results.folder import write_csv
from seqkeras.tasks.base import LANGUAGE_MODELING

# Test windows scored per call of a Keras model: small enough that [batch, L, V]
# probabilities stay small for word vocabularies.
SCORE_BATCH = 64


def score(model, x: np.ndarray, y: np.ndarray, batch_size: int = SCORE_BATCH,
          scores_itself: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """P(target) and the most probable id at every position, both [N, L].

    `scores_itself`: what the model kind declares (`Abilities.scores`): the model's own `score`, else a Keras
    predict.
    """
    if scores_itself:
        return model.score(x, y)
    chosen, predicted = [], []
    for start in range(0, len(x), batch_size):
        probabilities = np.asarray(model.predict_on_batch(x[start : start + batch_size]))
        targets = y[start : start + batch_size]
        chosen.append(np.take_along_axis(probabilities, targets[..., None], axis=-1)[..., 0])
        predicted.append(probabilities.argmax(axis=-1))
    return np.concatenate(chosen), np.concatenate(predicted)


# What `token_metrics` gives: every language-modelling metric of the scores alone.
TOKEN_METRICS = ("cross_entropy", "perplexity", "token_accuracy")


def token_metrics(probabilities: np.ndarray, predicted: np.ndarray, targets: np.ndarray,
                  mask: np.ndarray) -> dict[str, float]:
    """cross_entropy (nats per token), perplexity and token_accuracy over the real tokens, through the registry."""
    return compute(TOKEN_METRICS, LANGUAGE_MODELING, TargetScores(probabilities, predicted, targets, mask))


def generation_spec(run) -> GenerateSpec | None:
    """The run's `evaluate.generate`, the defaults when only decoders are given, None for neither."""
    settings = (run.resolved.get("evaluate") or {}).get("generate")
    if settings is not None:
        return GenerateSpec.model_validate(settings)
    return GenerateSpec() if run.decoders else None


def validation_scorer(model, data, run):
    """`score(validation windows, their next tokens)`: run.train.validation_metrics' metrics (perplexity,
    token_accuracy, cross_entropy) of the (first max_examples) validation windows, computed as the test's are, for
    the trainer to watch and a study to tune on (val_perplexity)."""
    settings = run.train.validation_metrics
    abilities: Abilities = run.model.component.abilities_for(run.model.params)
    batch_size = min(run.train.batch_size, SCORE_BATCH)

    def scores(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
        x, y = x[: settings.max_examples], y[: settings.max_examples]
        probabilities, predicted = score(model, x, y, batch_size, scores_itself=abilities.scores)
        return compute(settings.metrics, LANGUAGE_MODELING, TargetScores(probabilities, predicted, y, x != 0))

    return scores


def evaluate(model, data, run, folder: Path) -> list[EvaluationRow]:
    abilities: Abilities = run.model.component.abilities_for(run.model.params)
    batch_size = run.train.batch_size if run.train else SCORE_BATCH
    probabilities, predicted = score(model, data.x_test, data.y_test, min(batch_size, SCORE_BATCH),
                                     scores_itself=abilities.scores)
    metrics = compute(run.metrics, LANGUAGE_MODELING,
                      TargetScores(probabilities, predicted, data.y_test, data.x_test != 0))

    spec = generation_spec(run)
    if spec is None:
        return [EvaluationRow(metrics)]
    window = data.x_train.shape[1]
    rows, shown = [], []
    # How the model kind's models are stepped: through their own scores, their own step model, or the prefix.
    declared = {"scores_itself": abilities.scores, "own_step_model": run.model.component.step_model}
    greedy = generate(model, data, GreedyChoice(), spec, window, **declared)  # the reference of greedy_prefix
    for choice in run.decoders or [GreedyChoice()]:
        started = time.perf_counter()
        samples = generate(model, data, choice, spec, window, run_seed=run.seed, **declared)
        seconds = time.perf_counter() - started
        label = decoder_label(choice)
        row = {**metrics, **sample_metrics(samples, spec, greedy), SECONDS_PER_SAMPLE: seconds / len(samples)}
        rows.append(EvaluationRow(row, keys=decoder_keys(choice) if run.decoders else {}))
        shown += [
            {
                "decoder": label,
                "prompt": sample.prompt,
                "continuation": text_of(data, sample.tokens),
                "log_prob": sample.log_prob,
                "perplexity": perplexity_of(-sample.log_prob / len(sample.tokens)) if sample.tokens else math.nan,
            }
            for sample in samples
        ]
    write_csv(folder / "samples.csv", pd.DataFrame(shown))
    return rows
