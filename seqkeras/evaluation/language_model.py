"""Evaluate a trained language model (any kind): test perplexity, and generation when asked.

The test metrics come from the probability each model gives every test target
and its most probable token, computed batch by batch, so the full [N, L, V]
distribution over a word vocabulary is never held in memory at once (the
generic evaluator's way). The numbers are those of `seqkeras.evaluation.metrics`: the
same clipping, the same mask (real input tokens). A count-based model (n-gram)
scores the targets itself (`score(x, y)`); every other model is a Keras model.

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

from seqkeras.decoding.decoders import GreedyChoice, decoder_label
from seqkeras.evaluation.generation import SECONDS_PER_SAMPLE, GenerateSpec, generate, sample_metrics, text_of
from seqkeras.evaluation.metrics import EPSILON, perplexity_of
from seqkeras.evaluation.rows import EvaluationRow
from seqkeras.results.folder import write_csv
from seqkeras.spec.runs import decoder_keys

# Test windows scored per call of a Keras model: small enough that [batch, L, V]
# probabilities stay small for word vocabularies.
SCORE_BATCH = 64


def score(model, x: np.ndarray, y: np.ndarray, batch_size: int = SCORE_BATCH) -> tuple[np.ndarray, np.ndarray]:
    """P(target) and the most probable id at every position, both [N, L]."""
    if hasattr(model, "score"):
        return model.score(x, y)
    chosen, predicted = [], []
    for start in range(0, len(x), batch_size):
        probabilities = np.asarray(model.predict_on_batch(x[start : start + batch_size]))
        targets = y[start : start + batch_size]
        chosen.append(np.take_along_axis(probabilities, targets[..., None], axis=-1)[..., 0])
        predicted.append(probabilities.argmax(axis=-1))
    return np.concatenate(chosen), np.concatenate(predicted)


def token_metrics(probabilities: np.ndarray, predicted: np.ndarray, targets: np.ndarray,
                  mask: np.ndarray) -> dict[str, float]:
    """cross_entropy (nats per token), perplexity and token_accuracy over the real tokens."""
    real = max(int(mask.sum()), 1)
    nll = -np.log(np.clip(probabilities, EPSILON, 1.0))
    cross_entropy = float(np.sum(nll * mask) / real)
    return {
        "cross_entropy": cross_entropy,
        "perplexity": perplexity_of(cross_entropy),
        "token_accuracy": float(np.sum((predicted == targets) & mask) / real),
    }


def generation_spec(run) -> GenerateSpec | None:
    """The run's `evaluate.generate`, the defaults when only decoders are given, None for neither."""
    settings = (run.resolved.get("evaluate") or {}).get("generate")
    if settings is not None:
        return GenerateSpec.model_validate(settings)
    return GenerateSpec() if run.decoders else None


def evaluate(model, data, run, folder: Path) -> list[EvaluationRow]:
    batch_size = run.train.batch_size if run.train else SCORE_BATCH
    probabilities, predicted = score(model, data.x_test, data.y_test, min(batch_size, SCORE_BATCH))
    computed = token_metrics(probabilities, predicted, data.y_test, data.x_test != 0)
    unknown = [name for name in run.metrics if name not in computed]
    if unknown:
        raise ValueError(f"the language-model evaluator does not compute {', '.join(unknown)}")
    metrics = {name: computed[name] for name in run.metrics}

    spec = generation_spec(run)
    if spec is None:
        return [EvaluationRow(metrics)]
    window = data.x_train.shape[1]
    rows, shown = [], []
    greedy = generate(model, data, GreedyChoice(), spec, window)  # the reference of greedy_prefix
    for choice in run.decoders or [GreedyChoice()]:
        started = time.perf_counter()
        samples = generate(model, data, choice, spec, window, run_seed=run.seed)
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
