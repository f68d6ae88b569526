"""What every probe returns.

A probe is a registered component whose builder is a function
`run(params, seed) -> ProbeResult`. Its `metrics` become one row of the
experiment's runs.csv; each of its `curves` is written beside the run as
`<name>.csv` (for the report's plots and for readers who want every point).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class ProbeResult:
    metrics: dict[str, float | int | str]
    curves: dict[str, pd.DataFrame] = field(default_factory=dict)
