"""Selecting runs by their matrix values: what tables, plots and claims all do first."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from seqkeras.errors import SpecError, unknown_choice
from seqkeras.results.folder import OK


def select(runs: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """Finished runs whose matrix values equal `where` (numbers compared as numbers)."""
    require_columns(runs, where)
    chosen = runs[runs["status"] == OK]
    for key, wanted in where.items():
        chosen = chosen[chosen[key].map(lambda value: same_value(value, wanted))]
    return chosen


def require_columns(runs: pd.DataFrame, keys: Iterable[str]) -> None:
    """Each key is a column of runs.csv, or a SpecError with the columns there are and a did-you-mean."""
    for key in keys:
        if key not in runs.columns:
            raise SpecError(unknown_choice("column", key, [c for c in runs.columns if c not in ("experiment", "error")]))


def same_value(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, bool) or isinstance(value, (bool, np.bool_)):
        return str(value).lower() == str(wanted).lower()
    if isinstance(wanted, (int, float)):
        try:
            return math.isclose(float(value), float(wanted), rel_tol=1e-12, abs_tol=1e-15)
        except (TypeError, ValueError):
            return False
    return str(value) == str(wanted)
