"""Each record says which machine computed it, and each process gets the threads its backend pays for.

The thread rule itself (one torch thread for small models) is tested in
tests/torch_backend/test_threads.py; its measurements are `make bench`'s thread
scaling and busy machine rows, never a timed test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from seqkeras.backends import threads
from seqkeras.execution import machine
from tests.helpers import process_backend, run_cli
from tests.test_run_integrity import PROBE_SPEC


def test_a_record_names_the_cpu_its_instruction_set_and_threads(write_spec, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_cli(capsys, "run", write_spec(PROBE_SPEC), "--out", out)[0] == 0
    record = json.loads(next((out / "memory-subset").glob("*/metrics.json")).read_text())
    found = record["machine"]
    assert found["cpu"] == machine.cpu_model() and found["cores"] >= 1
    assert found["instruction_set"] == machine.widest_instruction_set()
    assert set(found["flags"].split()) <= set(machine.X86_FLAGS + machine.ARM_FLAGS)
    assert found["threads"] == threads.current() >= 1  # the command's own process: its cores, set once
    assert record["versions"][process_backend()]


def test_the_widest_instruction_set_follows_the_flags(monkeypatch):
    for flags, widest in (("fpu sse4_2 avx avx2 fma", "AVX2"), ("sse4_2 avx avx2 avx512f avx512_bf16", "AVX-512"),
                          ("asimd sve", "SVE"), ("fpu", "unknown")):
        monkeypatch.setattr(machine, "_cpuinfo", lambda flags=flags: {"flags": flags})
        assert machine.widest_instruction_set() == widest


def test_a_variable_that_caps_the_kernels_is_recorded(monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert machine.describe(1)["ONEDNN_MAX_CPU_ISA"] == "AVX2"


def test_jax_gets_one_thread_through_its_flags_before_it_is_imported(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    monkeypatch.setattr(threads, "_current", None)
    threads.configure_process("jax", 1)
    assert "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" in __import__("os").environ["XLA_FLAGS"]
    assert "--xla_dump_to=/tmp/x" in __import__("os").environ["XLA_FLAGS"]  # the user's flags stay
    assert threads.current() == 1


def test_each_of_n_workers_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert [threads.share(jobs) for jobs in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]


def test_seqkeras_threads_fixes_every_process_share(monkeypatch):
    monkeypatch.setenv("SEQKERAS_THREADS", "1")
    assert threads.share(1) == 1


def test_a_bad_seqkeras_threads_is_refused_before_anything_runs(write_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEQKERAS_THREADS", "two")
    code, _, err = run_cli(capsys, "run", write_spec(PROBE_SPEC), "--out", tmp_path / "out", "--jobs", "2")
    assert code == 2 and "$SEQKERAS_THREADS='two': expected a whole number of at least 1" in err
    assert not (tmp_path / "out" / "memory-subset").exists()


def test_idle_cores_counts_the_idle_time_of_the_cores_this_process_may_use(monkeypatch):
    """Two CPUs over the sample: cpu0 idle 10 of 10 ticks, cpu1 idle 1 of 10 (another process held it)."""
    samples = iter([{0: (100, 200), 1: (50, 200)}, {0: (110, 210), 1: (51, 210)}])
    monkeypatch.setattr(threads, "_allowed_cpus", lambda: [0, 1])
    monkeypatch.setattr(threads, "_cpu_times", lambda cpus: next(samples))
    assert threads.idle_cores(sample_seconds=0) == 1
    samples = iter([{0: (100, 200), 1: (50, 200)}, {0: (110, 210), 1: (60, 210)}])
    assert threads.idle_cores(sample_seconds=0) == 2


def test_idle_cores_reads_this_machine_and_sees_a_core_kept_busy():
    """Read from /proc/stat: never more than the cores this process may use, at least one; while a spinning
    process holds a core, at most all but one of them (it can only see fewer on a machine busy already)."""
    cores = len(threads._allowed_cpus())
    assert 1 <= threads.idle_cores() <= cores
    if cores < 2 or threads._cpu_times(threads._allowed_cpus()) is None:
        pytest.skip("one core, or no /proc/stat: nothing to see")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # the spinner is running
        assert threads.idle_cores(sample_seconds=0.3) <= cores - 1
    finally:
        spinner.kill()
        spinner.wait()
