"""Smaller mistakes a user's files and options can hold (issue 29), each refused or said before anything runs.

1. an empty path option (`--out ''`) is not the current folder;
2. a `--set` that would change nothing is said, and `--set matrix={}` means no matrix;
3. `--reference` that is not a results root of these experiments is refused before training;
4. an older results folder (no `experiment` column) is read, never a KeyError;
5. a CSV data file's unclosed quote is reported where it opens; a repeated column name is refused;
6. the padding tag never reaches seqeval (no "seems not to be NE tag" warning, no spurious entity).
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import pytest

from seqkeras.errors import SpecError
from tests.helpers import run_cli

PROBE_SPEC = """\
version: 1
name: memory-small
probe: {name: memory, cell: simple_rnn, steps: 10, input_weight: 2.0}
matrix:
  probe.recurrent_weight: [0.9, 1.5]
"""

TABLED_PROBE_SPEC = PROBE_SPEC + """\
table: {rows: probe.recurrent_weight, value: memory}
"""


def refused(capsys, *args, names: tuple[str, ...] = ()) -> str:
    """The error of a command that must be refused: exit 2, one `error: ...`, no traceback, naming each of `names`."""
    code, out, err = run_cli(capsys, *args)
    assert code == 2, (code, out[-800:], err[-800:])
    assert "Traceback" not in out + err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    for name in names:
        assert name in err, (name, err)
    return err


# --------------------------------------------------------------------------- #
# 1. An empty path is not the current folder
# --------------------------------------------------------------------------- #

EMPTY_PATH_CASES = [
    (["run", "{spec}", "--out", ""], "--out is empty"),
    (["run", "{spec}", "--out", "   "], "--out is empty"),
    (["run", "{spec}", "--out", "{out}", "--reference", ""], "--reference is empty"),
    (["run", "{spec}", "--out", "{out}", "--reference", " \t"], "--reference is empty"),
    (["run", ""], "PATH is empty"),
    (["validate", "{spec}", ""], "PATH is empty"),
    (["table", ""], "RESULTS_DIR is empty"),
    (["compare", "", "{out}"], "A is empty"),
    (["compare", "{out}", " "], "B is empty"),
    (["report", "{out}", "--out", ""], "--out is empty"),
    (["track", ""], "RESULTS_DIR is empty"),
    (["schema", "--out", ""], "--out is empty"),
]


@pytest.mark.parametrize(("args", "message"), EMPTY_PATH_CASES, ids=[" ".join(a) for a, _ in EMPTY_PATH_CASES])
def test_an_empty_path_argument_is_refused_not_read_as_the_current_folder(tmp_path, capsys, monkeypatch, args,
                                                                          message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(PROBE_SPEC, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    filled = [a.replace("{spec}", str(spec)).replace("{out}", str(tmp_path / "out")) for a in args]
    refused(capsys, *filled, names=(message,))
    assert list(work.iterdir()) == []  # nothing written where the command ran


def test_the_python_api_refuses_an_empty_out_too(tmp_path, monkeypatch):
    import seqkeras
    from seqkeras.api import RunOptions, run_paths
    from seqkeras.execution import sweep

    spec = tmp_path / "spec.yaml"
    spec.write_text(PROBE_SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for out in ("", "  "):
        with pytest.raises(SpecError, match="empty"):
            seqkeras.run(spec, out=out)
        with pytest.raises(SpecError, match="--out is empty"):
            run_paths([str(spec)], RunOptions(out=out, dry_run=True))
        with pytest.raises(SpecError, match="--out is empty"):
            sweep.check_out_root(out, [str(spec)], [])
        with pytest.raises(SpecError, match="--reference is empty"):
            run_paths([str(spec)], RunOptions(out=tmp_path / "out", reference=out, dry_run=True))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


# --------------------------------------------------------------------------- #
# 2. --set: what changes nothing is said; matrix={} means no matrix
# --------------------------------------------------------------------------- #


def test_set_matrix_empty_means_a_single_run(write_spec, capsys):
    spec = write_spec(PROBE_SPEC)
    code, out, err = run_cli(capsys, "validate", spec, "--set", "matrix={}")
    assert code == 0, err
    assert "(memory-small: 1 runs)" in out
    assert "--set matrix={}: no matrix (it varied probe.recurrent_weight): one run per seed" in out


def test_set_matrix_empty_under_a_table_of_its_axis_says_why_it_is_refused(write_spec, capsys):
    spec = write_spec(TABLED_PROBE_SPEC)
    refused(capsys, "validate", spec, "--set", "matrix={}",
            names=(str(spec), "table.rows", "probe.recurrent_weight", "--set matrix={} removed the matrix",
                   "--set KEY=VALUE"))


@pytest.mark.parametrize("override", ["probe.steps=10", "probe.recurrent_weight=[0.9, 1.5]",
                                      "name=memory-small", "probe={name: memory}"])
def test_a_set_that_changes_nothing_is_said(write_spec, capsys, override):
    code, out, err = run_cli(capsys, "validate", write_spec(PROBE_SPEC), "--set", override)
    assert code == 0, err
    assert f"--set {override} changes nothing: the spec already has this value" in out


def test_a_set_that_empties_a_list_is_said(write_spec, capsys):
    spec = write_spec(PROBE_SPEC + "expect:\n  - {claim: fades, where: {probe.recurrent_weight: 0.9}, "
                                   "metric: memory, at_most: 0.5}\n")
    code, out, err = run_cli(capsys, "validate", spec, "--set", "expect=[]")
    assert code == 0, err
    assert "--set expect=[] empties expect (it was [{'claim': 'fades'" in out


def test_an_empty_mapping_replaces_where_a_mapping_merges(write_spec, capsys):
    from seqkeras.spec.loader import load_experiment

    spec = write_spec(PROBE_SPEC)
    merged = load_experiment(spec, ["probe={steps: 20}"])
    assert merged.runs[0].resolved["probe"]["steps"] == 20 and merged.runs[0].resolved["probe"]["input_weight"] == 2.0
    refused(capsys, "validate", spec, "--set", "probe={}", names=("probe", "missing 'name'", "--set probe"))


def test_a_matrix_axis_is_set_by_its_dotted_key(write_spec, capsys):
    spec = write_spec(PROBE_SPEC)
    code, out, err = run_cli(capsys, "validate", spec, "--set", "matrix.probe.recurrent_weight=[0.5]")
    assert code == 0 and "(memory-small: 1 runs)" in out, err
    code, out, err = run_cli(capsys, "validate", spec, "--set", "matrix.probe.steps=[3, 4]")
    assert code == 0 and "(memory-small: 4 runs)" in out, err


@pytest.mark.parametrize(("override", "key", "message"), [
    ("evaluate={metrics: [accuracy]}", "evaluate", "a probe experiment has no evaluate section"),
    ("evaluate.metrics=[accuracy]", "evaluate", "a probe experiment has no evaluate section"),
    ("matrix.train.epochs=[1, 2]", "matrix.train.epochs", "a probe experiment varies only probe keys"),
])
def test_a_set_into_what_a_probe_never_reads_is_refused(write_spec, capsys, override, key, message):
    refused(capsys, "validate", write_spec(PROBE_SPEC), "--set", override, names=(key, message))


def test_a_probe_key_in_a_training_matrix_is_refused(write_spec, capsys):
    from tests.conftest import TINY_TRAINING_SPEC

    spec = write_spec(TINY_TRAINING_SPEC)
    refused(capsys, "validate", spec, "--set", "matrix.probe.steps=[3]",
            names=("matrix.probe.steps", "not probe ones"))


# --------------------------------------------------------------------------- #
# 3. --reference: checked before anything runs
# --------------------------------------------------------------------------- #


@pytest.fixture
def probe_results(write_spec, tmp_path, capsys):
    """(the spec, a results root holding its results)."""
    spec = write_spec(PROBE_SPEC)
    root = tmp_path / "reference"
    assert run_cli(capsys, "run", spec, "--out", root)[0] == 0
    return spec, root


def _reference_cases(tmp_path: Path, root: Path) -> list[tuple[Path, tuple[str, ...]]]:
    afile = tmp_path / "a-file.txt"
    afile.write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    (other / "another-experiment").mkdir(parents=True)
    (other / "another-experiment" / "runs.csv").write_text((root / "memory-small" / "runs.csv").read_text())
    damaged = tmp_path / "damaged"
    (damaged / "memory-small").mkdir(parents=True)
    (damaged / "memory-small" / "runs.csv").write_text("run_id,status\nx\n")
    header_only = tmp_path / "header-only"
    (header_only / "memory-small").mkdir(parents=True)
    (header_only / "memory-small" / "runs.csv").write_text(
        (root / "memory-small" / "runs.csv").read_text().splitlines()[0] + "\n")
    return [
        (tmp_path / "nowhere", ("is not a folder of results: no such folder",)),
        (afile, ("is not a folder of results: it is a file",)),
        (empty, ("holds no results of 'memory-small'", "holds no experiment's results at all")),
        (other, ("holds no results of 'memory-small'", str(other / "memory-small" / "runs.csv"))),
        (root / "memory-small", ("is one experiment's results folder", f"--reference {root}")),
        (damaged, (str(damaged / "memory-small" / "runs.csv"),)),
        (header_only, ("has no runs",)),
    ]


def test_a_reference_that_is_not_results_of_these_experiments_is_refused_before_anything_runs(
        probe_results, tmp_path, capsys, monkeypatch):
    from seqkeras.execution import sweep

    spec, root = probe_results

    def must_not_run(*args, **kwargs):
        raise AssertionError("the runs started before --reference was checked")

    monkeypatch.setattr(sweep, "run_all", must_not_run)
    out = tmp_path / "rerun"
    for reference, names in _reference_cases(tmp_path, root):
        refused(capsys, "run", spec, "--out", out, "--reference", reference,
                names=("--reference", str(reference), *names))
        refused(capsys, "run", spec, "--out", out, "--reference", reference, "--dry-run", names=names)
    assert not out.exists()


def test_a_good_reference_is_accepted(probe_results, tmp_path, capsys):
    spec, root = probe_results
    code, out, err = run_cli(capsys, "run", spec, "--out", tmp_path / "rerun", "--reference", root)
    assert code == 0 and "memory-small: matches the reference" in out, err


# --------------------------------------------------------------------------- #
# 4. An older results folder: no `experiment` column, no experiment.yaml
# --------------------------------------------------------------------------- #


def _without_experiment_column(path: Path) -> None:
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    at = rows[0].index("experiment")
    with path.open("w", newline="", encoding="utf-8") as file:
        csv.writer(file).writerows([row[:at] + row[at + 1:] for row in rows])


def test_an_older_results_folder_is_read_without_a_key_error(probe_results, tmp_path, capsys):
    import seqkeras

    _, root = probe_results
    old_root = tmp_path / "old"
    old_root.mkdir()
    old = old_root / "memory-small"
    old.mkdir()
    (old / "runs.csv").write_text((root / "memory-small" / "runs.csv").read_text())
    _without_experiment_column(old / "runs.csv")
    for args in (["table", old], ["compare", root / "memory-small", old], ["compare", root, old_root],
                 ["report", old, "--out", tmp_path / "pages"], ["report", old_root]):
        code, out, err = run_cli(capsys, *args)
        assert code == 0 and "Traceback" not in out + err and "KeyError" not in out + err, (args, err[-2000:])
    assert "memory-small" in (tmp_path / "pages" / "index.html").read_text(encoding="utf-8")
    assert len(seqkeras.load(old).runs) == 2


def test_a_record_without_an_experiment_is_skipped_and_named(probe_results, capsys):
    _, root = probe_results
    folder = root / "memory-small"
    record = next(folder.glob("*/metrics.json"))
    data = json.loads(record.read_text())
    del data["experiment"]
    record.write_text(json.dumps(data))
    code, out, err = run_cli(capsys, "table", folder, "--rebuild")
    assert code == 0 and "Traceback" not in out + err
    assert f"skipped damaged record: {record}: no 'experiment'" in err


# --------------------------------------------------------------------------- #
# 5. CSV data files: an unclosed quote where it opens, a repeated column refused
# --------------------------------------------------------------------------- #

CSV_CASES = [
    # (the file, the line the message names, what it says)
    ('text,label\nfine,pos\n"bad,neg\nok,pos\nmore,neg\n', 3,
     "a quoted field starts here and its closing quote never comes"),
    # csv alone read this one silently, the label swallowing the rest of the file
    ('text,label\nfine,"pos\nbad,neg\nok,pos\n', 2, "a quoted field starts here and its closing quote never comes"),
    # a closed multi-line field first: the line of the quote, not of the record or the file's end
    ('text,label\n"two\nlines",pos\nbad,"neg\nok,pos\n', 4,
     "a quoted field starts here and its closing quote never comes"),
    # past csv's field limit, which csv reports where it is reached
    ('text,label\nfine,pos\n"bad,neg\n' + "word,pos\n" * 20_000, 3, "a quoted field starts here and does not close"),
    ('"text,label\nfine,pos\n', 1, "a quoted field starts here"),
]


def _classification_spec(tmp_path: Path, data: Path, extra: str = "") -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"version: 1\nname: data\ntask: {{name: text_classification_file, path: '{data}'{extra}}}\n"
                    "model: {kind: classifier}\n", encoding="utf-8")
    return spec


@pytest.mark.parametrize(("content", "line", "message"), CSV_CASES, ids=range(len(CSV_CASES)))
def test_an_unclosed_quote_is_reported_where_it_opens(tmp_path, capsys, content, line, message):
    data = tmp_path / "data.csv"
    data.write_text(content, encoding="utf-8")
    spec = _classification_spec(tmp_path, data)
    refused(capsys, "validate", spec, names=(str(spec), "task.path", f"{data}, line {line}: {message}"))


def test_an_unclosed_quote_in_the_test_file_names_its_key(tmp_path, capsys):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("text,label\nfine,pos\nbad,neg\n", encoding="utf-8")
    bad.write_text('text,label\nfine,pos\nbad,"neg\n', encoding="utf-8")
    spec = _classification_spec(tmp_path, good, f", test_path: '{bad}'")
    refused(capsys, "validate", spec, names=("task.test_path", f"{bad}, line 3"))


@pytest.mark.parametrize(("header", "column", "positions"), [
    ("text,label,text", "'text'", "columns 1 and 3"),
    ("label, text ,text", "'text'", "columns 2 and 3"),
    ("text\tlabel\tlabel", "'label'", "columns 2 and 3"),
])
def test_a_column_named_twice_is_refused(tmp_path, capsys, header, column, positions):
    data = tmp_path / ("data.tsv" if "\t" in header else "data.csv")
    width = len(header.split("\t" if "\t" in header else ","))
    separator = "\t" if "\t" in header else ","
    data.write_text(header + "\n" + separator.join(["x"] * width) + "\n", encoding="utf-8")
    refused(capsys, "validate", _classification_spec(tmp_path, data),
            names=("task.path", f"{data}, line 1: the header names the column {column} twice, as {positions}"))


def test_quoted_fields_that_close_still_read(tmp_path, capsys):
    from seqkeras.tasks.files import read_labelled_texts

    data = tmp_path / "data.csv"
    data.write_text('text,label\n"fine, ""really""",pos\n"two\nlines",neg\n\nplain,"pos"\n', encoding="utf-8")
    code, out, err = run_cli(capsys, "validate", _classification_spec(tmp_path, data))
    assert code == 0, err
    assert read_labelled_texts(data, "text", "label") == [('fine, "really"', "pos"), ("two\nlines", "neg"),
                                                          ("plain", "pos")]


def test_a_bad_row_is_refused_when_the_spec_is_validated(tmp_path, capsys):
    data = tmp_path / "data.csv"
    data.write_text("text,label\nfine,pos\n\n,neg\n", encoding="utf-8")
    refused(capsys, "validate", _classification_spec(tmp_path, data),
            names=("task.path", f"{data}, line 4: the 'text' field is empty"))


# --------------------------------------------------------------------------- #
# 6. The padding tag never reaches seqeval
# --------------------------------------------------------------------------- #


def test_a_predicted_padding_tag_is_outside_any_entity_and_never_warns():
    from seqkeras.evaluation.tagging import entity_scores, tagging_scores

    true = [["B-PER", "O", "O"], ["B-LOC", "I-LOC", "O"]]
    pred = [["B-PER", "<pad>", "O"], ["B-LOC", "<pad>", "I-LOC"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # seqeval's "<pad> seems not to be NE tag." would fail here
        scores = entity_scores(true, pred)
        everything = tagging_scores(true, pred)
    # <pad> read as O: PER matches; LOC is cut in two (both wrong). Read as seqeval would, "<pad>" also made
    # an entity of type "pad>" that counted against precision.
    assert scores == {"entity_precision": 1 / 3, "entity_recall": 0.5, "entity_f1": pytest.approx(0.4)}
    assert everything["token_accuracy"] == 3 / 6  # the padding tag is still a wrong tag for token accuracy


def test_a_tag_outside_the_bio_schemes_is_o_for_entities():
    from seqkeras.evaluation.tagging import entity_tag

    assert [entity_tag(t) for t in ["O", "B-PER", "I-X", "E-X", "S-X", "B", "<pad>", "NN", "<unk>"]] == [
        "O", "B-PER", "I-X", "E-X", "S-X", "B", "O", "O", "O"]
