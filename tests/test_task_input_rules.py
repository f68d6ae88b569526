"""Each task owns its input rule (how a text becomes its tokens, for a kept model), and the problem kinds are
listed once.

kept.preprocessing writes the rule a task's Params declare (`input_rule(data)`, tasks.input_rules) and knows no
task itself; a task entry without one is refused when it is made, never given a rule by a guess. The rules here
are those preprocessing.json held before the tasks owned them, so the files written stay byte for byte the same
(test_kept_models.py and test_predict.py read real runs' files back).
"""

from __future__ import annotations

import ast
import typing
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError

from seqkeras import catalog
from seqkeras.evaluation import metric_catalog
from seqkeras.kept import preprocessing
from seqkeras.registry import Params, Task
from seqkeras.tasks import lm_corpus
from seqkeras.tasks.base import CLASSIFICATION, PROBLEMS, REGRESSION, SizeParams
from seqkeras.tasks.input_rules import WHITESPACE_TOKENS, InputRule
from tests.conftest import REPO

WORDS_AND_MARKS = r"\w+|[^\w\s]"  # de_en's and sentence_pairs' tokens
# Each task's rule with its default parameters: the fields that are not InputRule's defaults.
DEFAULT_RULES = {
    "delayed_recall": {"split": "whitespace"},
    "agreement": {"split": "whitespace"},
    "adding": {"vocabulary": None, "split": "features", "features": 2},
    "copy_memory": {"split": "whitespace"},
    "bio_toy": {"split": "whitespace"},
    "char_lm": {"split": "characters"},
    "lm_corpus": {"split": "pattern", "lowercase": "unicode", "pattern": r"\w+(?:'\w+)*|[^\w\s]"},
    "wnut16": {"split": "whitespace", "lowercase": "ascii"},
    "rotten_tomatoes": {"split": "whitespace", "lowercase": "ascii", "strip_punctuation": True},
    "conll_file": {"split": "whitespace", "lowercase": "ascii"},
    "text_classification_file": {"split": "whitespace", "lowercase": "ascii", "strip_punctuation": True},
    "reverse": {"split": "characters"},
    "copy": {"split": "characters"},
    "sort": {"split": "characters"},
    "addition": {"split": "characters"},
    "dates": {"split": "characters"},
    "de_en": {"split": "pattern", "lowercase": "unicode", "pattern": WORDS_AND_MARKS},
    "sentence_pairs": {"split": "pattern", "lowercase": "unicode", "pattern": WORDS_AND_MARKS},
}


def data_like(task: Task, params) -> SimpleNamespace | lm_corpus.LanguageModelData:
    """What a rule may read of the data `build` makes: its problem and arrays (2 features per step, regression)."""
    x = np.zeros((3, 5, 2) if task.problem == REGRESSION else (3, 5), dtype=np.float32)
    if task.name == "lm_corpus":
        return lm_corpus.LanguageModelData(task.problem, x, x, x, x, None, level=params.level,
                                           lowercase=params.lowercase)
    return SimpleNamespace(problem=task.problem, x_train=x)


def rule_of(task: Task, **values) -> InputRule:
    # model_construct: the file tasks' Params read their files when validated; the rule reads only its keys.
    params = task.params.model_construct(**values)
    return params.input_rule(data_like(task, params))


def short(rule: InputRule) -> dict:
    return {key: value for key, value in rule.model_dump().items()
            if key == "split" or value != InputRule.model_fields[key].default}


@pytest.mark.parametrize("task", list(catalog.TASKS), ids=lambda task: task.name)
def test_every_task_declares_its_input_rule(task):
    assert callable(getattr(task.params, "input_rule", None)), task.name
    rule = rule_of(task)
    assert isinstance(rule, InputRule)
    assert short(rule) == DEFAULT_RULES[task.name]


def test_the_table_covers_every_task():
    assert set(DEFAULT_RULES) == set(catalog.TASKS.names())


@pytest.mark.parametrize("name", ["text_classification_file", "rotten_tomatoes"])
def test_a_text_classification_rule_follows_its_level_standardize_and_max_length(name):
    task = catalog.TASKS.get(name)
    assert short(rule_of(task, level="char", standardize="none")) == {"split": "characters"}
    assert short(rule_of(task, level="wordpiece", standardize="lower", max_length=7)) == \
        {"split": "wordpiece", "lowercase": "ascii", "max_length": 7}
    assert short(rule_of(task, standardize="strip_punctuation")) == {"split": "whitespace", "strip_punctuation": True}


@pytest.mark.parametrize("name, pattern", [("lm_corpus", lm_corpus.WORD_PATTERN.pattern),
                                           ("sentence_pairs", WORDS_AND_MARKS)])
def test_a_word_level_rule_follows_its_level_and_lowercase(name, pattern):
    task = catalog.TASKS.get(name)
    assert short(rule_of(task, level="wordpiece", lowercase=False)) == {"split": "wordpiece", "pattern": pattern}
    assert short(rule_of(task, level="char")) == {"split": "characters", "lowercase": "unicode"}


@pytest.mark.parametrize("name", ["wnut16", "conll_file"])
def test_a_tagging_rule_follows_lowercase(name):
    assert short(rule_of(catalog.TASKS.get(name), lowercase=False)) == {"split": "whitespace"}


class Silent(SizeParams):
    """A task's Params that say nothing about how a text becomes their tokens."""


def test_a_task_without_an_input_rule_is_refused_in_one_line_naming_it():
    with pytest.raises(TypeError) as raised:
        Task("silent", "A task that forgot its input rule.", Silent, "tests.nowhere:build", problem=CLASSIFICATION)
    message = str(raised.value)
    assert "\n" not in message and "'silent'" in message and "input_rule" in message
    assert "silent" not in catalog.TASKS


def test_a_task_with_one_is_accepted_and_its_rule_is_written():
    class Spoken(Silent):
        def input_rule(self, data) -> InputRule:
            return WHITESPACE_TOKENS

    task = Task("spoken", "A task that declares its rule.", Spoken, "tests.nowhere:build", problem=CLASSIFICATION)
    assert rule_of(task) == WHITESPACE_TOKENS


def imported_modules(path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
    return modules


def test_preprocessing_knows_no_task():
    task_modules = {task.builder.__module__ for task in catalog.TASKS}
    task_modules |= {task.params.__module__ for task in catalog.TASKS}  # tasks.text, tasks.files, ...
    imported = imported_modules(REPO / "seqkeras" / "kept" / "preprocessing.py")
    assert imported & task_modules == set()
    assert "isinstance(params" not in (REPO / "seqkeras" / "kept" / "preprocessing.py").read_text(encoding="utf-8")


def test_the_tasks_do_not_import_the_kept_stage():
    for path in sorted((REPO / "seqkeras" / "tasks").glob("*.py")):
        assert not any(module.startswith("seqkeras.kept") for module in imported_modules(path)), path


# --------------------------------------------------------------------------- the problem kinds, listed once


def test_every_list_of_problems_is_the_one_in_tasks_base():
    assert typing.get_args(preprocessing.Document.model_fields["problem"].annotation) == PROBLEMS
    assert set(metric_catalog.INPUTS) == set(PROBLEMS) == set(metric_catalog.DEFAULT_METRICS)
    assert all(component.problem in PROBLEMS for component in [*catalog.TASKS, *catalog.MODELS])


def test_a_document_of_another_problem_is_refused():
    document = {"format": 1, "task": "t", "problem": "ranking", "model_kind": "k", "model_file": "model.keras",
                "backend": "tensorflow", "input": {"split": "whitespace"}, "output": {"kind": "label"}}
    with pytest.raises(ValidationError, match="ranking"):
        preprocessing.Document.model_validate(document)
    assert preprocessing.Document.model_validate({**document, "problem": PROBLEMS[0]}).problem == PROBLEMS[0]


def test_params_is_not_a_task_declaration():
    # The suite's base of every component's parameters declares no input rule: only a task's Params do.
    assert not hasattr(Params, "input_rule") and not hasattr(SizeParams, "input_rule")
