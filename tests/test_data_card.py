"""Duplicates removed before a split (tasks.duplicates) and the data card (tasks.data_card, reporting.data_card)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seqkeras.cli import main
from seqkeras.errors import SpecError
from seqkeras.reporting.data_card import write_experiment_card
from seqkeras.tasks import files
from seqkeras.tasks.base import PAD, UNK, SequenceData, Vocabulary
from seqkeras.tasks.data_card import describe
from seqkeras.tasks.duplicates import collapse, drop_seen
from seqkeras.tasks.text import split_examples

# ----- duplicates ----------------------------------------------------------------------


def test_duplicates_are_collapsed_keeping_the_majority_label_and_dropping_ties():
    pool = [("a", "x"), ("b", "x"), ("a", "x"), ("c", "x"), ("c", "y"), ("c", "y"), ("d", "x"), ("d", "y"),
            (["t", "u"], ["O", "O"]), (["t", "u"], ["O", "O"])]
    kept, notes = collapse(pool)
    # First appearance order; c keeps its majority label y; d (one x, one y) is dropped with both copies.
    assert kept == [("a", "x"), ("b", "x"), ("c", "y"), (["t", "u"], ["O", "O"])]
    assert notes == {"duplicates_removed": 6, "duplicated_inputs": 4, "conflicting_inputs": 2,
                     "conflicting_inputs_dropped": 1}


def test_a_pool_without_duplicates_keeps_its_split():
    pool = [(f"text {i}", str(i % 2)) for i in range(20)]
    train, test = split_examples(pool, 0.25, seed=3, what="pool")  # unpacks as the (train, test) it always was
    order = np.random.default_rng(3).permutation(20)
    assert test == [pool[i] for i in order[-5:]] and len(train) == 15


def test_no_text_is_on_both_sides_of_a_split_and_the_count_is_recorded():
    pool = [(f"text {i % 7}", "pos" if i % 7 < 3 else "neg") for i in range(40)]
    for seed in range(5):
        split = split_examples(pool, 0.3, seed, what="pool")
        assert not {text for text, _ in split.train} & {text for text, _ in split.test}
        assert len(split.train) + len(split.test) == 7 and split.notes["duplicates_removed"] == 33


def test_a_separate_test_file_loses_the_examples_also_in_training(tmp_path):
    assert drop_seen([("a", "x"), ("b", "y")], [("a", "y"), ("c", "x")]) == ([("c", "x")],
                                                                            {"test_examples_in_train_removed": 1})
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("text,label\ngood film,pos\nbad film,neg\nfine film,pos\n", encoding="utf-8")
    test.write_text("text,label\ngood film,pos\nawful film,neg\n", encoding="utf-8")
    params = files.TextClassificationParams(path=str(train), test_path=str(test), min_count=1)
    data = files.build_text_classification(params, seed=0)
    assert len(data.y_test) == 1 and data.notes == {"test_examples_in_train_removed": 1}
    test.write_text("text,label\ngood film,pos\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"every example of .*test.csv is also in .*train.csv"):
        files.build_text_classification(params, seed=0)


# ----- the card's numbers ----------------------------------------------------------------


def test_the_card_counts_a_hand_made_dataset():
    vocabulary = Vocabulary([PAD, UNK, "a", "b", "c"])
    data = SequenceData(
        "classification",
        x_train=np.array([[2, 3, 0, 0], [2, 3, 0, 0], [4, 1, 2, 3], [3, 0, 0, 0]], dtype=np.int32),
        y_train=np.array([0, 0, 1, 1], dtype=np.int32),
        x_test=np.array([[2, 3, 0], [1, 1, 4]], dtype=np.int32),  # its own padded width, as a split may have
        y_test=np.array([0, 1], dtype=np.int32),
        vocabulary=vocabulary, labels=Vocabulary(["neg", "pos"]), notes={"duplicates_removed": 2},
    )
    card = describe(data)
    train, test = card["splits"]
    assert train == {"name": "train", "examples": 4, "tokens": 9,
                     "length": {"min": 1, "median": 2.0, "p90": 3.4, "max": 4},
                     "unknown_rate": round(1 / 9, 4), "duplicates": 1,
                     "classes": {"neg": {"count": 2, "share": 0.5}, "pos": {"count": 2, "share": 0.5}}}
    assert test["examples"] == 2 and test["tokens"] == 5 and test["duplicates"] == 0
    assert card["vocabulary"] == 5 and card["test_oov_rate"] == 0.4  # 2 of the 5 test tokens are <unk>
    assert card["across"] == {"test/train": 1}  # [2, 3] is in both, padded to different widths
    assert card["removed_before_split"] == {"duplicates_removed": 2}


def test_tag_shares_leave_padding_out():
    data = SequenceData("tagging", np.array([[2, 3, 0]]), np.array([[1, 2, 0]]), np.array([[2, 0, 0]]),
                        np.array([[1, 0, 0]]), Vocabulary([PAD, UNK, "w", "v"]), Vocabulary([PAD, "O", "B-X"]))
    train, test = describe(data)["splits"]
    assert train["classes"] == {"O": {"count": 1, "share": 0.5}, "B-X": {"count": 1, "share": 0.5}}
    assert test["classes"]["B-X"] == {"count": 0, "share": 0.0}


# ----- the experiment's card and the report ----------------------------------------------

CARD_SPEC = """
    version: 1
    name: cards
    task: {{name: text_classification_file, path: {path}, min_count: 1, test_share: 0.25}}
    model: {{kind: classifier, units: 2, embedding_dim: 2}}
    train: {{epochs: 1, batch_size: 8, verbose: 0, keep_model: false}}
    seeds: [1, 0]
"""


def test_an_experiment_writes_its_data_card_and_the_report_shows_it(tmp_path, write_spec, capsys):
    data = tmp_path / "reviews.csv"
    rows = [f"film {i} was {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}" for i in range(12)]
    data.write_text("text,label\n" + "\n".join(rows + rows[:3]) + "\n", encoding="utf-8")  # 3 texts twice
    out = tmp_path / "out"
    assert main(["run", str(write_spec(CARD_SPEC.format(path=data))), "--out", str(out)]) == 0
    folder = out / "cards"
    saved = json.loads((folder / "data_card.json").read_text(encoding="utf-8"))
    (entry,) = saved["cards"]
    assert entry["card"]["seed"] == 0 and entry["run_id"].startswith("seed=0")  # the lowest seed, not the first
    assert [(p["name"], p["examples"]) for p in entry["card"]["splits"]] == [("train", 9), ("test", 3)]
    assert entry["card"]["removed_before_split"]["duplicates_removed"] == 3
    page = (folder / "data_card.md").read_text(encoding="utf-8")
    assert "# Data card: cards" in page and "depend on the seed" in page and "| train | 9 |" in page
    assert "duplicates_removed 3" in page
    assert main(["report", str(folder)]) == 0
    report = (folder / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="data">' in report and "<td>train</td><td>9</td>" in report


def test_a_damaged_data_card_is_a_warning(tmp_path, capsys):
    folder = tmp_path / "exp"
    (folder / "run_a").mkdir(parents=True)
    (folder / "run_b").mkdir()
    (folder / "run_a" / "data_card.json").write_text("{not json", encoding="utf-8")
    (folder / "run_b" / "data_card.json").write_text('{"splits": [{"name": "train", "examples": "many"}]}',
                                                     encoding="utf-8")
    warnings: list[str] = []
    assert not write_experiment_card(folder, "exp", [("task", ["run_a", "run_b"])], echo=warnings.append)
    assert len(warnings) == 2 and "is not JSON" in warnings[0] and "does not read as a data card" in warnings[1]
    assert not (folder / "data_card.md").exists()
    # The experiment's data_card.json, damaged: the report is written without the section, with a warning.
    (folder / "runs.csv").write_text("experiment,run_id,status,seed,accuracy\nexp,run_a,ok,0,0.5\n", encoding="utf-8")
    (folder / "data_card.json").write_text('{"cards": [{"task": "t", "run_id": "r", "card": {"splits": 3}}]}',
                                           encoding="utf-8")
    assert main(["report", str(folder)]) == 0
    assert "data card of r is left out of the report" in capsys.readouterr().err
    assert 'id="data"' not in (folder / "report.html").read_text(encoding="utf-8")


def test_a_subword_card_says_pieces_per_word_and_task_counts_are_not_all_removals():
    from seqkeras.reporting.data_card import blocks

    card = {"splits": [], "vocabulary": 40, "test_oov_rate": 0.0, "pieces_per_word": 1.25,
            "removed_before_split": {"train_pairs": 90, "test_words": 40, "test_pieces": 50}}
    text = "\n".join(str(body) for kind, body in blocks(card) if kind == "text")
    assert "pieces per word on the test set: 1.25" in text
    assert "train_pairs 90" in text and "removed before the split" not in text


def test_a_subword_card_gives_each_sides_pieces_per_word_and_unknown_rate(tmp_path):
    from seqkeras.reporting.data_card import markdown
    from seqkeras.tasks import sentence_pairs

    train = [("forty one", "one forty"), ("seventy three", "three seventy"), ("forty three", "three forty")] * 4
    test = [("forty seven", "seven forty"), ("quokka one", "one quokka")]
    for name, pairs in (("train", train), ("test", test)):
        (tmp_path / f"{name}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    params = sentence_pairs.Params(path=str(tmp_path / "train.tsv"), test_path=str(tmp_path / "test.tsv"),
                                   level="bpe", vocabulary_size=32)
    data = sentence_pairs.build(params, seed=0)
    card = describe(data)
    source, target = card["tokenizers"]
    # Counted here from the test pairs themselves: their words, and the pieces (and <unk>s) they became.
    pieces = [piece for pieces, _ in data.test_pairs for piece in pieces]
    assert source == {"side": "source", "level": "bpe", "vocabulary": len(data.vocabulary), "test_words": 4,
                      "test_pieces": len(pieces), "pieces_per_word": round(len(pieces) / 4, 4),
                      "unknown_rate": round(pieces.count(UNK) / len(pieces), 4)}
    assert source["unknown_rate"] > 0 and target["side"] == "target" and target["test_words"] == 4
    page = markdown("pairs", [{"task": "sentence_pairs", "run_id": "r", "card": card}])
    assert "| tokenizer (side) | level | vocabulary | test words | test pieces | pieces per word |" in page
    assert f"| source | bpe | {len(data.vocabulary)} | 4 | {len(pieces)} |" in page


def test_a_card_whose_tokenizers_are_not_a_list_does_not_read_as_a_card():
    from seqkeras.reporting.data_card import blocks

    with pytest.raises(TypeError, match="tokenizers are not a list of mappings"):
        blocks({"splits": [], "tokenizers": {"side": "source"}})
    with pytest.raises(TypeError, match="is not a share"):
        blocks({"splits": [], "tokenizers": [{"side": "source", "level": "bpe", "unknown_rate": "high"}]})
