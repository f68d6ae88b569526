"""runs.csv → pandas pivot tables (mean ± std over seeds) and the table.md page."""

from __future__ import annotations

import pandas as pd

from seqkeras.errors import SpecError, unknown_choice
from seqkeras.reporting.expectations import Verdict
from seqkeras.reporting.formatting import mean_std
from seqkeras.reporting.selection import select
from seqkeras.results.folder import FAILED, OK, run_counts
from seqkeras.spec.sections import TableSpec

NON_METRIC_COLUMNS = {"experiment", "run_id", "status", "seed", "params", "train_seconds", "backend", "error"}


def _labels(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Key columns as readable labels: a lag of 5 stays '5' even in a column that has gaps ('-')."""
    frame = frame.copy()
    for key in keys:
        frame[key] = [
            "-" if pd.isna(v) else int(v) if isinstance(v, float) and v.is_integer() else v
            for v in frame[key].astype(object)
        ]
    return frame


def _keys(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def pivot(runs: pd.DataFrame, table: TableSpec) -> pd.DataFrame:
    """The table a spec asks for: rows × columns of `value`, mean ± std over the other keys."""
    rows, columns = _keys(table.rows), _keys(table.columns)
    for key in rows + columns + [table.value]:
        if key not in runs.columns:
            raise SpecError(unknown_choice("column", key, [c for c in runs.columns if c not in ("experiment", "error")]))
    chosen = select(runs, table.where)
    if chosen.empty:
        return pd.DataFrame()
    # Missing matrix values (a key that one kind of run lacks) become "-" so groupby keeps them.
    keys = rows + columns
    frame = _labels(chosen[keys + [table.value]], keys)
    grouped = frame.groupby(keys, sort=False, dropna=False)[table.value].agg(mean_std)
    if not columns:
        return grouped.to_frame(table.value).reset_index()
    result = grouped.unstack(columns)
    result.columns = [
        " / ".join(str(part) for part in column) if isinstance(column, tuple) else str(column)
        for column in result.columns
    ]
    return result.fillna("").reset_index()


def default_table(runs: pd.DataFrame, matrix_columns: list[str]) -> pd.DataFrame:
    """Without a `table:` section: every run's matrix values and metrics."""
    # Rows of one run told apart by their decoder: the label is the key, its parameters are not metrics.
    decoder_keys = ["decoder"] if "decoder" in runs.columns else []
    metrics = [c for c in runs.columns if c not in NON_METRIC_COLUMNS and c not in matrix_columns
               and c != "decoder" and not c.startswith("decoder.")]
    keys = (matrix_columns + decoder_keys) or ["seed"]
    finished = runs[runs["status"] == OK]
    if finished.empty:
        return pd.DataFrame()
    frame = _labels(finished[keys + metrics], keys)
    return frame.groupby(keys, sort=False, dropna=False).agg(mean_std).reset_index()


def to_markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_no finished runs_"
    return frame.to_markdown(index=False, disable_numparse=True)


def verdict_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([v.as_row() for v in verdicts], columns=["claim", "expected", "measured", "verdict"])


def render_page(
    name: str,
    description: str,
    runs: pd.DataFrame,
    tables: list[tuple[str, pd.DataFrame]],
    verdicts: list[Verdict],
) -> str:
    total, ok, failed = run_counts(runs)
    lines = [f"# {name}", ""]
    if description:
        lines += [description.strip(), ""]
    lines += [f"{total} runs: {ok} ok, {failed} failed.", ""]
    for title, frame in tables:
        lines += [f"## {title}", "", to_markdown(frame), ""]
    if verdicts:
        held = sum(v.holds for v in verdicts)
        lines += [f"## Expectations ({held} of {len(verdicts)} reproduced)", ""]
        lines += [verdict_frame(verdicts).to_markdown(index=False, disable_numparse=True), ""]
    if failed:
        failures = runs[runs["status"] == FAILED][["run_id", "error"]]
        lines += ["## Failed runs", "", failures.to_markdown(index=False), ""]
    return "\n".join(lines)


def table_title(table: TableSpec) -> str:
    if table.title:
        return table.title
    across = f" by {' / '.join(_keys(table.rows))}"
    if table.columns:
        across += f" × {' / '.join(_keys(table.columns))}"
    return f"{table.value}{across}"


def summary_tables(runs: pd.DataFrame, tables: list[TableSpec], matrix_columns: list[str]) -> list[tuple[str, pd.DataFrame]]:
    if not tables:
        return [("Runs (mean ± std over seeds)", default_table(runs, matrix_columns))]
    return [(table_title(t), pivot(runs, t)) for t in tables]


