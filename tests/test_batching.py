"""Batches by length (train.batches: by_length, training/batching.py): which rows share a batch, how each batch is
cut, what it saves, and a run that trains so on Keras's fit (the torch lean loop's: tests/torch_backend)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seqkeras.training import batching
from tests.helpers import run_cli

REPO = Path(__file__).resolve().parents[1]


def right_padded(lengths, width=30, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = np.zeros((len(lengths), width), dtype="int32")
    for row, length in enumerate(lengths):
        rows[row, :length] = rng.integers(1, 50, size=length)  # id 1 (<unk>) included: only 0 is padding
    return rows


LENGTHS = np.random.default_rng(1).integers(0, 31, size=1000)


def test_each_epoch_batches_every_row_once_in_as_many_batches_as_shuffled_and_groups_similar_lengths():
    x = right_padded(LENGTHS)
    assert list(batching.lengths(x)) == list(LENGTHS)
    keys = batching.row_lengths(x)
    first = batching.epoch_batches(keys, 16, seed=3, epoch=0)
    assert len(first) == -(-1000 // 16)  # the same steps per epoch as shuffled's
    assert sorted(np.concatenate(first)) == list(range(1000))
    assert sum(len(batch) < 16 for batch in first) == 1  # only the last pool's last batch is partial
    spreads = [np.ptp(LENGTHS[batch]) for batch in first]
    assert np.median(spreads) <= 1  # 30 lengths over pools of 1,600 rows: a batch holds one or two lengths
    again = batching.epoch_batches(keys, 16, seed=3, epoch=0)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))  # seeded: a resumed run sees the same batches
    second = batching.epoch_batches(keys, 16, seed=3, epoch=1)
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))  # a new grouping and order each epoch
    # The batches' order is shuffled: not short to long.
    means = [LENGTHS[batch].mean() for batch in first]
    assert means != sorted(means) and means != sorted(means, reverse=True)


def test_a_batch_is_cut_to_its_longest_row_rounded_up_to_eight_and_per_row_arrays_stay_whole():
    x = right_padded([3, 9, 2, 0, 30])
    tags, weights, labels = x * 2, (x != 0).astype("float32"), np.arange(5)
    keys = batching.row_lengths(x)
    batch_x, batch_y, batch_weights = batching.cut(x, tags, weights, np.array([0, 2, 3]), keys)
    assert batch_x.shape == (3, 8) and np.array_equal(batch_x, x[[0, 2, 3], :8])
    assert np.array_equal(batch_y, tags[[0, 2, 3], :8]) and np.array_equal(batch_weights, weights[[0, 2, 3], :8])
    assert batching.cut(x, tags, None, np.array([1, 0]), keys)[0].shape == (2, 16)
    assert batching.cut(x, tags, None, np.array([4]), keys)[0].shape == (1, 30)  # never past the task's width
    assert batching.cut(x, tags, None, np.array([3]), keys)[0].shape == (1, 8)  # an empty row keeps one step
    _, batch_labels, row_weights = batching.cut(x, labels, np.ones(5), np.array([4, 0]), keys)
    assert list(batch_labels) == [4, 0] and list(row_weights) == [1, 1]


def test_an_encoder_decoders_source_and_target_are_each_cut_to_their_own_longest():
    source, target = right_padded([5, 12, 3], width=20), right_padded([2, 3, 17], width=24, seed=1)
    x, rows = {"source": source, "decoder_input": target}, np.array([0, 1])
    keys = batching.row_lengths(x)
    batch_x, batch_y, batch_weights = batching.cut(x, target + 1, (target != 0).astype("float32"), rows, keys)
    assert batch_x["source"].shape == (2, 16) and batch_x["decoder_input"].shape == (2, 8)
    assert batch_y.shape == batch_weights.shape == (2, 8)
    # Sorted by source length first, then target length.
    order = np.concatenate(batching.epoch_batches(keys, 3, 3, 0))
    assert list(order) == [2, 0, 1]


def test_the_share_of_padding_both_ways():
    shares = batching.padding(right_padded(LENGTHS), 16, seed=0)
    assert shares["shuffled"] == pytest.approx(1 - LENGTHS.sum() / (1000 * 30))
    assert shares["by_length"] < shares["shuffled"] / 2
    uniform = batching.padding(right_padded([30] * 64), 16, seed=0)
    assert uniform == {"shuffled": 0.0, "by_length": 0.0}


def test_the_data_card_gives_the_padding_of_token_sequences_only():
    from types import SimpleNamespace

    from seqkeras.execution.single_run import padding_shares

    def run(batches="shuffled"):
        return SimpleNamespace(train=SimpleNamespace(batches=batches, batch_size=16), seed=0)

    def data(x, problem="tagging"):
        return SimpleNamespace(x_train=x, problem=problem)

    varied = right_padded(LENGTHS)
    assert padding_shares(data(varied), run()) == batching.padding(varied, 16, seed=0)
    pairs = {"source": varied, "decoder_input": varied[::-1].copy()}  # an encoder-decoder's two sides
    assert padding_shares(data(pairs, "seq2seq"), run())["shuffled"] > 0
    uniform = right_padded([30] * 64)
    assert padding_shares(data(uniform), run()) is None  # nothing to leave out
    assert padding_shares(data(uniform), run("by_length")) == {"shuffled": 0.0, "by_length": 0.0}  # as it trained
    steps = np.random.default_rng(0).normal(size=(64, 30))
    for other in (data(steps, "regression"), data(steps), data(varied[:, :, None]), data({"source": varied}),
                  data(varied.astype("float32"))):
        assert padding_shares(other, run()) is None  # real-valued steps, arrays of another shape: no token slots
    assert padding_shares(data(varied), SimpleNamespace(train=None, seed=0)) is None  # an estimated model


REVIEWS = f"""
    version: 1
    name: reviews
    task: {{name: text_classification_file, path: {REPO / "experiments/examples/data/reviews.csv"}, test_share: 0.2,
           validation_share: 0.1}}
    model: {{kind: classifier, units: 8, embedding_dim: 8}}
    train: {{epochs: 2, batch_size: 16, verbose: 0, batches: by_length, early_stopping: {{monitor: val_loss}}}}
"""


def test_a_run_trains_on_batches_by_length_says_what_padding_it_saved_and_keeps_the_ids_of_shuffled_runs(
        write_spec, tmp_path, capsys):
    code, out, err = run_cli(capsys, "run", write_spec(REVIEWS), "--out", tmp_path)
    assert code == 0, out + err
    runs = pd.read_csv(tmp_path / "reviews" / "runs.csv")
    assert list(runs.status) == ["ok"]
    folder = tmp_path / "reviews" / runs.run_id[0]
    assert "batches: by_length" in (folder / "spec.yaml").read_text()
    assert len(pd.read_csv(folder / "history.csv")) == 2
    padding = json.loads((folder / "data_card.json").read_text())["padding"]
    assert 0 <= padding["by_length"] < padding["shuffled"]  # short reviews: rounded up to 8 or 16 words
    card = (tmp_path / "reviews" / "data_card.md").read_text()
    assert f"Padding: {100 * padding['shuffled']:.1f}% of the training batches' token slots" in card
    # The default (auto) batches a classification of texts by length: the same spec without the key plans this
    # run; shuffled, said, plans another.
    plain = write_spec(REVIEWS.replace("batches: by_length, ", ""), "plain.yaml")
    said = write_spec(REVIEWS.replace("batches: by_length", "batches: shuffled"), "said.yaml")
    planned = [re.findall(r"seed=0_\w+", run_cli(capsys, "run", spec, "--out", tmp_path / "plans", "--dry-run").out)
               for spec in (plain, said)]
    assert planned[0] == [runs.run_id[0]] and len(planned[1]) == 1 and planned[1] != planned[0]


def test_a_shuffled_runs_card_says_what_batches_by_length_would_leave_out_where_there_is_padding(
        write_spec, tmp_path, capsys):
    # 48 sentences of 2 to 24 tokens, each its own (a file's repeated sentences are read once)
    sentences = ["\n".join(f"w{k}x{i % 7} {'B' if i % 3 else 'O'}" for i in range((2, 3, 9, 14, 21, 24)[k % 6]))
                 for k in range(48)]
    tagged = tmp_path / "tagged.conll"
    tagged.write_text("\n\n".join(sentences) + "\n", encoding="utf-8")
    tagging = write_spec(f"""
        version: 1
        name: tagged
        task: {{name: conll_file, path: {tagged}}}
        model: {{kind: tagger, units: 4, embedding_dim: 4}}
        train: {{epochs: 1, batch_size: 8, verbose: 0}}
    """, "tagged.yaml")
    for spec in (tagging, write_spec(SYNTHETIC, "recall.yaml")):
        code, out, err = run_cli(capsys, "run", spec, "--out", tmp_path / "out")
        assert code == 0, out + err
    [tagged_card] = (tmp_path / "out" / "tagged").glob("*/data_card.json")
    assert "batches: by_length" not in (tagged_card.parent / "spec.yaml").read_text()  # a tagging task shuffles
    padding = json.loads(tagged_card.read_text())["padding"]
    assert 0 <= padding["by_length"] < padding["shuffled"]
    assert f"Padding: {100 * padding['shuffled']:.1f}% of the training batches' token slots" in (
        tmp_path / "out" / "tagged" / "data_card.md").read_text()
    [recall_card] = (tmp_path / "out" / "recall").glob("*/data_card.json")
    assert "padding" not in json.loads(recall_card.read_text())  # a generator's sequences of one length


SYNTHETIC = """
    version: 1
    name: recall
    task: {name: delayed_recall, lag: 5, n_train: 32, n_test: 8}
    model: {kind: classifier, units: 4}
    train: {epochs: 1}
"""


@pytest.mark.parametrize("spec, batches", [(SYNTHETIC, "shuffled"), (REVIEWS, "by_length")],
                         ids=["a generator's sequences", "a file of texts"])
def test_auto_batches_a_classification_of_texts_by_length_and_anything_else_shuffled(spec, batches, write_spec):
    from seqkeras.spec.loader import load_experiment

    without = spec.replace("batches: by_length, ", "")
    [auto] = load_experiment(write_spec(without, "auto.yaml")).runs
    said_spec = without.replace("train: {", f"train: {{batches: {batches}, ")
    [said] = load_experiment(write_spec(said_spec, "said.yaml")).runs
    assert auto.train.batches == batches
    assert auto.run_id == said.run_id  # the choice is what the run's id hashes
    if batches == "shuffled":  # left out of the id, as before the option existed
        assert "batches" not in auto.resolved["train"]


def test_batches_by_length_are_refused_for_real_valued_steps(write_spec, capsys):
    spec = write_spec("""
        version: 1
        name: adding
        task: {name: adding, length: 10, n_train: 32, n_test: 8}
        model: {kind: regressor, units: 4}
        train: {batches: by_length}
    """)
    code, out, err = run_cli(capsys, "validate", spec)
    assert code == 2
    assert "train.batches" in err and "regression" in err and "Traceback" not in err
