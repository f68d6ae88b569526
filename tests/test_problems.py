"""The problem kinds own what differs between them (seqkeras.problems), and no other module tells them apart by
name; the encoder-decoders' abilities are their protocol's methods, called, never probed.

A new problem is one module of seqkeras/problems and one line in its `ALL`: the checks below cover it from there.
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import numpy as np
import pytest

from seqkeras import catalog, problems
from seqkeras.decoding.protocol import EncoderDecoder
from seqkeras.evaluation.metric_catalog import applying_to
from seqkeras.kept import consistency
from seqkeras.problems.base import Problem

PACKAGE = Path(problems.__file__).resolve().parents[1]
NAMES = {problem.name for problem in problems.ALL}
CONSTANTS = {"CLASSIFICATION", "TAGGING", "LANGUAGE_MODELING", "SEQ2SEQ", "REGRESSION", "DECODING"}


def sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if "problems" not in path.relative_to(PACKAGE).parts:
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def names_a_problem(node: ast.AST) -> bool:
    """A problem's name written out, as a string or a constant, or a tuple of them."""
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, ast.Name):
        return node.id in CONSTANTS
    if isinstance(node, ast.Attribute):
        return node.attr in CONSTANTS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(names_a_problem(element) for element in node.elts)
    return False


def test_no_module_outside_problems_compares_a_problems_name():
    switches = []
    for path, tree in sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(names_a_problem(side)
                                                     for side in (node.left, *node.comparators)):
                switches.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert switches == []


PROTOCOL = {name for name in vars(EncoderDecoder) if not name.startswith("_")} | set(
    typing.get_type_hints(EncoderDecoder))
# The methods a model kind's `Abilities` declare its models have: the trainer and evaluators read the declaration.
ABILITY_METHODS = {method for methods in consistency.ABILITY_METHODS.values() for method in methods}
# kept/consistency.py checks that a loaded model has what its kind's abilities declare: a file of someone else's.
CHECKS_A_LOADED_MODEL = {"kept/consistency.py"}


def test_no_module_probes_a_model_for_an_ability_its_kind_or_protocol_declares():
    probes = []
    for path, tree in sources():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in PROTOCOL | ABILITY_METHODS
                    and str(path.relative_to(PACKAGE)) not in CHECKS_A_LOADED_MODEL):
                probes.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.args[1].value}")
    assert probes == []


@pytest.mark.parametrize("problem", problems.ALL, ids=lambda problem: problem.name)
def test_each_problem_declares_what_the_stages_ask(problem):
    declared = {name for klass in type(problem).__mro__ for name in vars(klass)}
    for name in typing.get_type_hints(Problem):
        assert name in declared, f"{problem.name} does not declare {name}"
    assert problems.problem_named(problem.name) is problem
    assert set(problem.default_metrics) <= {metric.name for metric in applying_to(problem.name)}
    assert set(problem.metrics_in_run_ids) <= {metric.name for metric in applying_to(problem.name)}
    assert any(task.problem == problem.name for task in catalog.TASKS), "a problem no task poses"
    assert any(kind.problem == problem.name for kind in catalog.MODELS), "a problem no model kind solves"


def test_the_one_list_is_what_a_field_holding_a_problem_accepts():
    assert typing.get_args(problems.ProblemName) == problems.PROBLEMS
    assert set(problems.PROBLEMS) == NAMES
    assert len(NAMES) == len(problems.ALL)
    with pytest.raises(Exception, match="not one of seqkeras's: classification"):
        problems.problem_named("ordinal")


class FakePredicting:
    """`problems.Predicting` over two inputs of three tokens, with fixed answers."""

    texts = ["a b c", "d e f"]

    def unknown(self):
        return [0, 1]

    def tokens(self):
        return [["a", "b", "c"], ["d", "e", "f"]]

    def outputs(self):
        return [np.array([0.2, 0.8]), np.array([0.9, 0.1])]

    def decided_ids(self):
        return [np.array([1, 2, 1]), np.array([2, 2, 1])]

    def labels_of(self, ids):
        return [f"L{int(i)}" for i in np.asarray(ids).ravel()]

    def decoder_label(self):
        return "greedy"

    def decoded(self):
        return ["x", "y"], np.array([-1.0, -2.0])

    def continued(self):
        return ["x", "y"], [-1.0, -2.0]

    def values(self):
        return np.array([0.5, 1.5])


@pytest.mark.parametrize("problem", problems.ALL, ids=lambda problem: problem.name)
def test_each_problems_rows_have_its_declared_columns_one_row_per_input(problem):
    import pandas as pd

    rows = pd.DataFrame(problem.rows(FakePredicting()))  # as kept.predict makes them (a decoder's label: each row)
    assert tuple(rows.columns) == problem.predict_columns
    assert len(rows) == 2 and not rows.isna().any().any()


def test_the_loss_weighs_out_padding_where_a_sequence_has_a_target_per_token():
    x = np.array([[3, 4, 0], [5, 0, 0]])
    y = np.array([[1, 2, 0], [7, 7, 7]])  # a seq2seq target's own padding, not the source's
    by_name = problems.BY_NAME
    assert by_name["classification"].loss_weights(x, None) is None
    assert by_name["regression"].loss_weights(x, None) is None
    np.testing.assert_array_equal(by_name["tagging"].loss_weights(x, y), [[1, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(by_name["language_modeling"].loss_weights(x, y), [[1, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(by_name["seq2seq"].loss_weights(x, y), [[1, 1, 0], [1, 1, 1]])
    assert by_name["classification"].metric_mask(x) is None
    np.testing.assert_array_equal(by_name["tagging"].label_ids(y[:1]), [1, 2])


def test_a_module_written_like_the_problems_is_all_a_new_problem_needs(tmp_path, monkeypatch):
    """A sixth problem, as contributing.md shows: its module and its line in ALL are what the stages read."""
    module = re.search(r"```python\n(# seqkeras/problems/ordinal\.py.*?)```",
                       (PACKAGE.parent / "docs" / "contributing.md").read_text(encoding="utf-8"), re.DOTALL)
    assert module, "docs/contributing.md shows no problem module"
    namespace: dict = {}
    exec(compile(module.group(1), "ordinal.py", "exec"), namespace)  # noqa: S102 (the page's own example)
    ordinal = namespace["PROBLEM"]
    monkeypatch.setattr(problems, "BY_NAME", {**problems.BY_NAME, ordinal.name: ordinal})
    assert problems.problem_named("ordinal") is ordinal
    assert ordinal.loss_weights(np.array([[3, 0]]), np.array([1])) is None
    assert tuple(ordinal.rows(FakePredicting())) == ordinal.predict_columns
