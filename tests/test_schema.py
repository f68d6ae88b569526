"""The JSON Schema for editors: valid, accepts every experiment, agrees with `seqkeras validate` (that the committed
copy is up to date: tests/test_generated_files.py)."""

from __future__ import annotations

import json
import os
import textwrap

import jsonschema
import pytest
import yaml

from seqkeras import catalog
from seqkeras.cli import main
from seqkeras.errors import SpecError
from seqkeras.models.cells import CELLS
from seqkeras.spec.json_schema import FILE_NAME, build_schema
from seqkeras.spec.loader import build_experiment
from tests.conftest import REPO, TINY_TRAINING_SPEC

EXPERIMENTS = sorted((REPO / "experiments").rglob("*.yaml"))


@pytest.fixture(scope="module")
def validator():
    schema = build_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_component_reference_names_every_component_and_parameter():
    from seqkeras.spec.reference import components_markdown

    page = components_markdown(catalog.ALL)
    for registry in catalog.ALL.values():
        for component in registry:
            assert f"### `{component.name}`" in page
            for name in component.params.model_fields:
                assert f"- {name} (" in page, (component.name, name)


def test_schema_command_prints_the_schema(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == build_schema()


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: str(p.relative_to(REPO / "experiments")))
def test_every_experiment_validates_against_the_schema_and_points_at_it(path, validator):
    validator.validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    first_line = path.read_text(encoding="utf-8").splitlines()[0]
    relative = os.path.relpath(REPO / FILE_NAME, path.parent)
    assert first_line == f"# yaml-language-server: $schema={relative}"


def test_every_registered_component_is_in_the_schema(validator):
    text = json.dumps(validator.schema)
    for registry in catalog.ALL.values():
        for component in registry:
            assert json.dumps(component.name) in text, component.name
            if component.summary:
                assert json.dumps(component.summary)[1:-1] in text, component.name
    defs = validator.schema["$defs"]
    for section, registry in catalog.REGISTRY_OF_SECTION.items():
        for component in registry:
            properties = defs[f"{section}_{component.name}"]["properties"]
            assert set(properties) - {"name", "kind"} == set(component.params.model_fields)
    lag = defs["task_delayed_recall"]["properties"]["lag"]
    assert lag["type"] == "integer" and "minimum" in lag and "default" in lag and lag["description"]
    assert {c.name for c in CELLS} <= set(json.dumps(defs["model_classifier"]["properties"]["cell"]).split('"'))


def test_a_section_completed_by_the_matrix_is_valid(validator):
    raw = yaml.safe_load(textwrap.dedent("""
        version: 1
        name: partial
        task: {lag: 3, n_train: 64, n_test: 32}
        model: {units: 4, embedding_dim: 4}
        matrix:
          task.name: [delayed_recall]
          model: [{kind: classifier, cell: lstm, forget_bias: 3}, {kind: classifier, cell: gru}]
        plots: [{x: model.cell, y: accuracy, kind: bar}]
    """))
    validator.validate(raw)
    build_experiment(raw, source="partial", overrides=[])  # seqkeras agrees


BAD = [
    ("model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4, unts: 3}", "unts"),
    ("task: {name: delayed_recal, lag: 3, n_train: 64, n_test: 32}", "delayed_recal"),
    ("model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4, merge_mode: concatenate}", "concatenate"),
    ("model: {kind: classifier, cell: gru, units: four, embedding_dim: 4}", "four"),
    ("model: {kind: classifier, cell: gru, units: 0, embedding_dim: 4}", "units"),
    ("evaluate: {metrics: [acuracy]}", "acuracy"),
    ("train: {epochs: 1, batch_size: 16, verbose: 0, optimizer: {name: adamm}}", "adamm"),
    ("plots: [{x: model.cell, y: accuracy, kind: pie}]", "pie"),
]


@pytest.mark.parametrize("line, culprit", BAD, ids=[culprit for _, culprit in BAD])
def test_mistakes_are_refused_by_both_the_schema_and_seqkeras(line, culprit, validator):
    raw = yaml.safe_load(textwrap.dedent(TINY_TRAINING_SPEC))
    raw.update(yaml.safe_load(line))
    assert not validator.is_valid(raw), f"the schema accepts {line}"
    with pytest.raises(SpecError):
        build_experiment(raw, source="bad", overrides=[])


def test_matrix_axes_are_checked_against_their_parameters(validator):
    raw = yaml.safe_load(textwrap.dedent(TINY_TRAINING_SPEC))
    raw["matrix"] = {"model.cell": ["lstm", "lsm"]}
    assert not validator.is_valid(raw)
    raw["matrix"] = {"modle.cell": ["lstm"]}
    assert not validator.is_valid(raw)
    raw["matrix"] = {"model.cell": []}
    assert not validator.is_valid(raw)
    raw["matrix"] = {"task.lag": [5, 10], "model.cell": ["lstm"], "train.epochs": [1, 2]}
    assert validator.is_valid(raw)


WHERE = [
    ("model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4, unts: 3}", ["model"], "'unts' was unexpected"),
    ("train: {epochs: 1, batch_size: 16, bach_size: 4}", ["train"], "'bach_size' was unexpected"),
    ("task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32, lagg: 4}", ["task"], "'lagg' was unexpected"),
    ("table: {rows: model.cell, value: accuracy, colums: seed}", ["table"], "'colums' was unexpected"),
    ("evaluate: {decoders: [{name: beam, widht: 3}]}", ["evaluate", "decoders", 0], "'widht' was unexpected"),
    ("evaluate: {decoders: [{name: beem}]}", ["evaluate", "decoders", 0, "name"], "'beem' is not one of"),
]


@pytest.mark.parametrize("line, path, message", WHERE, ids=[m.split("'")[1] for _, _, m in WHERE])
def test_the_schema_names_the_misspelt_key_where_it_is(line, path, message, validator):
    """Unions are decided by if/then on a name or a type, so an editor shows the branch's own error at the key,
    not "… is not valid under any of the given schemas" at the section."""
    raw = yaml.safe_load(textwrap.dedent(TINY_TRAINING_SPEC))
    raw.update(yaml.safe_load(line))
    errors = list(validator.iter_errors(raw))
    assert errors and all("is not valid under any of the given schemas" not in e.message for e in errors)
    assert any(list(e.absolute_path) == path and message in e.message for e in errors), \
        [(list(e.absolute_path), e.message) for e in errors]
