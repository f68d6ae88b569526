"""Seq2seq: tasks, the de_en parser, metrics, the encoder-decoder and its step model, end to end."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from keras.ops import convert_to_numpy

from seqkeras.decoding import GreedyDecoder, score_sequences
from seqkeras.errors import SpecError
from seqkeras.evaluation.seq2seq_metrics import (
    DecodedOutputs,
    bleu,
    bucket_metric_name,
    chrf,
    distinct_1,
    distinct_2,
    exact_match,
    free_running_token_accuracy,
    length_buckets,
    length_ratio,
    log_prob_per_token,
    mean_log_prob,
    position_hits,
    seconds_per_sequence,
    teacher_forced_token_accuracy,
)
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import de_en
from seqkeras.tasks import seq2seq_synthetic as synthetic
from seqkeras.tasks.seq2seq_data import END, START

# --------------------------------------------------------------------------- tasks


def test_symbol_tasks_transform_the_source_within_the_length_range():
    params = synthetic.SymbolParams(n_train=50, n_test=20, min_length=3, max_length=7, symbols=5)
    for build, transform in [
        (synthetic.build_reverse, lambda s: s[::-1]),
        (synthetic.build_copy, list),
        (synthetic.build_sort, sorted),
    ]:
        data = build(params, seed=0)
        for source, target in data.test_pairs:
            assert 3 <= len(source) <= 7 and set(source) <= set("abcde")
            assert target == transform(source)


def test_arrays_shift_the_target_behind_the_start_token():
    data = synthetic.build_reverse(synthetic.SymbolParams(n_train=20, n_test=5, min_length=2, max_length=4), seed=0)
    vocabulary = data.target_vocabulary
    assert vocabulary.tokens[:4] == ["<pad>", "<unk>", START, END]
    source, target = data.test_pairs[0]
    assert data.vocabulary.decode(data.x_test["source"][0]) == source
    assert vocabulary.decode(data.x_test["decoder_input"][0]) == [START] + target
    assert vocabulary.decode(data.y_test[0]) == target + [END]
    assert data.x_train["decoder_input"].shape == data.y_train.shape
    assert data.longest_train_target == max(len(t) for t in (vocabulary.decode(row) for row in data.y_train))


def test_tasks_are_seeded():
    params = synthetic.AdditionParams(n_train=30, n_test=10)
    a, b = synthetic.build_addition(params, seed=4), synthetic.build_addition(params, seed=4)
    assert a.test_pairs == b.test_pairs and np.array_equal(a.y_train, b.y_train)
    assert synthetic.build_addition(params, seed=5).test_pairs != a.test_pairs
    dates = synthetic.DatesParams(n_train=30, n_test=10)
    assert synthetic.build_dates(dates, seed=1).test_pairs == synthetic.build_dates(dates, seed=1).test_pairs


def test_addition_sums_and_dates_read_back_as_the_same_day():
    data = synthetic.build_addition(synthetic.AdditionParams(n_train=5, n_test=50, min_length=2, max_length=3), seed=0)
    for source, target in data.test_pairs:
        a, b = "".join(source).split("+")
        assert 2 <= len(a) <= 3 and 2 <= len(b) <= 3
        assert int("".join(target)) == int(a) + int(b)
    data = synthetic.build_dates(synthetic.DatesParams(n_train=5, n_test=200, min_length=8, max_length=40), seed=0)
    formats_seen = set()
    for source, target in data.test_pairs:
        date = dt.date.fromisoformat("".join(target))
        matches = [f for f in synthetic.DATE_FORMATS if f(date) == "".join(source)]
        assert matches and 8 <= len(source) <= 40
        formats_seen.add(matches[0])
    assert len(formats_seen) >= 10


def test_dates_refuse_an_impossible_length_range():
    with pytest.raises(SpecError, match="no date format gives a text of 1 to 5 characters"):
        synthetic.build_dates(synthetic.DatesParams(n_train=5, n_test=5, min_length=1, max_length=5), seed=0)


# --------------------------------------------------------------------------- de_en

DING_LINES = """\
# Version :: test
Hund {m} | Hunde {pl} :: dog | dogs
Das ist mir egal. [ugs.]; Das ist mir wurscht. [ugs.] :: I do not care.; I could not care less.
Er kommt heute nicht. | Sie kommt morgen wieder. :: He is not coming today. | She is coming back tomorrow.
Wir gehen jetzt nach Hause. :: We are going home now.; We go home now.
Ungleich ausgerichtet ist das. | Noch ein Satz hier. :: Unequal alignment here.
Kurz. :: Short.
Er sagt {v} immer die Wahrheit! :: He always tells the truth!
"""


def test_de_en_parser_aligns_sub_entries_and_variants_and_drops_labels(tmp_path):
    path = tmp_path / "de-en"
    path.write_text(DING_LINES, encoding="utf-8")
    pairs = de_en.read_pairs(path, min_words=4)
    assert pairs == [
        ("Das ist mir egal.", "I do not care."),
        ("Das ist mir wurscht.", "I could not care less."),
        ("Er kommt heute nicht.", "He is not coming today."),
        ("Sie kommt morgen wieder.", "She is coming back tomorrow."),
        ("Wir gehen jetzt nach Hause.", "We are going home now."),  # 1 vs 2 variants: the first ones
        ("Er sagt immer die Wahrheit!", "He always tells the truth!"),
    ]
    data = de_en.build(de_en.Params(path=str(path), n_test=2), seed=0)
    assert len(data.test_pairs) == 2 and len(data.y_train) == 4
    assert de_en.tokenize("Das ist mir egal.") == ["das", "ist", "mir", "egal", "."]


@pytest.mark.parametrize("level", ["bpe", "sentencepiece_unigram", "sentencepiece_bpe"])
def test_de_en_cuts_its_words_into_pieces_at_a_subword_level_and_scores_words(tmp_path, level):
    path = tmp_path / "de-en"
    path.write_text(DING_LINES, encoding="utf-8")
    words = de_en.build(de_en.Params(path=str(path), n_test=2), seed=0)
    data = de_en.build(de_en.Params(path=str(path), n_test=2, level=level, vocabulary_size=40,
                                    shared_vocabulary=level == "sentencepiece_bpe"), seed=0)
    assert data.test_pairs != words.test_pairs  # pieces
    for (pieces, _), (source, _) in zip(data.test_pairs, words.test_pairs):  # a letter never trained on is <unk>
        joined = data.words(pieces)
        assert len(joined) == len(source) and all(a == b or "<unk>" in a for a, b in zip(joined, source))
    assert data.references == words.references  # scored on the words the pieces spell
    assert data.subword_level == level and (data.vocabulary is data.target_vocabulary) == (level == "sentencepiece_bpe")
    rule = de_en.Params(path=str(path), level=level).input_rule(data)
    assert rule.split == level and rule.pattern == de_en.TOKEN.pattern
    with pytest.raises(SpecError, match="task.shared_vocabulary: shared_vocabulary applies only to"):
        de_en.Params(path=str(path), shared_vocabulary=True)


def test_de_en_missing_file_says_how_to_install(tmp_path):
    # The default path (the Debian package's) is not checked by validation: where it is not
    # installed, building the task says how to install it.
    missing_default = de_en.Params.model_construct(**{**de_en.Params().model_dump(), "path": str(tmp_path / "nowhere")})
    with pytest.raises(SpecError, match="apt-get install trans-de-en"):
        de_en.build(missing_default, seed=0)
    # A path the spec names is checked before anything runs.
    with pytest.raises(SpecError, match="no such file"):
        de_en.Params(path=str(tmp_path / "nowhere"))


@pytest.mark.slow
@pytest.mark.skipif(not Path(de_en.DEFAULT_PATH).exists(), reason="trans-de-en is not installed")
def test_the_real_dictionary_gives_about_19000_sentence_pairs():
    pairs = de_en.read_pairs(de_en.DEFAULT_PATH)
    assert 18_000 <= len(pairs) <= 19_500
    mean_words = np.mean([len(english.split()) for _, english in pairs])
    assert 7 <= mean_words <= 9


# --------------------------------------------------------------------------- metrics


def outputs_of(hypotheses: list[str], references: list[str], **arrays) -> DecodedOutputs:
    return DecodedOutputs([h.split() for h in hypotheses], [r.split() for r in references], **arrays)


def test_bleu_and_chrf_of_identical_corpora_are_100_and_of_disjoint_ones_0():
    references = ["the cat sat on the mat", "a dog barked at the moon"]
    same = outputs_of(references, references)
    assert bleu(same) == pytest.approx(100.0) and chrf(same) == pytest.approx(100.0)
    assert exact_match(same) == 1.0 and length_ratio(same) == 1.0
    disjoint = outputs_of(["x y z w v u", "q r s t o p"], references)
    assert bleu(disjoint) == pytest.approx(0.0) and exact_match(disjoint) == 0.0
    half = outputs_of(["the cat sat on the mat", "nothing like it"], references)
    assert exact_match(half) == 0.5 and 0 < bleu(half) < 100
    assert length_ratio(half) == pytest.approx(9 / 12)


def test_token_accuracies_compare_positions_including_the_end():
    assert position_hits(list("abc"), list("abc")) == 4
    assert position_hits(list("ab"), list("abc")) == 2  # stopped early: misses c and the end
    assert position_hits(list("abcd"), list("abc")) == 3  # ran on: misses the end
    outputs = outputs_of(["a b", "a b c"], ["a b c", "a b c"], teacher_forced_hits=[4, 3])
    assert free_running_token_accuracy(outputs) == pytest.approx((2 + 4) / 8)
    assert teacher_forced_token_accuracy(outputs) == pytest.approx(7 / 8)


def test_log_prob_distinct_and_time_metrics():
    outputs = outputs_of(["a b a b", "a a"], ["a b", "a b"], log_probs=[-2.0, -4.0], output_lengths=[5, 3],
                         seconds=2.0)
    assert mean_log_prob(outputs) == -3.0
    assert log_prob_per_token(outputs) == pytest.approx(-6.0 / 8)
    assert distinct_1(outputs) == pytest.approx(2 / 6)  # {a, b} of 6 tokens
    assert distinct_2(outputs) == pytest.approx(3 / 4)  # {ab, ba, aa} of 4 bigrams
    assert seconds_per_sequence(outputs) == 1.0


def test_length_buckets_score_each_bucket_separately():
    outputs = outputs_of(["a", "b", "c d", "x y z"], ["a", "b", "c d", "c d e"], source_lengths=[1, 10, 12, 25])
    rows = length_buckets(outputs, {"exact_match": exact_match}, width=10)
    assert [(r["bucket"], r["sequences"], r["exact_match"]) for r in rows] == [
        ("1-10", 2, 1.0), ("11-20", 1, 1.0), ("21-30", 1, 0.0)
    ]
    assert bucket_metric_name("bleu", rows[2]) == "bleu_len_21_30"
    assert math.isnan(bleu(outputs.subset([])))


# --------------------------------------------------------------------------- the model


@pytest.fixture(scope="module")
def small_data():
    return synthetic.build_reverse(
        synthetic.SymbolParams(n_train=16, n_test=6, min_length=2, max_length=7, symbols=5), seed=0
    )


MODEL_VARIANTS = [
    {"attention": "none", "cell": "lstm"},
    {"attention": "bahdanau", "cell": "gru", "bidirectional": True},
    {"attention": "luong", "luong_score": "dot", "cell": "lstm", "layers": 2},
    {"attention": "luong", "cell": "simple_rnn", "decoder_cell": "lstm", "bidirectional": True},
    {"attention": "luong", "luong_layer_norm": True, "cell": "gru"},
    {"attention": "bahdanau", "cell": "lstm", "decoder_cell": "gru", "layers": 2},
]


@pytest.mark.parametrize("options", MODEL_VARIANTS, ids=lambda o: "-".join(str(v) for v in o.values()))
def test_step_by_step_decoding_gives_the_teacher_forced_log_probs(small_data, options):
    """The strongest consistency check: the step model (state cache, select) computes the trained function."""
    from seqkeras.models.seq2seq import Seq2SeqParams, build

    model = build(Seq2SeqParams(units=8, embedding_dim=6, **options), small_data)
    source = small_data.x_test["source"]
    targets = [row[row != 0].tolist() for row in small_data.y_test]  # references with their end
    probabilities = convert_to_numpy(model(small_data.x_test))
    teacher_forced = np.array([np.log(probabilities[i, np.arange(len(t)), t]).sum() for i, t in enumerate(targets)])
    stepped = score_sequences(model.step_model(source, small_data.start_id, small_data.end_id), targets)
    np.testing.assert_allclose(stepped, teacher_forced, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(probabilities[..., small_data.start_id], 0.0)  # never emitted


def test_padding_the_source_further_changes_nothing(small_data):
    from seqkeras.models.seq2seq import Seq2SeqParams, build

    model = build(Seq2SeqParams(units=8, embedding_dim=6, attention="bahdanau", bidirectional=True), small_data)
    padded = {**small_data.x_test, "source": np.pad(small_data.x_test["source"], ((0, 0), (0, 5)))}
    np.testing.assert_allclose(convert_to_numpy(model(padded)), convert_to_numpy(model(small_data.x_test)),
                               atol=1e-5)
    weights = model.attention_weights(padded["source"], padded["decoder_input"])
    real = padded["source"] != 0
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    assert np.all(weights.transpose(1, 0, 2)[:, ~real] == 0.0)


def test_attention_options_are_checked():
    from seqkeras.models.seq2seq import Seq2SeqParams

    with pytest.raises(ValueError, match="luong_score applies only to attention luong"):
        Seq2SeqParams(attention="none", luong_score="dot")
    with pytest.raises(ValueError, match="attention_units applies only to attention bahdanau"):
        Seq2SeqParams(attention="luong", attention_units=8)
    with pytest.raises(ValueError, match="luong_layer_norm applies only to attention luong"):
        Seq2SeqParams(attention="bahdanau", luong_layer_norm=True)


def test_luong_layer_norm_keeps_the_attentional_state_out_of_saturation(small_data):
    import keras
    from keras import ops

    from seqkeras.models.seq2seq import Seq2SeqParams, build

    def first_features(model):
        encoded = model.encode(ops.convert_to_tensor(small_data.x_test["source"]))
        embedded = model.target_embedding(ops.convert_to_tensor(small_data.x_test["decoder_input"][:, 0]))
        return ops.convert_to_numpy(model.decoder_step(embedded, encoded["carry"], encoded)["features"])

    # W_c grown 1,000-fold, as Adam grows it on real sentences: the published layer saturates
    # (every |tanh| near 1, no gradient), the normalized one keeps its pre-activations at variance 1.
    # Seeded: how many of the 48 features saturate depends on the draw (seeds 0–19: 0.29 to 0.88, 7 of them at most
    # half; seed 0: 0.77); unseeded, the test failed 6 of 14 runs here.
    keras.utils.set_random_seed(0)
    features = {}
    for norm in (False, True):
        model = build(Seq2SeqParams(units=8, embedding_dim=6, attention="luong", luong_layer_norm=norm), small_data)
        model.attentional.kernel.assign(1000.0 * ops.convert_to_numpy(model.attentional.kernel))
        features[norm] = first_features(model)
        assert (model.attentional_norm is not None) is norm
    # Saturated: |pre-activation| > 3, where tanh's slope is below 0.01. A normalized row of d values
    # is bounded by sqrt(d − 1) = 2.65 here, so none can be.
    saturated = {norm: (np.abs(np.arctanh(np.clip(f, -0.999999, 0.999999))) > 3).mean() for norm, f in features.items()}
    assert saturated[False] > 0.5 and saturated[True] == 0.0
    pre_activation = np.arctanh(features[True])
    np.testing.assert_allclose(pre_activation.mean(axis=-1), 0.0, atol=1e-3)
    np.testing.assert_allclose(pre_activation.var(axis=-1), 1.0, rtol=1e-2)


def test_seq2seq_pairs_only_with_seq2seq_tasks_and_metrics():
    base = {"version": 1, "name": "x", "train": {"epochs": 1}}
    with pytest.raises(SpecError, match="model kind 'seq2seq' solves seq2seq"):
        build_experiment({**base, "task": {"name": "delayed_recall"}, "model": {"kind": "seq2seq"}},
                         source="t", overrides=[])
    with pytest.raises(SpecError, match="metric 'bleu' does not apply to classification"):
        build_experiment({**base, "task": {"name": "delayed_recall"}, "model": {"kind": "classifier"},
                          "evaluate": {"metrics": ["bleu"]}}, source="t", overrides=[])


# --------------------------------------------------------------------------- end to end

TINY_REVERSE = """
    version: 1
    name: tiny-reverse
    task: {name: reverse, n_train: 600, n_test: 60, min_length: 2, max_length: 5, symbols: 4, bucket_width: 3}
    model: {kind: seq2seq, cell: gru, units: 32, embedding_dim: 16, attention: luong}
    train: {epochs: 3, batch_size: 32, verbose: 0, optimizer: {learning_rate: 0.01, clipnorm: 1.0}}
    evaluate:
      metrics: [bleu, exact_match, free_running_token_accuracy, teacher_forced_token_accuracy, mean_log_prob, by_length]
      decoders: [{name: greedy}, {name: beam, width: 3}, {name: sample, temperature: 1.0, top_k: 2}]
    table: {rows: decoder, value: free_running_token_accuracy}
    expect:
      - claim: greedy beats chance (1/4 per position)
        where: {decoder: greedy}
        metric: free_running_token_accuracy
        at_least: 0.5
"""


@pytest.mark.slow
def test_a_seq2seq_model_trains_on_reverse_and_decodes_better_than_chance(write_spec, tmp_path, capsys):
    from seqkeras.cli import main

    out = tmp_path / "results"
    code = main(["run", str(write_spec(TINY_REVERSE)), "--out", str(out)])
    capsys.readouterr()
    folder = out / "tiny-reverse"
    runs = pd.read_csv(folder / "runs.csv")
    assert code == 0, (folder / "table.md").read_text()
    assert list(runs["decoder"]) == ["greedy", "beam(width=3)", "sample(temperature=1.0, top_k=2)"]
    assert runs["run_id"].nunique() == 1  # trained once, three decoders
    greedy, beam = runs.iloc[0], runs.iloc[1]
    assert greedy["free_running_token_accuracy"] > 0.5 and greedy["bleu"] > 10
    assert beam["mean_log_prob"] >= greedy["mean_log_prob"] - 1e-6  # beam finds outputs at least as probable
    assert runs["teacher_forced_token_accuracy"].nunique() == 1  # a property of the model, not the decoder
    assert {"bleu_len_1_3", "bleu_len_4_6", "exact_match_len_4_6"} <= set(runs.columns)
    run_folder = folder / runs["run_id"][0]
    by_length = pd.read_csv(run_folder / "by_length.csv")
    assert set(by_length["bucket"]) == {"1-3", "4-6"} and len(by_length) == 6
    shown = pd.read_csv(run_folder / "outputs.csv", keep_default_na=False)
    assert set(shown["decoder"]) == set(runs["decoder"]) and len(shown) == 3 * 50
    attention = pd.read_csv(run_folder / "attention.csv")
    np.testing.assert_allclose(attention.groupby("output_position")["weight"].sum(), 1.0, atol=1e-5)
    assert json.loads((run_folder / "target_vocabulary.json").read_text())[:4] == ["<pad>", "<unk>", START, END]


def test_greedy_decoding_of_the_step_model_matches_the_decoder_output_log_probs(small_data):
    from seqkeras.models.seq2seq import Seq2SeqParams, build

    model = build(Seq2SeqParams(units=8, embedding_dim=6, attention="bahdanau"), small_data)
    step_model = model.step_model(small_data.x_test["source"], small_data.start_id, small_data.end_id)
    result = GreedyDecoder().decode(step_model, batch_size=len(small_data.x_test["source"]), max_length=9)
    np.testing.assert_allclose(score_sequences(step_model, result.tokens), result.log_probs, atol=1e-4)
    with pytest.raises(ValueError, match="holds 6 sources, received batch_size 2"):
        step_model.start(2)


def test_beam_on_the_step_model_gives_the_same_outputs_when_it_stops_early(small_data):
    from seqkeras.decoding import BeamDecoder
    from seqkeras.models.seq2seq import Seq2SeqParams, build

    model = build(Seq2SeqParams(units=8, embedding_dim=6, attention="luong"), small_data)
    source = small_data.x_test["source"]

    def step_model():
        return model.step_model(source, small_data.start_id, small_data.end_id)

    full = BeamDecoder(width=3).decode(step_model(), len(source), max_length=9)
    early = BeamDecoder(width=3).decode(step_model(), len(source), max_length=9, all_hypotheses=False)
    assert early.tokens == full.tokens
    # Dropping finished rows changes the batch the matmuls see, hence the float summation
    # order (oneDNN): the same log-probabilities to rounding, not always to the last bit.
    np.testing.assert_allclose(early.log_probs, full.log_probs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(score_sequences(step_model(), full.tokens), full.log_probs, atol=1e-4)
    assert BeamDecoder(width=1).decode(step_model(), len(source), 9).tokens == \
        GreedyDecoder().decode(step_model(), len(source), 9).tokens
