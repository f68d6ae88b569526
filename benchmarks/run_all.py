"""`make bench`: every benchmark, one table printed and written under benchmarks/results/.

Ratios are measured side by side in this one invocation; absolute numbers
depend on the machine and on whatever else it is doing.
"""

from __future__ import annotations

import argparse
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sweep_throughput  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="smallest sizes: checks the benchmarks run, not speed")
    args = parser.parse_args()
    seeds, n_train = (1, 32) if args.tiny else (4, 256)
    rows = sweep_throughput.measure(seeds, n_train)
    table = pd.DataFrame(rows)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    machine = f"{platform.machine()}, {platform.system()}, {__import__('os').cpu_count()} cores"
    print(f"# benchmarks ({machine}, {stamp})\n")
    print(table.to_markdown(index=False))
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    name = "bench-tiny.csv" if args.tiny else f"bench-{stamp}.csv"
    table.assign(machine=machine, measured_at=stamp).to_csv(out / name, index=False)
    print(f"\nwritten to {out / name}")


if __name__ == "__main__":
    main()
