"""The command line: run, validate, table, list, compare, report, schema.

Exit status: 0 all runs finished and every expectation held; 1 a run failed or
an expectation did not hold; 2 invalid input (nothing ran).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

from seqkeras.errors import SpecError

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    # TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) hides our output.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = build_parser()
    args = parser.parse_args(argv)
    with sigterm_as_ctrl_c():
        try:
            if args.command != "run":  # `run` picks its backend from --backend first
                from seqkeras.backends.runtime import select_backend

                select_backend(load=False)  # these commands read specs and results: no Keras needed
            return args.handler(args)
        except SpecError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID
        except KeyboardInterrupt:
            print("\ninterrupted: finished runs are recorded; run again to continue where it stopped", file=sys.stderr)
            return 130


@contextlib.contextmanager
def sigterm_as_ctrl_c():
    """`kill` (or a job scheduler's stop) ends a sweep as Ctrl-C does.

    Finished runs are then recorded in runs.csv and worker processes are
    stopped, where SIGTERM's default would end only this process and leave its
    workers behind. Signal handlers belong to the main
    thread, so elsewhere (main() called from a thread) nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seqkeras", description="Declarative experiments for sequence models.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run experiments and write results/<name>/")
    run.add_argument("paths", nargs="+", metavar="PATH", help="a YAML file or a folder of them")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a spec value, e.g. --set model.units=32 (repeatable)")
    run.add_argument("--out", default="results", help="results root (default: results/)")
    run.add_argument("--backend", choices=["tensorflow", "jax", "torch"], default=None,
                     help="Keras backend (default: $KERAS_BACKEND or tensorflow)")
    run.add_argument("--force", action="store_true", help="rerun runs that already have a finished record")
    run.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                     help="run N runs at once in separate processes (default 1)")
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="local processes (default) or Ray tasks (pip install -r requirements-ray.txt)")
    run.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")
    run.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray: CPUs reserved per run (default 1)")
    run.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray: GPUs reserved per run (default 0)")
    run.set_defaults(handler=command_run)

    validate = commands.add_parser("validate", help="check specs without running anything")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    validate.set_defaults(handler=command_validate)

    table = commands.add_parser("table", help="print a pivot table of an experiment's runs")
    table.add_argument("results_dir", metavar="RESULTS_DIR", help="results/<name> or a runs.csv")
    table.add_argument("--rows", nargs="+", help="matrix key(s) along the rows")
    table.add_argument("--columns", nargs="+", help="matrix key(s) along the columns")
    table.add_argument("--value", help="metric in the cells")
    table.add_argument("--format", choices=["md", "csv"], default="md")
    table.add_argument("--rebuild", action="store_true",
                       help="rebuild runs.csv from every run folder's metrics.json, then table.md and the plots")
    table.set_defaults(handler=command_table)

    listing = commands.add_parser("list", help="every task, model kind, cell, decoder, probe and metric")
    listing.set_defaults(handler=command_list)

    compare = commands.add_parser("compare", help="compare two results (folders or runs.csv) run by run and over seeds")
    compare.add_argument("a", metavar="A", help="results/<name>, a runs.csv, or a results root (experiments matched by name)")
    compare.add_argument("b", metavar="B", help="the same for the other side")
    compare.add_argument("--on", nargs="+", metavar="KEY", help="join columns (default: matrix keys, decoder, seed)")
    compare.add_argument("--metric", nargs="+", metavar="M", help="metrics to compare (default: all in both)")
    compare.add_argument("--tolerance", type=float, metavar="T",
                         help="exit 1 when any |B - A| > T, a text differs, or a row is on one side only")
    compare.add_argument("--format", choices=["md", "csv"], default="md")
    compare.set_defaults(handler=command_compare)

    report = commands.add_parser("report", help="write report.html per experiment and an index.html")
    report.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="results/<name> or a results root")
    report.add_argument("--out", default=None, metavar="DIR",
                        help="write the pages (and copies of the plots) here; default: beside the results")
    report.set_defaults(handler=command_report)

    schema = commands.add_parser("schema", help="print the JSON Schema of experiment files (for editors)")
    schema.add_argument("--out", default=None, metavar="FILE", help="write it to FILE instead of printing it")
    schema.set_defaults(handler=command_schema)
    return parser


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def make_executor(args, backend: str):
    from seqkeras.execution.executors import ProcessExecutor, RayExecutor, SerialExecutor

    if args.executor == "ray":
        return RayExecutor(args.address, backend, args.cpus_per_run, args.gpus_per_run)
    if args.address:
        raise SpecError("--address only applies to --executor ray")
    return ProcessExecutor(args.jobs, backend) if args.jobs > 1 else SerialExecutor()


def spec_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(path.rglob("*.yaml"))
            if not found:
                raise SpecError(f"{path} holds no *.yaml files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise SpecError(f"{path}: no such file or folder")
    return files


def load_all(paths: list[str], overrides: list[str]):
    """Validate every spec first: one bad file means nothing runs."""
    from seqkeras.spec.loader import load_experiment

    experiments, errors = [], []
    for file in spec_files(paths):
        try:
            experiments.append(load_experiment(file, overrides))
        except SpecError as error:
            errors.append(str(error))
    if errors:
        raise SpecError("\n".join(errors) if len(errors) == 1 else f"{len(errors)} invalid specs:\n" + "\n".join(errors))
    names = [e.spec.name for e in experiments]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"two specs share the experiment name {duplicates[0]!r}; names decide results folders")
    return experiments


def command_validate(args) -> int:
    for experiment in load_all(args.paths, args.overrides):
        print(f"ok  {experiment.source}  ({experiment.spec.name}: {len(experiment.runs)} runs)")
    return EXIT_OK


def command_run(args) -> int:
    from seqkeras.backends.runtime import select_backend

    backend = select_backend(args.backend, load=False)
    executor = make_executor(args, backend)
    try:
        # Worker processes import their backend (seconds) while this one reads the specs.
        executor.start()
        all_verdicts, failed_runs = run_all(args, executor)
    finally:
        executor.close()  # worker processes serve every experiment, then stop
    failed_expectations = sum(not v.holds for _, v in all_verdicts)
    if failed_runs or failed_expectations:
        print(f"\n{failed_runs} failed run(s), {failed_expectations} expectation(s) not reproduced", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def run_all(args, executor) -> tuple[list, int]:
    """Every experiment of the command, in turn: (experiment name, verdict) pairs and the failed runs."""
    from seqkeras.backends.runtime import select_backend
    from seqkeras.execution.executors import SerialExecutor

    experiments = load_all(args.paths, args.overrides)
    if isinstance(executor, SerialExecutor):  # runs here: import the backend (chosen above) now, quietly
        select_backend()
    from seqkeras.execution.experiment import run_experiment
    from seqkeras.reporting.tables import to_markdown, verdict_frame

    out_root = Path(args.out)
    try:
        out_root.mkdir(parents=True, exist_ok=True)
        probe = out_root / ".seqkeras-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise SpecError(f"cannot write results to {out_root}: {error.strerror}") from None

    total_runs = sum(len(e.runs) for e in experiments)
    print(f"{len(experiments)} experiment(s), {total_runs} run(s) → {out_root}/")
    all_verdicts, failed_runs = [], 0
    for experiment in experiments:
        outcome = run_experiment(experiment, out_root, force=args.force, executor=executor)
        page = (out_root / experiment.spec.name / "table.md").read_text(encoding="utf-8")
        print("\n" + page)
        failed_runs += outcome.failed_runs
        all_verdicts += [(experiment.spec.name, v) for v in outcome.verdicts]
    if len(experiments) > 1 and all_verdicts:
        frame = verdict_frame([v for _, v in all_verdicts])
        frame.insert(0, "experiment", [name for name, _ in all_verdicts])
        held = sum(v.holds for _, v in all_verdicts)
        print(f"# All expectations: {held} of {len(all_verdicts)} reproduced\n")
        print(to_markdown(frame))
    return all_verdicts, failed_runs


def command_table(args) -> int:
    import yaml

    from seqkeras.reporting.tables import pivot, summary_tables, to_markdown
    from seqkeras.results.folder import read_runs
    from seqkeras.spec.sections import TableSpec

    results_dir = Path(args.results_dir)
    if args.rebuild:
        rebuild(results_dir)
    runs = read_runs(results_dir)
    if args.rows or args.columns or args.value:
        if not (args.rows and args.value):
            raise SpecError("give --rows and --value (and optionally --columns), or none of them")
        table = TableSpec(rows=args.rows, columns=args.columns, value=args.value)
        frames = [("", pivot(runs, table))]
    else:
        folder = results_dir if results_dir.is_dir() else results_dir.parent
        saved = folder / "experiment.yaml"
        spec = yaml.safe_load(saved.read_text(encoding="utf-8")) if saved.exists() else {}
        tables = spec.get("table") or []
        tables = [TableSpec(**t) for t in (tables if isinstance(tables, list) else [tables])]
        matrix_columns = [c for c in runs.columns if "." in c]
        frames = summary_tables(runs, tables, matrix_columns)
    for title, frame in frames:
        if title and args.format == "md":
            print(f"## {title}\n")
        print(frame.to_csv(index=False) if args.format == "csv" else to_markdown(frame))
        print()
    return EXIT_OK


def rebuild(folder: Path) -> None:
    """runs.csv from the run folders' metrics.json, then table.md and the plots, under the saved spec."""
    from seqkeras.execution.experiment import summarize
    from seqkeras.results.folder import read_runs, rebuild_runs
    from seqkeras.spec.loader import load_experiment

    saved = folder / "experiment.yaml"
    experiment = load_experiment(saved) if saved.is_file() else None
    order = [run.run_id for run in experiment.runs] if experiment else None
    rebuilt, damaged = rebuild_runs(folder, order)
    print(f"rebuilt {folder / 'runs.csv'} from {rebuilt} run folder(s)")
    for path in damaged:
        print(f"skipped damaged record: {path}", file=sys.stderr)
    if experiment is None:
        print(f"no {saved}: table.md and the plots left as they were", file=sys.stderr)
        return
    summarize(folder, experiment, read_runs(folder))
    print(f"rewrote {folder / 'table.md'} and the plots")


def command_list(args) -> int:
    from seqkeras import catalog

    for kind, registry in catalog.ALL.items():
        print(f"{kind}s:".upper())
        for component in registry:
            print(f"  {component.name} — {component.summary}")
            for line in describe_params(component.params):
                print(f"      {line}")
        print()
    return EXIT_OK


def type_name(annotation) -> str:
    import types
    import typing

    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + "|".join(str(a) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        # Optional[X] reads as 'X | None'; a union of parameter models as their class names.
        return " | ".join(type_name(a) for a in typing.get_args(annotation)).replace("NoneType", "None")
    name = getattr(annotation, "__name__", None)
    return name if name and typing.get_origin(annotation) is None else str(annotation).replace("typing.", "")


def describe_params(model) -> list[str]:
    lines = []
    for name, field in model.model_fields.items():
        annotation = type_name(field.annotation)
        default = "required" if field.is_required() else f"default {field.get_default(call_default_factory=True)!r}"
        bounds = [f"{label} {getattr(m, attr)}" for m in field.metadata
                  for attr, label in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")) if hasattr(m, attr)]
        detail = ", ".join([annotation, default, *bounds])
        lines.append(f"{name} ({detail}): {field.description or ''}".rstrip(": "))
    return lines


def command_compare(args) -> int:
    from seqkeras.reporting.compare import compare_paths, render_csv, render_markdown, tolerance_summary

    report = compare_paths(Path(args.a), Path(args.b), on=args.on, metrics=args.metric, tolerance=args.tolerance)
    if args.format == "csv":
        sys.stdout.write(render_csv(report))
        if args.tolerance is not None:
            print(tolerance_summary(report), file=sys.stderr)
    else:
        sys.stdout.write(render_markdown(report))
    return EXIT_FAILED if report.outside_tolerance() else EXIT_OK


def command_report(args) -> int:
    from seqkeras.reporting.html import write_reports

    index, pages = write_reports([Path(p) for p in args.results_dirs], Path(args.out) if args.out else None)
    for page in pages:
        print(f"wrote {page}")
    print(f"wrote {index}")
    return EXIT_OK


def command_schema(args) -> int:
    from seqkeras.spec.json_schema import schema_text

    text = schema_text()
    if args.out:
        from seqkeras.results.folder import write_atomic

        write_atomic(Path(args.out), text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
