"""A run's record, metrics.json: its shape (`RunRecord`), the one check of it, and reading one from a run folder.

`RunRecord` is the typed model of what every reader of a record may rely on:
the experiment and run id (names), the status (ok or failed), the seed (a whole
number), the matrix values and the metrics (objects; a metric is one cell of
runs.csv), the evaluation rows (one per decoder, each with `keys` and `metrics`
objects) and the error (a text). A record holds more (params, train_seconds,
backend, seconds, versions, where it ran, ...); those are read where they are used,
each with its own care, and are not part of this check.

`record_problem(data)` is the one check of a record, for a record read from a
file and for one built in memory alike: "" or what makes it unusable, in the
words every command prints (`skipped damaged record: <path>: <why>`).
`read_record(path)` reads a run folder's metrics.json as `results.files` reads
(a regular file inside the folder, bounded, never blocking, no link followed)
and checks it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from seqkeras.errors import SpecError, shown
from seqkeras.results.files import read_text

OK, FAILED = "ok", "failed"

# JSON has no infinity: the writer (results.folder) writes one as this text; a record read back has the number
# again, so a reused record gives the runs.csv a fresh one does.
INFINITIES = {"inf": math.inf, "-inf": -math.inf}


@dataclass(frozen=True)
class Expected:
    """What a field must be, in the words of the message that names a damaged one: "'seed' is '0', not a whole
    number". `quotes_value`: the message shows the value itself (a name, a seed), else what kind of JSON it is."""

    what: str
    quotes_value: bool = False


def _single_value(value: Any) -> Any:
    # Anything JSON has but an object or a list: a number, a text, true/false or null.
    if isinstance(value, (dict, list)):
        raise ValueError("not a single value")
    return value


# A metric is one cell of runs.csv.
MetricValue = Annotated[Any, AfterValidator(_single_value)]
Metrics = Annotated[dict[Any, MetricValue], Field(strict=True)]
Name = Annotated[StrictStr, Field(min_length=1), Expected("a name", quotes_value=True)]


class EvaluationRow(BaseModel):
    """One evaluation row of a run (one per decoder): the keys that tell it apart and its metrics."""

    model_config = ConfigDict(extra="allow")

    keys: Annotated[dict[Any, Any], Field(strict=True)]
    metrics: Metrics


class RunRecord(BaseModel):
    """The fields of metrics.json that every reader indexes freely once `record_problem` found nothing.

    Fields are in the order their problems are told: the first problem found is the one named.
    """

    model_config = ConfigDict(extra="allow")

    experiment: Name
    run_id: Name
    status: Annotated[Literal["ok", "failed"], Expected(f"{OK!r} or {FAILED!r}", quotes_value=True)]
    # Strict: a seed of "0" or of true (bool is an int in Python) is damage, not a seed.
    seed: Annotated[StrictInt, Expected("a whole number", quotes_value=True)]
    matrix: Annotated[dict[Any, Any], Field(strict=True), Expected("an object")] = {}
    metrics: Annotated[Metrics, Expected("an object")] = {}
    rows: Annotated[list[EvaluationRow] | None, Field(strict=True), Expected("a list")] = None
    error: Annotated[StrictStr | None, Expected("a text")] = None
    # A tuned run's chosen values (execution.tuning): each one cell of runs.csv, as a metric is.
    tuned: Annotated[Metrics | None, Expected("an object of single values")] = None


def record_problem(data: Any) -> str:
    """What makes `data` unusable as a run record ("" when nothing): every reader may then index it freely."""
    try:
        RunRecord.model_validate(data)
    except ValidationError as error:
        # A required key that is missing is told first, as the record's most basic damage.
        first = min(error.errors(), key=lambda e: 0 if e["type"] == "missing" and len(e["loc"]) == 1 else 1)
        return _in_words(first)
    return ""


def _in_words(error: dict[str, Any]) -> str:
    """One pydantic error of `RunRecord` as the sentence a user reads.

    Not `errors.translate_validation_error`: a record is a file the suite wrote, not one the user did, so its
    sentences say what a field is and should be (its `Expected`), not which key to write or what to type instead."""
    location, value = error["loc"], error["input"]
    if not location:
        return f"not a JSON object ({json_type(value)})"
    field = location[0]
    if error["type"] == "missing" and len(location) == 1:
        return f"no {field!r}"
    if field == "metrics" and len(location) == 2:
        return f"metrics.{location[1]} is {json_type(value)}, not a single value"
    if field == "rows" and len(location) == 4:  # rows, index, "metrics", the metric
        return f"rows[{location[1]}].metrics.{location[3]} is {json_type(value)}, not a single value"
    if field == "rows" and len(location) > 1:
        return f"rows[{location[1]}] is not an object with 'keys' and 'metrics' objects"
    expected = next(m for m in RunRecord.model_fields[field].metadata if isinstance(m, Expected))
    return f"{field!r} is {shown(value) if expected.quotes_value else json_type(value)}, not {expected.what}"


def json_type(value: Any) -> str:
    """What a JSON value is, with its article: "a list", "an object"."""
    names = {dict: "an object", list: "a list", str: "a text", bool: "true or false", int: "a number",
             float: "a number"}
    return "null" if value is None else names.get(type(value), f"a {type(value).__name__}")


class RecordRead(NamedTuple):
    """A run folder's metrics.json: (the record, "") or (None, what is wrong with the file)."""

    record: dict[str, Any] | None
    problem: str


def read_record(path: Path) -> RecordRead:
    """The run record at `path` (a run folder's metrics.json), checked; or None and why, for the message that
    says why it is skipped.

    Read as `results.files` reads (a regular file, bounded, never blocking); neither it nor its run folder
    may be a symbolic link.
    """
    base, name = _record_location(path)
    try:
        text = read_text(base, name)
    except SpecError as error:
        if not os.path.lexists(path):
            return RecordRead(None, "missing")
        return RecordRead(None, f"cannot be read ({error})")
    try:
        record = json.loads(text)
    except ValueError as error:
        return RecordRead(None, f"not JSON ({error})")
    except RecursionError:
        return RecordRead(None, "not JSON (nested too deeply)")
    problem = record_problem(record)
    if problem:
        return RecordRead(None, problem)
    for metrics in [record.get("metrics") or {}] + [row["metrics"] for row in record.get("rows") or []]:
        metrics.update({name: INFINITIES[value] for name, value in metrics.items()
                        if isinstance(value, str) and value in INFINITIES})
    return RecordRead(record, "")


def _record_location(path: Path) -> tuple[Path, str]:
    """(the results folder, "run_id/metrics.json") for a run's metrics.json, so that its run folder is checked too."""
    run_folder = path.parent
    if run_folder.name and run_folder.name != ".." and run_folder.parent != run_folder:
        return run_folder.parent, f"{run_folder.name}/{path.name}"
    return run_folder, path.name
