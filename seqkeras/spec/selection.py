"""`--only KEY=VALUE`: a subset of an experiment's expanded matrix, and the tables and claims that still apply.

`--set` changes what every run is; `--only` picks which runs of the matrix to make.
The same key given twice means either value; different keys must all match. A table,
plot or claim that selects none of the chosen runs is left out of this command, and
`run` and `validate` say so; one that selects some of them is computed over every
recorded run, as without --only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import yaml

from seqkeras.errors import SpecError, shown, unknown_choice
from seqkeras.spec.outputs import OutputRow, matching, output_rows, same_value
from seqkeras.spec.runs import Experiment, RunSpec
from seqkeras.spec.sections import ExperimentSpec

KEY = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"


def parse_only(items: list[str], option: str = "--only") -> dict[str, list[Any]]:
    """`["task.lag=10", "task.lag=25", "seed=0"]` → `{"task.lag": [10, 25], "seed": [0]}`; errors name `option`
    (`predict --where` reads its values the same way)."""
    wanted: dict[str, list[Any]] = {}
    for item in items:
        key, sep, text = item.partition("=") if isinstance(item, str) else ("", "", "")
        key = key.strip()
        if not sep or not re.fullmatch(KEY, key):
            raise SpecError(f"{option} expects KEY=VALUE with a matrix key such as task.lag=10, got {shown(item)}")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            raise SpecError(f"{option} {key}: cannot read {shown(text)} as a value") from None
        wanted.setdefault(key, []).append(value)
    return wanted


def select_runs(experiment: Experiment, wanted: dict[str, list[Any]]) -> Experiment:
    """The experiment with only the runs `wanted` names, and without the tables and claims that no longer apply."""
    if not wanted:
        return experiment
    allowed = experiment.matrix_columns + ["seed"]
    for key, values in wanted.items():
        if key not in allowed:
            raise SpecError(unknown_choice("matrix key", key, allowed), path=f"--only {key}")
        have = list(dict.fromkeys(v for run in experiment.runs if (v := _value(run, key)) is not None))
        for value in values:
            if not any(same_value(v, value) for v in have):
                raise SpecError(
                    f"no run has {key} = {shown(value)}; its values are: {', '.join(map(str, have))}",
                    path=f"--only {key}",
                )
    chosen = [run for run in experiment.runs if _selected(run, wanted)]
    if not chosen:
        together = " and ".join(f"{key} in {values}" for key, values in wanted.items())
        raise SpecError(f"no run has {together} (each value exists, but not together)", path="--only")
    spec, notes = _still_applying(experiment, [row for run in chosen for row in output_rows(run)])
    description = ", ".join(f"{key}={'|'.join(map(str, values))}" for key, values in wanted.items())
    notes.insert(0, f"--only {description}: {len(chosen)} of {len(experiment.runs)} runs")
    others = [run for run in experiment.runs if not _selected(run, wanted)]
    return dataclasses.replace(experiment, spec=spec, runs=chosen, unselected=others, notes=experiment.notes + notes)


def _value(run: RunSpec, key: str) -> Any:
    return run.seed if key == "seed" else run.matrix_values.get(key)


def _selected(run: RunSpec, wanted: dict[str, list[Any]]) -> bool:
    return all(any(same_value(_value(run, key), value) for value in values) for key, values in wanted.items())


def _still_applying(experiment: Experiment, rows: list[OutputRow]):
    return keep_applying(experiment.spec, lambda where: bool(matching(rows, where)), "none of its runs is selected")


def without_set_away(spec: ExperimentSpec, rows: list[OutputRow], set_keys: set[str]):
    """Tables, plots and claims that select a value a `--set` took out of the matrix: skipped, and said so.

    (`--set model.cell=gru` on a spec with a claim about the LSTM runs.) A value
    that no run has for any other reason is a mistake in the spec, refused by the checks.
    """

    def reachable(where: dict[str, Any]) -> bool:
        touched = any(key == set_key or key.startswith(set_key + ".") for key in where for set_key in set_keys)
        return not touched or bool(matching(rows, where))

    return keep_applying(spec, reachable, "--set leaves none of its runs")


def keep_applying(spec: ExperimentSpec, applies: Callable[[dict[str, Any]], bool], reason: str):
    """(the spec without the tables, plots and claims whose selections fail `applies`, a note for each)."""

    def selections(item) -> list[dict[str, Any]]:
        comparison = getattr(item, "comparison", None)
        return [item.where] + ([comparison[1].where] if comparison else [])

    labelled = (
        ("table", spec.tables(), lambda t: t.title or f"{t.value} by {t.rows}"),
        ("plot", spec.plots, lambda p: p.default_title()),
        ("claim", spec.expect, lambda e: e.claim),
    )
    kept, notes = {}, []
    for what, declared, label in labelled:
        kept[what] = [item for item in declared if all(applies(where) for where in selections(item))]
        notes += [f"skipped {what} {label(item)!r}: {reason}" for item in declared if item not in kept[what]]
    tables = kept["table"]
    table = tables if isinstance(spec.table, list) else (tables[0] if tables else None)
    return spec.model_copy(update={"table": table, "plots": kept["plot"], "expect": kept["claim"]}), notes
