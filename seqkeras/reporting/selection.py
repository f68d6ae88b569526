"""Selecting runs by their matrix values: what tables, plots and claims all do first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from seqkeras.errors import SpecError, unknown_choice
from seqkeras.results.folder import OK
from seqkeras.spec.outputs import same_value  # one rule for validate and for the tables


def select(runs: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """Finished runs whose matrix values equal `where` (numbers compared as numbers)."""
    require_columns(runs, where)
    chosen = runs[runs["status"] == OK]
    for key, wanted in where.items():
        chosen = chosen[chosen[key].map(lambda value, wanted=wanted: same_value(value, wanted))]
    return chosen


def require_columns(runs: pd.DataFrame, keys: Iterable[str]) -> None:
    """Each key is a column of runs.csv, or a SpecError with the columns there are and a did-you-mean."""
    for key in keys:
        if key not in runs.columns:
            raise SpecError(unknown_choice("column", key,
                                           [c for c in runs.columns if c not in ("experiment", "error")]))



def key_list(keys: str | list[str] | None) -> list[str]:
    """A table's rows or columns (one key, several, or none) as a list."""
    if keys is None:
        return []
    return [keys] if isinstance(keys, str) else list(keys)
