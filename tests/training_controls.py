"""The training controls' checks that must hold on every backend, gathered for tests/torch_backend and
tests/jax_backend to collect (`from tests.training_controls import *`): each is a test of tests/ run again in that
backend's process (on torch, the lean loop and fused Adam where it applies).

Batches by length (each of its own width), a learning-rate schedule and reduce-on-plateau (the rate each epoch
ends with), class weights, evaluations every N steps (the same model as every epoch), and validation data scored by
the task's metrics (BLEU of greedy outputs, macro F1, entity F1) as the test set is, watched by early stopping.
"""

from tests.test_batching import (
    test_a_run_trains_on_batches_by_length_says_what_padding_it_saved_and_keeps_the_ids_of_shuffled_runs,
)
from tests.test_class_weights import test_a_weighted_run_trains_and_a_label_the_data_has_not_fails_it_in_one_line
from tests.test_schedules import (
    test_a_scheduled_run_records_the_rate_its_schedule_gives_after_each_epoch,
    test_reduce_on_plateau_lowers_the_rate_after_patience_epochs_without_improvement,
)
from tests.test_step_budget import test_evaluating_every_five_steps_trains_the_same_model_as_every_epoch
from tests.test_validation_metrics import (
    test_a_classifier_and_a_tagger_are_scored_on_validation_data_as_on_the_test_set,
    test_early_stopping_watches_val_bleu_decoded_every_second_epoch,
    test_the_seq2seq_scorer_gives_the_evaluators_greedy_scores_on_the_same_pairs,
)

__all__ = [
    "test_a_run_trains_on_batches_by_length_says_what_padding_it_saved_and_keeps_the_ids_of_shuffled_runs",
    "test_a_weighted_run_trains_and_a_label_the_data_has_not_fails_it_in_one_line",
    "test_a_scheduled_run_records_the_rate_its_schedule_gives_after_each_epoch",
    "test_reduce_on_plateau_lowers_the_rate_after_patience_epochs_without_improvement",
    "test_evaluating_every_five_steps_trains_the_same_model_as_every_epoch",
    "test_early_stopping_watches_val_bleu_decoded_every_second_epoch",
    "test_a_classifier_and_a_tagger_are_scored_on_validation_data_as_on_the_test_set",
    "test_the_seq2seq_scorer_gives_the_evaluators_greedy_scores_on_the_same_pairs",
]
