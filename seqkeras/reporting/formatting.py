"""How numbers are written in tables and verdicts: one rule everywhere."""

from __future__ import annotations

import pandas as pd


def format_number(value: float) -> str:
    """Five significant digits: enough for the lesson's 0.99995, short for everything else."""
    if value == 0 or (1e-3 <= abs(value) < 1e5):
        return f"{value:.5g}"
    return f"{value:.2e}"


def mean_std(values: pd.Series) -> str:
    """'0.973 ± 0.004' over seeds; a single seed shows just the value; text shows as is."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    if numbers.empty:
        texts = sorted(set(values.dropna().astype(str)))
        return " / ".join(texts) if texts else ""
    if len(numbers) == 1:
        return format_number(float(numbers.iloc[0]))
    return f"{format_number(float(numbers.mean()))} ± {float(numbers.std(ddof=1)):.2g}"
