"""Decoders tested as keras-hub tests its samplers: fake step models with known log-probs, exact expected outputs.

The lesson's toy next-word table is the main fake model (built into a real Keras
model); small NumPy step models cover the rest quickly.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from seqkeras.decoding import (
    LESSON_TABLE,
    BeamDecoder,
    BeamParams,
    GreedyDecoder,
    SampleDecoder,
    SampleParams,
    TableLanguageModel,
    build_decoder,
    check_table,
    score_sequences,
)
from seqkeras.decoding.decoders import IMPOSSIBLE_LOG_PROB, BeamChoice, length_penalty
from seqkeras.errors import SpecError
from seqkeras.probes import decoding as decoding_probe

# --- fake step models -------------------------------------------------------------


class BigramStepModel:
    """P(next | previous token) from a [V, V] log-prob matrix; the state is nothing but the row count."""

    def __init__(self, log_probs: np.ndarray, start_id: int, end_id: int):
        self.log_probs = log_probs
        self.vocab_size = log_probs.shape[0]
        self.start_id, self.end_id = start_id, end_id

    def start(self, batch_size):
        return np.zeros(batch_size)

    def step(self, tokens, state):
        return self.log_probs[tokens], state

    def select(self, state, indices):
        return state[indices]


class ConditionalStepModel:
    """Like a seq2seq model: each row has a source (chosen at start) that selects its own bigram table."""

    def __init__(self, log_probs: np.ndarray, sources: list[int], start_id: int, end_id: int):
        self.log_probs = log_probs  # [S, V, V]
        self.sources = np.asarray(sources)
        self.vocab_size = log_probs.shape[-1]
        self.start_id, self.end_id = start_id, end_id

    def start(self, batch_size):
        assert batch_size == len(self.sources)
        return self.sources.copy()

    def step(self, tokens, state):
        return self.log_probs[state, tokens], state

    def select(self, state, indices):
        return state[indices]


class FixedStepModel:
    """The same next-token distribution at every step, whatever came before."""

    def __init__(self, probabilities: np.ndarray, end_id: int):
        self.log_probs = np.log(probabilities)
        self.vocab_size = probabilities.size
        self.start_id, self.end_id = 0, end_id

    def start(self, batch_size):
        return np.zeros(batch_size)

    def step(self, tokens, state):
        return np.tile(self.log_probs, (len(tokens), 1)), state

    def select(self, state, indices):
        return state[indices]


def random_bigram(rng, vocab_size, concentration=0.7):
    """Random bigram log-probs over [start, words..., end]: start is never generated, end is absorbing."""
    probs = np.zeros((vocab_size, vocab_size))
    probs[:-1, 1:] = rng.dirichlet(np.full(vocab_size - 1, concentration), size=vocab_size - 1)
    probs[-1, -1] = 1.0
    with np.errstate(divide="ignore"):
        return np.log(probs)


def brute_force_best(log_probs, start_id, end_id, max_length):
    """The most probable output by enumeration: ended outputs up to max_length, or unfinished ones of max_length."""
    vocab = log_probs.shape[0]
    best = (-np.inf, None)
    for length in range(1, max_length + 1):
        for sequence in itertools.product(range(vocab), repeat=length):
            if end_id in sequence[:-1] or (length < max_length and sequence[-1] != end_id):
                continue
            total = log_probs[(start_id,) + sequence[:-1], sequence].sum()
            if total > best[0]:
                best = (total, list(sequence))
    return best


def lesson_beam(table, width, max_length, start="<s>", end="</s>"):
    """The lesson's `beam()`, verbatim but for one addition: at max_length the unfinished beams compete too."""
    beams = [([start], 0.0)]
    done = []
    for _ in range(max_length):
        cand = []
        for seq, lp in beams:
            for w, p in table[seq[-1]].items():
                if p > 0:
                    cand.append((seq + [w], lp + math.log(p)))
        cand.sort(key=lambda c: -c[1])
        beams = []
        for seq, lp in cand[:width]:
            (done if seq[-1] == end else beams).append((seq, lp))
        if not beams:
            break
    else:
        done += beams
    seq, lp = max(done, key=lambda c: c[1])
    return seq[1:], lp


def as_table(log_probs, words):
    """A bigram log-prob matrix as a lesson-style next-word table (rows for every word but the end)."""
    probs = np.exp(log_probs)
    return {
        words[i]: {words[j]: float(probs[i, j]) for j in range(len(words)) if probs[i, j] > 0}
        for i in range(len(words) - 1)
    }


@pytest.fixture(scope="module")
def lesson_model():
    return TableLanguageModel(LESSON_TABLE)


# --- the lesson's numbers -----------------------------------------------------------


@pytest.mark.parametrize(
    "decoder, output, probability",
    [
        ({"name": "greedy"}, "the dog </s>", "0.140"),
        ({"name": "beam", "width": 1}, "the dog </s>", "0.140"),
        ({"name": "beam", "width": 2}, "a small cat </s>", "0.292"),
        ({"name": "beam", "width": 3}, "a small cat </s>", "0.292"),
    ],
)
def test_probe_reproduces_the_lesson(decoder, output, probability):
    result = decoding_probe.run(decoding_probe.Params(decoder=decoder), seed=0)
    assert result.metrics["output"] == output
    assert f"{result.metrics['probability']:.3f}" == probability
    assert result.metrics["length"] == len(output.split())
    assert math.isclose(math.exp(result.metrics["log_probability"]), result.metrics["probability"])
    assert result.curves["hypotheses"]["output"].iloc[0] == output


def test_beam_hypotheses_of_the_lesson_are_ranked_finished_outputs():
    result = decoding_probe.run(decoding_probe.Params(decoder={"name": "beam", "width": 3}), seed=0)
    hypotheses = result.curves["hypotheses"]
    assert list(hypotheses["output"][:4]) == ["a small cat </s>", "the cat </s>", "the dog </s>", "</s>"]
    assert np.allclose(hypotheses["probability"][:4], [0.2916, 0.1575, 0.14, 0.1], atol=1e-6)
    assert hypotheses["finished"].all()


def test_table_model_is_a_keras_lm_whose_logits_are_the_table(lesson_model):
    ids = np.array([lesson_model.encode(["<s>", "a", "small"])])
    logits = np.asarray(lesson_model.model(ids))
    assert logits.shape == (1, 3, lesson_model.vocab_size)
    small = lesson_model.index["small"]
    assert math.isclose(float(logits[0, 2, lesson_model.index["cat"]]), math.log(0.9), rel_tol=1e-6)
    assert logits[0, 2, lesson_model.index["dog"]] < -1e8
    log_probs, prefix = lesson_model.step_model.step(np.array([small]), ids[:, :2])
    assert np.allclose(np.exp(log_probs).sum(axis=-1), 1.0)
    assert prefix.tolist() == ids.tolist()


def test_scoring_an_output_gives_back_its_log_probability(lesson_model):
    result = BeamDecoder(width=3).decode(lesson_model.step_model, max_length=6)
    assert np.allclose(score_sequences(lesson_model.step_model, result.tokens), result.log_probs)
    sentences = [["the", "dog", "</s>"], ["a", "small", "cat", "</s>"], ["the"]]
    scores = score_sequences(lesson_model.step_model, [lesson_model.encode(words) for words in sentences])
    assert np.allclose(np.exp(scores), [0.14, 0.2916, 0.5], atol=1e-6)


def test_greedy_stops_at_max_length_without_an_end_token(lesson_model):
    result = GreedyDecoder().decode(lesson_model.step_model, max_length=2)
    assert lesson_model.words(result.tokens[0]) == ["the", "dog"]
    assert result.lengths.tolist() == [2]
    assert math.isclose(math.exp(result.log_probs[0]), 0.2, rel_tol=1e-6)


# --- beam search ---------------------------------------------------------------------


def test_beam_follows_the_lessons_algorithm_on_random_tables():
    rng = np.random.default_rng(0)
    for vocab_size in (4, 5, 6):
        words = ["<s>"] + [f"w{i}" for i in range(vocab_size - 2)] + ["</s>"]
        log_probs = random_bigram(rng, vocab_size)
        table = as_table(log_probs, words)
        model = BigramStepModel(log_probs, 0, vocab_size - 1)
        for width in (1, 2, 3, 5):
            result = BeamDecoder(width=width).decode(model, max_length=5)
            expected, expected_log_prob = lesson_beam(table, width, max_length=5)
            assert [words[i] for i in result.tokens[0]] == expected
            assert math.isclose(result.log_probs[0], expected_log_prob, rel_tol=1e-9)


def test_beam_that_never_prunes_finds_the_most_probable_output():
    rng = np.random.default_rng(1)
    for vocab_size, max_length in ((4, 4), (5, 4), (6, 3)):
        for _ in range(3):
            log_probs = random_bigram(rng, vocab_size)
            model = BigramStepModel(log_probs, 0, vocab_size - 1)
            # Wide enough to keep every candidate at every step: exhaustive search.
            result = BeamDecoder(width=vocab_size**max_length).decode(model, max_length=max_length)
            best_log_prob, best = brute_force_best(log_probs, 0, vocab_size - 1, max_length)
            assert result.tokens[0] == best
            assert math.isclose(result.log_probs[0], best_log_prob, rel_tol=1e-9)


def test_beam_as_wide_as_the_vocabulary_can_still_miss_the_best_output():
    # Beam search is approximate even at width V: after "<s>", five live prefixes
    # (a b .225, c b .1375, a c .135, b b .105, b c .105) outrank the finished
    # "c </s>" (.0875), which is dropped at step 2 although it is the best output.
    table = {
        "<s>": {"a": 0.45, "b": 0.3, "c": 0.25},
        "a": {"a": 0.05, "b": 0.5, "c": 0.3, "</s>": 0.15},
        "b": {"a": 0.3, "b": 0.35, "c": 0.35},
        "c": {"b": 0.55, "c": 0.1, "</s>": 0.35},
    }
    model = TableLanguageModel(table)
    assert model.vocab_size == 5
    narrow = BeamDecoder(width=5).decode(model.step_model, max_length=4)
    exhaustive = BeamDecoder(width=5**4).decode(model.step_model, max_length=4)
    assert model.words(narrow.tokens[0]) == ["a", "b", "c", "b"]
    assert model.words(exhaustive.tokens[0]) == ["c", "</s>"]
    assert math.isclose(math.exp(exhaustive.log_probs[0]), 0.0875, rel_tol=1e-5)
    assert lesson_beam(table, 5, 4)[0] == ["a", "b", "c", "b"]


def test_length_penalty_prefers_a_longer_output():
    # "</s>" has p = 0.4 (log -0.916); "a b </s>" has p = 0.36 (log -1.022) but
    # length 3: with alpha = 1 its score is -1.022 / (8 / 6) = -0.766 > -0.916.
    table = {"<s>": {"</s>": 0.4, "a": 0.6}, "a": {"b": 1.0}, "b": {"</s>": 0.6, "c": 0.4}, "c": {"</s>": 1.0}}
    model = TableLanguageModel(table)
    plain = BeamDecoder(width=2, length_penalty=0.0).decode(model.step_model, max_length=6)
    penalized = BeamDecoder(width=2, length_penalty=1.0).decode(model.step_model, max_length=6)
    assert model.words(plain.tokens[0]) == ["</s>"]
    assert model.words(penalized.tokens[0]) == ["a", "b", "</s>"]
    assert math.isclose(math.exp(penalized.log_probs[0]), 0.36, rel_tol=1e-5)
    best = penalized.hypotheses[0][0]
    assert math.isclose(best.score, math.log(0.36) / (8 / 6), rel_tol=1e-5)


def test_stopping_early_allows_for_the_length_penalty():
    # "</s>" (log p = -0.9) finishes first; "a" (-1.0) is below it then, but its only
    # continuation "a b </s>" scores -1.0 / (8 / 6) = -0.75 with alpha = 1, and wins.
    p_end, p_a = math.exp(-0.9), math.exp(-1.0)
    table = {"<s>": {"</s>": p_end, "a": p_a, "x": 1.0 - p_end - p_a}, "a": {"b": 1.0}, "b": {"</s>": 1.0},
             "x": {"</s>": 1.0}}
    model = TableLanguageModel(table)
    for all_hypotheses in (True, False):
        result = BeamDecoder(width=2, length_penalty=1.0).decode(model.step_model, max_length=6,
                                                                 all_hypotheses=all_hypotheses)
        assert model.words(result.tokens[0]) == ["a", "b", "</s>"]


def test_finished_beams_are_not_extended():
    # The end token is not absorbing here: keras-hub's BeamSampler would keep
    # scoring "x </s> ..." after the end; ours stops each beam at its end token.
    with np.errstate(divide="ignore"):
        log_probs = np.log(np.array([[0.0, 0.5, 0.5], [0.0, 0.5, 0.5], [0.0, 0.9, 0.1]]))
    model = BigramStepModel(log_probs, 0, 2)
    result = BeamDecoder(width=3).decode(model, max_length=5)
    for hypothesis in result.hypotheses[0]:
        assert 2 not in hypothesis.tokens[:-1]
    assert result.tokens[0] == [2]


# --- batches -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "decoder", [GreedyDecoder(), BeamDecoder(width=1), BeamDecoder(width=3), BeamDecoder(width=4, length_penalty=0.6)]
)
def test_batched_decoding_equals_decoding_each_row_alone(decoder):
    rng = np.random.default_rng(2)
    vocab_size = 6
    tables = np.stack([random_bigram(rng, vocab_size, concentration=0.4) for _ in range(4)])
    sources = [0, 1, 2, 3, 1, 0]
    batched = decoder.decode(ConditionalStepModel(tables, sources, 0, 5), len(sources), max_length=6)
    assert len(set(map(tuple, batched.tokens))) > 1
    for row, source in enumerate(sources):
        alone = decoder.decode(ConditionalStepModel(tables, [source], 0, 5), 1, max_length=6)
        assert batched.tokens[row] == alone.tokens[0]
        assert math.isclose(batched.log_probs[row], alone.log_probs[0], rel_tol=1e-12)
        assert batched.lengths[row] == len(alone.tokens[0])
    rescored = score_sequences(ConditionalStepModel(tables, sources, 0, 5), batched.tokens)
    assert np.allclose(rescored, batched.log_probs)


def reference_beam(table, start_id, end_id, width, alpha, max_length):
    """Beam search for one input, by the book: every extension of every live hypothesis
    ranked by a full sort on (score, beam, token), the top `width` kept. Tokens whose
    log-probability is impossible (or NaN) are never candidates. Returns the hypotheses, best first."""
    live, competing = [([], 0.0)], []
    for step in range(max_length):
        candidates = []
        for beam, (tokens, log_prob) in enumerate(live):
            row = table[tokens[-1] if tokens else start_id]
            for token in range(len(row)):
                if float(row[token]) >= IMPOSSIBLE_LOG_PROB:  # False for NaN
                    candidates.append((log_prob + float(row[token]), beam, token, tokens + [token]))
        candidates.sort(key=lambda candidate: (-candidate[0], candidate[1], candidate[2]))
        live = []
        for log_prob, _, token, tokens in candidates[:width]:
            if token == end_id or step == max_length - 1:
                score = log_prob / float(length_penalty(len(tokens), alpha))
                competing.append((tokens, log_prob, score, token == end_id))
            if token != end_id:
                live.append((tokens, log_prob))
        if not live:
            break
    return sorted(competing, key=lambda hypothesis: -hypothesis[2])


def tables_with_ties(rng, sources, vocab_size, dtype):
    """Random [S, V, V] log-prob tables with exact ties, impossible tokens, NaN and near-ties one
    ulp apart (which become exact ties once added to a hypothesis's log-probability)."""
    tables = np.log(rng.integers(1, 4, size=(sources, vocab_size, vocab_size)) / 8.0)
    tables[rng.random(tables.shape) < 0.25] = -1e30  # impossible
    tables[rng.random(tables.shape) < 0.05] = np.nan
    tables[..., 2] = np.nextafter(tables[..., 1], 0.0)  # token 2 a hair above token 1
    tables[..., 0] = -1e30  # the start token is never generated
    return tables.astype(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_beam_equals_a_full_sort_reference_on_random_tables_with_ties(dtype):
    rng = np.random.default_rng(5)
    vocab_size, end = 7, 6
    for _ in range(12):
        tables = tables_with_ties(rng, 3, vocab_size, dtype)
        sources = list(rng.integers(0, 3, size=4))
        for width, alpha in ((1, 0.0), (2, 0.6), (3, 0.0), (5, 1.0), (9, 0.0)):
            expected = [reference_beam(tables[s], 0, end, width, alpha, 5) for s in sources]
            for all_hypotheses in (True, False):
                model = ConditionalStepModel(tables, sources, 0, end)
                result = BeamDecoder(width=width, length_penalty=alpha).decode(
                    model, len(sources), max_length=5, all_hypotheses=all_hypotheses
                )
                for row, hypotheses in enumerate(expected):
                    found = [(h.tokens, h.log_prob, h.score, h.finished) for h in result.hypotheses[row]]
                    if all_hypotheses:
                        assert found == hypotheses
                    else:  # the search stopped following hypotheses that could not win
                        assert found[:1] == hypotheses[:1] and len(found) <= len(hypotheses)
                    assert result.tokens[row] == (hypotheses[0][0] if hypotheses else [])
                    assert result.log_probs[row] == (hypotheses[0][1] if hypotheses else -np.inf)


def test_beam_ranks_scores_that_rounding_made_equal_by_token():
    # After "<s> a" (log p = -40), "b" (token 2) and "c" (token 3) differ by one ulp, c above:
    # -40 + log p rounds both to the same score, and the tie goes to the lower token, b.
    log_probs = np.full((5, 5), -50.0)
    log_probs[0, 1] = -40.0
    log_probs[1, 2] = -3.0
    log_probs[1, 3] = np.nextafter(-3.0, 0.0)
    assert -40.0 + log_probs[1, 2] == -40.0 + log_probs[1, 3]
    result = BeamDecoder(width=1).decode(BigramStepModel(log_probs, 0, 4), max_length=2)
    assert result.tokens[0] == [1, 2]
    assert reference_beam(log_probs, 0, 4, 1, 0.0, 2)[0][0] == [1, 2]


def test_stopping_early_returns_the_same_outputs_with_fewer_hypotheses(lesson_model):
    full = BeamDecoder(width=3).decode(lesson_model.step_model, max_length=6)
    early = BeamDecoder(width=3).decode(lesson_model.step_model, max_length=6, all_hypotheses=False)
    assert early.tokens == full.tokens and np.array_equal(early.log_probs, full.log_probs)
    words = [" ".join(lesson_model.words(h.tokens)) for h in full.hypotheses[0]]
    assert "a small cat sat </s>" in words  # found after 'a small cat </s>', which it cannot beat
    assert [h.tokens for h in early.hypotheses[0]] == [h.tokens for h in full.hypotheses[0][:4]]


# --- sampling ------------------------------------------------------------------------

# A known distribution, deliberately not in vocabulary order. Token 7 is the end.
SORTED_PROBABILITIES = np.array([0.3, 0.22, 0.16, 0.12, 0.09, 0.06, 0.03, 0.02])
PERMUTATION = np.array([3, 6, 0, 5, 1, 7, 2, 4])  # token PERMUTATION[i] has the i-th largest probability
PROBABILITIES = np.empty(8)
PROBABILITIES[PERMUTATION] = SORTED_PROBABILITIES


def draw(decoder, draws=3000):
    model = FixedStepModel(PROBABILITIES, end_id=7)
    result = decoder.decode(model, batch_size=draws, max_length=1)
    return np.array([tokens[0] for tokens in result.tokens]), result


@pytest.mark.parametrize(
    "params, allowed",
    [
        ({"top_k": 3}, 3),
        ({"top_p": 0.6}, 3),  # cumulative 0.30, 0.52, 0.68: the nucleus is the first 3
        ({"top_p": 0.5}, 2),
        ({"top_k": 2, "top_p": 0.9}, 2),
        ({"top_k": 5, "top_p": 0.6}, 3),
        # keras-hub's nucleus is cut on the whole distribution, then limited to the top k
        # (renormalizing over the top 3 first, as Hugging Face does, would keep only 2).
        ({"top_k": 3, "top_p": 0.6}, 3),
        ({"top_k": 20}, 8),  # k beyond the vocabulary: no limit
        ({"top_p": 1.0}, 8),
        ({}, 8),
    ],
)
def test_truncated_sampling_stays_inside_its_set_with_the_right_frequencies(params, allowed):
    tokens, result = draw(SampleDecoder(seed=3, **params))
    inside = PERMUTATION[:allowed]
    assert set(tokens.tolist()) == set(inside.tolist())
    expected = SORTED_PROBABILITIES[:allowed] / SORTED_PROBABILITIES[:allowed].sum()
    measured = np.array([(tokens == token).mean() for token in inside])
    assert np.abs(measured - expected).max() < 0.035
    # The reported log-probability is the model's, not the truncated distribution's.
    assert np.allclose(result.log_probs, np.log(PROBABILITIES[tokens]))


def test_sampling_with_a_seed_is_reproducible_and_seeds_differ():
    decoder = SampleDecoder(seed=7, temperature=1.3)
    first, _ = draw(decoder, draws=200)
    again, _ = draw(decoder, draws=200)
    same_seed, _ = draw(SampleDecoder(seed=7, temperature=1.3), draws=200)
    other_seed, _ = draw(SampleDecoder(seed=8, temperature=1.3), draws=200)
    assert first.tolist() == again.tolist() == same_seed.tolist()
    assert first.tolist() != other_seed.tolist()


def test_sampled_outputs_of_the_lesson_table_are_reproducible_through_the_probe():
    params = decoding_probe.Params(decoder={"name": "sample", "top_p": 0.9, "seed": 4}, samples=50)
    first = decoding_probe.run(params, seed=1)
    again = decoding_probe.run(params, seed=1)
    assert first.metrics == again.metrics
    assert first.curves["hypotheses"].equals(again.curves["hypotheses"])
    assert first.metrics["distinct_outputs"] > 1
    assert first.curves["hypotheses"]["count"].sum() == 50


def test_low_temperature_approaches_greedy(lesson_model):
    greedy = GreedyDecoder().decode(lesson_model.step_model, max_length=6)
    cold = SampleDecoder(temperature=1e-3, seed=0).decode(lesson_model.step_model, batch_size=20, max_length=6)
    assert all(tokens == greedy.tokens[0] for tokens in cold.tokens)

    rng = np.random.default_rng(5)
    log_probs = random_bigram(rng, 7, concentration=1.0)
    model = BigramStepModel(log_probs, 0, 6)
    greedy = GreedyDecoder().decode(model, max_length=8)
    cold = SampleDecoder(temperature=1e-3, seed=1).decode(model, batch_size=50, max_length=8)
    warm = SampleDecoder(temperature=1.0, seed=1).decode(model, batch_size=50, max_length=8)
    assert all(tokens == greedy.tokens[0] for tokens in cold.tokens)
    assert any(tokens != greedy.tokens[0] for tokens in warm.tokens)


# --- parameters and errors -------------------------------------------------------------


def test_build_decoder_by_name_with_params():
    assert isinstance(build_decoder("greedy"), GreedyDecoder)
    beam = build_decoder("beam", {"width": 2, "length_penalty": 0.6})
    assert isinstance(beam, BeamDecoder) and beam.params == BeamParams(width=2, length_penalty=0.6)
    sample = build_decoder("sample", SampleParams(top_k=5, seed=3))
    assert sample.params.top_k == 5 and sample.params.seed == 3
    with pytest.raises(SpecError, match="Did you mean 'beam'"):
        build_decoder("bem")
    with pytest.raises(SpecError) as error:
        build_decoder("beam", {"width": 0})
    assert error.value.path == "width"
    with pytest.raises(TypeError):
        build_decoder("beam", SampleParams())


@pytest.mark.parametrize(
    "params_class, values",
    [
        (BeamParams, {"width": 0}),
        (BeamParams, {"length_penalty": -0.1}),
        (BeamParams, {"beam_size": 3}),
        (SampleParams, {"temperature": 0.0}),
        (SampleParams, {"top_k": 0}),
        (SampleParams, {"top_p": 0.0}),
        (SampleParams, {"top_p": 1.5}),
    ],
)
def test_decoder_params_reject_bad_values(params_class, values):
    with pytest.raises(ValidationError):
        params_class(**values)


def test_probe_decoder_is_a_union_chosen_by_name():
    params = decoding_probe.Params(decoder={"name": "beam", "width": 2})
    assert isinstance(params.decoder, BeamChoice) and params.decoder.width == 2
    assert decoding_probe.Params().decoder.name == "greedy"
    with pytest.raises(ValidationError):
        decoding_probe.Params(decoder={"name": "beam", "top_k": 3})
    with pytest.raises(ValidationError):
        decoding_probe.Params(decoder={"name": "nucleus"})


@pytest.mark.parametrize(
    "change, path, words",
    [
        ({"cat": {"</s>": 0.8, "sat": 0.1}}, "table.cat", "sum to 0.9"),
        ({"dog": {"barked": 0.3, "ran": 0.7}}, "table.dog", "'ran' can follow 'dog' but has no row"),
        ({"sat": {"</s>": 1.5}}, "table.sat.</s>", "between 0 and 1"),
        ({"</s>": {"</s>": 1.0}}, "table.</s>", "end token"),
    ],
)
def test_table_errors_name_the_row(change, path, words):
    table = {**LESSON_TABLE, **change}
    with pytest.raises(SpecError) as error:
        TableLanguageModel(table)
    assert error.value.path == path
    assert words in error.value.message
    with pytest.raises(ValidationError, match="table"):
        decoding_probe.Params(table=table)
    # Run directly (bypassing validation), the error is placed under the probe's key.
    with pytest.raises(SpecError) as error:
        unchecked = decoding_probe.Params.model_construct(**{**decoding_probe.Params().__dict__, "table": table})
        decoding_probe.run(unchecked)
    assert error.value.path == f"probe.{path}"


def test_table_needs_a_start_row():
    without_start = {word: row for word, row in LESSON_TABLE.items() if word != "<s>"}
    with pytest.raises(SpecError, match="no row for the start token"):
        check_table(without_start)


def test_decoding_modules_import_without_tensorflow():
    code = (
        "import sys, seqkeras.decoding, seqkeras.probes.decoding; "
        "sys.exit(int(any(name.split('.')[0] in ('tensorflow', 'keras', 'keras_hub') for name in sys.modules)))"
    )
    repo = Path(__file__).resolve().parents[1]
    assert subprocess.run([sys.executable, "-c", code], cwd=repo).returncode == 0
