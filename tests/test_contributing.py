"""docs/contributing.md's worked examples work, and every registered plug-in keeps its contract.

The page shows a task (`parity`), a model kind (`bag`) and a metric (`balanced_accuracy`) as the code a
contributor writes: new modules, a function added to a module, and one registry entry each. These tests take
that code from the page, make the modules importable under the names the page gives them, register the
entries, validate a spec that uses them and train it for one epoch; the page's use of the model the run kept
(`seqkeras.load_model`, `predict`) runs on that run's folder. The `plugged_in` fixture then takes everything
out again, so no other test sees them.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import sys
import types

import numpy as np
import pytest
import yaml

from seqkeras import catalog
from seqkeras.errors import SpecError
from seqkeras.evaluation import metric_catalog
from seqkeras.registry import Abilities, Metric, ModelFile, ModelKind, NoSizeEstimate, Params, Task
from seqkeras.spec.json_schema import build_schema
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks.base import CLASSIFICATION
from seqkeras.training.predictions import Predictions
from tests.conftest import REPO

PAGE = REPO / "docs" / "contributing.md"
EXAMPLES = {"parity", "bag", "balanced_accuracy"}
# The files where the page's entries go, and the module whose names an entry there uses.
REGISTRY_FILES = {"seqkeras/catalog.py": catalog, "seqkeras/evaluation/metric_catalog.py": metric_catalog}
REGISTRY_OF_ENTRY = {Task: catalog.TASKS, ModelKind: catalog.MODELS, Metric: catalog.METRICS}
# A ```python block whose first line names the file its code goes in.
CODE_BLOCK = re.compile(r"^```python\n# (?P<path>seqkeras/[\w/]+\.py)[^\n]*\n(?P<code>.*?)^```",
                        re.MULTILINE | re.DOTALL)


# The page's ```python block of plain use (no file named on its first line): the kept model, loaded and used.
USAGE_BLOCK = re.compile(r"^```python\n(?!# seqkeras/)(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)


def code_blocks() -> list[tuple[str, str]]:
    """(file, code) of every Python block of the page, in order."""
    return [(found["path"], found["code"]) for found in CODE_BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def shown_spec() -> dict:
    """The page's spec fragment (its one ```yaml block), completed into a tiny one-run experiment."""
    fragment = re.search(r"^```yaml\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)[1]
    return {"version": 1, "name": "contributed", **yaml.safe_load(fragment),
            "train": {"epochs": 1, "batch_size": 16, "verbose": 0}, "seeds": [0]}


def module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def entries_in(code: str, names: dict) -> list:
    """The registry entries a block shows (its `Task(...)`, `ModelKind(...)`, `Metric(...)` calls), evaluated
    with the names of the file they go in and the block's own imports."""
    tree = ast.parse(code)
    namespace = dict(names)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            exec(compile(ast.Module([node], type_ignores=[]), "<entry>", "exec"), namespace)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id in {cls.__name__ for cls in REGISTRY_OF_ENTRY}]
    return [eval(compile(ast.Expression(call), "<entry>", "eval"), namespace) for call in calls]


@pytest.fixture
def plugged_in(monkeypatch):
    """The page's components, importable and registered; afterwards every registry is as it was."""
    registries = list(REGISTRY_OF_ENTRY.values())
    before = [registry.names() for registry in registries]
    added, entries = [], {}
    try:
        for path, code in code_blocks():
            if path in REGISTRY_FILES:
                for entry in entries_in(code, vars(REGISTRY_FILES[path])):
                    REGISTRY_OF_ENTRY[type(entry)].add(entry)
                    added.append((REGISTRY_OF_ENTRY[type(entry)], entry.name))
                    entries[entry.name] = entry
            elif (REPO / path).exists():  # code added to a module of the package
                module = importlib.import_module(module_name(path))
                namespace = dict(vars(module))
                exec(compile(code, path, "exec"), namespace)
                for name in namespace.keys() - vars(module).keys():
                    monkeypatch.setattr(module, name, namespace[name], raising=False)
            else:  # a new module
                module = types.ModuleType(module_name(path))
                monkeypatch.setitem(sys.modules, module.__name__, module)
                exec(compile(code, path, "exec"), module.__dict__)
                package, _, name = module.__name__.rpartition(".")
                monkeypatch.setattr(importlib.import_module(package), name, module, raising=False)
        yield entries
    finally:
        for registry, name in reversed(added):
            registry.remove(name)
        assert [registry.names() for registry in registries] == before


def test_the_page_shows_a_task_a_model_kind_and_a_metric(plugged_in):
    files = [path for path, _ in code_blocks()]
    assert {"seqkeras/tasks/parity.py", "seqkeras/models/bag.py", "seqkeras/evaluation/metrics.py"} <= set(files)
    assert set(plugged_in) == EXAMPLES
    assert isinstance(plugged_in["parity"], Task) and plugged_in["parity"].problem == CLASSIFICATION
    assert isinstance(plugged_in["bag"], ModelKind) and plugged_in["bag"].problem == CLASSIFICATION
    assert plugged_in["balanced_accuracy"].problems == (CLASSIFICATION,)


def test_the_examples_validate_and_appear_in_the_schema(plugged_in):
    run = build_experiment(shown_spec(), source="contributing", overrides=[]).runs[0]
    assert (run.task.name, run.model.name, run.metrics) == ("parity", "bag", ["accuracy", "balanced_accuracy"])
    schema = json.dumps(build_schema())
    assert all(json.dumps(name) in schema for name in EXAMPLES)
    # The entries' declarations are what validation holds a spec to.
    tagging = {**shown_spec(), "task": {"name": "bio_toy", "n_train": 16, "n_test": 8}}
    with pytest.raises(SpecError, match="model kind 'bag' solves classification"):
        build_experiment(tagging, source="contributing", overrides=[])
    tagging.update(model={"kind": "tagger", "units": 4, "embedding_dim": 4},
                   evaluate={"metrics": ["balanced_accuracy"]})
    with pytest.raises(SpecError, match="'balanced_accuracy' does not apply to tagging"):
        build_experiment(tagging, source="contributing", overrides=[])


def test_the_examples_train_for_an_epoch_and_report_the_metric(plugged_in, tmp_path):
    from seqkeras.execution.single_run import execute

    run = build_experiment(shown_spec(), source="contributing", overrides=[]).runs[0]
    record = execute(run, tmp_path / "run")
    assert record["status"] == "ok", record.get("traceback")
    assert 0 <= record["metrics"]["balanced_accuracy"] <= 1 and 0 <= record["metrics"]["accuracy"] <= 1
    # The size estimate the kind declares is the built model's parameter count.
    data = run.task.component.load()(run.task.params, run.seed)
    estimate = run.model.component.estimated_size(run.model.params, vocabulary=len(data.vocabulary),
                                                  outputs=data.num_outputs)
    assert record["params"] == estimate
    # The run kept its model; the page's use of it runs on the run's folder.
    (usage,) = USAGE_BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    namespace = {"folder": tmp_path / "run"}
    exec(compile(usage, str(PAGE), "exec"), namespace)
    kept, table = namespace["kept"], namespace["table"]
    assert kept.kind == "bag" and kept.model_kind.model_file.name == "model.keras"  # the default: Keras's format
    assert (tmp_path / "run" / "model.keras").is_file()
    assert list(table.columns) == ["input", "label", "probability", "unknown"]
    assert set(table["label"]) <= {"even", "odd"} and table["unknown"].tolist() == [0, 0]
    (again,) = kept.evaluate(tmp_path / "again")  # the loaded model is the trained one: the same scores
    assert again.metrics["accuracy"] == pytest.approx(record["metrics"]["accuracy"])


def test_balanced_accuracy_averages_the_classes(plugged_in):
    balanced_accuracy = plugged_in["balanced_accuracy"].function(CLASSIFICATION)
    always_zero = Predictions(np.tile([[0.9, 0.1]], (4, 1)), np.array([0, 0, 0, 1]))
    assert balanced_accuracy(always_zero) == 0.5  # accuracy 0.75: one class right, the other never


# --------------------------------------------------------------------------- every entry's contract


def first_parameter_type(function) -> str:
    """The name of the type the first parameter is annotated with (annotations may be strings)."""
    annotation = next(iter(inspect.signature(function).parameters.values())).annotation
    return annotation if isinstance(annotation, str) else annotation.__name__


@pytest.mark.parametrize("metric", list(catalog.METRICS), ids=lambda metric: metric.name)
def test_each_metric_is_one_function_of_its_problems_input(metric):
    assert catalog.METRICS is metric_catalog.METRICS  # one registry, owned by evaluation/
    assert metric.problems and set(metric.problems) <= set(metric_catalog.INPUTS)
    for problem in metric.problems:
        function = metric.function(problem)
        assert callable(function)
        assert first_parameter_type(function) == metric_catalog.INPUTS[problem].__name__, problem


@pytest.mark.parametrize("kind", list(catalog.MODELS), ids=lambda kind: kind.name)
def test_each_model_kind_declares_its_size_abilities_and_evaluator(kind):
    assert kind.problem in metric_catalog.INPUTS
    assert isinstance(kind.size, NoSizeEstimate) and kind.size.reason or callable(kind.size)
    assert isinstance(kind.abilities, Abilities) or callable(kind.abilities)
    assert callable(kind.load_evaluator())
    assert isinstance(kind.model_file, ModelFile) and kind.model_file.name and callable(kind.model_file.saver())
    assert callable(kind.model_file.loader()) and (kind.step_model is None or callable(kind.step_model))


def test_a_model_kind_without_a_size_declaration_is_refused():
    with pytest.raises(TypeError, match="size"):
        ModelKind("sizeless", "A kind that forgot its size.", Params, lambda params, data: None,
                  problem=CLASSIFICATION)


def test_each_task_declares_its_problem_and_lists_the_files_its_path_fields_name(tmp_path):
    assert all(task.problem in metric_catalog.INPUTS for task in catalog.TASKS)

    class FileParams(Params):
        path: str
        test_path: str | None = None
        pathways: int = 3  # not a file

    assert FileParams(path=str(tmp_path / "a.txt")).input_files() == {"path": tmp_path / "a.txt"}
    assert set(FileParams(path="a", test_path="b").input_files()) == {"path", "test_path"}
