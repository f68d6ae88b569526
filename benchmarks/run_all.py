"""`make bench`: every benchmark, one table printed and written as CSV under benchmarks/results/.

Each benchmark module has `measure(tiny: bool) -> list[dict]`, one dict per
figure with exactly the keys of `COLUMNS`: what was measured (`figure`), its
`value` and `unit`, the `baseline` it is compared with and their `ratio`, the
`goal` (issue 9) and whether it was `met`. The CSV adds the machine and the
time of measurement. Ratios are measured side by side in this one invocation;
absolute numbers depend on the machine and on whatever else it is doing.

    benchmarks/run_all.py                       # everything: bench-<UTC stamp>.csv
    benchmarks/run_all.py --only decoding_cost  # a subset
    benchmarks/run_all.py --tiny --out /tmp/b   # smallest sizes (the test): bench-tiny-<stamp>.csv
    benchmarks/run_all.py --gpu                 # the GPU figures (gpu_check.sh): gpu-<stamp>.csv
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import platform
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

COLUMNS = ["benchmark", "figure", "value", "unit", "baseline", "ratio", "goal", "met"]
BENCHMARKS = ["sweep_throughput", "default_path", "seeds_together", "decoding_cost", "lesson_time",
              "recurrent_throughput", "thread_scaling", "busy_machine", "fixed_costs", "kept_models", "tuning_pruner",
              "predict_throughput", "encoder_decoder_backends", "length_batches", "plain_scripts", "gru_speed",
              "compiled_decoding", "compile_cache"]
# `--gpu` (benchmarks/gpu_check.sh): these modules' `measure_gpu(tiny)`, on the GPU machine.
GPU_BENCHMARKS = ["recurrent_throughput", "seeds_together", "plain_scripts"]
NEEDS_TORCH = {"recurrent_throughput": "it compares against PyTorch", "seeds_together": "it measures PyTorch kernels",
               "gru_speed": "it measures PyTorch kernels"}


def unavailable(name: str) -> str | None:
    """Why benchmark `name` cannot run here, or None when it can."""
    if not (HERE / f"{name}.py").exists():
        return f"benchmarks/{name}.py does not exist yet"
    if name in NEEDS_TORCH and importlib.util.find_spec("torch") is None:
        return f"PyTorch is not installed ({NEEDS_TORCH[name]})"
    return None


def note_row(name: str, figure: str) -> dict:
    """A row saying that a benchmark did not produce its figures, and why."""
    return {"benchmark": name.replace("_", " "), "figure": figure, "value": None, "unit": None,
            "baseline": None, "ratio": None, "goal": None, "met": False}


def run(name: str, tiny: bool, gpu: bool = False) -> tuple[list[dict], bool]:
    """The rows of one benchmark, and whether it ran (a skipped or failed benchmark gives one note row)."""
    reason = unavailable(name)
    if reason is not None:
        return [note_row(name, f"skipped: {reason}")], False
    try:
        module = importlib.import_module(name)
        rows = module.measure_gpu(tiny=tiny) if gpu else module.measure(tiny=tiny)
    except Exception as error:  # one broken benchmark must not cost the others' figures
        traceback.print_exc()
        return [note_row(name, f"failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")], False
    for row in rows:
        if list(row) != COLUMNS:
            raise ValueError(f"benchmark {name} gave a row with keys {list(row)}, expected {COLUMNS}")
    return rows, True


def machine() -> str:
    load = f", load average {os.getloadavg()[0]:.1f} at start" if hasattr(os, "getloadavg") else ""
    return f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, Python {platform.python_version()}{load}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="smallest sizes: checks the benchmarks run, not speed")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, metavar="NAME",
                        help=f"run only these benchmarks ({', '.join(BENCHMARKS)})")
    parser.add_argument("--gpu", action="store_true",
                        help=f"the GPU figures only ({', '.join(GPU_BENCHMARKS)}; benchmarks/gpu_check.sh): "
                             "gpu-<time>.csv")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="folder for the CSV (default: %(default)s)")
    args = parser.parse_args(argv)

    where = machine()
    started = datetime.now(timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    rows, all_ran = [], True
    for name in args.only or (GPU_BENCHMARKS if args.gpu else BENCHMARKS):
        print(f"running {name}{' (tiny)' if args.tiny else ''} ...", file=sys.stderr, flush=True)
        produced, ran = run(name, args.tiny, args.gpu)
        rows += produced
        all_ran &= ran or unavailable(name) is not None  # skipping is not a failure; failing is

    table = pd.DataFrame(rows, columns=COLUMNS)
    print(f"# benchmarks{' (tiny sizes: not a measurement)' if args.tiny else ''}: {where}, {stamp}\n")
    print(table.astype(object).where(table.notna(), "").to_markdown(index=False))  # blanks, not nan
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{'gpu' if args.gpu else 'bench'}-{'tiny-' if args.tiny else ''}{stamp}.csv"
    table.assign(machine=where, measured_at=started.isoformat(timespec="seconds")).to_csv(path, index=False)
    print(f"\nwritten to {path}")
    return 0 if all_ran else 1


if __name__ == "__main__":
    sys.exit(main())
