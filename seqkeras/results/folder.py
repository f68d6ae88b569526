"""The results folder: what each run writes, and the experiment's runs.csv.

results/<name>/runs.csv                one row per run
results/<name>/table.md                pivot tables and verdicts
results/<name>/experiment.yaml         the experiment as run (after --set)
results/<name>/<run_id>/spec.yaml      the run's resolved spec
results/<name>/<run_id>/metrics.json   metrics, status, error, timings, versions
results/<name>/<run_id>/history.csv    per-epoch curves (training runs)
results/<name>/<run_id>/<curve>.csv    probe curves
results/<name>/<run_id>/data_card.json the run's data described (training runs; tasks.data_card)
results/<name>/data_card.md, .json     the experiment's data card: each task's first run's (reporting.data_card)

Every file is written to a temporary name and renamed into place, so an
interrupted run never leaves a half-written file behind. What a metrics.json
must hold, and the one check of it, are `results.record`'s.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import yaml

from seqkeras.errors import SpecError
from seqkeras.results.files import present, read_named_text, read_text, refused_subfolders, subfolders_with
from seqkeras.results.record import FAILED, OK, json_type, read_record, record_problem
from seqkeras.yaml_reader import parse_yaml

_UMASK = os.umask(0)
os.umask(_UMASK)
TRAILING_COLUMNS = ["params", "train_seconds", "backend"]
# How a trained run's training went (its record's `training`, training.convergence), as runs.csv columns: in a
# runs.csv only where some record has it, so the runs.csv of probes and of records made before it stay as they were.
TRAINING_COLUMNS = {"epochs_trained": "epochs", "best_epoch": "best_epoch", "still_improving": "still_improving"}


def still_improving_said(runs: pd.DataFrame) -> pd.Series:
    """runs.csv's still_improving as it reads back, whatever pandas made of it: "true", "false", or anything else
    (blank: a run that does not record it)."""
    return runs["still_improving"].astype(str).str.lower()

DATA_CARD = "data_card.json"  # a run folder's and an experiment folder's (see the layout above)
DATA_CARD_PAGE = "data_card.md"


# Out of space, or out of the user's quota: either way nothing more can be written there.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# A failed record's key, true when the run found no space left: a sweep stops there, as its next runs would fail.
DISK_FULL = "disk_full"


class DiskFull(OSError):
    """A write that found no space left (ENOSPC, EDQUOT), naming the file it was writing.

    A run that raises it is a failed run; a sweep stops, since its next runs would fail the same way.
    """

    def __init__(self, path: str | Path | None):
        super().__init__(errno.ENOSPC, "no space left on device", None if path is None else str(path))

    def __reduce__(self):  # OSError pickles its (errno, strerror, filename), which is not this signature
        return type(self), (self.filename,)

    def __str__(self) -> str:
        return f"no space left on device while writing {self.filename or 'a file'}"


def disk_full(error: BaseException, path: str | Path | None = None) -> DiskFull | None:
    """`error` as a DiskFull when it, or an error it came from, is ENOSPC or EDQUOT; None otherwise.

    The file named is `path` where given, else the one the error names, if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, DiskFull):
            return error
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return DiskFull(path or error.filename)
        error = error.__cause__ or error.__context__
    return None


def write_atomic(path: Path, content: str | bytes) -> None:
    """`content` into `path`, through a temporary name beside it: `path` is whole or as it was, never half
    written. No space left raises DiskFull naming `path`; the temporary file is gone either way."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            file.write(content.encode("utf-8") if isinstance(content, str) else content)
        # mkstemp makes the file private (0600); results are meant to be read and served.
        os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, path)
    except BaseException as error:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        full = disk_full(error, path)
        if full is not None:
            raise full from None
        raise


def write_yaml(path: Path, data: Any) -> None:
    write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(_json_safe(data), indent=2, ensure_ascii=False) + "\n")


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    write_atomic(path, frame.to_csv(index=False))


# JSON has no NaN or infinity. NaN (no value) is written as null; an infinity is a value (a
# half-life of a unit that never forgets), written as the text "inf" or "-inf", which
# results.record reads back as the number (INFINITIES).
def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


# runs.csv's columns of the values tuning chose: `tuned.train.optimizer.learning_rate`.
TUNED_PREFIX = "tuned."


def runs_frame(records: list[dict[str, Any]], matrix_columns: list[str]) -> pd.DataFrame:
    """One row per run (or per evaluation row of a run, e.g. per decoder), in the column order of docs/results.md."""
    for record in records:
        problem = record_problem(record)
        if problem:  # a bug or a damaged file read without read_record: say which, never a KeyError
            name = record.get("run_id", "?") if isinstance(record, dict) else "?"
            raise SpecError(f"run {name}: damaged record: {problem}")
    expanded = [(record, row) for record in records for row in _evaluation_rows(record)]
    # A tuned experiment's runs name the values tuning chose for their matrix point (execution.tuning).
    tuned_columns: list[str] = []
    for record in records:
        tuned_columns += [key for key in record.get("tuned") or {} if key not in tuned_columns]
    key_columns: list[str] = []
    metric_names: list[str] = []
    for _, row in expanded:
        key_columns += [k for k in row["keys"] if k not in key_columns]
        metric_names += [m for m in row["metrics"] if m not in metric_names]
    trained = any(isinstance(record.get("training"), dict) for record in records)
    rows = []
    for record, row in expanded:
        line = {"experiment": record["experiment"], "run_id": record["run_id"], "status": record["status"]}
        line.update({key: record.get("matrix", {}).get(key) for key in matrix_columns})
        line.update({f"{TUNED_PREFIX}{key}": (record.get("tuned") or {}).get(key) for key in tuned_columns})
        line.update({key: row["keys"].get(key) for key in key_columns})
        line["seed"] = record["seed"]
        line.update({name: row["metrics"].get(name) for name in metric_names})
        if trained:
            training = record.get("training") if isinstance(record.get("training"), dict) else {}
            line.update({column: training.get(key) for column, key in TRAINING_COLUMNS.items()})
        line.update({name: record.get(name) for name in TRAILING_COLUMNS})
        line["error"] = record.get("error") or ""
        rows.append(line)
    columns = ["experiment", "run_id", "status", *matrix_columns, *(TUNED_PREFIX + key for key in tuned_columns),
               *key_columns, "seed", *metric_names, *(TRAINING_COLUMNS if trained else ()),
               *TRAILING_COLUMNS, "error"]
    return pd.DataFrame(rows, columns=columns)


def one_row_per_run(runs: pd.DataFrame) -> pd.DataFrame:
    """runs.csv with one row per run: a run evaluated with several decoders has a row for each."""
    return runs.drop_duplicates("run_id") if "run_id" in runs else runs


def run_counts(runs: pd.DataFrame) -> tuple[int, int, int]:
    """(runs, finished ok, failed), counting runs, not their evaluation rows."""
    distinct = one_row_per_run(runs)
    return len(distinct), int((distinct["status"] == OK).sum()), int((distinct["status"] == FAILED).sum())


def _evaluation_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    rows = record.get("rows")
    return rows if rows else [{"keys": {}, "metrics": record.get("metrics", {})}]


def print_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def is_evaluation_key(column: str) -> bool:
    """Columns that tell apart the evaluation rows of one run (one per decoder)."""
    return column == "decoder" or column.startswith("decoder.")


def is_matrix_column(column: str) -> bool:
    """Matrix keys are dotted (model.cell); decoder.* are evaluation keys, not matrix keys; tuned.* name the values
    tuning chose for a run's matrix point, which the point's matrix keys already tell apart."""
    return "." in column and not is_evaluation_key(column) and not column.startswith(TUNED_PREFIX)


def identity_columns(runs: pd.DataFrame) -> list[str]:
    """The columns that tell runs apart besides the seed: matrix keys and evaluation keys."""
    return [c for c in runs.columns if is_matrix_column(c) or is_evaluation_key(c)]


def experiment_folders_in(root: Path, *, warn: Callable[[str], None] = print_warning) -> list[Path]:
    """The experiment folders of a results root, sorted: real folders holding a regular runs.csv (read as
    `results.files` reads). Those left out (a link, a runs.csv that is a link or a FIFO) are named in a warning."""
    for refused, why in refused_subfolders(root, "runs.csv"):
        warn(f"{refused} {why}; left out")
    return list(subfolders_with(root, "runs.csv"))


def named_experiment_folders(paths: list[Path]) -> list[Path]:
    """The experiment folders a command names (report, export): each path is an experiment's results folder,
    or a root whose subfolders are; each folder once. A path that is neither is a SpecError naming it."""
    folders: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise SpecError(f"{path}: no such results folder")
        if os.path.lexists(path / "runs.csv"):  # read_runs names what is wrong with one that is not a file
            found = [path]
        else:
            found = experiment_folders_in(path)  # warns at each call (not once per report): export calls it too
            if not found:
                raise SpecError(f"{path} holds no runs.csv, neither itself nor in its experiment folders")
        folders += [f for f in found if f.resolve() not in {g.resolve() for g in folders}]
    return folders


def read_runs(results_dir: Path, *, warn: Callable[[str], None] = print_warning) -> pd.DataFrame:
    """An experiment's runs.csv (from its folder or the file itself), checked so no reader crashes or mixes.

    A file that cannot be trusted raises SpecError naming it and what is wrong (cut
    short, not a runs.csv, two experiments or two versions of one mixed, a matrix
    column that experiment.yaml implies missing, one run twice with different values);
    what is harmless is a warning: no rows yet, a row written twice (dropped).
    """
    path = results_dir / "runs.csv" if results_dir.is_dir() else results_dir
    if not os.path.lexists(path):
        raise SpecError(f"no runs.csv in {results_dir} (run the experiment first: seqkeras run SPEC)")
    rebuild = f"rebuild it from the run folders with `seqkeras table {path.parent} --rebuild`"
    try:
        # The file the user named may be a link (their choice); a runs.csv inside a named folder may not.
        text = read_text(path.parent, path.name) if path != results_dir else read_named_text(path)
    except SpecError as error:
        raise SpecError(f"{error}; runs.csv is not read") from None
    try:
        _check_row_lengths(path, text, rebuild, warn)
        frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    except (OSError, csv.Error, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise SpecError(f"{path} is damaged and cannot be read: {error}; {rebuild}") from None
    missing = {"run_id", "status", "seed"} - set(frame.columns)
    if missing:
        raise SpecError(f"{path} is not a seqkeras runs.csv (missing columns: {', '.join(sorted(missing))}); "
                        f"{rebuild}")
    if frame.empty:
        warn(f"{path} has no runs yet (a header and no rows)")
        return frame
    frame = _without_duplicate_rows(path, frame, rebuild, warn)
    _check_one_experiment(path, frame, read_saved_spec(path.parent), rebuild)
    _check_one_run_per_point(path, frame)
    return frame


def _check_row_lengths(path: Path, text: str, rebuild: str, warn: Callable[[str], None]) -> None:
    """A row with fewer fields than the header is a file cut short (pandas would fill the gap with blanks)."""
    records = [(reader.line_num, row) for reader in [csv.reader(io.StringIO(text))] for row in reader if row]
    if not records:
        raise SpecError(f"{path} is empty; {rebuild}")
    width = len(records[0][1])
    for index, (line, row) in enumerate(records[1:], start=1):
        if len(row) < width:
            last = index == len(records) - 1 and not text.endswith("\n")
            what = "is truncated mid-row" if last else "has a short row"
            raise SpecError(f"{path} {what}: line {line} has {len(row)} of the header's {width} fields; {rebuild}")
    if not text.endswith("\n"):  # every writer ends the file with a newline
        warn(f"{path} does not end with a newline: its last row may be cut short; {rebuild}")


def _without_duplicate_rows(path: Path, frame: pd.DataFrame, rebuild: str,
                            warn: Callable[[str], None]) -> pd.DataFrame:
    """A row written twice is dropped (with a warning); one run with two different rows is an error."""
    repeated = frame.duplicated(keep="first")
    if repeated.any():
        names = list(dict.fromkeys(frame.loc[repeated, "run_id"].astype(str)))
        listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        warn(f"{path}: dropped {int(repeated.sum())} duplicate row(s), each identical to an earlier one ({listed})")
        frame = frame[~repeated].reset_index(drop=True)
    keys = ["run_id"] + [c for c in frame.columns if is_evaluation_key(c)]
    clash = frame[frame.duplicated(keys, keep=False)]
    if not clash.empty:
        texts = clash[keys].astype(str)
        rows = clash[(texts == texts.iloc[0]).all(axis=1)]
        differing = [c for c in frame.columns if rows[c].nunique(dropna=False) > 1]
        raise SpecError(
            f"{path} has two different rows for run {rows['run_id'].iloc[0]}"
            f" (they differ in {', '.join(differing[:5])}); {rebuild}"
        )
    return frame


def read_saved_spec(folder: Path, warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The folder's experiment.yaml as a mapping; {} when there is none, or (with a warning) when it is damaged."""
    path = folder / "experiment.yaml"
    if not present(folder, "experiment.yaml"):
        return {}
    try:
        text = read_text(folder, "experiment.yaml")
    except SpecError as error:  # a link, a FIFO, a folder, too big, not UTF-8: named, never followed
        if warn:
            warn(f"{error}; it is ignored")
        return {}
    try:  # bounded as a spec is: a few lines of aliases cannot stand for billions of values
        spec = parse_yaml(text)
        problem = "" if isinstance(spec, dict) else f"not a mapping ({json_type(spec)})"
    except SpecError as error:
        problem = f"cannot be read ({error})"
    if problem:
        if warn:
            warn(f"{path} is {problem}; it is ignored")
        return {}
    return spec


def _check_one_experiment(path: Path, frame: pd.DataFrame, spec: dict[str, Any], rebuild: str) -> None:
    names = [str(n) for n in frame["experiment"].dropna().unique()] if "experiment" in frame else []
    if len(names) > 1:
        raise SpecError(f"{path} mixes the runs of several experiments ({', '.join(names)}); {rebuild}")
    expected = spec.get("name")
    if isinstance(expected, str) and names and names != [expected]:
        raise SpecError(f"{path} holds runs of experiment {names[0]!r}, but experiment.yaml beside it "
                        f"is {expected!r}; {rebuild}")
    matrix = spec.get("matrix")
    for key in matrix if isinstance(matrix, dict) else {}:
        # A mapping-valued axis (probe.decoder: [{name: ...}]) is written as its leaf columns.
        if key not in frame.columns and not any(c.startswith(f"{key}.") for c in frame.columns):
            raise SpecError(f"{path} has no column {key!r}, which experiment.yaml's matrix varies: its rows "
                            f"cannot be told apart and tables would pool over {key}; {rebuild}")


def _check_one_run_per_point(path: Path, frame: pd.DataFrame) -> None:
    """Two run ids at one matrix point, seed and decoder are two versions of the spec: averaging them mixes them."""
    keys = identity_columns(frame) + ["seed"]
    clash = frame[frame.duplicated(keys, keep=False)]  # (run id, decoder) is unique by now: these are other runs
    if clash.empty:
        return
    first = clash.iloc[0]
    same = clash[(clash[keys].astype(str) == first[keys].astype(str)).all(axis=1)]
    where = ", ".join(f"{k}={first[k]}" for k in keys if not pd.isna(first[k]))
    raise SpecError(
        f"{path} has several runs of one matrix point and seed ({where}): {', '.join(same['run_id'].astype(str))}; "
        "they come from different versions of the spec; delete the stale run folders and rebuild with "
        f"`seqkeras table {path.parent} --rebuild`"
    )


class Skipped(NamedTuple):
    """A run folder that rebuild_runs left out of runs.csv, and why."""

    path: Path
    kind: str  # damaged record, foreign run folder, stale run folder
    why: str


def rebuild_runs(
    folder: Path, order: list[str] | None = None, *, experiment: str | None = None,
    matrix_columns: list[str] | None = None,
) -> tuple[int, list[Skipped]]:
    """Rewrite runs.csv from every run folder's metrics.json; returns (runs, the run folders left out).

    Rows follow `order` (the experiment's run ids, matrix order) where given;
    run folders it does not name come after it, by name. A record that is damaged,
    names another experiment (default: the folder's name) or another run than its
    folder, or repeats the matrix point and seed of a run `order` names (a stale
    run of an earlier version of the spec), is left out: runs.csv never mixes it in.
    """
    if not folder.is_dir():
        raise SpecError(f"{folder} is not a results folder")
    experiment = experiment or folder.name
    position = {run_id: index for index, run_id in enumerate(order or [])}
    paths = sorted((run / "metrics.json" for run in subfolders_with(folder, "metrics.json")),
                   key=lambda p: (position.get(p.parent.name, len(position)), p.parent.name))
    records: list[dict[str, Any]] = []
    # A run folder that is a link, or whose metrics.json is a link, a FIFO, a device: named, never read.
    skipped: list[Skipped] = [Skipped(path, "refused run folder", why)
                              for path, why in refused_subfolders(folder, "metrics.json")]
    taken: dict[str, str] = {}  # matrix point and seed → the run id that has it
    for path in paths:
        record, problem = read_record(path)
        if record is None:
            skipped.append(Skipped(path, "damaged record", problem))
            continue
        if record["experiment"] != experiment:
            skipped.append(Skipped(path, "foreign run folder",
                                   f"it names experiment {record['experiment']!r}, this folder holds {experiment!r}"))
            continue
        if record["run_id"] != path.parent.name:
            skipped.append(Skipped(path, "foreign run folder",
                                   f"it names run {record['run_id']!r}, not its folder's name"))
            continue
        point = json.dumps([record.get("matrix", {}), record["seed"]], sort_keys=True, default=str)
        if taken.get(point) in position and record["run_id"] not in position:
            skipped.append(Skipped(path, "stale run folder",
                                   f"same matrix point and seed as {taken[point]}, the run the experiment names"))
            continue
        taken.setdefault(point, record["run_id"])
        records.append(record)
    if matrix_columns is None:
        matrix_columns = []
        for record in records:
            matrix_columns += [k for k in record.get("matrix", {}) if k not in matrix_columns]
    write_csv(folder / "runs.csv", runs_frame(records, matrix_columns))
    return len(records), skipped
