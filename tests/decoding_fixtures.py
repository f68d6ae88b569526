"""Command-line runs trained once per pytest session and shared by pytest-xdist's workers, as `trained_runs` does
for `seqkeras.run` (tests/trained_runs.py): for tests whose point is a run made through `seqkeras run`.

    code, experiment = shared_cli_run(trained_runs, "pairs-sweep", write_inputs)

`write_inputs(folder)` writes the run's input files (the spec and its data) into `folder`, a folder of their own
under the session's shared root, and returns the spec's path; the first worker that asks runs
`seqkeras run SPEC --out OUT --backend B` in this process, and every later test (of any worker) reads the same
results folder and exit code. A test must not write into it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def shared_cli_run(trained_runs, name: str, write_inputs: Callable[[Path], Path]) -> tuple[int, Path]:
    """The exit code of `seqkeras run` on the spec `write_inputs` writes, and its experiment folder OUT/name."""
    from seqkeras.cli import main

    root = trained_runs.root / f"cli-{name}"
    exit_code = root / "exit_code"

    def run() -> None:
        inputs = root / "inputs"
        inputs.mkdir(parents=True, exist_ok=True)
        spec = write_inputs(inputs)
        exit_code.write_text(str(main(["run", str(spec), "--out", str(root / "out"), "--backend",
                                       trained_runs.backend])))

    trained_runs.once(f"cli-{name}", run)  # the first worker runs it, the others wait and read the same folder
    return int(exit_code.read_text()), root / "out" / name
