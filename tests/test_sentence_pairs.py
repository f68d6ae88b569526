"""The `sentence_pairs` task: the user's source<TAB>target file → seq2seq data, its errors, a run, a kept model.

Reading and the errors are plain Python (no TensorFlow); one tiny sweep through the command line trains the
encoder-decoder with each attention, decodes with each kind of decoder, breaks BLEU down by length, stops
early on the task's validation data, and keeps a model that `seqkeras predict` uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from seqkeras import catalog
from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks import sentence_pairs
from seqkeras.tasks.seq2seq_data import END, START
from tests.decoding_fixtures import shared_cli_run
from tests.helpers import run_cli

# Tatoeba's layout: source, target, attribution (ignored).
PAIRS = [
    ("Go.", "Va !"), ("Hi.", "Salut !"), ("Run!", "Cours !"), ("Who?", "Qui ?"), ("Wow!", "Ça alors !"),
    ("I see.", "Je vois."), ("I won.", "J'ai gagné."), ("Help me.", "Aide-moi."), ("Stop!", "Arrête !"),
    ("Wait.", "Attends."), ("I ran.", "J'ai couru."), ("Go on.", "Continue."), ("Hello!", "Bonjour !"),
    ("Get up.", "Lève-toi."), ("Go now.", "Va maintenant."), ("I lost.", "J'ai perdu."),
    ("He ran.", "Il a couru."), ("Be calm.", "Sois calme."), ("Be fair.", "Sois juste."), ("Be nice.", "Sois gentil."),
]
ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #1158250 (Wittydev)"


def tsv(pairs=PAIRS) -> str:
    return "".join(f"{source}\t{target}\t{ATTRIBUTION}\n" for source, target in pairs)


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "fra.txt"
    path.write_text(tsv(), encoding="utf-8")
    return path


def params(path, **options) -> sentence_pairs.Params:
    return sentence_pairs.Params(path=str(path), **options)


def test_the_task_is_registered_as_seq2seq_and_lists_its_files(pairs_file, tmp_path):
    task = catalog.TASKS.get("sentence_pairs")
    assert task.problem == "seq2seq" and task.params is sentence_pairs.Params
    test_file = tmp_path / "test.txt"
    test_file.write_text(tsv(PAIRS[:3]), encoding="utf-8")
    listed = params(pairs_file, test_path=str(test_file), validation_path=str(test_file)).input_files()
    assert set(listed) == {"path", "test_path", "validation_path"}  # each is part of the run's identity


def test_reading_takes_the_chosen_columns_ignores_the_rest_and_tokenizes_as_de_en(pairs_file):
    pairs, counts = sentence_pairs.read_pairs(params(pairs_file))
    assert len(pairs) == len(PAIRS) and counts == {"pairs_read.path": len(PAIRS), "pairs_too_long.path": 0}
    assert pairs[0] == (["go", "."], ["va", "!"])
    assert pairs[6] == (["i", "won", "."], ["j", "'", "ai", "gagné", "."])  # words and single marks
    # Columns swapped: French → English; not lowercased.
    swapped, _ = sentence_pairs.read_pairs(params(pairs_file, source_column=1, target_column=0, lowercase=False))
    assert swapped[1] == (["Salut", "!"], ["Hi", "."])
    # Characters, one token each (a run of spaces is one space).
    (first, *_), _ = sentence_pairs.read_pairs(params(pairs_file, level="char"))
    assert first == (list("go."), list("va !"))


def test_pairs_longer_than_the_limits_are_left_out_and_counted(pairs_file):
    limits = {"max_source_length": 2, "max_target_length": 3, "max_left_out": 1}
    pairs, counts = sentence_pairs.read_pairs(params(pairs_file, **limits))
    assert all(len(source) <= 2 and len(target) <= 3 for source, target in pairs)
    expected = sum(1 for s, t in PAIRS if len(sentence_pairs.tokenize(s, "word", True)) > 2
                   or len(sentence_pairs.tokenize(t, "word", True)) > 3)
    too_long = counts["pairs_too_long.path"]
    assert too_long == expected > 0 and len(pairs) + too_long == len(PAIRS) == counts["pairs_read.path"]
    data = sentence_pairs.build(params(pairs_file, **limits), seed=0)
    assert data.notes["pairs_too_long.path"] == expected
    assert data.notes["train_pairs"] + data.notes["test_pairs"] == len(pairs)


def test_build_gives_seq2seq_data_with_a_seeded_test_share_and_validation_from_the_training_part(pairs_file):
    data = sentence_pairs.build(params(pairs_file, test_share=0.25, validation_share=0.2, bucket_width=2), seed=3)
    assert data.problem == "seq2seq" and data.bucket_width == 2
    assert data.notes == {"train_pairs": 12, "validation_pairs": 3, "test_pairs": 5, "pairs_read.path": 20,
                          "pairs_too_long.path": 0,
                          # no source twice in the file: nothing collapsed before the split (tasks.duplicates)
                          "duplicates_removed": 0, "duplicated_inputs": 0, "conflicting_inputs": 0,
                          "conflicting_inputs_dropped": 0}
    assert len(data.test_pairs) == 5 and data.y_validation.shape[0] == 3 and data.x_train["source"].shape[0] == 12
    assert data.x_validation["source"].shape[1] == data.x_train["source"].shape[1]  # one padded width
    assert START in data.target_vocabulary.index and END in data.target_vocabulary.index
    # The same seed, the same split; without validation the test pairs are the same ones.
    again = sentence_pairs.build(params(pairs_file, test_share=0.25), seed=3)
    assert again.test_pairs == data.test_pairs and not again.has_validation


def test_validation_pairs_never_come_from_the_test_split(pairs_file):
    data = sentence_pairs.build(params(pairs_file, test_share=0.3, validation_share=0.3), seed=1)
    target_ids = data.target_vocabulary
    validation_targets = {tuple(target_ids.decode(row)) for row in data.y_validation}
    test_targets = {tuple(target) + (END,) for _, target in data.test_pairs}
    assert validation_targets and test_targets and not validation_targets & test_targets


def test_a_test_file_and_a_validation_file(pairs_file, tmp_path):
    test_file, validation_file = tmp_path / "test.tsv", tmp_path / "valid.tsv"
    test_file.write_text(tsv(PAIRS[:4]), encoding="utf-8")
    validation_file.write_text(tsv(PAIRS[4:6]), encoding="utf-8")
    data = sentence_pairs.build(params(pairs_file, test_path=str(test_file), validation_path=str(validation_file)),
                                seed=0)
    assert data.notes["train_pairs"] == len(PAIRS) and data.notes["test_pairs"] == 4
    assert data.notes["validation_pairs"] == 2 and data.y_validation.shape[0] == 2


def write_bytes(tmp_path, content: bytes):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(("content", "message"), [
    (b"Go.\tVa !\nHi.\n", r"pairs.tsv, line 2: 1 tab-separated field\(s\), but the source is field 0 "
                          r"\(task.source_column\) and the target is field 1 \(task.target_column\).*'Hi.'"),
    (b"Go.\tVa !\n\n \tSalut !\n", r"pairs.tsv, line 3: the source \(field 0, task.source_column\) is empty"),
    (b"Go.\tVa !\nHi.\t  \tx\n", r"pairs.tsv, line 2: the target \(field 1, task.target_column\) is empty"),
    (b"Go.\tVa !\nCaf\xe9\tcaf\xe9\n", r"pairs.tsv, line 2: byte 0xe9 is not UTF-8"),
    ("Go.\tVa !\n".encode("utf-16"), r"pairs.tsv is UTF-16 or UTF-32"),
    (b"\n  \n", r"pairs.tsv holds no sentence pairs"),
])
def test_each_error_in_the_file_is_one_line_naming_the_file_line_and_field(tmp_path, write_spec, capsys, content,
                                                                           message):
    path = write_bytes(tmp_path, content)
    spec = write_spec(f"""
        version: 1
        name: pairs
        task: {{name: sentence_pairs, path: {json.dumps(str(path))}}}
        model: {{kind: seq2seq}}
    """)
    code, out, err = run_cli(capsys, "validate", spec)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "task.path" in err
    assert re.search(message, err), err


def test_a_column_beyond_the_line_is_named_with_its_setting(tmp_path):
    path = write_bytes(tmp_path, b"Go.\tVa !\tattribution\n")
    with pytest.raises(SpecError, match=r"line 1: 3 tab-separated field\(s\), but the source is field 0 .* the "
                                        r"target is field 5 \(task.target_column\)"):
        params(path, target_column=5)
    with pytest.raises(SpecError, match="source_column and target_column are both 1") as caught:
        params(path, source_column=1)
    assert caught.value.path == "task.target_column"


def test_a_file_whose_every_pair_is_too_long_is_refused(pairs_file):
    with pytest.raises(SpecError, match=r"every one of the 20 pairs of .*fra.txt is longer than max_source_length "
                                        r"\(1\)") as caught:
        params(pairs_file, max_source_length=1)
    assert caught.value.path == "task.max_source_length"


def test_limits_that_leave_out_more_than_max_left_out_are_refused_naming_what_keeps_99_percent(pairs_file):
    """The default share is 5%: limits that leave out more refuse the spec, naming the values that keep 99% of
    each side; max_left_out allows what the user chooses."""
    lengths = sorted(len(sentence_pairs.tokenize(s, "word", True)) for s, _ in PAIRS)
    covering = lengths[-1]  # 99% of 20 sources is all of them but a fifth of one: the longest
    with pytest.raises(SpecError) as caught:
        params(pairs_file, max_source_length=2)
    message, left = str(caught.value), sum(length > 2 for length in lengths)
    assert caught.value.path == "task.max_source_length" and "\n" not in message
    assert re.search(rf"fra.txt: max_source_length 2 \(tokens\) leave out {left} of its 20 pairs "
                     rf"\({left / 20:.1%}\), more than max_left_out \(0.05\) allows: max_source_length {covering} "
                     r"keeps 99% of the sources; or raise max_left_out", message), message
    pairs, counts = sentence_pairs.read_pairs(params(pairs_file, max_source_length=2, max_left_out=0.9))
    assert counts["pairs_too_long.path"] == left and len(pairs) == 20 - left
    with pytest.raises(SpecError, match=r"max_left_out \(0.4\) allows"):
        params(pairs_file, max_source_length=2, max_left_out=0.4)


def test_errors_in_the_test_and_validation_files_name_their_keys(pairs_file, tmp_path):
    bad = write_bytes(tmp_path, b"Go.\tVa !\nHi.\n")
    for key in ("test_path", "validation_path"):
        with pytest.raises(SpecError, match=r"pairs.tsv, line 2") as caught:
            params(pairs_file, **{key: str(bad)})
        assert caught.value.path == f"task.{key}"


SWEEP = """
    version: 1
    name: pairs-sweep
    task: {{name: sentence_pairs, path: {path}, test_share: 0.25, validation_share: 0.2, max_source_length: 4,
            max_target_length: 4, max_left_out: 0.5, bucket_width: 2}}
    model: {{kind: seq2seq, cell: gru, units: 8, embedding_dim: 4}}
    train: {{epochs: 2, batch_size: 8, verbose: 0, early_stopping: {{monitor: val_loss, patience: 1}}}}
    evaluate:
      metrics: [bleu, exact_match, by_length]
      decoders: [{{name: greedy}}, {{name: beam, width: 2}}, {{name: sample, temperature: 0.5}}]
    matrix:
      model.attention: [none, bahdanau, luong]
"""


@pytest.fixture
def sweep(trained_runs):
    """One tiny sweep through the command line: each attention, three decoders, by_length, early stopping.

    Run once per session, shared by pytest-xdist's workers (tests/decoding_fixtures.py): read-only."""

    def write_inputs(folder):
        data = folder / "fra.txt"
        data.write_text(tsv(), encoding="utf-8")
        spec = folder / "spec.yaml"
        spec.write_text(SWEEP.format(path=json.dumps(str(data))), encoding="utf-8")
        return spec

    return shared_cli_run(trained_runs, "pairs-sweep", write_inputs)


def test_a_sweep_trains_every_attention_and_decodes_with_every_decoder(sweep):
    code, results = sweep
    assert code == 0
    runs = pd.read_csv(results / "runs.csv")
    assert (runs["status"] == "ok").all(), runs.get("error")
    assert sorted(set(runs["model.attention"])) == ["bahdanau", "luong", "none"]
    assert sorted(set(runs["decoder"])) == ["beam(width=2)", "greedy", "sample(temperature=0.5)"]
    assert len(runs) == 9 and runs["bleu"].between(0, 100).all()
    assert any(column.startswith("bleu_len_") for column in runs.columns)  # by_length's columns
    for folder in (path for path in results.iterdir() if path.is_dir()):
        by_length = pd.read_csv(folder / "by_length.csv")
        assert set(by_length["decoder"]) == set(runs["decoder"]) and (by_length["length_max"] <= 4).all()
        history = pd.read_csv(folder / "history.csv")
        assert "val_loss" in history.columns and history["val_loss"].notna().all()  # the task's validation data
        record = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        counts = record["data"]
        assert counts["train_pairs"] + counts["validation_pairs"] + counts["test_pairs"] \
            + counts["pairs_too_long.path"] == len(PAIRS)
        assert counts["pairs_too_long.path"] > 0 and counts["validation_pairs"] > 0
    # Left out within the task's max_left_out: table.md names each run and what it left out (as the report does).
    page = (results / "table.md").read_text(encoding="utf-8")
    assert "Pairs left out as longer than max_source_length or max_target_length: 3 run(s)" in page
    assert re.search(r"attention=none_seed=0_\w+: \d+ of the 20 pairs of path \(\d+\.\d%\);", page), page


def test_predict_decodes_new_sentences_with_the_kept_model(sweep, capsys):
    _, results = sweep
    folder = next(path for path in results.iterdir() if path.is_dir())
    preprocessing = json.loads((folder / "preprocessing.json").read_text(encoding="utf-8"))
    assert preprocessing["task"] == "sentence_pairs"
    assert preprocessing["input"]["split"] == "pattern" and preprocessing["input"]["lowercase"] == "unicode"
    texts = ["Go now!", "Zyx qwv."]
    code, out, err = run_cli(capsys, "predict", folder, "--text", texts[0], "--text", texts[1],
                             "--decoder", "beam", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["input"] for row in rows] == texts
    # Tokenized as the task did (lowercased words and marks), looked up in the training vocabulary.
    vocabulary = set(json.loads((folder / "vocabulary.json").read_text(encoding="utf-8")))
    expected = [sum(token not in vocabulary for token in sentence_pairs.tokenize(text, "word", True))
                for text in texts]
    assert [int(row["unknown"]) for row in rows] == expected and expected[1] >= 2
    assert all(row["decoder"].startswith("beam") and isinstance(row["output"], str) for row in rows)


def test_a_spec_with_both_kinds_of_validation_is_refused(pairs_file):
    raw = {"version": 1, "name": "pairs", "model": {"kind": "seq2seq"},
           "task": {"name": "sentence_pairs", "path": str(pairs_file), "validation_share": 0.1},
           "train": {"validation_split": 0.2}}
    with pytest.raises(SpecError, match=r"task.validation_share and train.validation_split \(0.2\) both give "
                                        "validation data") as caught:
        build_experiment(raw, source="spec.yaml", overrides=[])
    assert caught.value.path == "task.validation_share"


def test_the_example_pair_files_are_what_make_pairs_writes(tmp_path):
    """experiments/examples/data/numbers.tsv and zahlen.tsv (the de→en comparison's pairs) are made, not
    downloaded: the script writes them again, byte for byte, with German numbers read right."""
    import importlib.util

    script = Path(__file__).resolve().parents[1] / "experiments" / "examples" / "data" / "make_pairs.py"
    loader = importlib.util.spec_from_file_location("make_pairs", script)
    make_pairs = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(make_pairs)
    assert [make_pairs.german_words(n) for n in (1, 16, 21, 101, 342, 999)] == [
        "eins", "sechzehn", "ein und zwanzig", "ein hundert eins", "drei hundert zwei und vierzig",
        "neun hundert neun und neunzig"]
    make_pairs.main(tmp_path)
    for name in ("numbers.tsv", "zahlen.tsv"):
        assert (tmp_path / name).read_bytes() == (script.parent / name).read_bytes(), name
    first = (tmp_path / "zahlen.tsv").read_text(encoding="utf-8").splitlines()[0]
    assert first == "Vier hundert vierzig\tFour hundred and forty\tseqkeras make_pairs.py"
