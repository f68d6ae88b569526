"""What tuning found: tuning.md and a chart per tuned key in a tuned experiment's results folder, and the report's
Tuning section.

A tuned experiment (a spec with `tune:`; execution.tuning) keeps every trial of
every matrix point in tuning/trials.csv and each point's chosen values in
tuning/best.csv. From them:

- tuning.md: per matrix point, the best value of each tuned key, the best
  objective, the median completed trial's, the spread between the two, and how
  many trials completed, were pruned or failed;
- tuning_<key>.png, one per tuned key: the objective against the key's values,
  every trial of every point (a colour per point; a pruned trial hollow, at the
  value of the last epoch it trained), each point's best trial a star. The axis
  is logarithmic for a log_uniform key and categorical for a choice key (the
  kind is experiment.yaml's `tune.search`; without it numbers get a linear axis
  and text a categorical one). Only the first MAX_CHARTS keys are charted: a
  study of hundreds of keys would take minutes, and a note says so (the table
  still shows every key's best value).

The two files may be someone else's: they are read through `results.files`
(regular files inside the folder, bounded), and one that is missing, cannot be
read or lacks the columns it needs is a warning; what can be shown without it is
shown (the best table is computed from trials.csv when best.csv cannot be read).
`write_tuning_report` never raises into the command that called it: tuning.md is
a view of the results, as the plots are.
"""

from __future__ import annotations

import io
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting.figures import all_numeric, color_for, ordered_values, panels, save_png, value_text
from seqkeras.reporting.formatting import format_number
from seqkeras.reporting.tables import to_markdown
from seqkeras.results.files import present, read_text
from seqkeras.results.folder import write_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PAGE = "tuning.md"
TRIALS = "tuning/trials.csv"
BEST = "tuning/best.csv"
CHART_PREFIX = "tuning_"
MAX_CHARTS = 12  # tuned keys charted, in the files' order; a study of more says so in a note
VALUE_PREFIX, BEST_PREFIX = "value.", "best."  # trials.csv's value.<key>, best.csv's best.<key>
COMPLETE, PRUNED, FAIL = "complete", "pruned", "fail"
# The columns execution.tuning writes besides the matrix columns and the tuned keys'.
TRIAL_COLUMNS = ("study", "trial", "state", "objective", "epochs", "seconds", "run_id", "error")
BEST_COLUMNS = ("study", "objective", "direction", "best", "best_trial", "median", "best_minus_median", "complete",
                "pruned", "failed")
# What each file must have to be read at all; the other columns show as "—" when absent (an older file).
NEEDED = {TRIALS: ("study", "trial", "state", "objective"), BEST: ("study", "best")}
NONE = "—"

Warn = Callable[[str], None]


@dataclass
class Found:
    """The trials and chosen values of a tuned experiment, as read from its tuning/ files."""

    trials: pd.DataFrame | None  # trials.csv, with a `point` label column; None when it cannot be read
    best: pd.DataFrame | None  # best.csv (or computed from trials.csv), with `point`; None when neither can be read
    matrix: list[str]  # the matrix columns, as execution.tuning writes them before its own
    keys: list[str]  # the tuned keys, in the files' order
    kinds: dict[str, str]  # each key's kind from the spec (log_uniform, uniform, integer, choice), when known
    objective: str
    direction: str | None  # minimize / maximize, when known
    notes: list[str] = field(default_factory=list)  # what the page says it could not show, and why


@dataclass
class Section:
    """What the page shows: the best table, the charts ({file, title}) and the notes."""

    found: Found
    table: pd.DataFrame
    charts: list[dict[str, str]]


# --------------------------------------------------------------------------- #
# Entry points
# --------------------------------------------------------------------------- #


def write_tuning_report(folder: Path, spec: Any, echo: Callable[[str], None] = print) -> None:
    """tuning.md and the charts of the experiment `spec` (an ExperimentSpec) into its results `folder`, when it
    is tuned (nothing otherwise); never raises: a missing or damaged file, or a chart not drawn, is a warning."""
    if not has_tune_section(spec):
        return

    def warn(message: str) -> None:
        echo(f"warning: {message}")

    try:
        section = tuning_section(folder, spec.tune, folder, warn, expected=True, taken=_declared_plot_files(folder))
        write_atomic(folder / PAGE, markdown(spec.name, section))
        echo(f"tuning: {', '.join([PAGE, *(chart['file'] for chart in section.charts)])}")
    except Exception as error:  # a view of the results, as the plots are: losing it must not lose the results
        warn(f"{folder / PAGE} not written: {type(error).__name__}: {error}")


def tuning_section(folder: Path, tune: Any, into: Path, warn: Warn, *, expected: bool,
                   taken: set[str] = frozenset()) -> Section:
    """The best table and the charts (drawn into `into`) from `folder`'s tuning files.

    tune: the spec's `tune` section (a TuneSpec), for each key's kind and the objective; None when the spec
    cannot be read (the files still say most of it).
    expected: the experiment is tuned (its spec says so), so a missing file is a warning too.
    taken: PNG names already used beside the page (a declared plot's `file` may be anything), never overwritten.
    """
    found = read_found(folder, tune, warn, expected=expected)
    table = best_table(found) if found.best is not None else pd.DataFrame()
    return Section(found, table, draw_charts(found, into, warn, taken))


def has_tuning(folder: Path) -> bool:
    """Whether a results folder holds tuning results (either file, readable or not)."""
    return present(folder, TRIALS) or present(folder, BEST)


def search_kinds(tune: Any) -> dict[str, str]:
    """Each tuned key's kind from a spec's `tune` section (a TuneSpec); {} without one."""
    if tune is None:
        return {}
    return {key: search.kind for key, search in tune.search.items()}


def has_tune_section(spec: Any) -> bool:
    """Whether a spec (an ExperimentSpec, or None when it cannot be read) tunes its matrix points."""
    return getattr(spec, "tune", None) is not None


# --------------------------------------------------------------------------- #
# Reading the two files
# --------------------------------------------------------------------------- #


def read_found(folder: Path, tune: Any, warn: Warn, *, expected: bool) -> Found:
    """trials.csv and best.csv of `folder`, each checked (see the module); a file that is not read is a note."""
    kinds = search_kinds(tune)
    notes: list[str] = []
    trials = _read_csv(folder, TRIALS, warn, notes, expected)
    best = _read_csv(folder, BEST, warn, notes, expected)
    keys = _keys(trials, VALUE_PREFIX) + [k for k in _keys(best, BEST_PREFIX) if k not in _keys(trials, VALUE_PREFIX)]
    matrix = _matrix_columns(trials, TRIAL_COLUMNS, VALUE_PREFIX) if trials is not None \
        else _matrix_columns(best, BEST_COLUMNS, BEST_PREFIX)
    objective, direction = _objective(best, tune)
    if trials is not None:
        trials = _with_columns(trials, point=_point_labels(trials, matrix),
                               objective=pd.to_numeric(trials["objective"], errors="coerce"),
                               state=trials["state"].astype(str).str.strip())
    if best is not None:
        best = _with_columns(best, point=_point_labels(best, matrix))
    elif trials is not None:
        best = _best_from_trials(trials, keys, matrix, objective, direction)
        if best is not None:
            notes.append(f"The best setting of each point is computed from {TRIALS}, {BEST} being unreadable.")
    return Found(trials, best, matrix, keys, {k: kinds[k] for k in keys if k in kinds}, objective, direction, notes)


def _with_columns(frame: pd.DataFrame, **columns: Any) -> pd.DataFrame:
    """`frame` with `columns` added (or replaced, in their place), built as one frame at once.

    A frame read from a wide CSV (a study of hundreds of tuned keys) holds a block per column (pandas 3 keeps
    each text column in a block of its own), so adding columns one at a time, as `assign` and `frame[c] = …` do,
    fragments it further: pandas warns (PerformanceWarning), and every later selection walks each block."""
    return pd.DataFrame({**{column: frame[column] for column in frame.columns}, **columns}, index=frame.index)


def _read_csv(folder: Path, name: str, warn: Warn, notes: list[str], expected: bool) -> pd.DataFrame | None:
    if not present(folder, name):
        if expected:
            warn(f"no {folder / name}: the tuning of {folder.name} shows without it")
            notes.append(f"{name} is missing.")
        return None
    try:
        frame = pd.read_csv(io.StringIO(read_text(folder, name)), keep_default_na=False, na_values=[""])
    except SpecError as error:  # a link, a FIFO, too big, not UTF-8: named, never followed
        problem = str(error)
    except (ValueError, OSError) as error:  # pandas' ParserError and EmptyDataError are ValueErrors
        problem = f"{folder / name} cannot be read as CSV ({type(error).__name__}: {str(error).strip()[:200]})"
    else:
        missing = [column for column in NEEDED[name] if column not in frame.columns]
        if not missing:
            return frame
        problem = f"{folder / name} is not a seqkeras {Path(name).name} (no column {', '.join(missing)})"
    warn(f"{problem}; the tuning report shows without it")
    notes.append(f"{name} could not be read; see the warning of the command that wrote this page.")
    return None


def _keys(frame: pd.DataFrame | None, prefix: str) -> list[str]:
    return [c.removeprefix(prefix) for c in frame.columns if c.startswith(prefix)] if frame is not None else []


def _matrix_columns(frame: pd.DataFrame | None, known: tuple[str, ...], prefix: str) -> list[str]:
    """The matrix columns: what execution.tuning writes before its own columns."""
    if frame is None:
        return []
    return [c for c in frame.columns if c not in known and not c.startswith(prefix) and c != "point"]


def _objective(best: pd.DataFrame | None, tune: Any) -> tuple[str, str | None]:
    """The objective's name and direction from best.csv, else from the spec; "objective" and None when neither
    says."""
    def first(column: str) -> str | None:
        if best is None or column not in best or best[column].dropna().empty:
            return None
        return str(best[column].dropna().iloc[0])

    direction = first("direction") or (tune.goal if tune is not None else None)
    objective = first("objective") or (tune.objective if tune is not None else "objective")
    return objective, direction if direction in ("minimize", "maximize") else None


def _point_labels(frame: pd.DataFrame, matrix: list[str]) -> list[str]:
    """Each row's matrix point by the values that tell points apart, `cell=lstm, lag=5` (a key's last part; a key
    that a point does not have is left out); the study's name without a matrix."""
    if not matrix:
        return [str(study) for study in frame["study"]]
    varying = [key for key in matrix if frame[key].map(_text).nunique() > 1] or matrix
    return [", ".join(f"{key.split('.')[-1]}={_text(value)}" for key, value in zip(varying, values)
                      if _text(value) != NONE)
            for values in frame[varying].itertuples(index=False)]


def _best_from_trials(trials: pd.DataFrame, keys: list[str], matrix: list[str], objective: str,
                      direction: str | None) -> pd.DataFrame | None:
    """best.csv's rows as execution.tuning computes them, from trials.csv (when best.csv cannot be read); None
    when the direction is unknown (a loss is minimized, anything else maximized, as the spec's default)."""
    goal = direction or ("minimize" if objective.endswith("loss") else "maximize" if objective != "objective"
                         else None)
    if goal is None:
        return None
    rows = []
    for point, part in trials.groupby("point", sort=False):
        done = part[(part["state"] == COMPLETE) & part["objective"].notna()]
        chosen = done.loc[done["objective"].idxmin() if goal == "minimize" else done["objective"].idxmax()] \
            if not done.empty else None
        median = statistics.median(done["objective"]) if not done.empty else None
        rows.append({**{key: part[key].iloc[0] for key in matrix}, "study": part["study"].iloc[0],
                     "best": chosen["objective"] if chosen is not None else None,
                     "best_trial": chosen["trial"] if chosen is not None else None,
                     **{f"{BEST_PREFIX}{key}": chosen.get(f"{VALUE_PREFIX}{key}") if chosen is not None else None
                        for key in keys},
                     "median": median,
                     "best_minus_median": chosen["objective"] - median if chosen is not None else None,
                     "complete": int((part["state"] == COMPLETE).sum()),
                     "pruned": int((part["state"] == PRUNED).sum()),
                     "failed": int((part["state"] == FAIL).sum()), "point": point})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- #
# The best table
# --------------------------------------------------------------------------- #


def best_table(found: Found) -> pd.DataFrame:
    """One row per matrix point: its best value of each tuned key, the best and the median objective, the spread
    between them, and the trials complete / pruned / failed; numbers written as every table writes them."""
    best, objective = found.best, found.objective
    rows = []
    for _, row in best.iterrows():
        line = {key: _text(row.get(key)) for key in found.matrix} or {"study": _text(row.get("study"))}
        line.update({f"best {key}": _text(row.get(f"{BEST_PREFIX}{key}")) for key in found.keys})
        line.update({f"best {objective}": _number(row.get("best")),
                     "best trial": _text(row.get("best_trial")),
                     f"median {objective}": _number(row.get("median")),
                     "best − median": _number(row.get("best_minus_median"))})
        line.update({what: _text(row.get(what)) for what in ("complete", "pruned", "failed")})
        rows.append(line)
    return pd.DataFrame(rows)


def _number(value: Any) -> str:
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return NONE if pd.isna(number) else format_number(float(number))


def _text(value: Any) -> str:
    """A cell's value: numbers as every table writes them (a whole number without .0), text as it is."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return NONE
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return value_text(value) if float(value).is_integer() else format_number(float(value))


# --------------------------------------------------------------------------- #
# One chart per tuned key
# --------------------------------------------------------------------------- #


def chart_file(key: str) -> str:
    """`tuning_train-optimizer-learning_rate.png` for train.optimizer.learning_rate."""
    return f"{CHART_PREFIX}{re.sub(r'[^A-Za-z0-9_-]+', '-', key).strip('-')[:100]}.png"


def draw_charts(found: Found, into: Path, warn: Warn, taken: set[str] = frozenset()) -> list[dict[str, str]]:
    """Each tuned key's chart into `into` (the first MAX_CHARTS keys, a note saying so when there are more); one
    that cannot be drawn is a warning and left out."""
    if found.trials is None or found.trials["objective"].notna().sum() == 0:
        return []
    keys = [key for key in found.keys if f"{VALUE_PREFIX}{key}" in found.trials]
    if len(keys) > MAX_CHARTS:  # a chart takes a fraction of a second: hundreds of keys would take minutes
        found.notes.append(f"Charts of the first {MAX_CHARTS} of the {len(keys)} tuned keys only; every key's best "
                           f"value is in the table, every trial's in {TRIALS}.")
        keys = keys[:MAX_CHARTS]
    charts, used = [], set(taken)
    for key in keys:
        name, number = chart_file(key), 2
        while name in used:
            name, number = chart_file(key).removesuffix(".png") + f"_{number}.png", number + 1
        title = f"{found.objective} against {key}: every trial of each matrix point"
        try:
            save_png(draw_key_chart(found, key), into / name, tight=True)
        except Exception as error:  # one chart is a view of the trials: the page goes on without it
            warn(f"chart {name} ({title}) not drawn: {type(error).__name__}: {error}")
            continue
        used.add(name)
        charts.append({"file": name, "title": title})
    return charts


def draw_key_chart(found: Found, key: str) -> "Figure":
    """The objective (y) against `key`'s value (x): a colour per matrix point, a pruned trial hollow, each
    point's best a star; a failed trial has no objective and is counted in the title, not drawn."""
    from matplotlib.lines import Line2D

    column = f"{VALUE_PREFIX}{key}"
    # Only the columns the chart reads: a study of hundreds of keys makes every selection of the whole frame slow.
    trials = found.trials[["point", "trial", "state", "objective", column]]
    drawn = trials[trials["objective"].notna() & trials[column].notna()
                   & trials["state"].isin([COMPLETE, PRUNED])]
    kind = found.kinds.get(key)
    values = ordered_values(drawn[column])
    categorical = kind == "choice" or not all_numeric(values)
    points = list(dict.fromkeys(trials["point"]))
    best_trials = _best_trial_numbers(found)
    figure, (ax,) = panels(1, width=7.5, height=4.2)
    for index, point in enumerate(points):
        color = color_for(index, len(points))
        part = drawn[drawn["point"] == point]
        # Categories: each point a little to the side, so that points that chose the same value stay apart.
        offset = (index - (len(points) - 1) / 2) * min(0.3 / max(len(points), 1), 0.08) if categorical else 0.0
        xs = part[column].map(lambda v, offset=offset: values.index(v) + offset if categorical else float(v))
        complete, pruned = part["state"] == COMPLETE, part["state"] == PRUNED
        ax.scatter(xs[complete], part.loc[complete, "objective"], color=color, s=30, alpha=0.85, label=point)
        ax.scatter(xs[pruned], part.loc[pruned, "objective"], facecolors="none", edgecolors=[color], s=30,
                   linewidths=1.2)
        chosen = part[part["trial"].map(_whole) == best_trials.get(point)]
        ax.scatter(xs[chosen.index], chosen["objective"], marker="*", s=220, color=color, edgecolors="black",
                   linewidths=0.8, zorder=3)
    if categorical:
        ax.set_xticks(range(len(values)), [value_text(v) for v in values])
    elif kind == "log_uniform":
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        # 1, 2, 5 per decade, written plainly: a range narrower than a decade still has labels, and they never
        # overlap as matplotlib's labelled minor ticks of such a range do.
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(key + (f" ({kind})" if kind else ""))
    ax.set_ylabel(f"{found.objective} (validation)")
    shown_values = drawn["objective"].astype(float)
    if len(shown_values) and shown_values.min() > 0 and shown_values.max() / shown_values.min() > 100:
        ax.set_yscale("log")  # losses near 0 and at chance on one axis: orders of magnitude apart
    ax.grid(True, alpha=0.3)
    markers = [Line2D([], [], linestyle="none", marker="o", color="grey", label="complete"),
               Line2D([], [], linestyle="none", marker="o", markerfacecolor="none", color="grey",
                      label="pruned (its last epoch)"),
               Line2D([], [], linestyle="none", marker="*", markersize=12, color="grey", markeredgecolor="black",
                      label="best of the point")]
    handles = ax.get_legend_handles_labels()[0] + markers
    ax.legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    better = {"minimize": ", lower is better", "maximize": ", higher is better"}.get(found.direction or "", "")
    failed = int((trials["state"] == FAIL).sum())
    left_out = f"; {failed} failed trial(s) not drawn" if failed else ""
    figure.suptitle(f"{found.objective} against {key}{better}{left_out}", fontsize=10)
    return figure


def _best_trial_numbers(found: Found) -> dict[str, int | None]:
    """Each point's best trial number, as best.csv names it (as trials.csv does)."""
    if found.best is None or "best_trial" not in found.best:
        return {}
    return {point: _whole(trial) for point, trial in zip(found.best["point"], found.best["best_trial"])}


def _whole(value: Any) -> int | None:
    number = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return int(number) if not pd.isna(number) and float(number).is_integer() else None


def _declared_plot_files(folder: Path) -> set[str]:
    """The PNGs plots.json lists (a declared plot's `file` may be anything): a tuning chart never takes their name."""
    from seqkeras.reporting.plots import read_manifest

    return {entry["file"] for entry in read_manifest(folder) or []}


# --------------------------------------------------------------------------- #
# tuning.md
# --------------------------------------------------------------------------- #


def introduction(found: Found) -> str:
    """What the page shows, in words: the objective, its direction, and how to read the table."""
    goal = {"minimize": "lower is better", "maximize": "higher is better"}.get(found.direction or "", "")
    return (f"Each matrix point was tuned on its own, with the same budget of trials, on validation data only; "
            f"the objective is {found.objective}" + (f" ({goal})" if goal else "") + ". runs.csv and table.md hold "
            "each point's best setting trained on every seed. *best − median*: how far the best trial is from the "
            "median completed trial of its point, what tuning gained over a typical draw. A pruned trial was "
            "stopped early; its objective is the value of its last epoch.")


def markdown(name: str, section: Section) -> str:
    found = section.found
    lines = [f"# Tuning: {name}", "", introduction(found), ""]
    lines += [f"_{note}_" for note in found.notes] + ([""] if found.notes else [])
    lines += ["## Best setting per matrix point", ""]
    lines += [to_markdown(section.table) if not section.table.empty else "_no tuning results could be read_", ""]
    if section.charts:
        lines += [f"## {found.objective} against each tuned key", ""]
        for chart in section.charts:
            lines += [f"![{chart['title']}]({chart['file']})", ""]
    return "\n".join(lines)
