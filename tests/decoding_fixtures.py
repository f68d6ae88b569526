"""Command-line runs trained once per pytest session and shared by pytest-xdist's workers, as `trained_runs` does
for `seqkeras.run` (tests/trained_runs.py): for tests whose point is a run made through `seqkeras run`.

    code, experiment = shared_cli_run(trained_runs, "pairs-sweep", write_inputs)

`write_inputs(folder)` writes the run's input files (the spec and its data) into `folder`, a folder of their own
under the session's shared root, and returns the spec's path; the first worker that asks runs
`seqkeras run SPEC --out OUT --backend B` in this process, and every later test (of any worker) reads the same
results folder and exit code. A test must not write into it.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path


def shared_cli_run(trained_runs, name: str, write_inputs: Callable[[Path], Path]) -> tuple[int, Path]:
    """The exit code of `seqkeras run` on the spec `write_inputs` writes, and its experiment folder OUT/name."""
    from seqkeras.cli import main

    root = trained_runs.root / f"cli-{name}"
    done = trained_runs.root / f"cli-{name}.code"
    with open(trained_runs.root / f"cli-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be running it: wait, then reuse
        if not done.exists():
            inputs = root / "inputs"
            inputs.mkdir(parents=True, exist_ok=True)
            spec = write_inputs(inputs)
            code = main(["run", str(spec), "--out", str(root / "out"), "--backend", trained_runs.backend])
            done.write_text(str(code))
    return int(done.read_text()), root / "out" / name
