"""A full disk is a failed run, not a crash: one line naming the file, nothing half written, the sweep stops.

A run that finds no space left (ENOSPC, or EDQUOT: out of quota) fails with
`no space left on device while writing <file>`; its record says so when it can
still be written, and the sweep says it either way. Nothing it leaves behind is a
file a rerun would trust (a checkpoint is written to a temporary name and
renamed), and the sweep stops there, since every run after it would fail the
same way, saying how to go on: free space and run the same command again.

Two ways to fill a disk: in this process, the writer of seqkeras.results.folder
(every results file and checkpoint goes through its write_atomic) is given an `os`
whose files run out of space (works everywhere); and for real, in a 2 MiB tmpfs
mounted for the test (root on Linux only, else skipped), in a subprocess, so that
a native crash (h5py's, before: exit 139) shows as one.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from seqkeras.results import folder as results_folder
from seqkeras.results.folder import DiskFull, disk_full, write_atomic
from tests.helpers import process_backend, run_cli

THREE_RUNS = """
    version: 1
    name: tiny
    task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
    model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
    train: {epochs: 2, batch_size: 16, verbose: 0}
    matrix:
      model.cell: [simple_rnn, lstm, gru]
    seeds: [0]
    table: {rows: model.cell, value: accuracy}
"""

STOP_ADVICE = "free space and run the same command again — finished runs are reused"


class _FullFile:
    """A file on a disk with no space left: half of what is written gets there, then ENOSPC."""

    def __init__(self, file):
        self.file = file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, data: bytes) -> int:
        self.file.write(data[: len(data) // 2])
        self.file.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class FillingDisk:
    """Stands in for `os` and `tempfile` in seqkeras.results.folder: writes go through until a file that
    `fills(path)` is written; that one (and, with `stays_full`, every one after it) runs out of space."""

    def __init__(self, fills, *, stays_full: bool = False, errno_code: int = errno.ENOSPC):
        self.fills, self.stays_full, self.errno_code = fills, stays_full, errno_code
        self.full = False
        self.refused: list[str] = []  # the target of each write that ran out of space
        self._temporary: dict[int, str] = {}

    def install(self, monkeypatch) -> FillingDisk:
        monkeypatch.setattr(results_folder, "os", self)
        monkeypatch.setattr(results_folder, "tempfile", self)
        return self

    def __getattr__(self, name):  # everything else of `os`
        return getattr(os, name)

    def mkstemp(self, **kwargs):  # as tempfile.mkstemp
        handle, temporary = tempfile.mkstemp(**kwargs)
        self._temporary[handle] = temporary
        return handle, temporary

    def fdopen(self, handle, mode="r"):  # as os.fdopen
        file = os.fdopen(handle, mode)
        temporary = Path(self._temporary.pop(handle))
        target = temporary.parent / temporary.name[1:].rsplit(".", 2)[0]  # .NAME.XXXXXX.tmp → NAME
        if self.full or self.fills(target):
            self.full = self.stays_full
            self.refused.append(str(target))
            full = _FullFile(file)
            if self.errno_code != errno.ENOSPC:
                def write(data, file=file):
                    raise OSError(self.errno_code, os.strerror(self.errno_code))
                full.write = write
            return full
        return file


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def assert_nothing_half_written(root: Path) -> None:
    leftovers = [p for p in files_under(root) if p.name.endswith(".tmp")]
    assert not leftovers, f"temporary files left behind: {leftovers}"


def one_line_about_it(output: str) -> str:
    lines = [line for line in output.splitlines() if "no space left on device" in line]
    assert len(lines) == 1, output
    assert "Traceback" not in output and "Segmentation" not in output and "h5py" not in output, output
    return lines[0]


# ---------------------------------------------------------------- the writer


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_write_atomic_on_a_full_disk_keeps_the_old_file_and_names_the_new_one(tmp_path, monkeypatch, code):
    path = tmp_path / "runs.csv"
    path.write_text("the old content\n")
    disk = FillingDisk(lambda target: target.name == "runs.csv", errno_code=code).install(monkeypatch)
    with pytest.raises(DiskFull) as raised:
        write_atomic(path, "a new content, " * 1000)
    assert str(raised.value) == f"no space left on device while writing {path}"
    assert raised.value.errno == errno.ENOSPC and isinstance(raised.value, OSError)
    assert disk.refused == [str(path)]
    assert path.read_text() == "the old content\n"  # whole or as it was
    assert [p.name for p in tmp_path.iterdir()] == ["runs.csv"]  # the temporary file is gone


def test_disk_full_is_found_under_another_error_and_nothing_else_is():
    try:
        try:
            raise OSError(errno.EDQUOT, "Disk quota exceeded", "/results/x/history.csv")
        except OSError as error:
            raise RuntimeError("writing the history failed") from error
    except RuntimeError as wrapped:
        found = disk_full(wrapped)
    assert str(found) == "no space left on device while writing /results/x/history.csv"
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None
    assert disk_full(ValueError("no")) is None
    assert str(DiskFull(None)) == "no space left on device while writing a file"
    import pickle

    assert str(pickle.loads(pickle.dumps(DiskFull("/a/b.csv")))) == "no space left on device while writing /a/b.csv"


# ---------------------------------------------------------------- a sweep, in this process


def run_folders(out: Path) -> dict[str, Path]:
    """{cell: its run folder} of THREE_RUNS's experiment."""
    return {p.name.split("_seed=")[0].split("=")[1]: p for p in (out / "tiny").iterdir()
            if p.is_dir() and p.name.startswith("cell=")}


def test_a_full_disk_at_a_checkpoint_fails_that_run_in_one_line_and_stops_the_sweep(
        write_spec, capsys, tmp_path, monkeypatch):
    spec, out = write_spec(THREE_RUNS), tmp_path / "out"
    # Run 2 of 3 (lstm) finds no space for its second epoch's checkpoint; smaller files still fit.
    disk = FillingDisk(lambda target: target.name == "epoch2.weights.h5" and "cell=lstm" in str(target))
    disk.install(monkeypatch)
    code, output, err = run_cli(capsys, "run", spec, "--out", out, "--backend", process_backend())
    assert code == 1, output + err
    folders = run_folders(out)
    weights = folders["lstm"] / ".resume" / "epoch2.weights.h5"
    assert disk.refused == [str(weights)]
    line = one_line_about_it(output + err)
    assert line.startswith("[2/3] cell=lstm_seed=0_")
    assert f": FAILED: no space left on device while writing {weights} (" in line
    assert f"disk full: stopped at run 2 of 3 of tiny (1 run(s) of it not run); {STOP_ADVICE}" in err
    # Run 3 never started; run 1 finished and is recorded; run 2's record says why it failed.
    assert sorted(folders) == ["lstm", "simple_rnn"]
    assert json.loads((folders["simple_rnn"] / "metrics.json").read_text())["status"] == "ok"
    record = json.loads((folders["lstm"] / "metrics.json").read_text())
    assert record["status"] == "failed" and record["disk_full"] is True and record["traceback"] is None
    assert record["error"] == f"no space left on device while writing {weights}"
    runs = pd.read_csv(out / "tiny" / "runs.csv")
    assert list(runs["status"]) == ["ok", "failed"]
    # No part of epoch 2's checkpoint: epoch 1's stands whole, and state.json names it.
    assert_nothing_half_written(out)
    resume = folders["lstm"] / ".resume"
    assert sorted(p.name for p in resume.iterdir()) == ["epoch1.weights.h5", "state.json"]
    assert json.loads((resume / "state.json").read_text())["weights"] == "epoch1.weights.h5"
    finished = {p: p.read_bytes() for p in files_under(folders["simple_rnn"])}

    # Space freed: the same command goes on where it stopped.
    monkeypatch.undo()
    code, output, err = run_cli(capsys, "run", spec, "--out", out, "--backend", process_backend())
    assert code == 0, output + err
    assert "1 of 3 runs done before, reused" in output
    assert "resuming after epoch 1" in output
    assert {p: p.read_bytes() for p in files_under(folders["simple_rnn"])} == finished
    assert list(pd.read_csv(out / "tiny" / "runs.csv")["status"]) == ["ok", "ok", "ok"]
    assert not resume.exists()


def test_a_disk_that_stays_full_keeps_runs_csv_and_the_sweep_still_says_it(write_spec, capsys, tmp_path, monkeypatch):
    spec, out = write_spec(THREE_RUNS), tmp_path / "out"
    # From run 2's first checkpoint on, nothing fits: not its record, not runs.csv, not table.md.
    disk = FillingDisk(lambda target: target.name == "epoch1.weights.h5" and "cell=lstm" in str(target),
                       stays_full=True).install(monkeypatch)
    code, output, err = run_cli(capsys, "run", spec, "--out", out, "--backend", process_backend())
    assert code == 1, output + err
    folders = run_folders(out)
    weights = folders["lstm"] / ".resume" / "epoch1.weights.h5"
    assert disk.refused[0] == str(weights) and str(folders["lstm"] / "metrics.json") in disk.refused
    # The run's line names the file it failed on; the stop line names the runs.csv that could not take it.
    line = one_line_about_it(output)
    assert f": FAILED: no space left on device while writing {weights} (" in line
    runs_csv = out / "tiny" / "runs.csv"
    assert (f"disk full: stopped at run 2 of 3 of tiny (no space left on device while writing {runs_csv}; "
            f"1 run(s) of it not run); {STOP_ADVICE}") in err
    assert "Traceback" not in err
    assert not (folders["lstm"] / "metrics.json").exists()  # nothing a rerun would reuse
    assert list(pd.read_csv(runs_csv)["run_id"]) == [folders["simple_rnn"].name]  # as run 1 left it
    assert json.loads((folders["simple_rnn"] / "metrics.json").read_text())["status"] == "ok"
    assert sorted(folders) == ["lstm", "simple_rnn"]
    assert_nothing_half_written(out)
    assert not any(p.name.endswith(".weights.h5") for p in files_under(out))


# ---------------------------------------------------------------- a real full disk


# Run 2's LSTM of 300 units has 4.4 MB of weights and optimizer state: its first checkpoint cannot fit in
# 2 MiB, where run 1 fits whole. Run 3 would fit too, had the sweep not stopped.
SIZED_RUNS = """
    version: 1
    name: full
    task: {name: delayed_recall, lag: 3, n_train: 64, n_test: 32}
    model: {kind: classifier, cell: lstm, units: 4, embedding_dim: 4}
    train: {epochs: 2, batch_size: 16, verbose: 0}
    matrix:
      model.units: [4, 300, 8]
    seeds: [0]
    table: {rows: model.units, value: accuracy}
"""


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs, mounted for the test and unmounted after it; skipped where mounting is not permitted."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a real full disk needs a 2 MiB tmpfs, and mounting one needs root on Linux")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        if subprocess.run(["umount", str(disk)], check=False, capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(disk)], check=False, capture_output=True)


def seqkeras_command(*args) -> subprocess.CompletedProcess:
    """`seqkeras ARGS...` in a process of its own, as a user runs it: a native crash is its exit status."""
    return subprocess.run([sys.executable, "-m", "seqkeras", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "SEQKERAS_JOBS": "1"})


@pytest.mark.system
def test_a_real_full_disk_fails_one_run_in_one_line_and_the_rerun_goes_on(small_disk, tmp_path):
    spec = tmp_path / "full.yaml"
    spec.write_text(textwrap.dedent(SIZED_RUNS))
    result = seqkeras_command("run", spec, "--out", small_disk, "--backend", "tensorflow")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # before: h5py's tracebacks, then a segmentation fault (-11; 139 in a shell)
    folders = {p.name.split("_seed=")[0]: p for p in (small_disk / "full").iterdir() if p.is_dir()}
    weights = folders["units=300"] / ".resume" / "epoch1.weights.h5"
    line = one_line_about_it(output)
    assert line.startswith("[2/3] units=300_seed=0_") and f"no space left on device while writing {weights}" in line
    assert f"disk full: stopped at run 2 of 3 of full (1 run(s) of it not run); {STOP_ADVICE}" in result.stderr
    assert sorted(folders) == ["units=300", "units=4"]  # run 3 never started
    assert_nothing_half_written(small_disk)
    assert not any(p.name.endswith(".weights.h5") for p in files_under(small_disk))  # no partial checkpoint
    record = json.loads((folders["units=300"] / "metrics.json").read_text())
    assert record["status"] == "failed" and record["error"] == f"no space left on device while writing {weights}"
    assert json.loads((folders["units=4"] / "metrics.json").read_text())["status"] == "ok"
    assert list(pd.read_csv(small_disk / "full" / "runs.csv")["status"]) == ["ok", "failed"]
    finished = {p: p.read_bytes() for p in files_under(folders["units=4"])}

    # Space freed (the tmpfs grown to 16 MiB): the same command reuses run 1 and finishes the rest.
    grown = subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], capture_output=True, text=True)
    assert grown.returncode == 0, grown.stderr
    result = seqkeras_command("run", spec, "--out", small_disk, "--backend", "tensorflow")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 of 3 runs done before, reused" in result.stdout
    assert {p: p.read_bytes() for p in files_under(folders["units=4"])} == finished
    assert list(pd.read_csv(small_disk / "full" / "runs.csv")["status"]) == ["ok", "ok", "ok"]


PROBE = """
    version: 1
    name: {name}
    probe: {{name: memory, cell: simple_rnn, steps: 10, input_weight: 2.0}}
    matrix:
      probe.recurrent_weight: [0.9, 1.5]
"""


def test_a_run_whose_record_finds_no_space_stops_the_experiments_after_it(write_spec, capsys, tmp_path, monkeypatch):
    specs = [write_spec(PROBE.format(name=name), name=f"{name}.yaml") for name in ("first", "second")]
    out = tmp_path / "out"
    FillingDisk(lambda target: target.name == "metrics.json").install(monkeypatch)
    code, output, err = run_cli(capsys, "run", *specs, "--out", out, "--backend", process_backend())
    assert code == 1, output + err
    (record_path,) = [p / "metrics.json" for p in (out / "first").iterdir() if p.is_dir()]
    line = one_line_about_it(output)
    assert line.startswith("[1/2] ") and f": FAILED: no space left on device while writing {record_path} (" in line
    assert (f"disk full: stopped at run 1 of 2 of first (1 run(s) of it not run; 1 experiment(s) after it not "
            f"started); {STOP_ADVICE}") in err
    assert "Traceback" not in err
    assert not record_path.exists() and not (out / "second").exists()
    runs = pd.read_csv(out / "first" / "runs.csv")
    assert list(runs["status"]) == ["failed"] and "no space left on device" in runs["error"][0]
    assert_nothing_half_written(out)
