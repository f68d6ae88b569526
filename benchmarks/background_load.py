"""A busy core for the benchmarks that measure a loaded machine: started and stopped by the benchmark itself.

One process spinning in a loop holds one core, as another program on a laptop, a
CI runner or a shared server does. It is a child of the benchmark (and stops with
it: it exits once its parent has gone).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

# Spins until its parent (the benchmark) is gone, checking twice a second.
SPIN = ("import os, time\n"
        "parent = os.getppid()\n"
        "while os.getppid() == parent:\n"
        "    end = time.perf_counter() + 0.5\n"
        "    while time.perf_counter() < end:\n"
        "        pass\n")


@contextlib.contextmanager
def busy_cores(count: int = 1):
    """`count` cores kept busy while the block runs; none when count is 0."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        time.sleep(0.2 if spinners else 0)  # let them start spinning before the measurement does
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
