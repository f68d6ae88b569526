"""The problem kinds a task poses: one module each, owning what differs between them.

A task's data names its problem (`SequenceData.problem`, a name); the stages ask the problem of that name
(`problem_named`) for its loss weights, its metrics' mask, its labels, its kept model's output layout and
predict's rows, and never compare the name. A new problem is one module here (a `Problem` subclass and its
`PROBLEM`) and one line in `ALL`; docs/contributing.md shows one.

May import: errors.
"""

from __future__ import annotations

from typing import Literal

from seqkeras.errors import SpecError
from seqkeras.problems import classification, language_modeling, regression, seq2seq, tagging
from seqkeras.problems.base import Predicting, Problem

# Every problem kind, the one list of them.
ALL: tuple[Problem, ...] = (classification.PROBLEM, tagging.PROBLEM, language_modeling.PROBLEM, seq2seq.PROBLEM,
                            regression.PROBLEM)
BY_NAME: dict[str, Problem] = {problem.name: problem for problem in ALL}
PROBLEMS = tuple(BY_NAME)
ProblemName = Literal[PROBLEMS]  # a field that holds a problem's name

CLASSIFICATION, TAGGING, LANGUAGE_MODELING, SEQ2SEQ, REGRESSION = (
    classification.NAME, tagging.NAME, language_modeling.NAME, seq2seq.NAME, regression.NAME)


def problem_named(name: str) -> Problem:
    """The problem of that name (a task's, a kept model's); a SpecError naming the problems there are."""
    try:
        return BY_NAME[name]
    except (KeyError, TypeError):
        raise SpecError(f"problem {name!r} is not one of seqkeras's: {', '.join(PROBLEMS)}") from None


__all__ = ["ALL", "BY_NAME", "PROBLEMS", "Predicting", "Problem", "ProblemName", "problem_named"]
