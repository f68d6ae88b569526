"""Every reader's pydantic errors go through one translator (`errors.translate_validation_error`): one line with
the file (where there is one), the key path, the value and what is allowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqkeras.decoding.decoders import build_decoder
from seqkeras.errors import SpecError
from seqkeras.kept.predict import parse_decoder
from seqkeras.kept.preprocessing import Preprocessing
from seqkeras.models.ngram_lm import NgramLanguageModel
from seqkeras.reporting.tables import declared_tables

NGRAM = {"format": "seqkeras-ngram", "version": 1}


def one_line(error: Exception) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


def test_a_decoder_built_from_a_mapping_names_the_key_and_the_value():
    with pytest.raises(SpecError) as raised:
        build_decoder("beam", {"width": 0})
    assert raised.value.path == "width" and one_line(raised.value).startswith("width: ")
    assert "greater than or equal to 1" in str(raised.value) and "(received 0)" in str(raised.value)
    with pytest.raises(SpecError, match=r"widht: unknown key 'widht'\. Did you mean 'width'\?"):
        build_decoder("beam", {"widht": 2})


def test_a_decoder_given_to_predict_names_itself_the_key_and_the_value():
    with pytest.raises(SpecError) as raised:
        parse_decoder('{"name": "sample", "top_k": "x"}')
    assert one_line(raised.value) == ("""decoder '{"name": "sample", "top_k": "x"}': top_k: expected a whole number """
                                      "(integer), got the text 'x'")
    with pytest.raises(SpecError, match=r"decoder 'beam\(width=0\)': width: .*\(received 0\)"):
        parse_decoder("beam(width=0)")


def test_a_damaged_ngram_file_names_the_parameter_and_the_value():
    with pytest.raises(ValueError) as raised:
        NgramLanguageModel.from_json(json.dumps({**NGRAM, "params": {"order": 9}}))
    assert one_line(raised.value) == "params.order: input should be less than or equal to 5 (received 9)"
    with pytest.raises(ValueError, match=r"params\.ordre: unknown key 'ordre'\. Did you mean 'order'\?"):
        NgramLanguageModel.from_json(json.dumps({**NGRAM, "params": {"ordre": 2}}))


def test_an_unreadable_table_section_names_the_table_and_the_key():
    warnings = []
    assert declared_tables({"table": [{"rows": ["seed"], "value": "accuracy"}, {"rows": 5}]},
                           Path("results/x/experiment.yaml"), warnings.append) == []
    assert warnings == ["results/x/experiment.yaml: its table section cannot be read (table[1].value: missing "
                        "required key 'value'); showing every run instead"]
    warnings.clear()
    declared_tables({"table": {"rows": ["seed"], "value": "accuracy", "colums": 3}}, Path("e.yaml"), warnings.append)
    assert len(warnings) == 1 and "(table.colums: unknown key 'colums'. Did you mean 'columns'?" in warnings[0]


@pytest.mark.parametrize("document, expected", [
    ([1], "run/preprocessing.json: expected a mapping, got a list [1]; "),
    ({"format": 1}, "run/preprocessing.json: task: missing required key 'task'; "),
    ({"format": 1, "task": "t", "problem": "classif", "model_kind": "c", "model_file": "model.keras",
      "backend": "tensorflow", "input": {"split": "whitespace"}, "output": {"kind": "label"}},
     "run/preprocessing.json: problem: 'classif' is not allowed. Did you mean 'classification'? Allowed: "),
])
def test_a_damaged_preprocessing_json_names_the_file_the_key_and_the_value(document, expected):
    with pytest.raises(SpecError) as raised:
        Preprocessing.from_json(json.dumps(document), "run/preprocessing.json", lambda name: [])
    assert one_line(raised.value).startswith(expected)
    assert str(raised.value).endswith("not a preprocessing.json this version of seqkeras wrote")
