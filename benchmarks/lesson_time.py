"""Lesson time: the wall time of `make run` (`seqkeras run experiments/lesson --force`).

Issue 9, goal 4: the lesson suite finishes in under 2 minutes on 2 cores.

The suite runs as `make run` runs it, in a fresh process (so TensorFlow's
start-up is included), but writes into a temporary folder instead of the
committed `results/`. The figure also says how many of the lesson's claims
were reproduced: a fast run that does not reproduce the lesson meets no goal.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LESSON = REPO / "experiments" / "lesson"
TINY_SPEC = LESSON / "decoding.yaml"  # no training: the smallest lesson experiment
LIMIT_SECONDS = 120.0
# The summary of several experiments ("# All expectations: 48 of 48 reproduced"), else of one
# ("## Expectations (9 of 9 reproduced)", also printed for each of several).
VERDICTS = (re.compile(r"All expectations: (\d+) of (\d+) reproduced"),
            re.compile(r"Expectations \((\d+) of (\d+) reproduced"))


def run_lesson(paths: list[Path], out: Path) -> tuple[float, int, str]:
    """Run `seqkeras run PATHS --force --out OUT` in a fresh process: seconds, exit status, output."""
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "seqkeras", "run", *map(str, paths), "--force", "--out", str(out)],
        cwd=REPO, env=environment, capture_output=True, text=True,
    )
    return time.perf_counter() - started, result.returncode, result.stdout + result.stderr


def measure(tiny: bool = False) -> list[dict]:
    paths = [TINY_SPEC] if tiny else [LESSON]
    with tempfile.TemporaryDirectory() as folder:
        seconds, status, output = run_lesson(paths, Path(folder))
    if status not in (0, 1):  # 1: ran, but an expectation did not hold (reported in the figure)
        raise RuntimeError(f"seqkeras run {' '.join(map(str, paths))} failed ({status}):\n{output[-3000:]}")
    verdict = next((found for pattern in VERDICTS if (found := pattern.search(output))), None)
    claims = f"{verdict[1]} of {verdict[2]} claims reproduced" if verdict else f"exit status {status}"
    what = "lesson-decoding only (tiny)" if tiny else "the lesson suite (make run)"
    return [{
        "benchmark": "lesson time",
        "figure": f"{what}, wall time; {claims}",
        "value": round(seconds, 1),
        "unit": "s",
        "baseline": None,
        "ratio": None,
        "goal": f"value < {LIMIT_SECONDS:g} s",
        "met": bool(seconds < LIMIT_SECONDS and status == 0),
    }]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="only the smallest lesson experiment")
    args = parser.parse_args()
    for row in measure(args.tiny):
        print(row)


if __name__ == "__main__":
    main()
