"""The lesson probes reproduce the lessons' printed numbers, by running them.

Every expected number below is either printed in the lesson text
(the lesson's two parts, docs/guides/lesson.md) or computed by hand / by an
independent numpy reference written here, never stored from a previous run.
"""

from __future__ import annotations

import math

import numpy as np
import pydantic
import pytest

from seqkeras.models.ngram_counts import NgramCounts, tokenize
from seqkeras.probes import gradient_flow, memory, ngram_counts, unroll
from seqkeras.probes.base import ProbeResult

# ---------------------------------------------------------------- gradient_flow

# The lesson's table: seed 0, one generator, pairs drawn for radius 0.8, 1.0, 1.2 in turn.
LESSON_GRADIENTS = {
    0.8: (0, ["6.5e-01", "6.7e-03", "5.9e-07", "3.5e-13"], "9.7e-07"),
    1.0: (1, ["7.8e-01", "6.1e-02", "8.5e-05", "9.5e-09"], "2.2e-01"),
    1.2: (2, ["9.4e-01", "2.0e-01", "2.2e-03", "1.4e-05"], "2.2e+04"),
}


@pytest.mark.parametrize("radius", sorted(LESSON_GRADIENTS))
def test_gradient_flow_reproduces_lesson_table(radius):
    draw, expected, expected_linear = LESSON_GRADIENTS[radius]
    result = gradient_flow.run(gradient_flow.Params(spectral_radius=radius, draw=draw), seed=0)
    assert isinstance(result, ProbeResult)
    printed = [f"{result.metrics[f'grad_norm_{k}']:.1e}" for k in (1, 10, 30, 59)]
    assert printed == expected
    assert f"{result.metrics['linear_grad_norm_59']:.1e}" == expected_linear

    curve = result.curves["gradient_norms"]
    assert list(curve.columns) == ["steps_back", "grad_norm", "linear_grad_norm"]
    assert list(curve["steps_back"]) == list(range(60))
    assert curve["grad_norm"].iloc[0] == pytest.approx(1.0)  # |g0| = |ones / sqrt(d)|
    # "With spectral radius 0.8, the gradient falls by about 12 orders of magnitude."
    if radius == 0.8:
        assert round(result.metrics["log10_grad_drop"]) == 12


def reference_gradient_norms(d, T, radius, input_scale, seed, draw, activation):
    """Independent float64 BPTT, as the lesson writes it, generalised to other activations."""
    rng = np.random.default_rng(seed)
    for _ in range(draw + 1):
        W = rng.normal(0, 1, (d, d))
        x = rng.normal(0, 1, (T, d))
    W = W * radius / np.max(np.abs(np.linalg.eigvals(W)))
    x = x * input_scale

    act = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0.0), "linear": lambda z: z}[activation]
    h = np.zeros(d)
    pre, hs = [], []
    for t in range(T):
        z = W @ h + x[t]
        h = act(z)
        pre.append(z)
        hs.append(h)

    def derivative(t):
        if activation == "tanh":
            return 1 - hs[t] ** 2
        if activation == "relu":
            return (pre[t] > 0).astype(float)
        return np.ones(d)

    g = np.ones(d) / np.sqrt(d)
    norms = []
    for t in range(T - 1, -1, -1):
        norms.append(np.linalg.norm(g))
        g = W.T @ (g * derivative(t))
    linear = []
    g = np.ones(d) / np.sqrt(d)
    for _ in range(T):
        linear.append(np.linalg.norm(g))
        g = W.T @ g
    return np.array(norms), np.array(linear)


@pytest.mark.parametrize(
    "config",
    [
        dict(units=16, steps=25, spectral_radius=0.9, seed=3, draw=1, activation="tanh",
             input_scale=0.5),
        dict(units=16, steps=25, spectral_radius=0.9, seed=3, draw=1, activation="relu",
             input_scale=0.5),
        dict(units=8, steps=30, spectral_radius=1.3, seed=11, draw=0, activation="linear",
             input_scale=2.0),
    ],
    ids=["tanh", "relu", "linear"],
)
def test_gradient_flow_matches_numpy_reference(config):
    config = dict(config)
    seed = config.pop("seed")
    T = config["steps"]
    params = gradient_flow.Params(report_steps=[0, 5, T - 1], **config)
    result = gradient_flow.run(params, seed=seed)

    norms, linear = reference_gradient_norms(
        config["units"], T, config["spectral_radius"], config["input_scale"], seed,
        config["draw"], config["activation"],
    )
    curve = result.curves["gradient_norms"]
    np.testing.assert_allclose(curve["grad_norm"].to_numpy(), norms, rtol=1e-4, atol=0)
    np.testing.assert_allclose(curve["linear_grad_norm"].to_numpy(), linear, rtol=1e-4, atol=0)
    for k in (0, 5, T - 1):
        assert result.metrics[f"grad_norm_{k}"] == pytest.approx(norms[k], rel=1e-4)
    assert result.metrics[f"linear_grad_norm_{T - 1}"] == pytest.approx(linear[T - 1], rel=1e-4)
    decay = (norms[-1] / norms[0]) ** (1 / (T - 1))
    assert result.metrics["decay_per_step"] == pytest.approx(decay, rel=1e-4)


def test_gradient_flow_without_linear_reference():
    params = gradient_flow.Params(units=4, steps=5, report_steps=[2], linear_reference=False)
    result = gradient_flow.run(params, seed=0)
    assert "linear_grad_norm_2" not in result.metrics
    assert list(result.curves["gradient_norms"].columns) == ["steps_back", "grad_norm"]


def test_gradient_flow_params_reject_report_step_beyond_sequence():
    with pytest.raises(pydantic.ValidationError, match="report_steps"):
        gradient_flow.Params(steps=60, report_steps=[1, 60])
    with pytest.raises(pydantic.ValidationError):
        gradient_flow.Params(activation="sigmoid")
    with pytest.raises(pydantic.ValidationError):
        gradient_flow.Params(spectral_radius=0)
    with pytest.raises(pydantic.ValidationError):
        gradient_flow.Params(unknown_field=1)


def test_gradient_flow_params_are_documented():
    for name, field in gradient_flow.Params.model_fields.items():
        assert field.description, name


# ----------------------------------------------------------------------- memory


def test_memory_simple_rnn_matches_lesson():
    fading = memory.run(memory.Params(cell="simple_rnn", recurrent_weight=0.9), seed=0)
    assert f"{fading.metrics['memory']:.2e}" == "1.48e-05"
    # During silence h -> tanh(0.9 h) ~ 0.9 h, so half the memory goes every ln 0.5 / ln 0.9 steps.
    half_life = math.log(0.5) / math.log(0.9)
    assert fading.metrics["half_life_steps"] == pytest.approx(half_life, rel=1e-6)

    saturated = memory.run(memory.Params(cell="simple_rnn", recurrent_weight=1.5), seed=0)
    assert f"{saturated.metrics['memory']:.3f}" == "0.859"
    assert saturated.metrics["half_life_steps"] == math.inf  # "cannot forget"

    curve = fading.curves["memory"]
    assert list(curve.columns) == ["step", "value"]
    assert len(curve) == 100
    assert curve["value"].iloc[0] == pytest.approx(math.tanh(2.0))
    assert curve["value"].iloc[-1] == fading.metrics["memory"]


@pytest.mark.parametrize(
    "bias, forget, cell",
    [(2, "0.88080", "0.000"), (5, "0.99331", "0.487"), (10, "0.99995", "0.942")],
)
def test_memory_lstm_matches_lesson(bias, forget, cell):
    result = memory.run(memory.Params(cell="lstm", forget_bias=bias), seed=0)
    m = result.metrics
    assert f"{m['forget_gate']:.5f}" == forget
    assert f"{m['cell']:.3f}" == cell
    assert m["retention"] == pytest.approx(m["forget_gate"] ** 100)
    assert m["half_life_steps"] == pytest.approx(math.log(0.5) / math.log(m["forget_gate"]))
    sigmoid4 = 1 / (1 + math.exp(-4))
    assert m["hidden"] == pytest.approx(sigmoid4 * math.tanh(m["cell"]), rel=1e-9)
    if bias == 5:
        # "with f = 0.993 half remains after 100 steps (0.993^100 = 0.51)"
        assert round(m["retention"], 2) == 0.51

    curve = result.curves["memory"]
    assert list(curve.columns) == ["step", "c", "h"]
    assert curve["c"].iloc[-1] == pytest.approx(m["cell"], rel=1e-9)


def test_memory_params_validation():
    with pytest.raises(pydantic.ValidationError):
        memory.Params(cell="gru")
    with pytest.raises(pydantic.ValidationError):
        memory.Params(steps=1)
    for name, field in memory.Params.model_fields.items():
        assert field.description, name


# ----------------------------------------------------------------------- unroll


def test_unroll_first_word_fades():
    params = unroll.Params()
    assert params.recurrent_scale < 1
    result = unroll.run(params, seed=0)
    m = result.metrics
    tokens = "the keys to the cabinet are on the table".split()
    influence = [m[f"first_token_influence_{t}"] for t in range(1, len(tokens) + 1)]
    assert m["influence_monotone"] == 1
    assert all(later < earlier for earlier, later in zip(influence, influence[1:]))
    # tanh' <= 1 and |W_h|_2 = recurrent_scale: each step can keep at most that fraction.
    for earlier, later in zip(influence, influence[1:]):
        assert later <= params.recurrent_scale * earlier * (1 + 1e-9)
    assert m["influence_ratio_last_first"] == pytest.approx(influence[-1] / influence[0])
    assert 0 < m["influence_ratio_last_first"] < 1

    states = result.curves["states"]
    assert states.shape == (len(tokens), 2 + 4)
    assert list(states.columns) == ["step", "token", "cell_0", "cell_1", "cell_2", "cell_3"]
    assert list(states["token"]) == tokens
    final_state = states.iloc[-1, 2:].to_numpy(float)
    assert m["final_state_norm"] == pytest.approx(np.linalg.norm(final_state))
    assert list(result.curves["influence"].columns) == ["step", "token", "influence"]


def test_unroll_matches_numpy_recurrence():
    """Keras computes the lesson's h_t = tanh(W_x x_t + W_h h_{t-1}); the Jacobian by hand."""
    params = unroll.Params(sentence="a b a c", units=3, embedding_dim=2, recurrent_scale=0.7)
    result = unroll.run(params, seed=5)
    embeddings, W_x, W_h = unroll.draw_weights(params, 5, ["a", "b", "c"])
    assert np.linalg.norm(W_h, 2) == pytest.approx(0.7)
    h = np.zeros(3)
    J = np.zeros((3, 2))  # d h_t / d x_1
    expected_states, expected_influence = [], []
    for t, word in enumerate("a b a c".split()):
        h = np.tanh(W_x @ embeddings["abc".index(word)] + W_h @ h)
        J = (1 - h**2)[:, None] * ((W_x if t == 0 else 0) + W_h @ J)
        expected_states.append(h)
        expected_influence.append(np.linalg.norm(J))
    states = result.curves["states"][["cell_0", "cell_1", "cell_2"]].to_numpy()
    np.testing.assert_allclose(states, expected_states, rtol=1e-10, atol=1e-12)
    influence = result.curves["influence"]["influence"]
    np.testing.assert_allclose(influence, expected_influence, rtol=1e-8)


def test_unroll_params_validation():
    with pytest.raises(pydantic.ValidationError):
        unroll.Params(sentence="   ")
    with pytest.raises(pydantic.ValidationError):
        unroll.Params(units=0)


# ------------------------------------------------------------------------ ngram

TINY = [["a", "b"], ["a", "c"], ["b", "c"]]


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("smoothing", ["add_k", "kneser_ney"])
def test_smoothed_probabilities_sum_to_one_for_every_context(order, smoothing):
    corpus = [tokenize(s) for s in ngram_counts.DEFAULT_CORPUS]
    model = NgramCounts(order, corpus, smoothing=smoothing, k=0.5)
    words = model.vocabulary + ["<s>", "never-seen"]
    contexts = {(), ("never-seen",) * 2}
    for sentence in corpus:
        for ngram in model.ngrams(sentence):
            contexts.add(ngram[:-1])
    contexts |= {(w1, w2) for w1 in words for w2 in words}  # every seen and unseen bigram context
    for context in contexts:
        if len(context) < order - 1:
            continue
        total = sum(model.probability(w, context) for w in model.vocabulary)
        assert total == pytest.approx(1.0, abs=1e-12), context
        assert all(model.probability(w, context) > 0 for w in model.vocabulary)


def test_kneser_ney_by_hand():
    # Padded: <s> a b </s> | <s> a c </s> | <s> b c </s>; vocabulary a, b, c, </s>.
    # Continuation counts N1+(. w): a {<s>}=1, b {<s>,a}=2, c {a,b}=2, </s> {b,c}=2; total 7.
    # Unigram: (N - 0.75)/7 + 0.75 * 4/7 * 1/4 = N/7.
    # After "a": c(a b) = c(a c) = 1, c(a) = 2, two distinct followers:
    #   P(c | a) = (1 - 0.75)/2 + 0.75 * 2/2 * 2/7 = 1/8 + 3/14 = 19/56
    #   P(a | a) = 0 + 0.75 * 1/7 = 3/28
    model = NgramCounts(2, TINY, smoothing="kneser_ney", discount=0.75)
    assert model.vocabulary == ["</s>", "a", "b", "c"]
    assert model.probability("c", ("a",)) == pytest.approx(19 / 56)
    assert model.probability("b", ("a",)) == pytest.approx(19 / 56)
    assert model.probability("a", ("a",)) == pytest.approx(3 / 28)
    assert model.probability("</s>", ("a",)) == pytest.approx(3 / 14)
    assert model.probability("b", ("unseen",)) == pytest.approx(2 / 7)  # falls to the unigram
    assert model.probability("zebra", ("a",)) == 0.0


def test_mle_and_add_k_by_hand():
    mle = NgramCounts(2, TINY)
    assert mle.probability("b", ("a",)) == 0.5  # count(a b) / count(a) = 1 / 2
    assert mle.probability("a", ("<s>",)) == pytest.approx(2 / 3)
    assert mle.probability("a", ("b",)) == 0.0
    assert mle.sentence_probability(["a", "b"]) == pytest.approx(2 / 3 * 1 / 2 * 1 / 2)
    assert mle.sentence_probability(["b", "a"]) == 0.0
    add_one = NgramCounts(2, TINY, smoothing="add_k", k=1.0)
    assert add_one.probability("b", ("a",)) == pytest.approx((1 + 1) / (2 + 4))
    with pytest.raises(ValueError):
        mle.probability("b", ())  # a bigram model needs one context word


# ----------------------------------------------------------------- ngram_counts


def test_ngram_counts_probe_by_hand():
    params = ngram_counts.Params(
        corpus=["The cat sat.", "the cat ran", "the dog sat"],
        test=["the dog ran", "the cat sat"],
        context="the",
        top=5,
    )
    m = ngram_counts.run(params, seed=0).metrics
    # "the" is followed by cat, cat, dog: P(cat | the) = 2/3, P(dog | the) = 1/3.
    assert m["p_next_cat"] == pytest.approx(2 / 3)
    assert m["p_next_dog"] == pytest.approx(1 / 3)
    assert not any(k.startswith("p_next_") and k not in ("p_next_cat", "p_next_dog") for k in m)
    assert m["next_word_1"] == "cat"
    assert m["distinct_next"] == 2
    assert m["vocabulary_size"] == 5  # the cat sat ran dog
    # Test bigrams: <s>-the the-dog dog-ran* ran-</s> | <s>-the the-cat cat-sat sat-</s>;
    # only dog-ran was never seen, and it zeroes the first sentence.
    assert m["unseen_test_bigrams"] == pytest.approx(1 / 8)
    assert m["zero_probability_sentences"] == pytest.approx(1 / 2)


def test_ngram_counts_default_curve_and_top():
    result = ngram_counts.run(ngram_counts.Params(top=2), seed=0)
    curve = result.curves["next_word"]
    assert list(curve.columns) == ["word", "count", "probability"]
    assert curve["probability"].sum() == pytest.approx(1.0)
    assert len([k for k in result.metrics if k.startswith("p_next_")]) == 2
    assert result.metrics["distinct_next"] == len(curve)
    assert 0 < result.metrics["unseen_test_bigrams"] < 1  # "most n-grams are never observed"


def test_ngram_counts_params_validation():
    with pytest.raises(pydantic.ValidationError, match="never occurs"):
        ngram_counts.Params(corpus=["a cat sat"], context="the")
    with pytest.raises(pydantic.ValidationError, match="single word"):
        ngram_counts.Params(context="the cat")
    with pytest.raises(pydantic.ValidationError):
        ngram_counts.Params(corpus=[])
    with pytest.raises(pydantic.ValidationError):
        ngram_counts.Params(top=0)


def test_memory_refuses_a_parameter_of_the_other_cell():
    with pytest.raises(pydantic.ValidationError, match="forget_bias does not apply to cell 'simple_rnn'"):
        memory.Params(cell="simple_rnn", forget_bias=2)
    with pytest.raises(pydantic.ValidationError, match="recurrent_weight does not apply to cell 'lstm'"):
        memory.Params(cell="lstm", recurrent_weight=1.5)
