"""runs.csv → pandas pivot tables (mean ± std over seeds) and the table.md page.

A table names its keys wherever it is shown: with `columns`, the header of its
last row key is its corner, `model.cell \\ model.bidirectional` (`corner`), in the
texts (Markdown, terminal, report) and in the CLI's CSV (`csv_frame`); the frame's
`attrs` hold its `rows` and `columns` keys for a reader of the numbers. Its cells'
digits follow one rule per table (`reporting.formatting.cell_texts`).

Each cell says how many runs it holds where its table's cells differ in that,
`0.80 (n=1)`; where they all hold the same number, `attrs["runs_per_cell"]` has it
and the Markdown says it once below the table (`runs_note`), `n=2 runs per cell.`.
The numbers (`statistics=True`) have an `n` column instead.

Once `seqkeras evaluate` has added decoders, a run's row without a decoder key is
its greedy row, and a value that is the run's own (best_epoch, epochs_trained,
still_improving as a share, train_seconds, params) is read once per run, whatever
its decoders (`reporting.spec_rows`).

With a `Baseline` (`table --baseline`), each cell is also tested against its
baseline cell over seeds (`reporting.baseline`): a mark in the texts, p_value,
test and verdict columns in the numbers, and `attrs["baseline"]` what the title
adds (`titled`): the baseline, and whether cells had too few seeds to test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from seqkeras.errors import SpecError, translate_validation_error
from seqkeras.reporting import baseline as against
from seqkeras.reporting.baseline import Baseline
from seqkeras.reporting.expectations import Verdict, held_said
from seqkeras.reporting.formatting import cell_numbers, cell_texts, counted, runs_per_cell
from seqkeras.reporting.selection import key_list, require_columns, select
from seqkeras.reporting.spec_rows import default_decoder_labelled, each_run_once, reads_each_run_once, table_views
from seqkeras.results.folder import (
    FAILED, OK, TRAINING_COLUMNS, identity_columns, is_evaluation_key, print_warning,
    one_row_per_run, run_counts, still_improving_said,
)
from seqkeras.spec.outputs import metric_direction
from seqkeras.spec.sections import TableSpec

NON_METRIC_COLUMNS = {"experiment", "run_id", "status", "seed", "params", "train_seconds", "backend", "error",
                      *TRAINING_COLUMNS}


def _labels(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Key columns as readable labels: a lag of 5 stays '5' even in a column that has gaps ('-')."""
    frame = frame.copy()
    for key in keys:
        frame[key] = [
            "-" if pd.isna(v) else int(v) if isinstance(v, float) and v.is_integer() else v
            for v in frame[key].astype(object)
        ]
    return frame


STATISTICS = {"mean": "mean", "std": "std", "n": "count"}  # statistics=True: a column each (std with ddof 1)


def _statistics(grouped) -> pd.DataFrame:
    """A groupby's values as numbers: mean, std and n per group (a text value counts as missing)."""
    return pd.DataFrame({
        name: grouped.agg(lambda values, f=function: getattr(pd.to_numeric(values, errors="coerce"), f)())
        for name, function in STATISTICS.items()
    })


def pivot(runs: pd.DataFrame, table: TableSpec, statistics: bool = False,
          baseline: Baseline | None = None, best: bool = True) -> pd.DataFrame:
    """The table a spec asks for: rows × columns of `value`, mean ± std over seeds (and the `pool` keys).

    statistics: numbers for pandas instead of "0.76 ± 0.014" texts: a column each for the
    mean, std and n ("accuracy mean", … without `columns`; "<column> mean", … with them).
    baseline: each cell tested against its baseline cell (see the module): a mark after
    the text, or p_value, test and verdict columns after the numbers.
    best: without a baseline, the texts mark each column's best and test the other cells against it (a view
    that compares otherwise, tuned beside untuned, or a command with a baseline, says False).
    The frame's attrs name its `rows` and `columns` keys, and `baseline` what its title adds.
    """
    rows, columns = key_list(table.rows), key_list(table.columns)
    if baseline is not None:
        against.check_baseline(runs, baseline)
        against.check_key_in(baseline, rows + columns, f"the table {table_title(table)!r}")
    if not (runs["status"] == OK).any():
        # Every run failed (or none ran yet): no metric column may exist at all; the page lists the failures.
        return pd.DataFrame()
    require_columns(runs, rows + columns + [table.value] + list(table.where) + list(table.pool))
    chosen = select(default_decoder_labelled(runs), table.where)
    if chosen.empty:
        return pd.DataFrame()
    # Missing matrix values (a key that one kind of run lacks) become "-" so groupby keeps them.
    keys = rows + columns
    pooled = [*table.where, *table.pool]
    if reads_each_run_once(table):  # the same in each of a run's decoders' rows: the decoder keys mix nothing
        chosen = each_run_once(chosen, keys)
        pooled += [column for column in chosen.columns if is_evaluation_key(column)]
    check_pools_only_over_seeds(chosen, keys, pooled)
    frame = _labels(chosen[keys + [table.value] + _seed(chosen, keys)], keys)
    if table.value == STILL_IMPROVING:
        frame[table.value] = _share(frame)
    groups = frame.groupby(keys, sort=False, dropna=False)[table.value]
    direction = metric_direction(table.value)
    if baseline is not None:
        tests = against.cell_tests(frame, keys, table.value, baseline, direction)
        note = against.title_note(baseline, [tests])
    else:  # the best of each column marked, the others tested against it
        tests = against.best_tests(frame, keys, columns, table.value, direction) \
            if best and direction is not None and "seed" not in keys and not statistics else None
        note = ""
    cells = groups.agg(cell_numbers)
    frame = _pivot(groups, cells, table, rows, columns, statistics, tests)
    if not statistics and table.value != STILL_IMPROVING:
        frame = with_still_improving(frame, chosen, rows)
    frame = _described(frame, rows, columns, note, runs_per_cell(list(cells)))
    frame.attrs["marked_best"] = baseline is None and tests is not None
    return frame


STILL_IMPROVING = "still_improving"


IMPROVING_COLUMN = "still improving"


def with_still_improving(frame: pd.DataFrame, chosen: pd.DataFrame, rows: list[str]) -> pd.DataFrame:
    """The table's texts with a last column saying, per row, how many of its runs were still improving when they
    ended (runs.csv's still_improving), `2 of 3`: a row whose runs had not converged ranks how far they got. Only
    where some run of the table was; a table of runs that do not record it is left as it is."""
    if "still_improving" not in chosen.columns or frame.empty:
        return frame
    runs = one_row_per_run(chosen)
    improving = still_improving_said(runs) == "true"
    if not improving.any():
        return frame
    labelled = _labels(runs[rows].assign(improving=improving.to_numpy()), rows)
    counts = labelled.groupby(rows, sort=False, dropna=False)["improving"].agg(["sum", "size"])
    said = {tuple(map(str, key if isinstance(key, tuple) else (key,))): f"{int(row['sum'])} of {int(row['size'])}"
            for key, row in counts.iterrows()}
    # The frame's row keys: the first columns, the last one named by the corner where the table has columns.
    keys = frame.iloc[:, : len(rows)].astype(str).itertuples(index=False, name=None)
    frame = frame.copy()
    frame[IMPROVING_COLUMN] = [said.get(tuple(key), "") for key in keys]
    return frame


def _share(frame: pd.DataFrame) -> pd.Series:
    """runs.csv's still_improving as a number, 1 (true) or 0 (false): a cell's mean is the share of its runs
    still improving as their budget ended; a run that does not record it has none."""
    said = still_improving_said(frame)
    return said.map({"true": 1.0, "false": 0.0}).astype(float)


def _pivot(groups, cells: pd.Series, table: TableSpec, rows: list[str], columns: list[str], statistics: bool,
           tests: dict[tuple, against.CellTest] | None) -> pd.DataFrame:
    """`pivot`'s frame from its cells' groups (and their numbers, `cells`): numbers, or texts with the corner
    header and marks."""
    if statistics:
        numbers = _statistics(groups)
        stats = list(STATISTICS)
        if tests is not None:
            numbers = numbers.join(against.test_columns(numbers.index, tests))
            stats += against.COLUMNS
        if not columns:
            return numbers.rename(columns=lambda stat: f"{table.value} {stat}").reset_index()
        wide = numbers.unstack(columns)  # columns: (statistic, value along each of `columns` …)
        values = list(dict.fromkeys(column[1:] for column in wide.columns))
        wide = wide[[(stat, *value) for value in values for stat in stats]]
        wide.columns = [f"{_label(value)} {stat}" for value in values for stat in stats]
        return wide.reset_index()
    [grouped] = _texts([cells])
    if tests is not None:
        grouped = against.marked(grouped, tests)
    if not columns:
        return grouped.to_frame(table.value).reset_index()
    result = grouped.unstack(columns)
    result.columns = [_label(column if isinstance(column, tuple) else (column,)) for column in result.columns]
    return result.fillna("").reset_index().rename(columns={rows[-1]: corner(rows, columns)})


def _texts(columns: list[pd.Series]) -> list[pd.Series]:
    """Each cell's "mean ± std" text, by the digits rule of one table (or of each of its metrics' columns,
    `columns`: each a Series of `formatting.CellNumbers`; `formatting.cell_texts`), each with how many runs it
    holds where the table's cells differ in that (`formatting.counted`)."""
    every = runs_per_cell([cell for cells in columns for cell in cells])
    texts = []
    for cells in columns:
        written = cell_texts(list(cells))
        if every is None:
            written = [counted(text, cell) for text, cell in zip(written, cells)]
        texts.append(pd.Series(written, index=cells.index, dtype=object))
    return texts


def corner(rows: list[str], columns: list[str]) -> str:
    """The header of a table's last row key when it has columns: its rows' key, then its columns' keys,
    `model.cell \\ model.bidirectional` (several column keys as its column labels join them, `a / b`)."""
    return f"{rows[-1]} \\ {' / '.join(columns)}"


def _described(frame: pd.DataFrame, rows: list[str], columns: list[str], note: str,
               per_cell: int | None = None) -> pd.DataFrame:
    """The frame with what it is in its attrs: its row and column keys, what a baseline adds to its title, and
    the number of runs each of its cells holds (None where they differ: each cell says its own)."""
    frame.attrs.update(rows=list(rows), columns=list(columns), baseline=note, runs_per_cell=per_cell)
    return frame


def runs_note(frame: pd.DataFrame) -> str:
    """"n=2 runs per cell.": said once below a table whose cells all hold the same number of runs; "" otherwise
    (its cells then say theirs, `0.80 (n=1)`)."""
    count = frame.attrs.get("runs_per_cell")
    if not count:
        return ""
    return f"n={count} run{'' if count == 1 else 's'} per cell."


def titled(title: str, frame: pd.DataFrame) -> str:
    """A table's title with what its frame's baseline test adds, "accuracy by … (against model.cell = lstm)"."""
    note = frame.attrs.get("baseline", "")
    return f"{title} ({note})" if note else title


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The numbers as the CLI's CSV writes them: the last row key's column named by the corner, as in the
    Markdown, when the table has column keys; the Python API keeps the keys' own names, to index by."""
    rows, columns = frame.attrs.get("rows", []), frame.attrs.get("columns", [])
    if not columns or not rows or rows[-1] not in frame.columns:
        return frame
    return frame.rename(columns={rows[-1]: corner(rows, columns)})


def _seed(runs: pd.DataFrame, keys: list[str]) -> list[str]:
    """["seed"] when the runs have seeds that are not a key of the table: a baseline test pairs cells by them."""
    return ["seed"] if "seed" in runs.columns and "seed" not in keys else []


def _label(parts: tuple) -> str:
    """A column of a pivot: its values along `columns`, "lstm / False"."""
    return " / ".join(str(part) for part in parts)


def check_pools_only_over_seeds(runs: pd.DataFrame, keys: list[str], pooled: list[str]) -> None:
    """A cell averages seeds only: a matrix or decoder key that differs within a cell would mix runs silently.

    A key that varies across the table but is fixed by its rows and columns
    (decoder.width, given the decoder) mixes nothing and is fine.
    """
    varying: dict[str, list[str]] = {}
    for key in identity_columns(runs):
        if key in keys or key in pooled:
            continue
        labelled = _labels(runs[[*keys, key]], [*keys, key])
        spread = labelled.groupby(keys, sort=False, dropna=False)[key].nunique(dropna=False) if keys else \
            pd.Series([labelled[key].nunique(dropna=False)])
        if (spread > 1).any():
            varying[key] = [str(v) for v in dict.fromkeys(labelled[key])]
    if not varying:
        return
    listed = ", ".join(f"{key} ({_few(values)})" for key, values in varying.items())
    if len(varying) == 1:
        verb, role, them = "varies", "is not a row or column", "it"
    else:
        verb, role, them = "vary", "are not rows or columns", "them"
    raise SpecError(
        f"{listed} {verb} among the selected runs but {role}; add {them} to --rows/--columns, select {them} "
        f"with where, or pool over {them} with --pool {' '.join(varying)} "
        f"(in a spec's table: pool: [{', '.join(varying)}])"
    )


def _few(values: list[str], limit: int = 8) -> str:
    return ", ".join(values[:limit]) + (f", … ({len(values)} values)" if len(values) > limit else "")


def defaultkey_list(runs: pd.DataFrame, matrix_columns: list[str], pool: list[str] = ()) -> list[str]:
    """The keys of the table without a `table:` section: the matrix keys not pooled, then the decoder."""
    # Rows of one run told apart by their decoder: the label is the key, its parameters are not metrics.
    decoder_keys = ["decoder"] if "decoder" in runs.columns and "decoder" not in pool else []
    return ([c for c in matrix_columns if c not in pool] + decoder_keys) or ["seed"]


def default_table(runs: pd.DataFrame, matrix_columns: list[str], pool: list[str] = (),
                  statistics: bool = False, baseline: Baseline | None = None, best: bool = True) -> pd.DataFrame:
    """Without a `table:` section: every run's matrix values and metrics (pooling only seeds and `pool`).

    statistics: "<metric> mean", "<metric> std" and "<metric> n" columns of numbers, as `pivot`'s.
    baseline: each metric's cell tested against the row with the baseline's value (see the module)."""
    require_columns(runs, pool)
    metrics = [c for c in runs.columns if c not in NON_METRIC_COLUMNS and c not in matrix_columns
               and not is_evaluation_key(c)]
    keys = defaultkey_list(runs, matrix_columns, pool)
    if baseline is not None:
        against.check_baseline(runs, baseline)
        against.check_key_in(baseline, keys, "the table of every run")
    finished = default_decoder_labelled(runs[runs["status"] == OK])
    if finished.empty:
        return pd.DataFrame()
    frame = _labels(finished[keys + metrics + _seed(finished, keys)], keys)
    groups = frame.groupby(keys, sort=False, dropna=False)
    cells = [groups[metric].agg(cell_numbers) for metric in metrics]
    per_cell = runs_per_cell([cell for column in cells for cell in column])
    tests = {metric: against.cell_tests(frame, keys, metric, baseline, metric_direction(metric))
             for metric in metrics} if baseline is not None else None
    note = against.title_note(baseline, list(tests.values())) if tests is not None else ""
    if statistics:
        parts = []
        for metric in metrics:
            numbers = _statistics(groups[metric])
            if tests is not None:
                numbers = numbers.join(against.test_columns(numbers.index, tests[metric]))
            parts.append(numbers.rename(columns=lambda stat, m=metric: f"{m} {stat}"))
        return _described(pd.concat(parts, axis=1).reset_index(), keys, [], note, per_cell)
    texts = pd.DataFrame(dict(zip(metrics, _texts(cells))))  # the digits rule per metric, n over the table
    marked_best = False
    if tests is None and best and "seed" not in keys:  # each metric's column: its best marked, the others against it
        tests = {metric: against.best_tests(frame, keys, [], metric, metric_direction(metric)) for metric in metrics
                 if metric_direction(metric) is not None}
        tests = {metric: found for metric, found in tests.items() if found is not None}
        marked_best = bool(tests)
    for metric, found in (tests or {}).items():
        texts[metric] = against.marked(texts[metric], found)
    frame = _described(texts.reset_index(), keys, [], note, per_cell)
    frame.attrs["marked_best"] = marked_best
    return frame


def table_notes(frame: pd.DataFrame) -> list[str]:
    """The lines under a table: how many runs each cell holds when they all hold the same number (`runs_note`),
    and what its best-of-column marks mean, where it has them."""
    return [note for note in (runs_note(frame), against.best_legend() if frame.attrs.get("marked_best") else "")
            if note]


def to_markdown(frame: pd.DataFrame) -> str:
    """The table as Markdown, and below it its notes (`table_notes`)."""
    if frame.empty:
        return "_no finished runs_"
    return "\n\n".join([frame.to_markdown(index=False, disable_numparse=True), *table_notes(frame)])


def verdict_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([v.as_row() for v in verdicts], columns=["claim", "expected", "measured", "verdict"])


def render_page(
    name: str,
    description: str,
    runs: pd.DataFrame,
    tables: list[tuple[str, pd.DataFrame]],
    verdicts: list[Verdict],
    notes: list[str] = (),
) -> str:
    """table.md: the run counts, `notes` (how the runs trained: reporting.training_notes), the tables, the
    verdicts and the failed runs."""
    total, ok, failed = run_counts(runs)
    lines = [f"# {name}", ""]
    if description:
        lines += [description.strip(), ""]
    lines += [f"{total} runs: {ok} ok, {failed} failed.", ""]
    for note in notes:
        lines += [note, ""]
    for title, frame in tables:
        lines += [f"## {title}", "", to_markdown(frame), ""]
    if verdicts:
        lines += [f"## Expectations ({held_said(verdicts)})", ""]
        lines += [verdict_frame(verdicts).to_markdown(index=False, disable_numparse=True), ""]
    if failed:
        failures = runs[runs["status"] == FAILED][[c for c in ("run_id", "error") if c in runs.columns]]
        lines += ["## Failed runs", "", failures.to_markdown(index=False), ""]
    return "\n".join(lines)


def table_title(table: TableSpec) -> str:
    if table.title:
        return table.title
    across = f" by {' / '.join(key_list(table.rows))}"
    if table.columns:
        across += f" × {' / '.join(key_list(table.columns))}"
    return f"{table.value}{across}"


def summary_tables(runs: pd.DataFrame, tables: list[TableSpec], matrix_columns: list[str],
                   pool: list[str] = (), statistics: bool = False, baseline: Baseline | None = None,
                   warn: Callable[[str], None] = print_warning,
                   own_decoders: list[str] | None = None, best: bool = True) -> list[tuple[str, pd.DataFrame]]:
    """The declared tables (or every run's values), each also pooling over `pool` (table --pool).

    statistics: numbers (mean, std, n columns; see `pivot`), not the page's texts.
    baseline: cells tested against their baseline cell (see `pivot`) in each table that has its key as a
    row or column; a table without it is shown unmarked with a warning, and when none has it, that is the error.
    own_decoders: the spec's decoders, when rows of other decoders may have been added (reporting.spec_rows).
    best: each column's best marked (`pivot`), where no baseline is given.
    """
    best = best and baseline is None
    if not tables:
        frame = default_table(runs, matrix_columns, list(pool), statistics, baseline, best)
        return [(titled("Runs (mean ± std over seeds)", frame), frame)]
    if pool:
        tables = [t.model_copy(update={"pool": [*t.pool, *pool]}) for t in tables]
    views = table_views(default_decoder_labelled(runs), tables, own_decoders)
    marked = [baseline] * len(views)
    if baseline is not None:
        against.check_baseline(runs, baseline)
        keyed = [baseline.key in key_list(t.rows) + key_list(t.columns) for t, _, _ in views]
        if not any(keyed):  # the first table's error names the option, the key and what the keys are
            against.check_key_in(baseline, key_list(tables[0].rows) + key_list(tables[0].columns),
                                 f"the table {table_title(tables[0])!r} or any other declared table")
        for index, (table, _, _) in enumerate(views):
            if not keyed[index]:
                marked[index] = None
                warn(f"--baseline {baseline.key}: not a row or column of the table {table_title(table)!r}; "
                     "its cells are not marked")
    frames = [pivot(rows, t, statistics, b, best) for (t, rows, _), b in zip(views, marked)]
    return [(titled(table_title(t) + note, frame), frame) for (t, _, note), frame in zip(views, frames)]


def declared_tables(spec: dict[str, Any], source: Path, warn: Callable[[str], None] = print_warning) -> list[TableSpec]:
    """The tables an experiment.yaml declares; one that no longer reads as a table is a warning, and none are used."""
    declared = spec.get("table")
    if not declared:
        return []
    tables = []
    for index, raw in enumerate(declared if isinstance(declared, list) else [declared]):
        try:
            tables.append(TableSpec.model_validate(raw))
        except ValidationError as error:
            key = f"table[{index}]" if isinstance(declared, list) else "table"
            problem = translate_validation_error(error, TableSpec, raw, path_prefix=key)
            warn(f"{source}: its table section cannot be read ({str(problem).rstrip('.')}); showing every run instead")
            return []
    return tables
