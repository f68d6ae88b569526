"""The subword levels beside WordPiece: `bpe` (the tokenizers package) and `sentencepiece_unigram`,
`sentencepiece_bpe` (the sentencepiece package), learnt from the training split alone, the same on every run; a
shared source/target vocabulary for sentence pairs; outputs joined into words by one function of the level; and
the learnt model kept in the run folder, read back as carefully as a spec (tasks.subwords, tasks.subword_models,
kept.preprocessing)."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.kept.preprocessing import FILE, TOKENIZER_LIMIT, Preprocessing
from seqkeras.tasks import files, lm_corpus, sentence_pairs, subwords
from seqkeras.tasks.base import PAD, UNK
from seqkeras.tasks.data_card import describe
from seqkeras.tasks.seq2seq_data import END, START
from seqkeras.generated_files.matrix import number_words
from tests.helpers import run_cli
from tests.test_subwords_tasks import TEST as PAIRS_TEST
from tests.test_subwords_tasks import TRAIN as PAIRS_TRAIN
from tests.test_subwords_tasks import tsv

NEW_LEVELS = ("bpe", "sentencepiece_unigram", "sentencepiece_bpe")
MODEL_FILES = {"bpe": "bpe.json", "sentencepiece_unigram": "sentencepiece.model",
               "sentencepiece_bpe": "sentencepiece.model"}

# The odd numbers below 300 are the training texts, words whose pieces recur (##ty, ▁hundred, teen); the test
# texts hold letters no training text has (z, q, k), which no piece can spell.
TRAIN_TEXTS = [number_words(n) for n in range(1, 300, 2)]
TEST_TEXTS = ["zyzzyva quokka", "forty two", "kazoo seventy"]
# What each level learns from TRAIN_TEXTS with 32 pieces, written out: a process on another machine (or a library
# version that learns otherwise) learns these or fails here.
LEARNT_32 = {
    "bpe": ["<pad>", "<unk>", *"defghilnorstuvwxy", "▁", "re", "ne", "ty", "▁t", "dre", "hu", "ndre", "▁hu",
            "ndred", "▁hundred", "one", "▁one"],
    "sentencepiece_unigram": ["<pad>", "<unk>", "d", "▁", "re", "y", "h", "n", "u", "o", "ne", "▁two", "e", "t", "i",
                              "▁nine", "▁seven", "ve", "▁fi", "▁th", "▁fift", "▁thirt", "▁ninet", "▁sevent",
                              *"gxlswvfr"],
    "sentencepiece_bpe": ["<pad>", "<unk>", "re", "ne", "ty", "▁t", "hu", "nd", "red", "▁hu", "ndred", "▁hundred",
                          "▁o", "▁one", "▁", *"entdhroiyufvwsgxl"],
}


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


# --------------------------------------------------------------------------- learning, determinism, joining


@pytest.mark.parametrize("level", NEW_LEVELS)
def test_each_level_learns_the_asked_size_from_the_training_split_alone(tmp_path, level):
    train = tmp_path / "train.csv"
    test = tmp_path / "test.csv"
    for path, texts in ((train, TRAIN_TEXTS), (test, TEST_TEXTS)):
        path.write_text("text,label\n" + "".join(f"{text},{n % 2}\n" for n, text in enumerate(texts)),
                        encoding="utf-8")
    params = files.TextClassificationParams(path=str(train), test_path=str(test), level=level, vocabulary_size=40)
    data = files.build_text_classification(params, seed=0)
    tokens = data.vocabulary.tokens
    assert len(tokens) == 40 and tokens[:2] == [PAD, UNK]
    assert any(token.startswith("▁") and len(token) > 1 for token in tokens)  # word-start pieces, learnt
    assert not {"z", "q", "k"} & {character for token in tokens[2:] for character in token}  # only the test's
    # A test word no piece spells is <unk> (id 1); a training word is spelt whole.
    encoded = [data.vocabulary.decode(row.tolist()) for row in data.x_test]
    assert UNK in encoded[0] and UNK not in encoded[1]
    assert subwords.join_pieces(encoded[1], level) == ["forty", "two"]
    # The model kept beside the vocabulary is its own file, and a smaller size is honoured.
    assert data.subwords.input.level == level and params.input_rule(data).tokenizer == MODEL_FILES[level]
    assert len(subwords.learn(level, TRAIN_TEXTS, 32).vocabulary) == 32


@pytest.mark.parametrize("level", NEW_LEVELS)
def test_the_same_texts_give_the_same_vocabulary_and_model_file_twice(level):
    first, second = subwords.learn(level, TRAIN_TEXTS, 32), subwords.learn(level, TRAIN_TEXTS, 32)
    assert first.vocabulary.tokens == second.vocabulary.tokens == LEARNT_32[level]
    assert first.saved() == second.saved()
    assert first.pieces(TRAIN_TEXTS) == second.pieces(TRAIN_TEXTS)
    # The reserved pieces a task adds come next, in its order, and are never learnt pieces of text.
    marked = subwords.learn(level, TRAIN_TEXTS, 40, reserved=(PAD, UNK, START, END))
    assert marked.vocabulary.tokens[:4] == [PAD, UNK, START, END]
    assert not {START, END} & set(marked.pieces(["<s> one </s>"])[0])  # the text's <s> is characters


@pytest.mark.parametrize("level", subwords.SUBWORD_LEVELS)
def test_text_to_pieces_to_words_round_trips_at_every_level(level):
    model = subwords.learn(level, TRAIN_TEXTS, 40)
    texts = ["two hundred seventy three", "nineteen", "one hundred forty one"]
    split = subwords.word_pieces(model, [text.split() for text in texts])
    assert any(len(pieces) > len(text.split()) for pieces, text in zip(split, texts))  # some words are cut
    assert [subwords.join_pieces(pieces, level) for pieces in split] == [text.split() for text in texts]


def test_word_start_pieces_join_into_words_with_markers_apart():
    join = subwords.join_word_starts
    assert join(["▁runn", "ing", "▁fast", "</s>", "▁the", "<unk>", "s"]) == ["running", "fast", "</s>", "the<unk>s"]
    # A continuing piece written first starts a word; a lone ▁ spells nothing; a marker never joins a word.
    assert join(["ing", "▁", "▁a", "<s>", "b"]) == ["ing", "a", "<s>", "b"]
    assert join([]) == []
    assert subwords.join_pieces(["runn", "##ing"], "wordpiece") == ["running"]  # each level its own inverse
    assert subwords.join_pieces(["▁runn", "ing"], "bpe") == subwords.join_pieces(["▁runn", "ing"],
                                                                                 "sentencepiece_unigram")
    # The markers the tasks reserve are the ones joining keeps apart.
    assert {START, END, lm_corpus.WORD_END, PAD} <= subwords.MARKERS


@pytest.mark.parametrize("level", NEW_LEVELS)
def test_a_vocabulary_too_small_for_the_alphabet_is_refused_naming_the_key(level):
    with pytest.raises(SpecError) as raised:
        subwords.learn(level, ["abcdefghijklmnopqrstuvwxyz 0123456789"], 32)
    assert re.fullmatch(r"task\.vocabulary_size: vocabulary_size 32 cannot hold the 37 distinct characters .* "
                        r"set it to 39 or more", one_line(raised.value))
    with pytest.raises(SpecError, match=r"task\.level: level .* learns its pieces from the training texts' words, "
                                        "and they hold none"):
        subwords.learn(level, ["", "   "], 32)


# --------------------------------------------------------------------------- tasks: pairs, language models


def pair_files(tmp_path):
    return {"path": tsv(tmp_path / "train.tsv", PAIRS_TRAIN), "test_path": tsv(tmp_path / "test.tsv", PAIRS_TEST)}


@pytest.mark.parametrize("level", subwords.SUBWORD_LEVELS)
def test_a_shared_vocabulary_is_one_model_learnt_from_both_sides(tmp_path, level):
    paths = pair_files(tmp_path)
    data = sentence_pairs.build(sentence_pairs.Params(**paths, level=level, vocabulary_size=40,
                                                      shared_vocabulary=True), seed=0)
    assert data.vocabulary is data.target_vocabulary and data.subwords.shared
    assert data.vocabulary.tokens[:4] == [PAD, UNK, START, END] and len(data.vocabulary) <= 40
    # Learnt from the sources and the targets (the same words here, reversed), never from the test pairs.
    spelt = {"".join(subwords.join_pieces([token], level)) for token in data.vocabulary.tokens}
    assert not {"zyzzyva", "quokka", "nineteen"} & spelt
    separate = sentence_pairs.build(sentence_pairs.Params(**paths, level=level, vocabulary_size=40), seed=0)
    assert separate.vocabulary is not separate.target_vocabulary
    assert separate.vocabulary.tokens[:2] == [PAD, UNK] and separate.target_vocabulary.tokens[:4] == \
        [PAD, UNK, START, END]
    # Either way the references are the test targets' words, and the outputs are read as words.
    for built in (data, separate):
        assert built.references == [target.split() for _, target in PAIRS_TEST]
        assert [built.words(target) for _, target in built.test_pairs][2:] == [["three", "forty"], ["nineteen"]]


def test_shared_vocabulary_and_the_new_levels_keep_older_run_ids(tmp_path):
    paths = pair_files(tmp_path)
    assert not {"shared_vocabulary", "vocabulary_size"} & set(sentence_pairs.Params(**paths).hashed())
    for level in NEW_LEVELS:  # a run's resolved spec is read back as it was written
        params = sentence_pairs.Params(**paths, level=level, shared_vocabulary=True)
        assert type(params)(**params.hashed()) == params and params.hashed()["shared_vocabulary"] is True


@pytest.mark.parametrize(("task", "message"), [
    ({"name": "sentence_pairs", "shared_vocabulary": True},
     r"task\.shared_vocabulary: shared_vocabulary applies only to level wordpiece, bpe, sentencepiece_unigram or "
     r"sentencepiece_bpe \(one subword model learnt from both sides\), not 'word'"),
    ({"name": "sentence_pairs", "level": "char", "shared_vocabulary": True}, r"task\.shared_vocabulary: .*not 'char'"),
    ({"name": "sentence_pairs", "level": "bpe", "max_vocabulary": 100},
     r"task\.max_vocabulary: max_vocabulary applies to level word and char; level bpe's size is vocabulary_size"),
    ({"name": "lm_corpus", "corpus": "path", "vocabulary_size": 64},
     r"task\.vocabulary_size: vocabulary_size applies only to level wordpiece, bpe, sentencepiece_unigram or "
     r"sentencepiece_bpe, not 'word'"),
    ({"name": "text_classification_file", "level": "sentencepiece_unigram", "max_tokens": 100},
     r"task\.max_tokens: max_tokens applies to level word and char"),
    ({"name": "conll_file", "level": "bpe"}, r"task\.level: a tagging task tokenizes by word only"),
])
def test_misplaced_subword_keys_exit_2_at_validate_with_one_line(tmp_path, capsys, task, message):
    data = tmp_path / "data.txt"
    data.write_text({"sentence_pairs": "a\tb\nc\td\n", "lm_corpus": "a b\nc d\n", "conll_file": "a O\n\nb O\n",
                     "text_classification_file": "text,label\na,x\nb,y\n"}[task["name"]], encoding="utf-8")
    kind = {"sentence_pairs": "seq2seq", "lm_corpus": "lm", "conll_file": "tagger",
            "text_classification_file": "classifier"}[task["name"]]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"version": 1, "name": "bad", "model": {"kind": kind},
                                    "task": {**task, "path": str(data)}}))
    code, _, err = run_cli(capsys, "validate", spec)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert re.search(message, err), err


def test_a_language_model_of_word_start_pieces_counts_and_joins_words(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("\n".join([*TRAIN_TEXTS[:60], "zyzzyva quokka kazoo"]) + "\n", encoding="utf-8")
    params = lm_corpus.Params(corpus="path", path=str(text), context=8, test_share=0.2, max_train_tokens=None,
                              max_test_tokens=None, level="sentencepiece_bpe", vocabulary_size=40)
    units = lm_corpus.read_lines(str(text))
    seed = next(seed for seed in range(50) if units[-1] in lm_corpus.split_units(units, 0.2, seed)[1])
    data = lm_corpus.build(params, seed=seed)
    assert data.vocabulary.tokens[:3] == [PAD, UNK, lm_corpus.WORD_END] and len(data.vocabulary) <= 40
    assert data.detokenize(["▁runn", "ing", "▁dog", "s", "</s>", "▁the"]) == "running dogs </s>\nthe"
    assert data.tokenize("Forty One") == data.subwords.input.pieces(["forty one"])[0]
    (card,) = describe(data)["tokenizers"]
    assert card["side"] == "input" and card["level"] == "sentencepiece_bpe"
    assert card["test_words"] == data.notes["test_words"] and card["test_pieces"] == data.notes["test_pieces"]
    assert card["pieces_per_word"] == describe(data)["pieces_per_word"] > 1
    assert card["unknown_rate"] > 0  # the unit of words spelt with letters never trained on


@pytest.mark.parametrize("level", NEW_LEVELS)
def test_preprocessing_read_back_from_its_files_encodes_as_the_task_did(tmp_path, level):
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"{text},{n % 2}\n" for n, text in enumerate(TRAIN_TEXTS)),
                     encoding="utf-8")
    params = files.TextClassificationParams(path=str(train), level=level, vocabulary_size=40,
                                            standardize="none")
    data = files.build_text_classification(params, seed=0)
    made = Preprocessing.of_run("text_classification_file", params, data, "classifier", backend="tensorflow")
    written = json.loads(made.to_json())
    assert written["input"]["split"] == level and written["input"]["tokenizer"] == MODEL_FILES[level]
    stored = made.tokenizer_files()
    assert list(stored) == [MODEL_FILES[level]]
    read = Preprocessing.from_json(made.to_json(), str(tmp_path / FILE), lambda name: data.vocabulary.tokens,
                                   lambda name, limit: stored[name])
    # The training texts (their words, in the split's order, spelt back from the ids) are encoded into the task's
    # ids by the preprocessing read back from its files, as by the run's own.
    texts = [" ".join(subwords.join_pieces(data.vocabulary.decode(row.tolist()), level)) for row in data.x_train]
    assert set(texts) <= set(TRAIN_TEXTS)
    for preprocessing in (made, read):
        ids = preprocessing.encode(texts).ids
        np.testing.assert_array_equal(ids, data.x_train[:, : ids.shape[1]])
    # A word-level run's preprocessing.json has no tokenizer field: its files stay byte for byte as they were.
    word = files.TextClassificationParams(path=str(train))
    word_data = files.build_text_classification(word, seed=0)
    kept = Preprocessing.of_run("text_classification_file", word, word_data, "classifier", backend="tensorflow")
    assert "tokenizer" not in json.loads(kept.to_json())["input"] and kept.tokenizer_files() == {}
    assert subwords.model_file("wordpiece") is None  # its vocabulary is its whole model


# --------------------------------------------------------------------------- a run at each level, kept and predicted


PAIR_RUNS = [{"level": "bpe"}, {"level": "sentencepiece_unigram"},
             {"level": "sentencepiece_bpe", "shared_vocabulary": True}]


@pytest.fixture
def pair_runs(trained_runs):
    """{level: run folder} of one tiny sentence_pairs sweep over the new levels (the last with a shared
    vocabulary), trained once per session: read-only."""
    inputs = trained_runs.root / "subword-levels-inputs"

    def write_inputs() -> None:
        inputs.mkdir(exist_ok=True)
        tsv(inputs / "train.tsv", PAIRS_TRAIN)
        tsv(inputs / "test.tsv", PAIRS_TEST)

    trained_runs.once("subword-levels-inputs", write_inputs)
    experiment = trained_runs.experiment({
        "version": 1, "name": "subword-levels",
        "task": {"name": "sentence_pairs", "path": str(inputs / "train.tsv"), "test_path": str(inputs / "test.tsv"),
                 "vocabulary_size": 40},
        "model": {"kind": "seq2seq", "cell": "gru", "units": 8, "embedding_dim": 4},
        "train": {"epochs": 1, "batch_size": 8, "verbose": 0},
        "evaluate": {"metrics": ["bleu", "chrf", "exact_match"]},
        "matrix": {"task": PAIR_RUNS}, "seeds": [0],
    }, plots=False)
    folders = {}
    for folder in experiment.iterdir():
        if folder.is_dir():
            folders[yaml.safe_load((folder / "spec.yaml").read_text())["task"]["level"]] = folder
    assert set(folders) == set(NEW_LEVELS)
    return folders


@pytest.mark.slow
@pytest.mark.parametrize("level", NEW_LEVELS)
def test_a_run_at_each_level_scores_words_and_its_kept_model_predicts_words(pair_runs, capsys, level):
    import sacrebleu

    from seqkeras.decoding.decoders import GreedyChoice
    from seqkeras.kept.predict import decoded_ids

    folder = pair_runs[level]
    record = json.loads((folder / "metrics.json").read_text())
    shown = pd.read_csv(folder / "outputs.csv", keep_default_na=False)
    assert list(shown["reference"]) == [target for _, target in PAIRS_TEST]
    assert not any("▁" in text or "<s>" in text for text in shown["output"])
    expected = sacrebleu.corpus_bleu(list(shown["output"]), [list(shown["reference"])], force=True).score
    assert record["metrics"]["bleu"] == pytest.approx(expected)

    preprocessing = json.loads((folder / FILE).read_text())
    assert preprocessing["input"]["split"] == level and preprocessing["output"]["continuation"] == "▁"
    assert preprocessing["input"]["tokenizer"] == MODEL_FILES[level] and (folder / MODEL_FILES[level]).is_file()
    shared = level == "sentencepiece_bpe"
    # With a shared vocabulary, one vocabulary file serves both sides.
    assert preprocessing["output"]["vocabulary"] == ("vocabulary.json" if shared else "target_vocabulary.json")
    card = json.loads((folder / "data_card.json").read_text())
    assert [entry["side"] for entry in card["tokenizers"]] == ["source", "target"]
    assert all(entry["level"] == level and entry["pieces_per_word"] >= 1 for entry in card["tokenizers"])

    kept = seqkeras.load_model(folder)
    assert (kept.preprocessing.vocabulary.tokens == kept.preprocessing.outputs.tokens) is shared
    # The kept model splits the test sources into the ids the run tested on.
    rebuilt = sentence_pairs.build(sentence_pairs.Params(
        path=str(folder.parents[1] / "subword-levels-inputs" / "train.tsv"),
        test_path=str(folder.parents[1] / "subword-levels-inputs" / "test.tsv"), vocabulary_size=40,
        **next(run for run in PAIR_RUNS if run["level"] == level)), seed=0)
    encoded = kept.encode([source for source, _ in PAIRS_TEST])
    np.testing.assert_array_equal(encoded.ids, rebuilt.x_test["source"][:, : encoded.ids.shape[1]])
    assert encoded.unknown_count >= 3  # zyzzyva and quokka's letters never trained on
    # Its outputs, through the API and the command line, are the words its pieces spell.
    texts = ["seventy one", "forty five"]
    predicted = list(kept.predict(texts)["output"])
    ids, _ = decoded_ids(kept, kept.encode(texts).ids, GreedyChoice())
    assert predicted == [" ".join(subwords.join_pieces(kept.preprocessing.tokens_of(row), level)) for row in ids]
    assert not any("▁" in text for text in predicted)
    code, stdout, err = run_cli(capsys, "predict", folder, "--text", texts[0], "--text", texts[1], "--format", "jsonl")
    assert code == 0, err
    assert [json.loads(line)["output"] for line in stdout.splitlines()] == predicted


@pytest.mark.tensorflow  # a SavedModel is made by TensorFlow
def test_an_export_carries_the_learnt_model_file_and_one_shared_vocabulary(pair_runs, tmp_path):
    pytest.importorskip("tensorflow")
    folder = pair_runs["sentencepiece_bpe"]  # a shared vocabulary
    seqkeras.export_model(folder, "savedmodel", tmp_path / "served")
    written = sorted(path.name for path in (tmp_path / "served").iterdir())
    assert written == ["decoder_step", "encoder", "export.json", FILE, MODEL_FILES["sentencepiece_bpe"],
                       "vocabulary.json"]
    # Byte for byte the run's: what preprocessing.json names, to split a text as the run did.
    assert (tmp_path / "served" / MODEL_FILES["sentencepiece_bpe"]).read_bytes() == \
        (folder / MODEL_FILES["sentencepiece_bpe"]).read_bytes()


# --------------------------------------------------------------------------- hostile model files


def damage_bpe(folder, how):
    path = folder / "bpe.json"
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:40])
    elif how == "not UTF-8":
        path.write_bytes(b'{"format": 1, "merges": ["\xff\xfe"]}')
    elif how == "another shape":
        path.write_text(json.dumps({**json.loads(path.read_text()), "format": 2}), encoding="utf-8")
    elif how == "a merge of another vocabulary":
        raw = json.loads(path.read_text())
        path.write_text(json.dumps({**raw, "merges": [["q", "z"], *raw["merges"]]}), encoding="utf-8")
    elif how == "a merge that is not a pair":
        raw = json.loads(path.read_text())
        path.write_text(json.dumps({**raw, "merges": [["t", "y", "x"]]}), encoding="utf-8")


def damage_sentencepiece(folder, how, tmp_path):
    path = folder / "sentencepiece.model"
    if how == "truncated":
        path.write_bytes(path.read_bytes()[:57])
    elif how == "random bytes":
        path.write_bytes(bytes(range(256)) * 4)
    elif how == "another run's":
        other = subwords.learn("sentencepiece_unigram", TRAIN_TEXTS, 40)
        path.write_bytes(other.saved())
    elif how == "oversized":
        path.unlink()
        with open(path, "wb") as file:
            file.truncate(2 * TOKENIZER_LIMIT)  # sparse: no disk written, over the limit all the same
    elif how == "a symbolic link":
        outside = tmp_path / "elsewhere.model"
        outside.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(outside)
    elif how == "a folder":
        path.unlink()
        path.mkdir()


def edit_preprocessing(folder, how):
    document = json.loads((folder / FILE).read_text())
    if how == "split wordpiece":
        document["input"]["split"] = "wordpiece"
    elif how == "continuation ##":
        document["output"]["continuation"] = "##"
    else:  # another name for the model file
        document["input"]["tokenizer"] = how
    (folder / FILE).write_text(json.dumps(document))


@pytest.mark.slow
@pytest.mark.parametrize(("level", "how", "expected"), [
    ("bpe", "missing", r"bpe\.json does not exist"),
    ("bpe", "truncated", r"bpe\.json is not JSON"),
    ("bpe", "not UTF-8", r"bpe\.json is not UTF-8 text \(byte \d+\)"),
    ("bpe", "another shape", r"bpe\.json is not a bpe\.json this version of seqkeras wrote \(format: "),
    ("bpe", "a merge of another vocabulary", r"bpe\.json: merge 1 \('q' \+ 'z'\) makes or uses 'q', which the run's "
                                             r"vocabulary\.json lacks"),
    ("bpe", "a merge that is not a pair", r"bpe\.json is not a bpe\.json this version of seqkeras wrote \(merges\.0"),
    ("sentencepiece_unigram", "truncated", r"sentencepiece\.model (is not a SentencePiece model|holds \d+ pieces)"),
    ("sentencepiece_unigram", "random bytes", r"sentencepiece\.model is not a SentencePiece model \(RuntimeError"),
    ("sentencepiece_unigram", "another run's", r"sentencepiece\.model(: piece \d+ is| holds \d+ pieces).*not of one "
                                               "run"),
    ("sentencepiece_unigram", "oversized", r"sentencepiece\.model is 128 MiB; the limit is 64 MiB"),
    ("sentencepiece_unigram", "a symbolic link", r"sentencepiece\.model is a symbolic link"),
    ("sentencepiece_unigram", "a folder", r"sentencepiece\.model"),
    ("sentencepiece_unigram", "../escaped.model", r"'\.\./escaped\.model' leaves its folder"),
    ("sentencepiece_unigram", "/etc/passwd", r"'/etc/passwd' is an absolute path"),
    ("sentencepiece_unigram", None, r"input\.tokenizer names no file, but input\.split 'sentencepiece_unigram' "
                                    r"reads its learnt model from one \(sentencepiece\.model\)"),
    ("bpe", "split wordpiece", r"input\.tokenizer names 'bpe\.json', but input\.split 'wordpiece' keeps no model "
                               "file"),
    ("bpe", "continuation ##", r"output\.continuation is '##', but input\.split 'bpe' marks its pieces with '▁'"),
])
def test_a_hostile_model_file_is_one_line_naming_it(pair_runs, tmp_path, capsys, level, how, expected):
    folder = tmp_path / "run"
    shutil.copytree(pair_runs[level], folder, symlinks=True)
    if how is None or how.startswith(("/", "..", "split", "continuation")):
        edit_preprocessing(folder, how)
    elif level == "bpe":
        damage_bpe(folder, how)
    else:
        damage_sentencepiece(folder, how, tmp_path)
    with pytest.raises(SpecError) as raised:
        seqkeras.load_model(folder)
    message = one_line(raised.value)
    assert re.search(expected, message), message
    assert str(folder) in message
    code, _, err = run_cli(capsys, "predict", folder, "--text", "forty one")
    assert code == 2 and err.strip().splitlines() == [f"error: {message}"], err



# --------------------------------------------------------------------------- a level is one module and one line


def test_a_new_tokenizer_level_is_one_module_and_one_line(monkeypatch, tmp_path):
    """contributing.md's level (each word's letters), its module taken from the page and its line laid into the
    catalog's dictionary: learning, splitting, joining, a kept model's reading and export ask the level."""
    from pathlib import Path

    from seqkeras.tasks import subword_levels

    page = (Path(seqkeras.__file__).parent.parent / "docs" / "contributing.md").read_text(encoding="utf-8")
    module = re.search(r"```python\n(# seqkeras/tasks/level_letters\.py.*?)```", page, re.DOTALL)
    assert module, "docs/contributing.md shows no tokenizer level's module"
    namespace: dict = {}
    exec(compile(module.group(1), "level_letters.py", "exec"), namespace)  # noqa: S102 (the page's own example)
    letters = namespace["LEVEL"]
    monkeypatch.setitem(subword_levels.BY_NAME, letters.name, letters)

    model = subwords.learn("letters", TRAIN_TEXTS, 32)
    assert model.vocabulary.tokens[:2] == [PAD, UNK] and len(model.vocabulary) <= 32
    split = subwords.pieces(model, ["forty two", "kazoo"])
    assert split[0] == ["▁f", "o", "r", "t", "y", "▁t", "w", "o"]
    assert split[1][0] == UNK  # no training word starts with a k
    assert subwords.join_pieces(split[0], "letters") == ["forty", "two"]
    # A kept model reads the level's model back from vocabulary.json alone, and splits as the run did.
    assert subwords.model_file("letters") is None
    assert subwords.vocabulary_model("letters", model.vocabulary).pieces(["forty two"]) == [split[0]]
    assert subwords.exported("letters", model, tmp_path) is None  # no library's format: export.json says none


def test_every_place_that_lists_the_levels_reads_the_catalog():
    """The `level` key's choices, a kept model's input.split, the help and the matrix's options are the catalog's
    levels; and no module outside a level's own names one (a comparison with a level's name would be a second
    list)."""
    import ast
    import typing
    from pathlib import Path

    from seqkeras.generated_files import matrix
    from seqkeras.tasks import subword_levels
    from seqkeras.tasks.input_rules import InputRule

    names = subword_levels.NAMES
    assert set(names) == {level.name for level in subword_levels.LEVELS}
    assert set(names) <= set(typing.get_args(InputRule.model_fields["split"].annotation))
    assert typing.get_args(subwords.Level) == ("word", "char", *names)
    assert all(f"{name} (" in subwords.LEVEL_HELP for name in names)
    assert set(names) <= {option.name for option in matrix.OPTIONS}
    package = Path(seqkeras.__file__).parent
    owners = {package / "tasks" / "subword_levels.py", *(package / "tasks").glob("level_*.py")}
    named = []
    for path in sorted(set(package.rglob("*.py")) - owners):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                constants = [n for part in (node.left, *node.comparators) for n in ast.walk(part)
                             if isinstance(n, ast.Constant) and n.value in names]
                named += [f"{path.relative_to(package)}:{n.lineno} {n.value!r}" for n in constants]
    assert not named, f"a level's name compared outside its module: {named}"
