"""The benchmarks run end to end at a tiny size (no timing assertions: speed goes in `make bench`)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import REPO

COLUMNS = ["benchmark", "figure", "value", "unit", "baseline", "ratio", "goal", "met", "machine", "measured_at"]


@pytest.mark.slow
def test_bench_runs_end_to_end_at_tiny_size(tmp_path):
    committed = set((REPO / "benchmarks" / "results").iterdir())
    result = subprocess.run([sys.executable, str(REPO / "benchmarks" / "run_all.py"), "--tiny", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    [csv] = tmp_path.glob("bench-tiny-*.csv")
    assert set((REPO / "benchmarks" / "results").iterdir()) == committed  # nothing written into the repository
    table = pd.read_csv(csv)
    assert list(table.columns) == COLUMNS
    assert "| benchmark" in result.stdout and str(csv) in result.stdout  # the table is printed too
    # Every benchmark gave its rows (the recurrent one, when it cannot run here, a row saying why).
    assert {"sweep throughput", "default path", "decoding cost", "lesson time"} <= set(table["benchmark"])
    assert table["benchmark"].nunique() >= 4
    assert not table["figure"].str.startswith("failed:").any()
    assert table["met"].isin([True, False]).all()
    measured = table[~table["figure"].str.startswith("skipped:")]
    assert (measured["goal"].notna()).all()
    mine = table[table["benchmark"].isin(["sweep throughput", "decoding cost", "lesson time"])]
    assert (mine["value"] > 0).all()
    ratios = mine[mine["benchmark"] != "lesson time"]
    assert (ratios["ratio"] > 0).all() and (ratios["baseline"] > 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "torch"])
def test_gpu_comparison_runs_here_on_the_cpu(backend):
    """The GPU rows' code path, on the CPU: without a GPU `make bench` never runs it, so a break would wait for one."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import recurrent_throughput

    results = recurrent_throughput.compare(backend, "cpu", {"tiny": recurrent_throughput.TINY}, [], "wall")
    assert [result["cell"] for result in results] == recurrent_throughput.CELLS
    assert {result["backend"] for result in results} == {backend}
    rows = [recurrent_throughput._gpu_row(result) for result in results]
    assert all(row["value"] > 0 and row["baseline"] > 0 and row["goal"] == ">= 0.9" for row in rows)
    assert all(f"suite ({backend} backend, GPU) vs PyTorch (cuDNN)" in row["figure"] for row in rows)
