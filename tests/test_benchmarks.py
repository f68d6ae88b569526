"""The benchmarks run end to end at a tiny size (no timing assertions: speed goes in `make bench`)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_bench_runs_end_to_end_at_tiny_size():
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "run_all.py"), "--tiny"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    table = pd.read_csv(REPO / "benchmarks" / "results" / "bench-tiny.csv")
    assert {"serial (--jobs 1)", "--jobs 2"} <= set(table["variant"])
    assert (table["runs"] == 6).all() and (table["seconds"] > 0).all()
