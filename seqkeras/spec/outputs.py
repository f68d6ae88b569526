"""What each run will write to runs.csv, known before anything trains: its rows' keys and metric names.

A run writes one row, or one per decoder (seq2seq, generation), each identified by
its matrix values, seed and decoder keys. Tables, plots and claims select rows by
those keys and read metrics by name, so `seqkeras validate` checks both against
this description: a misspelt metric or a `where` value that no run has is an error
before training, not a "NOT reproduced" after it.

Metric names may hold `*` where the data decide a part of the name (the length
buckets of `by_length`, the words an n-gram probe counts).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any

from seqkeras.evaluation.generation import GENERATION_METRICS
from seqkeras.evaluation.gradient_flow import METRICS as GRADIENT_FLOW_METRICS
from seqkeras.evaluation.gradient_flow import NAME as GRADIENT_FLOW
from seqkeras.evaluation.metric_catalog import BY_LENGTH, METRICS
from seqkeras.evaluation.seq2seq_metrics import bucket_metric_pattern
from seqkeras.decoding.decoders import GreedyChoice, decoder_keys
from seqkeras.spec.runs import RunSpec
from seqkeras.problems import problem_named

TRAINING_COLUMNS = ("params", "train_seconds")  # every training run's record has them
PROBE_COLUMNS = ("train_seconds",)
# How a run trained over epochs went: runs.csv's columns of its record's `training` (results.folder.TRAINING_COLUMNS,
# which spec/ may not import: a test keeps the two the same).
EPOCH_COLUMNS = ("epochs_trained", "best_epoch", "still_improving")
# runs.csv's columns that are one number per run, the same in each of its decoders' rows: a table of one of them
# takes each run once, whatever decoders were evaluated (still_improving as the share of runs, 0 to 1).
RUN_COLUMNS = (*TRAINING_COLUMNS, *EPOCH_COLUMNS)


def default_decoder_keys() -> dict[str, Any]:
    """The decoder keys of a run evaluated with no decoder named (greedy): those its one row gets once rows of
    other decoders join it (`seqkeras evaluate`), and that a table gives a row of such a run still without them."""
    return decoder_keys(GreedyChoice())


@dataclass(frozen=True)
class OutputRow:
    """One row a run adds to runs.csv: the keys that select it, and the metric names it has."""

    keys: dict[str, Any]
    metrics: tuple[str, ...]
    # Trained over epochs, so its record says whether it was still improving (a claim's `converged`); a probe and a
    # model estimated by counting have no epochs.
    trained_over_epochs: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        """The metrics, and runs.csv's columns of how its training went (EPOCH_COLUMNS) when it trained over epochs:
        all that a table may show of the row."""
        return (*self.metrics, *EPOCH_COLUMNS) if self.trained_over_epochs else self.metrics

    def has(self, metric: str, *, in_table: bool = False) -> bool:
        """Whether the row reports `metric`; in_table: or has it among the `columns` a table may show."""
        return any(fnmatch.fnmatchcase(metric, name) for name in (self.columns if in_table else self.metrics))


def output_rows(run: RunSpec) -> list[OutputRow]:
    keys = {**run.matrix_values, "seed": run.seed}
    if run.is_probe:
        declared = run.probe.component.metric_names
        names = declared(run.probe.params) if declared else []
        return [OutputRow(keys, (*names, *PROBE_COLUMNS))]
    problem = problem_named(run.task.component.problem)
    names = [name for name in run.metrics if name != BY_LENGTH]
    if BY_LENGTH in run.metrics:
        names += [bucket_metric_pattern(name) for name in list(names)]
    generates = problem.continues_prompts and (run.decoders or (run.resolved.get("evaluate") or {}).get("generate"))
    if generates:
        names += GENERATION_METRICS
    if GRADIENT_FLOW in run.diagnostics:
        names += GRADIENT_FLOW_METRICS
    names += TRAINING_COLUMNS
    epochs = not run.model.component.abilities_for(run.model.params).estimated
    if run.decoders and problem.decodes:
        return [OutputRow({**keys, **decoder_keys(choice)}, tuple(names), epochs) for choice in run.decoders]
    return [OutputRow(keys, tuple(names), epochs)]


def metric_direction(column: str) -> str | None:
    """"maximize" or "minimize" for a runs.csv column of a catalog metric that has a better direction (a
    by-length bucket's, `bleu_len_1-10`, is its metric's); None for any other column (train_seconds, a probe's)."""
    names = METRICS.names()
    name = column if column in names else column.split("_len_")[0]
    return METRICS.get(name).direction if name in names else None


def same_value(value: Any, wanted: Any) -> bool:
    """A key's value equals what a `where` asks for (numbers as numbers, booleans by their text); `null` asks for
    the runs where the key is unset: no value in the spec's rows, an empty cell (NaN) in runs.csv."""
    if wanted is None or unset(value):
        return wanted is None and unset(value)
    if isinstance(wanted, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy's bool_ too, from runs.csv
        return str(value).lower() == str(wanted).lower()
    if isinstance(wanted, (int, float)):
        try:
            return math.isclose(float(value), float(wanted), rel_tol=1e-12, abs_tol=1e-15)
        except (TypeError, ValueError):
            return False
    return str(value) == str(wanted)


def unset(value: Any) -> bool:
    """No value: None, or an empty cell of runs.csv as pandas reads it (NaN, pandas' NA)."""
    return value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType"


def matching(rows: list[OutputRow], where: dict[str, Any]) -> list[OutputRow]:
    return [row for row in rows if all(same_value(row.keys.get(k), v) for k, v in where.items())]
