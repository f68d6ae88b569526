"""The options that write published experiments exactly: their data and their metrics (no model is trained).

addition's options give the Keras addition_rnn example's data (digit strings, distinct questions, space padding,
the reversed source); adding's variant hochreiter_1997 is Hochreiter & Schmidhuber 1997's experiment 4;
success_rate and position_accuracy are those papers' criteria. The defaults keep the data and the run ids of the
runs made before the options existed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from seqkeras.errors import SpecError
from seqkeras.evaluation.regression_metrics import RegressionOutputs, success_rate
from seqkeras.evaluation.seq2seq_metrics import DecodedOutputs, position_accuracy
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import adding
from seqkeras.tasks.seq2seq_synthetic import AdditionParams, build_addition, digit_string_operands

# The Keras example's data: 3 digits, 50,000 distinct questions split 45,000 / 5,000, padded and reversed.
KERAS_EXAMPLE = {"max_length": 3, "n_train": 45_000, "n_test": 5_000, "operand_draw": "digit_strings",
                 "distinct": True, "pad_with_spaces": True, "reverse_source": True}


def texts(data, split: str) -> list[tuple[str, str]]:
    """(source, target) texts of a split, read back from its arrays (padding ids and the end token dropped)."""
    x, y = (data.x_train, data.y_train) if split == "train" else (data.x_test, data.y_test)
    sources, targets, end = data.vocabulary.tokens, data.labels.tokens, data.end_id
    return [("".join(sources[i] for i in source if i), "".join(targets[i] for i in target if i not in (0, end)))
            for source, target in zip(x["source"], y)]


def question(source: str, reversed_source: bool) -> tuple[int, int]:
    """The operands of a source text, unpadded and read forwards."""
    text = (source[::-1] if reversed_source else source).strip()
    a, b = text.split("+")
    return int(a), int(b)


@pytest.fixture(scope="module")
def keras_example():
    return build_addition(AdditionParams(**KERAS_EXAMPLE), seed=0)


# ----------------------------------------------------------------------------- addition


def test_addition_defaults_draw_what_they_drew_before_the_options():
    data = build_addition(AdditionParams(), seed=0)
    shown = ["".join(source) + "=" + "".join(target) for source, target in data.test_pairs[:4]]
    assert shown == ["64+56=120", "513+882=1395", "82+4=86", "297+12=309"]


def test_digit_strings_are_one_to_max_length_digits_read_as_numbers():
    values = np.array(digit_string_operands(np.random.default_rng(0), 60_000, 3))
    # A string of 1, 2 or 3 digits, a third each, read as a number: a value below 10 comes from every string whose
    # leading digits are zeros ("7", "07", "007"): 1/3 · (1 + 1/10 + 1/100) = 0.37; 10-99 from "xy" and "0xy":
    # 1/3 · (0.9 + 0.09) = 0.33; 100-999 only from 3 digits: 1/3 · 0.9 = 0.30. Without the leading-zero strings
    # the shares would be 1/3 each (by_digits).
    shares = [np.mean(values < 10), np.mean((values >= 10) & (values < 100)), np.mean(values >= 100)]
    np.testing.assert_allclose(shares, [0.37, 0.33, 0.30], atol=0.01)
    assert values.min() == 0 and values.max() == 999


def test_digit_strings_need_min_length_one():
    with pytest.raises(ValueError, match="min_length must be 1, not 2"):
        AdditionParams(operand_draw="digit_strings", min_length=2)


def test_distinct_questions_appear_once_across_train_and_test(keras_example):
    train = [question(source, True) for source, _ in texts(keras_example, "train")]
    test = [question(source, True) for source, _ in texts(keras_example, "test")]
    keys = [tuple(sorted(pair)) for pair in train + test]  # the example's key: a+b and b+a are one question
    assert len(keys) == 50_000 and len(set(keys)) == len(keys)
    assert not {tuple(sorted(pair)) for pair in test} & {tuple(sorted(pair)) for pair in train}


def test_distinct_questions_are_shuffled_before_the_split(keras_example):
    # Kept in draw order, the test questions (the last drawn) would lean to the rare large numbers.
    train = np.array([question(source, True) for source, _ in texts(keras_example, "train")])
    test = np.array([question(source, True) for source, _ in texts(keras_example, "test")])
    assert abs(train.mean() - test.mean()) < 15  # about 335 either way; in draw order, 330 and 384


def test_answers_are_the_sums(keras_example):
    for source, target in texts(keras_example, "train")[:2000] + texts(keras_example, "test"):
        assert int(target) == sum(question(source, True))


def test_more_questions_than_the_draw_can_make_are_refused_at_validation():
    spec = {"version": 1, "name": "few", "seeds": [0], "train": {"epochs": 1},
            "model": {"kind": "seq2seq", "units": 8, "embedding_dim": 4},
            "task": {"name": "addition", "max_length": 1, "n_train": 100, "n_test": 10, "distinct": True}}
    with pytest.raises(SpecError) as caught:
        build_experiment(spec, source="spec.yaml", overrides=[])
    # One-digit operands make 10 · 11 / 2 = 55 questions, a+b and b+a counted once.
    assert caught.value.path == "task.n_train" and "110" in caught.value.message and "55" in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(("draw", "min_length", "max_length", "count"), [
    ("by_digits", 1, 1, 55), ("by_digits", 2, 2, 90 * 91 // 2), ("digit_strings", 1, 3, 1000 * 1001 // 2),
])
def test_the_distinct_question_count_is_exact(draw, min_length, max_length, count):
    fits = {"operand_draw": draw, "min_length": min_length, "max_length": max_length, "distinct": True}
    assert AdditionParams(**fits, n_train=count - 1, n_test=1).n_train == count - 1
    with pytest.raises(SpecError, match=f"make only {count:,} distinct"):
        AdditionParams(**fits, n_train=count, n_test=1)


def test_padding_gives_the_example_widths(keras_example):
    pairs = texts(keras_example, "train") + texts(keras_example, "test")
    assert {len(source) for source, _ in pairs} == {7}  # 2 · 3 + 1
    assert {len(target) for _, target in pairs} == {4}  # 3 + 1
    assert " " in keras_example.vocabulary.index and " " in keras_example.labels.index  # a token like any other
    assert (keras_example.x_train["source"] != 0).all()  # no padding id: the spaces are read


def test_the_reversed_source_is_the_padded_source_backwards():
    padded = {"max_length": 3, "n_train": 200, "n_test": 50, "pad_with_spaces": True}
    forwards = build_addition(AdditionParams(**padded), seed=3)
    backwards = build_addition(AdditionParams(**padded, reverse_source=True), seed=3)
    pairs = list(zip(texts(forwards, "train") + texts(forwards, "test"),
                     texts(backwards, "train") + texts(backwards, "test")))
    assert all(source[::-1] == reversed_source and target == same_target
               for (source, target), (reversed_source, same_target) in pairs)
    assert any(reversed_source.startswith(" ") for _, (reversed_source, _) in pairs)  # the padding comes first


# ----------------------------------------------------------------------------- adding, hochreiter_1997

T = 40


@pytest.fixture(scope="module")
def hochreiter():
    data = adding.build(adding.Params(variant="hochreiter_1997", length=T, n_train=20_000, n_test=10), seed=0)
    x, y = data.x_train, data.y_train[:, 0]
    real = x[:, :, 1] != 0  # a real step's marker is never 0 at the first step; a pad step is all zeros
    start = real.argmax(axis=1)
    return x, y, start


def test_halves_stays_the_default_with_its_data():
    data = adding.build(adding.Params(length=20, n_train=4, n_test=3), seed=0)
    np.testing.assert_allclose(data.y_test[:, 0], [0.9382365, 0.6027426, 0.5472858], rtol=1e-6)


def test_hochreiter_sequences_are_t_to_t_plus_a_tenth_long_and_left_padded(hochreiter):
    x, _, start = hochreiter
    assert x.shape[1] == T + T // 10
    lengths = x.shape[1] - start
    assert lengths.min() == T and lengths.max() == T + T // 10
    padding = np.arange(x.shape[1])[None, :] < start[:, None]
    assert (x[padding] == 0).all()  # all-zero steps, and only before the sequence


def test_hochreiter_marks_two_steps_within_the_paper_ranges(hochreiter):
    x, _, start = hochreiter
    rows = np.arange(len(x))
    assert ((x[:, :, 1] == 1).sum(axis=1) == 2).all()
    marked = [np.flatnonzero(x[row, :, 1] == 1) - start[row] for row in rows]  # steps counted from the first
    earlier, later = np.array([m[0] for m in marked]), np.array([m[1] for m in marked])
    assert earlier.max() == 9  # X1 is one of the first ten steps, so the earlier mark always is
    assert later.max() == T // 2 - 1  # X2 one of the first T/2 − 1 unmarked steps: at most step T/2 − 1
    assert (x[:, -1, 1] == -1).all()  # the last step is never marked
    first_marker = x[rows, start, 1]
    assert set(np.unique(first_marker)) == {-1.0, 1.0} and (first_marker[earlier != 0] == -1).all()
    others = x[:, :, 1].copy()
    others[rows, start] = others[:, -1] = 0
    assert set(np.unique(others)) == {0.0, 1.0}  # every other step is 0 unless marked


def test_hochreiter_target_is_the_scaled_sum_with_x1_zero_at_the_first_step(hochreiter):
    x, y, start = hochreiter
    marked_sum = (x[:, :, 0] * (x[:, :, 1] == 1)).sum(axis=1)
    np.testing.assert_allclose(y, 0.5 + marked_sum / 4, atol=1e-6)
    # The first step marked with the other mark past the first ten: it is X1, set to 0 (in the target and input).
    rows = np.arange(len(x))
    last_mark = x.shape[1] - 1 - np.argmax(x[:, ::-1, 1] == 1, axis=1) - start
    x1_first = (x[rows, start, 1] == 1) & (last_mark >= 10)
    assert x1_first.sum() > 100 and (x[rows, start, 0][x1_first] == 0).all()


def test_hochreiter_memoryless_baseline_is_19_over_480(hochreiter):
    _, y, _ = hochreiter
    squared = (y - 0.5) ** 2  # predicting 0.5, the target's mean
    error = 4 * squared.std() / math.sqrt(len(squared))
    assert abs(squared.mean() - 19 / 480) < error


def test_hochreiter_needs_length_20_and_counts_its_wider_array():
    with pytest.raises(ValueError, match="length must be at least 20, not 19"):
        adding.Params(variant="hochreiter_1997", length=19)
    assert adding.Params(variant="hochreiter_1997", length=100).tokens_per_example() == 2 * 110


# ----------------------------------------------------------------------------- metrics


def test_success_rate_counts_absolute_errors_below_0_04():
    outputs = RegressionOutputs(predicted=np.array([[0.50], [0.539], [0.45], [0.30]]),
                                targets=np.array([[0.51], [0.50], [0.50], [0.30]]), train_targets=np.zeros(1))
    assert success_rate(outputs) == pytest.approx(0.75)  # errors 0.01, 0.039, 0.05, 0


def test_position_accuracy_compares_reference_positions_without_the_end():
    outputs = DecodedOutputs(
        hypotheses=[list("168 "), list("16"), list("1395 x"), list("9")],
        references=[list("168 "), list("169 "), list("1395"), list("86  ")],
    )
    # 4 of 4; 2 of 4 (stopped early: the rest missed); 4 of 4 (running on costs nothing); 0 of 4.
    assert position_accuracy(outputs) == pytest.approx(10 / 16)
    assert math.isnan(position_accuracy(DecodedOutputs(hypotheses=[], references=[])))


def test_outputs_csv_shows_a_space_token():
    from seqkeras.evaluation.seq2seq import shown_text

    assert shown_text(list("86  ")) == "8 6 ␣ ␣"


# ----------------------------------------------------------------------------- specs

BASE = {"version": 1, "name": "published", "seeds": [0], "train": {"epochs": 1}}
SEQ2SEQ_MODEL = {"kind": "seq2seq", "units": 8, "embedding_dim": 4}


def runs_of(task: dict, model: dict, **sections):
    return build_experiment({**BASE, "task": task, "model": model, **sections}, source="spec.yaml",
                            overrides=[]).runs


def test_a_spec_with_the_keras_example_settings_validates_with_position_accuracy():
    (run,) = runs_of({"name": "addition", **KERAS_EXAMPLE}, SEQ2SEQ_MODEL,
                     train={"epochs": 1, "validation_split": 0.1,
                            "validation_metrics": {"metrics": ["position_accuracy"]}},
                     evaluate={"metrics": ["position_accuracy", "exact_match"]})
    assert run.task.params.pad_with_spaces and run.metrics == ["position_accuracy", "exact_match"]
    (run,) = runs_of({"name": "adding", "variant": "hochreiter_1997", "length": 100}, {"kind": "regressor"},
                     evaluate={"metrics": ["mse", "baseline_mse", "success_rate"]})
    assert run.task.params.variant == "hochreiter_1997"


@pytest.mark.parametrize(("task", "key"), [
    ({"name": "addition", "operand_draw": "digit_string"}, "task.operand_draw"),
    ({"name": "addition", "pad_with_spaces": "yes"}, "task.pad_with_spaces"),
    ({"name": "adding", "variant": "hochreiter"}, "task.variant"),
])
def test_an_invalid_value_is_one_line_naming_the_key(task, key):
    model = SEQ2SEQ_MODEL if task["name"] == "addition" else {"kind": "regressor"}
    with pytest.raises(SpecError) as caught:
        runs_of(task, model)
    assert caught.value.path == key and "\n" not in caught.value.message


@pytest.mark.parametrize(("task", "model", "defaults"), [
    ({"name": "addition"}, SEQ2SEQ_MODEL,
     {"operand_draw": "by_digits", "distinct": False, "pad_with_spaces": False, "reverse_source": False}),
    ({"name": "adding"}, {"kind": "regressor"}, {"variant": "halves"}),
])
def test_the_options_at_their_defaults_keep_the_run_ids(task, model, defaults):
    (before,) = runs_of(task, model)
    (spelled_out,) = runs_of({**task, **defaults}, model)
    assert spelled_out.run_id == before.run_id
