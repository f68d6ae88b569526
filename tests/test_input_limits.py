"""Sizes that grow with a user's data files (tasks.limits): each refused when the spec is validated, in one line
naming the file, the line and the limit, before anything is padded or trained. Plain Python, no TensorFlow."""

from __future__ import annotations

import json
import re

import pytest

from seqkeras.tasks import limits
from tests.helpers import run_cli

MODEL_KINDS = {"sentence_pairs": "seq2seq", "text_classification_file": "classifier", "conll_file": "tagger"}
LONG = "word " * (limits.MAX_TEXT_CHARACTERS // 5 + 1)  # just over the limit once stripped


def validate(tmp_path, write_spec, capsys, task: dict):
    spec = write_spec(f"""
        version: 1
        name: limits
        task: {json.dumps(task)}
        model: {{kind: {MODEL_KINDS[task['name']]}}}
    """)
    return run_cli(capsys, "validate", spec)


def refused(result, key: str, message: str) -> None:
    code, out, err = result
    assert code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert key in err, err
    assert re.search(message, err), err


def pairs(count: int) -> str:
    return "".join(f"go {i}.\tva {i} !\n" for i in range(count))


@pytest.mark.parametrize("side", ["source", "target"])
def test_a_sentence_pair_side_over_the_character_limit_is_refused_at_its_line(tmp_path, write_spec, capsys, side):
    pair = f"{LONG}\tva !\n" if side == "source" else f"go.\t{LONG}\n"
    path = tmp_path / "pairs.tsv"
    path.write_text(pairs(5) + pair + pairs(3), encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "sentence_pairs", "path": str(path)})
    refused(result, "task.path", rf"pairs.tsv, line 6: the {side} \(field \d, task.{side}_column\) has "
                                 rf"{len(LONG.strip()):,} characters, over the limit of 100,000")


def test_a_sentence_pair_side_at_the_limit_is_read(tmp_path, write_spec, capsys):
    path = tmp_path / "pairs.tsv"
    path.write_text(pairs(5) + "x" * limits.MAX_TEXT_CHARACTERS + "\tva !\n", encoding="utf-8")
    task = {"name": "sentence_pairs", "path": str(path), "level": "char"}
    code, _, err = validate(tmp_path, write_spec, capsys, task)
    assert code == 0, err


def test_a_classification_text_over_the_limit_is_refused_in_a_test_file_too(tmp_path, write_spec, capsys):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("text,label\na b,x\nc d,y\n", encoding="utf-8")
    test.write_text(f"text,label\ne f,x\n\"{LONG}\",y\n", encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "text_classification_file", "path": str(train),
                                                      "test_path": str(test)})
    refused(result, "task.test_path", r"test.csv, line 3: the 'text' field has [\d,]+ characters, "
                                      r"over the limit of 100,000")


def test_more_classes_than_the_limit_are_refused_at_the_line_that_passes_it(tmp_path, write_spec, capsys):
    path = tmp_path / "many.csv"
    rows = "".join(f"text {i},class{i}\n" for i in range(limits.MAX_CLASSES + 50))
    path.write_text("text,label\n" + rows, encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "text_classification_file", "path": str(path)})
    refused(result, "task.label_column", rf"many.csv, line {limits.MAX_CLASSES + 2}: 1,001 distinct classes by "
                                         r"this line, over the limit of 1,000")


def test_classes_are_limited_over_the_task_s_files_together(tmp_path, write_spec, capsys):
    half = limits.MAX_CLASSES // 2 + 1
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train.write_text("text,label\n" + "".join(f"a {i},c{i}\n" for i in range(half)), encoding="utf-8")
    test.write_text("text,label\n" + "".join(f"b {i},d{i}\n" for i in range(half)), encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "text_classification_file", "path": str(train),
                                                      "test_path": str(test)})
    refused(result, "task.label_column", rf"train.csv: {2 * half:,} distinct classes over the task's files, "
                                         r"over the limit of 1,000")


def test_a_conll_sentence_without_blank_lines_over_the_token_limit_is_refused(tmp_path, write_spec, capsys):
    path = tmp_path / "tags.conll"
    path.write_text("a O\n\n" + "word O\n" * (limits.MAX_SENTENCE_TOKENS + 1), encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "conll_file", "path": str(path)})
    refused(result, "task.path", rf"tags.conll, line {limits.MAX_SENTENCE_TOKENS + 3}: the sentence has more "
                                 r"than 10,000 tokens, the limit")


def test_a_conll_file_with_more_tags_than_the_limit_is_refused(tmp_path, write_spec, capsys):
    path = tmp_path / "tags.conll"
    path.write_text("".join(f"w T{i}\n\n" for i in range(limits.MAX_CLASSES + 1)), encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "conll_file", "path": str(path)})
    refused(result, "task.path", rf"tags.conll, line {2 * limits.MAX_CLASSES + 1}: 1,001 distinct tags by this "
                                 r"line, over the limit of 1,000")


def test_sentence_pairs_that_would_pad_to_more_token_ids_than_the_limit_are_refused(tmp_path, write_spec, capsys):
    rows = 6_000  # × a source of 90,000 characters: 5.4·10⁸ ids at level char, a 1 MB file
    path = tmp_path / "pairs.tsv"
    path.write_text(pairs(rows) + "x" * 90_000 + "\tva !\n", encoding="utf-8")
    result = validate(tmp_path, write_spec, capsys, {"name": "sentence_pairs", "path": str(path), "level": "char"})
    refused(result, "task.max_source_length", rf"pairs.tsv: {rows + 1:,} examples padded to the longest, [\d,]+ "
                                              r"token ids each, make [\d,]+ token ids, over the limit of "
                                              r"500,000,000 \(2 GB\); set max_source_length and max_target_length")
    leave_out = {"name": "sentence_pairs", "path": str(path), "level": "char", "max_source_length": 50}
    code, _, err = validate(tmp_path, write_spec, capsys, leave_out)
    assert code == 0, err  # the long pair is left out, so the rest pad to 50


def test_texts_that_would_pad_to_more_token_ids_than_the_limit_need_max_length(tmp_path, write_spec, capsys):
    path = tmp_path / "texts.csv"
    rows = "".join(f"text {i},c{i % 2}\n" for i in range(5_000))
    path.write_text(f"text,label\n{rows}{'y' * limits.MAX_TEXT_CHARACTERS},c0\n", encoding="utf-8")
    task = {"name": "text_classification_file", "path": str(path), "level": "char"}
    refused(validate(tmp_path, write_spec, capsys, task), "task.max_length",
            r"texts.csv: 5,001 examples padded to the longest, 100,000 token ids each, make 500,100,000 token ids, "
            r"over the limit of 500,000,000 \(2 GB\); set max_length")
    code, _, err = validate(tmp_path, write_spec, capsys, {**task, "max_length": 200})
    assert code == 0, err
    code, _, err = validate(tmp_path, write_spec, capsys, {**task, "level": "word"})  # one word per text
    assert code == 0, err


def test_conll_sentences_that_would_pad_to_more_token_ids_than_the_limit_are_refused(tmp_path, write_spec, capsys):
    path = tmp_path / "tags.conll"
    path.write_text("w O\n\n" * 50_000 + "word O\n" * limits.MAX_SENTENCE_TOKENS, encoding="utf-8")
    refused(validate(tmp_path, write_spec, capsys, {"name": "conll_file", "path": str(path)}), "task.path",
            r"tags.conll: 50,001 examples padded to the longest, 10,000 token ids each, make 500,010,000 token ids")


def test_a_target_vocabulary_over_the_limit_is_refused_before_anything_is_padded():
    from seqkeras.errors import SpecError
    from seqkeras.tasks.seq2seq_data import seq2seq_data

    target = [f"t{i}" for i in range(limits.MAX_OUTPUT_VOCABULARY)]  # with <pad>, <unk>, <s> and </s>: over it
    with pytest.raises(SpecError, match=r"the target vocabulary learnt from the training data has 200,004 entries, "
                                        r"over the limit of 200,000 for a vocabulary the model predicts; set "
                                        r"task.max_vocabulary") as raised:
        seq2seq_data([(["a"], target), (["b"], ["t0"])], [(["a"], ["t1"])])
    assert raised.value.path == "task.max_vocabulary"
    data = seq2seq_data([(["a"], target), (["b"], ["t0"])], [(["a"], ["t1"])], max_vocabulary=1000)
    assert len(data.target_vocabulary) == 1004


def test_a_character_vocabulary_over_the_limit_is_refused(tmp_path):
    from seqkeras.errors import SpecError
    from seqkeras.tasks import char_lm

    # Distinct code points from U+4E00 on, past the surrogates (not encodable) and without a line break.
    characters = (chr(point) for point in range(0x4E00, 0x110000) if not 0xD800 <= point <= 0xDFFF)
    text = "".join(next(characters) for _ in range(limits.MAX_OUTPUT_VOCABULARY + 5_000))  # 99% of them train
    path = tmp_path / "text.txt"
    path.write_text(text + "abc" * 100, encoding="utf-8")
    with pytest.raises(SpecError, match=r"the vocabulary of characters learnt from the training data has [\d,]+ "
                                        r"entries, over the limit of 200,000 .*is it a text file\?"):
        char_lm.build(char_lm.Params(path=str(path), test_share=0.01, n_train=10, n_test=10), seed=0)
