"""`level: wordpiece` beyond text classification: sentence_pairs (one vocabulary per side, outputs scored as the
words their pieces spell), lm_corpus (perplexity per piece, with the words and pieces counted to convert it,
samples joined into words), and the tagging tasks, which refuse it (their tags are per word)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import lm_corpus, sentence_pairs, subwords
from seqkeras.tasks.base import UNK
from tests.helpers import run_cli

ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
# Numbers in words → the same words reversed: both sides are words whose pieces recur (##ty, ##teen, seven ...).
WORDS = [f"{tens} {one}" for tens in TENS for one in ONES[::2]] + ["thirteen", "fourteen", "sixteen", "seventeen"]
TRAIN = [(text, " ".join(reversed(text.split()))) for text in WORDS]
# Words only the test file holds: never a piece of either vocabulary.
TEST = [("zyzzyva zyzzyva two", "two zyzzyva zyzzyva"), ("quokka seventy", "seventy quokka"),
        ("forty three", "three forty"), ("nineteen", "nineteen")]


def tsv(path, pairs):
    path.write_text("".join(f"{source}\t{target}\n" for source, target in pairs), encoding="utf-8")
    return str(path)


@pytest.fixture
def pair_files(tmp_path):
    return {"path": tsv(tmp_path / "train.tsv", TRAIN), "test_path": tsv(tmp_path / "test.tsv", TEST)}


def pieces_data(pair_files, **options):
    params = sentence_pairs.Params(level="wordpiece", vocabulary_size=40, **pair_files, **options)
    return params, sentence_pairs.build(params, seed=0)


def test_join_pieces_puts_the_pieces_back_into_words():
    pieces = ["runn", "##ing", "fast", "s", "##e", "##v", "##en", "!"]
    assert subwords.join_pieces(pieces, "wordpiece") == ["running", "fast", "seven", "!"]
    # A model may write a continuing piece first: it is a word of its own, without the mark.
    assert subwords.join_pieces(["##ty", "one", "##"], "wordpiece") == ["ty", "one", "##"]
    assert subwords.join_pieces([], "wordpiece") == []


def test_each_sides_vocabulary_comes_from_the_training_pairs_only(pair_files):
    _, data = pieces_data(pair_files)
    for vocabulary in (data.vocabulary, data.target_vocabulary):
        assert len(vocabulary) <= 40 and vocabulary.tokens[:2] == ["<pad>", UNK]
        assert any(token.startswith("##") for token in vocabulary.tokens)
        assert not {"zyzzyva", "quokka", "nineteen"} & set(vocabulary.tokens)
    assert data.target_vocabulary.tokens[2:4] == ["<s>", "</s>"]  # the decoder's markers are reserved pieces
    # The test pairs are pieces; their references are the words of the target, as level word reads them.
    assert data.reference_words == [target.split() for _, target in TEST]
    assert [data.words(target) for _, target in data.test_pairs][2:] == [["three", "forty"], ["nineteen"]]
    assert data.notes["test_pairs"] == 4 and data.notes["pairs_too_long.test"] == 0 == len(TEST) - 4


def test_length_limits_count_pieces(pair_files):
    _, whole = pieces_data(pair_files)
    longest = max(len(source) for source, _ in whole.test_pairs)
    assert longest > 3  # more pieces than any test source has words
    _, limited = pieces_data(pair_files, max_source_length=longest - 1, max_left_out=1)
    assert limited.notes["pairs_too_long.test"] >= 1
    # Without max_left_out, the pairs a limit leaves out of a part are refused, in pieces, naming the part.
    with pytest.raises(SpecError, match=r"train.tsv: the train pairs: max_source_length \d+ \(pieces\) leave out "
                                        r"\d+ of its 44 pairs \([\d.]+%\), more than max_left_out \(0.05\) allows: "
                                        r"max_source_length \d+ keeps 99% of the sources") as caught:
        pieces_data(pair_files, max_source_length=longest - 1)
    assert caught.value.path == "task.max_source_length"
    assert all(len(source) < longest for source, _ in limited.test_pairs)


def test_the_evaluator_scores_the_words_the_pieces_spell(pair_files, monkeypatch):
    from seqkeras.decoding.decoders import GreedyChoice
    from seqkeras.evaluation import seq2seq, seq2seq_metrics

    _, data = pieces_data(pair_files)
    # A decoder that writes each test target's pieces exactly (where the vocabulary spells it).
    targets = [row[row != 0].tolist() for row in data.y_test]
    monkeypatch.setattr(seq2seq, "decode_sources", lambda *args: (
        targets, np.zeros(len(targets)), np.array([len(t) for t in targets])))
    outputs = seq2seq.decode(None, data, GreedyChoice(), max_length=20)
    assert any(piece.startswith("##") for _, target in data.test_pairs for piece in target)
    assert not any(word.startswith("##") for words in outputs.hypotheses for word in words)
    assert outputs.hypotheses[2:] == [["three", "forty"], ["nineteen"]]
    # chrF and exact match read the words: the pairs the vocabulary spells score full marks, the first two
    # (words never seen in training) less; the same outputs scored as pieces would not.
    import sacrebleu

    assert seq2seq_metrics.chrf(outputs.subset([2, 3])) == pytest.approx(100.0)
    assert seq2seq_metrics.chrf(outputs) < 100 and seq2seq_metrics.exact_match(outputs) == 0.5
    as_pieces = [" ".join(data.target_vocabulary.decode(ids[:-1])) for ids in targets[2:]]
    assert sacrebleu.corpus_chrf(as_pieces, [["three forty", "nineteen"]]).score < 100
    shown = seq2seq.shown_outputs(data, outputs, "greedy")
    assert [row["output"] for row in shown[2:]] == ["three forty", "nineteen"]
    assert shown[3]["source"] == "nineteen"


def test_a_wordpiece_seq2seq_run_scores_and_predicts_words(tmp_path, capsys, pair_files):
    from seqkeras.decoding.decoders import GreedyChoice
    from seqkeras.kept.predict import decoded_ids

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "version": 1, "name": "pair-pieces",
        "task": {"name": "sentence_pairs", **pair_files, "level": "wordpiece", "vocabulary_size": 40},
        "model": {"kind": "seq2seq", "cell": "gru", "units": 8, "embedding_dim": 4},
        "train": {"epochs": 1, "batch_size": 8, "verbose": 0},
        "evaluate": {"metrics": ["bleu", "chrf", "exact_match", "by_length"]}, "seeds": [0],
    }))
    out = tmp_path / "results"
    code, _, err = run_cli(capsys, "run", spec, "--out", out)
    assert code == 0, err
    (folder,) = [p for p in (out / "pair-pieces").iterdir() if p.is_dir()]
    record = json.loads((folder / "metrics.json").read_text())
    # outputs.csv shows every test pair as words; BLEU is sacrebleu's on exactly those words.
    import sacrebleu

    shown = pd.read_csv(folder / "outputs.csv", keep_default_na=False)
    assert list(shown["reference"]) == [target for _, target in TEST]
    assert not any(word.startswith("##") for text in shown["output"] for word in text.split())
    expected = sacrebleu.corpus_bleu(list(shown["output"]), [list(shown["reference"])], force=True).score
    assert record["metrics"]["bleu"] == pytest.approx(expected)
    assert not pd.read_csv(folder / "by_length.csv").empty

    preprocessing = json.loads((folder / "preprocessing.json").read_text())
    assert preprocessing["input"]["split"] == "wordpiece" and preprocessing["output"]["continuation"] == "##"
    kept = seqkeras.load_model(folder)
    # The kept model splits a source into the pieces the run's test sources were split into.
    encoded = kept.encode([source for source, _ in TEST])
    rebuilt = sentence_pairs.build(sentence_pairs.Params(level="wordpiece", vocabulary_size=40, **pair_files), 0)
    np.testing.assert_array_equal(encoded.ids, rebuilt.x_test["source"][:, : encoded.ids.shape[1]])
    assert encoded.tokens[1][0] == UNK and encoded.unknown_count >= 3
    # Its output is the words its pieces spell.
    texts = ["seventy one", "forty five"]
    code, stdout, err = run_cli(capsys, "predict", folder, "--text", texts[0], "--text", texts[1], "--format", "jsonl")
    assert code == 0, err
    outputs = [json.loads(line)["output"] for line in stdout.splitlines()]
    ids, _ = decoded_ids(kept, kept.encode(texts).ids, GreedyChoice())
    pieces = [kept.preprocessing.tokens_of(row) for row in ids]
    assert outputs == [" ".join(subwords.join_pieces(p, "wordpiece")) for p in pieces]
    assert kept.preprocessing.detokenize(["runn", "##ing", "fast"]) == "running fast"


# --------------------------------------------------------------------------- lm_corpus

LINES = ["The running dogs ran home.", "A dog's life is running and playing.", "Seventy players were playing.",
         "Running is fun for the dogs and the players."] * 6


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("\n".join([*LINES, "zyzzyva zyzzyva zyzzyva zyzzyva."]) + "\n", encoding="utf-8")
    return path


def lm_params(text_file, **options):
    return lm_corpus.Params(**{"corpus": "path", "path": str(text_file), "context": 8, "test_share": 0.2,
                               "max_train_tokens": None, "max_test_tokens": None, "level": "wordpiece",
                               "vocabulary_size": 64, **options})


def test_a_wordpiece_language_models_vocabulary_comes_from_the_training_units(text_file):
    units = lm_corpus.read_lines(str(text_file))
    seed = next(seed for seed in range(50) if units[-1] in lm_corpus.split_units(units, 0.2, seed)[1])
    data = lm_corpus.build(lm_params(text_file), seed=seed)
    tokens = data.vocabulary.tokens
    assert tokens[:3] == ["<pad>", UNK, "</s>"] and len(tokens) <= 64
    assert "zyzzyva" not in tokens and any(token.startswith("##") for token in tokens)
    # The record counts the test units' words (level word's tokens) and pieces, ends included, to convert
    # perplexity per piece into perplexity per word; the data card gives their ratio.
    test_units = lm_corpus.split_units(units, 0.2, seed)[1]
    words = sum(len(lm_corpus.tokenize(unit, "word", True)) + 1 for unit in test_units)
    pieces = sum(len(data.tokenize(unit)) + 1 for unit in test_units)
    assert data.notes["test_words"] == words and data.notes["test_pieces"] == pieces
    assert data.notes["test_pieces"] > words
    from seqkeras.tasks.data_card import describe

    assert describe(data)["pieces_per_word"] == round(data.notes["test_pieces"] / words, 4)
    assert data.detokenize(["runn", "##ing", "dog", "##s", "</s>", "the"]) == "running dogs </s>\nthe"
    assert data.tokenize("Running dogs") == ["running", *data.tokenize("dogs")]


def test_a_wordpiece_language_model_trains_and_writes_its_samples_in_words(tmp_path, capsys, text_file):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "version": 1, "name": "lm-pieces",
        "task": {"name": "lm_corpus", "corpus": "path", "path": str(text_file), "context": 8,
                 "level": "wordpiece", "vocabulary_size": 40},
        "model": {"kind": "lm", "cell": "gru", "units": 8, "embedding_dim": 4},
        "train": {"epochs": 1, "batch_size": 8, "verbose": 0},
        "evaluate": {"generate": {"prompts": ["the running", "dogs"], "length": 12},
                     "decoders": [{"name": "sample", "temperature": 2.0}]},
        "seeds": [0],
    }))
    out = tmp_path / "results"
    code, _, err = run_cli(capsys, "run", spec, "--out", out)
    assert code == 0, err
    (folder,) = [p for p in (out / "lm-pieces").iterdir() if p.is_dir()]
    record = json.loads((folder / "metrics.json").read_text())
    assert record["data"]["test_pieces"] > record["data"]["test_words"] > 0
    card = json.loads((folder / "data_card.json").read_text())
    assert card["pieces_per_word"] > 1
    samples = pd.read_csv(folder / "samples.csv", keep_default_na=False)
    assert len(samples) == 2
    assert not any(word.startswith("##") for text in samples["continuation"] for word in text.split())
    kept = seqkeras.load_model(folder)
    assert kept.preprocessing.document.output.continuation == "##"
    continued = kept.predict(["the running"], length=12)
    assert not any(word.startswith("##") for word in continued["output"][0].split())


# --------------------------------------------------------------------------- keys, refusals and run ids


def test_unset_keys_keep_the_resolved_spec_and_run_ids(pair_files, text_file):
    assert "vocabulary_size" not in sentence_pairs.Params(path=pair_files["path"]).hashed()
    assert "vocabulary_size" not in lm_params(text_file, level="word", vocabulary_size=None).hashed()
    # A wordpiece run's resolved spec (every key, the counted vocabulary's at their defaults) is read back as is.
    for params in (lm_params(text_file), sentence_pairs.Params(path=pair_files["path"], level="wordpiece")):
        assert type(params)(**params.hashed()) == params

    def run_ids(task, kind):
        raw = {"version": 1, "name": "ids", "task": task, "model": {"kind": kind}, "seeds": [0]}
        return [run.run_id for run in build_experiment(raw, source="spec.yaml", overrides=[]).runs]

    pairs = {"name": "sentence_pairs", "path": pair_files["path"]}
    assert run_ids(pairs, "seq2seq") != run_ids({**pairs, "level": "wordpiece"}, "seq2seq")
    assert run_ids({**pairs, "level": "wordpiece"}, "seq2seq") != \
        run_ids({**pairs, "level": "wordpiece", "vocabulary_size": 64}, "seq2seq")


@pytest.mark.parametrize(("task", "message"), [
    ({"name": "sentence_pairs", "vocabulary_size": 100},
     "task.vocabulary_size: vocabulary_size applies only to level wordpiece, bpe, .*, not 'word'"),
    ({"name": "sentence_pairs", "level": "wordpiece", "vocabulary_size": 8},
     "task.vocabulary_size: .*greater than or equal to 32"),
    ({"name": "sentence_pairs", "level": "wordpiece", "max_vocabulary": 100},
     "task.max_vocabulary: max_vocabulary applies to level word and char; level wordpiece's size is vocabulary_size"),
    ({"name": "sentence_pairs", "level": "subword"}, "task.level: .*word.*char.*wordpiece"),
    ({"name": "lm_corpus", "corpus": "path", "level": "char", "vocabulary_size": 64},
     "task.vocabulary_size: vocabulary_size applies only to level wordpiece, bpe, .*, not 'char'"),
    ({"name": "lm_corpus", "corpus": "path", "level": "wordpiece", "min_count": 1},
     "task.min_count: min_count applies to level word and char"),
    ({"name": "conll_file", "level": "wordpiece"},
     r"task.level: a tagging task tokenizes by word only \(its tags are per word.*\(got 'wordpiece'\)"),
    ({"name": "conll_file", "vocabulary_size": 64}, "task.vocabulary_size: a tagging task tokenizes by word only"),
])
def test_bad_subword_keys_exit_2_at_validate_with_one_line(tmp_path, capsys, task, message):
    data = tmp_path / "data.txt"
    data.write_text({"sentence_pairs": "a\tb\nc\td\n", "lm_corpus": "a b\nc d\n", "conll_file": "a O\n\nb O\n"}
                    [task["name"]], encoding="utf-8")
    kind = {"sentence_pairs": "seq2seq", "lm_corpus": "lm", "conll_file": "tagger"}[task["name"]]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"version": 1, "name": "bad", "model": {"kind": kind},
                                    "task": {**task, "path": str(data)}}))
    code, _, err = run_cli(capsys, "validate", spec)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(message, err) and "spec.yaml" in err, err
