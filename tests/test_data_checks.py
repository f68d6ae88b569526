"""The file tasks' data checked row by row at `seqkeras validate`: one line naming the file, line and field, exit 2."""

from __future__ import annotations

import re

import pytest

from seqkeras.cli import main

CSV_SPEC = """
    version: 1
    name: checks
    task: {{name: text_classification_file, path: {path}{extra}}}
    model: {{kind: classifier}}
"""
CONLL_SPEC = """
    version: 1
    name: checks
    task: {{name: conll_file, path: {path}{extra}}}
    model: {{kind: tagger}}
"""


def validate(write_spec, tmp_path, capsys, template: str, files: dict[str, str], extra: str = "") -> tuple[int, str]:
    for name, content in files.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    spec = write_spec(template.format(path=tmp_path / next(iter(files)), extra=extra.format(folder=tmp_path)))
    code = main(["validate", str(spec)])
    return code, capsys.readouterr().err.strip()


@pytest.mark.parametrize("files, extra, expected", [
    ({"a.csv": "text,label\ngood,pos\n,neg\n"}, "", r"a.csv, line 3: the 'text' field is empty"),
    ({"a.csv": "text,label\ngood,pos\nbad, \n"}, "", r"a.csv, line 3: the 'label' field is empty"),
    ({"a.csv": "text,label\ngood,pos\nfine,pos\n"}, "",
     r"task.label_column: .*a.csv: every example has the class 'pos' \(column 'label'\); classification needs at "
     r"least 2"),
    ({"a.csv": "text,label\ngood,pos\ngood,pos\n", "b.csv": "text,label\nbad,neg\n"},
     ", validation_path: {folder}/b.csv",
     r"task.path: .*a.csv has 1 distinct example\(s\) once 1 duplicate\(s\) are removed; holding out test_share "
     r"0.2 for testing needs at least 2"),
    ({"a.csv": "text,label\ngood,pos\nbad,neg\n", "b.csv": "text,label\ngood,pos\n"},
     ", test_path: {folder}/b.csv",
     r"task.test_path: every example of .*b.csv is also in .*a.csv .*no test example is left"),
    ({"a.csv": "text,label\ngood,pos\nbad,neg\n"}, ", validation_share: 0.5",
     r"task.validation_share: .*a.csv leaves 1 training example\(s\) after the test split"),
])
def test_classification_data_problems_are_one_line_at_validate(write_spec, tmp_path, capsys, files, extra, expected):
    code, error = validate(write_spec, tmp_path, capsys, CSV_SPEC, files, extra)
    assert code == 2 and len(error.splitlines()) == 1, error
    assert re.search(expected, error), error


@pytest.mark.parametrize("content, expected", [
    ("Ada B-PER\nLovelace I-\n\nx O\n", r"t.conll, line 2: the tag \(last column\) 'I-' is not O or B-, I-, E-, S-"),
    ("Ada B-PER\nLovelace b-PER\n\nx O\n", r"t.conll, line 2: the tag \(last column\) 'b-PER'"),
    ("Ada B-PER\n\nx PER\ny B_LOC\n", r"t.conll, line 3: the tag \(last column\) 'PER'"),
    ("Ada\tB-PER\nLovelace\t\n\nx\tO\n", r"t.conll, line 2: expected a token and its tag"),  # an empty tag
    ("Ada B-PER\n\nAda B-PER\n", r"task.path: .*t.conll has 1 distinct example\(s\) once 1 duplicate\(s\)"),
])
def test_conll_tag_problems_are_one_line_at_validate(write_spec, tmp_path, capsys, content, expected):
    code, error = validate(write_spec, tmp_path, capsys, CONLL_SPEC, {"t.conll": content})
    assert code == 2 and len(error.splitlines()) == 1 and "task.path" in error, error
    assert re.search(expected, error), error


def test_tags_of_a_scheme_of_their_own_and_iobes_are_accepted(write_spec, tmp_path, capsys):
    code, _ = validate(write_spec, tmp_path, capsys, CONLL_SPEC, {"t.conll": "the DT\ndog NN\n\nran VBD\n"})
    assert code == 0
    code, _ = validate(write_spec, tmp_path, capsys, CONLL_SPEC,
                       {"t.conll": "Ada B-PER\nLovelace E-PER\n\nParis S-LOC\nis O\n"})
    assert code == 0
