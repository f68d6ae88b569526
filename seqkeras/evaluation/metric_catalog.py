"""The metric registry: every metric a spec may name, and the one input type each problem kind's metrics read.

A metric is one function per problem kind it applies to, each a function of
that problem's input (`INPUTS`) returning one number, and the way it is better
(`direction`: higher, lower, or neither for a number that scores no model), which
`predict --best` and `evaluate --best` rank runs by. A problem's evaluator
makes the input from the trained model and the test set, then computes the
run's metrics from it with `compute`: no evaluator calls a metric by itself.
`seqkeras.catalog.METRICS` is this registry (the same object), for
`seqkeras list`, the schema and spec validation; `DEFAULT_METRICS` are what a
spec without `evaluate.metrics` reports (and `DEFAULTS_IN_RUN_IDS` what its run
ids hash in their place, so that a default added leaves every run id as it was).

Each entry names its functions directly: their modules import no Keras (a
slow library a metric needs, seqeval or sacrebleu, is imported inside its
function), so listing the metrics or validating a spec loads no backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from seqkeras.evaluation import classification, language_model_metrics, metrics, regression_metrics, seq2seq_metrics
from seqkeras.registry import Metric, Registry
from seqkeras import problems
from seqkeras.problems import CLASSIFICATION, LANGUAGE_MODELING, REGRESSION, SEQ2SEQ, TAGGING
from seqkeras.training.predictions import Predictions

# What every metric of a problem kind takes (the first parameter of each function is annotated so):
INPUTS: dict[str, type] = {
    # the model's test predictions: probabilities, targets, the mask of real tokens, decided ids, tag names
    CLASSIFICATION: Predictions,
    TAGGING: Predictions,
    # the probability of each test target and the most probable id ([N, L], never the whole [N, L, V])
    LANGUAGE_MODELING: language_model_metrics.TargetScores,
    # the predicted and true numbers, and the training targets (for the memoryless baseline)
    REGRESSION: regression_metrics.RegressionOutputs,
    # one decoder's outputs, the references, their log-probabilities, hits and decoding time
    SEQ2SEQ: seq2seq_metrics.DecodedOutputs,
}

# Not a number of its own: the seq2seq evaluator splits the outputs by source length with its function
# (`length_buckets`) and adds every other listed metric per bucket, as <metric>_len_<lo>_<hi>.
BY_LENGTH = "by_length"

METRICS = Registry(
    "metric",
    [
        Metric("accuracy", "Share of test sequences whose label is predicted correctly.",
               computes={CLASSIFICATION: metrics.accuracy}, direction="maximize"),
        # Opt-in: a spec names them (classification reports accuracy by default).
        Metric("macro_f1", "Mean over classes of each class's F1 (classes in the test labels or predictions; "
               "no true positive: F1 0, as scikit-learn's zero_division=0).",
               computes={CLASSIFICATION: classification.macro_f1}, direction="maximize"),
        Metric("macro_precision", "Mean over classes of each class's precision (classes in the test labels or "
               "predictions; a class never predicted counts 0, as scikit-learn's zero_division=0).",
               computes={CLASSIFICATION: classification.macro_precision}, direction="maximize"),
        Metric("macro_recall", "Mean over classes of each class's recall (classes in the test labels or "
               "predictions; a class only predicted, never true, counts 0, as scikit-learn's zero_division=0).",
               computes={CLASSIFICATION: classification.macro_recall}, direction="maximize"),
        Metric("token_accuracy", "Share of real (non-padding) tokens predicted correctly.",
               computes={TAGGING: metrics.token_accuracy, LANGUAGE_MODELING: language_model_metrics.token_accuracy},
               direction="maximize"),
        Metric("cross_entropy", "Mean negative log-likelihood per target, in nats.",
               computes={CLASSIFICATION: metrics.cross_entropy, TAGGING: metrics.cross_entropy,
                         LANGUAGE_MODELING: language_model_metrics.cross_entropy}, direction="minimize"),
        Metric("perplexity", "exp(cross-entropy) per token; a uniform model scores the vocabulary size.",
               computes={LANGUAGE_MODELING: language_model_metrics.perplexity}, direction="minimize"),
        Metric("entity_precision", "Share of predicted entities (type and both boundaries) that are true (seqeval).",
               computes={TAGGING: metrics.entity_precision}, direction="maximize"),
        Metric("entity_recall", "Share of true entities that are predicted exactly (seqeval).",
               computes={TAGGING: metrics.entity_recall}, direction="maximize"),
        Metric("entity_f1", "Harmonic mean of entity precision and recall, CoNLL style (seqeval).",
               computes={TAGGING: metrics.entity_f1}, direction="maximize"),
        Metric("invalid_transitions", "Predicted I-X tags that BIO forbids (after O or another type), counted.",
               computes={TAGGING: metrics.invalid_transitions}, direction="minimize"),
        Metric("mse", "Regression: mean squared error of the predictions on the test set.",
               computes={REGRESSION: regression_metrics.mse}, direction="minimize"),
        Metric("baseline_mse", "Regression: the MSE of always predicting the training targets' mean "
               "(a model that remembers nothing).",
               computes={REGRESSION: regression_metrics.baseline_mse}),
        # Opt-in, no problem's default: the adding problem's criterion (for its hochreiter_1997 variant) and, below,
        # position_accuracy, the Keras addition example's accuracy.
        Metric("success_rate", "Regression: share of test sequences whose absolute error is below 0.04 "
               "(Hochreiter & Schmidhuber 1997's criterion for the adding problem, on its target scaled to [0, 1]).",
               computes={REGRESSION: regression_metrics.success_rate}, direction="maximize"),
        Metric("bleu", "Seq2seq: sacrebleu corpus BLEU (0–100) of the outputs against the references.",
               computes={SEQ2SEQ: seq2seq_metrics.bleu}, direction="maximize"),
        Metric("chrf", "Seq2seq: sacrebleu corpus chrF (0–100), character n-gram F-score.",
               computes={SEQ2SEQ: seq2seq_metrics.chrf}, direction="maximize"),
        Metric("exact_match", "Seq2seq: share of outputs identical to their reference.",
               computes={SEQ2SEQ: seq2seq_metrics.exact_match}, direction="maximize"),
        Metric("position_accuracy", "Seq2seq: share of reference positions (the end not counted) where the output "
               "has the same token; over targets padded to one width (addition's pad_with_spaces), Keras's "
               "per-position accuracy, as the Keras addition example reports.",
               computes={SEQ2SEQ: seq2seq_metrics.position_accuracy}, direction="maximize"),
        Metric("teacher_forced_token_accuracy",
               "Seq2seq: share of reference tokens (and ends) predicted right when reading the true previous "
               "tokens.",
               computes={SEQ2SEQ: seq2seq_metrics.teacher_forced_token_accuracy}, direction="maximize"),
        Metric("free_running_token_accuracy",
               "Seq2seq: share of reference tokens (and ends) the decoder's own output matches, position by "
               "position.",
               computes={SEQ2SEQ: seq2seq_metrics.free_running_token_accuracy}, direction="maximize"),
        Metric("exposure_gap", "Seq2seq: teacher-forced minus free-running token accuracy (exposure bias).",
               computes={SEQ2SEQ: seq2seq_metrics.exposure_gap}),
        Metric("mean_log_prob", "Seq2seq: mean log P(output | source) under the model, in nats.",
               computes={SEQ2SEQ: seq2seq_metrics.mean_log_prob}, direction="maximize"),
        Metric("log_prob_per_token", "Seq2seq: the outputs' total log-probability per output token.",
               computes={SEQ2SEQ: seq2seq_metrics.log_prob_per_token}, direction="maximize"),
        Metric("length_ratio", "Seq2seq: output tokens / reference tokens (below 1: too short).",
               computes={SEQ2SEQ: seq2seq_metrics.length_ratio}),
        Metric("distinct_1", "Seq2seq: distinct tokens / all tokens over the outputs (diversity).",
               computes={SEQ2SEQ: seq2seq_metrics.distinct_1}),
        Metric("distinct_2", "Seq2seq: distinct bigrams / all bigrams over the outputs (diversity).",
               computes={SEQ2SEQ: seq2seq_metrics.distinct_2}),
        Metric("seconds_per_sequence", "Seq2seq: decoding time per test sequence.",
               computes={SEQ2SEQ: seq2seq_metrics.seconds_per_sequence}, direction="minimize"),
        Metric(BY_LENGTH, "Seq2seq: adds every other listed metric per source-length bucket, "
               "as <metric>_len_<lo>_<hi> (bucket width: task.bucket_width).",
               computes={SEQ2SEQ: seq2seq_metrics.length_buckets}),
    ],
)

# Each problem's defaults, as its module declares them (seqkeras.problems).
DEFAULT_METRICS = {problem.name: list(problem.default_metrics) for problem in problems.ALL}
DEFAULTS_IN_RUN_IDS = {problem.name: problem.metrics_in_run_ids for problem in problems.ALL}

# Checked at import: a metric of a problem without a declared input, or a problem without defaults, is a slip
# in the line that added it (and this module is what `seqkeras list` loads).
for _metric in METRICS:
    if not _metric.computes or set(_metric.computes) - set(INPUTS):
        raise ValueError(f"metric {_metric.name!r}: its problems {sorted(_metric.computes)} must be some of "
                         f"{sorted(INPUTS)}")
for _defaults in (DEFAULT_METRICS, DEFAULTS_IN_RUN_IDS):
    if set(_defaults) != set(INPUTS):
        raise ValueError(f"the defaults cover {sorted(_defaults)}, not every problem {sorted(INPUTS)}")


def applying_to(problem: str) -> list[Metric]:
    """Every metric of `problem`, in the registry's order."""
    return [metric for metric in METRICS if problem in metric.computes]


def compute(names: Iterable[str], problem: str, inputs: Any) -> dict[str, Any]:
    """Each named metric of `problem`, computed from that problem's input, by name and in the order given."""
    return {name: METRICS.get(name).function(problem)(inputs) for name in names}
