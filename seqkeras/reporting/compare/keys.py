"""How the rows of A and B are matched: the key columns (matrix keys, decoder, seed), their values as text, the
metric columns, and each row's matrix point.

A key value is compared as text (`key_text`), so that 1, 1.0 and '1', written by
different runs.csv, join; a key a side lacks reads as `MISSING`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting.tables import NON_METRIC_COLUMNS
from seqkeras.results.folder import TUNED_PREFIX

MISSING = "-"


def key_text(value: Any) -> str:
    """A key value as text, so that 1, 1.0 and '1' (written by different runs.csv) join."""
    if is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.number)):
        number = float(value)
        return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)
    return str(value)


def is_missing(value: Any) -> bool:
    """No value: None, NaN, pandas' NA or an empty text (a blank cell of runs.csv)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value == ""


def point_labels(frame: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Each row's matrix point as one text (the same rule as the join), for grouping seeds."""
    texts = pd.DataFrame({k: frame[k].map(key_text) if k in frame else MISSING for k in keys}, index=frame.index)
    return pd.Series(["\x1f".join(row) for row in texts.itertuples(index=False)], index=frame.index, dtype=object)


def point_label(row: pd.Series, keys: list[str]) -> str:
    """One row's matrix point as `seed_spread` labels it."""
    return "\x1f".join(key_text(row[k]) if k in row else MISSING for k in keys)


def seeds_of(frame: pd.DataFrame) -> list[str]:
    """The side's seeds as key texts, in numeric order."""
    return sorted(set(frame["seed"].map(key_text)), key=lambda s: (len(s), s)) if "seed" in frame else []


def default_keys(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """Matrix keys (dotted names), decoder columns and the seed, in the order they appear in A, then B. The values
    tuning chose (`tuned.*`) describe a run of a matrix point and do not tell points apart: tuned and untuned runs
    of a point join."""
    keys: list[str] = []
    for frame in (a, b):
        keys += [c for c in frame.columns if is_key_column(c) and not c.startswith(TUNED_PREFIX) and c not in keys]
    return keys + ["seed"]


def is_key_column(column: str) -> bool:
    """A matrix key (dotted) or a decoder column: what tells rows apart, never a metric."""
    return "." in column or column == "decoder"


def key_candidates(frame: pd.DataFrame) -> list[str]:
    """The columns `--on` may name, for its did-you-mean."""
    return [c for c in frame.columns if c not in ("experiment", "run_id", "status", "error")]


def metric_columns(frame: pd.DataFrame, keys: list[str]) -> list[str]:
    """The columns compared: neither runs.csv's own columns, nor a key, nor a helper column of the join (_*)."""
    return [c for c in frame.columns
            if c not in NON_METRIC_COLUMNS and c not in keys and not is_key_column(c) and not c.startswith("_")]


def with_join_key(frame: pd.DataFrame, keys: list[str], side: str) -> pd.DataFrame:
    """A copy of one side with its key texts, row order and join label (_key_*, _row, _join); rows that share a
    join label are a SpecError, as a join would pair them arbitrarily."""
    frame = frame.copy()
    texts = pd.DataFrame({k: frame[k].map(key_text) if k in frame else MISSING for k in keys}, index=frame.index)
    for key in keys:
        frame[f"_key_{key}"] = texts[key]
    frame["_row"] = range(len(frame))
    frame["_join"] = point_labels(frame, keys)
    duplicated = frame["_join"].duplicated(keep=False)
    if duplicated.any():
        example = {k: frame.loc[duplicated, f"_key_{k}"].iloc[0] for k in keys}
        raise SpecError(
            f"rows of {side} are not unique on {', '.join(keys)} (e.g. {example}); "
            "join on more keys with --on (usually the seed and every matrix key)"
        )
    return frame


def one_side(keys_frame: pd.DataFrame, merged: pd.DataFrame, which: str, suffix: str, keys: list[str]) -> pd.DataFrame:
    """The rows of the join found on one side only (`which`: the merge's left_only or right_only): keys, run, status."""
    chosen = merged["_merge"] == which
    frame = keys_frame[chosen].copy()
    frame["run_id"] = merged.loc[chosen, f"run_id{suffix}"] if f"run_id{suffix}" in merged else ""
    frame["status"] = merged.loc[chosen, f"status{suffix}"] if f"status{suffix}" in merged else ""
    return frame.reset_index(drop=True)
