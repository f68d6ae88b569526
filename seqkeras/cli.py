"""The command line: run, validate, table, list, compare, report, export, predict, evaluate, schema.

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

from seqkeras.backends.runtime import AUTO, BACKEND_PACKAGES, QUIET_TF_LOG_LEVEL, TF_LOG_LEVEL_VARIABLE, select_backend
from seqkeras.errors import SpecError
from seqkeras.execution import sweep
from seqkeras.spec.reference import components_markdown, describe_params, section_models
from seqkeras.spec.runs import saved_decoder_labels
from seqkeras.spec.sections import TableSpec

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    # TensorFlow's C++ chatter (oneDNN, CUDA probing) hides our output (runtime.QUIET_TF_LOG_LEVEL).
    os.environ.setdefault(TF_LOG_LEVEL_VARIABLE, QUIET_TF_LOG_LEVEL)
    parser = build_parser()
    args = parser.parse_args(argv)
    with sigterm_as_ctrl_c():
        try:
            check_path_arguments(args)
            if args.command not in ("run", "evaluate"):  # these pick their backend from --backend first
                select_backend(load=False)  # these commands read specs and results: no Keras needed
            return args.handler(args)
        except SpecError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_INVALID
        except BrokenPipeError:  # `seqkeras list | head`: the reader has all it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
        except KeyboardInterrupt:
            print("\ninterrupted: finished runs are recorded; run again to continue where it stopped", file=sys.stderr)
            return 130
        except OSError as error:  # the machine, not the input: a folder that cannot be written, a lock file in the way
            where = f" ({error.filename})" if error.filename else ""
            print(f"error: {error.strerror or error}{where}; finished runs are recorded", file=sys.stderr)
            return EXIT_FAILED


# Every argument that names a file or folder, by its attribute, as the user wrote it. An empty one would
# become Path(""), the current folder (`--out ''` wrote results into it): each is refused instead.
PATH_ARGUMENTS = {"paths": "PATH", "out": "--out", "reference": "--reference", "results_dir": "RESULTS_DIR",
                  "results_dirs": "RESULTS_DIR", "a": "A", "b": "B", "run_folder": "RUN", "file": "--file",
                  "attention": "--attention", "untuned": "--untuned"}


def check_path_arguments(args: argparse.Namespace) -> None:
    """Refuse an empty or blank path argument (sweep.given_path) before any command reads or writes."""
    for attribute, label in PATH_ARGUMENTS.items():
        value = getattr(args, attribute, None)
        for text in value if isinstance(value, list) else [value]:
            if text is not None:
                sweep.given_path(text, label)


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
    run.add_argument("--only", action="append", default=[], metavar="KEY=VALUE",
                     help="run only the matrix's runs with this value, e.g. --only task.lag=10 (repeatable: "
                          "one key twice means either value)")
    run.add_argument("--out", default="results", help="results root (default: results/)")
    run.add_argument("--backend", choices=[AUTO, *BACKEND_PACKAGES], default=None,
                     help="Keras backend; auto (the default unless $KERAS_BACKEND is set) picks the fastest "
                          "installed: torch, else tensorflow")
    run.add_argument("--reference", default=None, metavar="DIR",
                     help="then compare each experiment's results with DIR/<name> (same numbers up to rounding; "
                          "timings left out), one line each; exit 1 when one differs")
    run.add_argument("--force", action="store_true", help="rerun runs that already have a finished record")
    run.add_argument("--track", default=None, metavar="mlflow[=URI]",
                     help="log every run to MLflow: its spec as params, per-epoch and final metrics, its files "
                          "(default store: sqlite:///<out>/mlflow.db; pip install -r requirements-tracking.txt)")
    run.add_argument("--tensorboard", action="store_true",
                     help="write TensorBoard event files into each run's folder (train.tensorboard=true for every "
                          "experiment that trains); then: tensorboard --logdir results/<name>")
    run.add_argument("--dry-run", action="store_true",
                     help="validate and list the runs it would make (and reuse); train and write nothing")
    run.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                     help="run N runs at once in separate processes (default: $SEQKERAS_JOBS, else one per "
                          "core, no more than an experiment's runs or than the memory holds)")
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="local processes (default) or Ray tasks (pip install -r requirements-ray.txt)")
    run.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")
    run.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray: CPUs reserved per run (default 1)")
    run.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray: GPUs reserved per run (default 0)")
    run.set_defaults(handler=command_run)

    validate = commands.add_parser("validate", help="check specs without running anything")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    validate.add_argument("--only", action="append", default=[], metavar="KEY=VALUE",
                          help="only the matrix's runs with this value (as run --only)")
    validate.set_defaults(handler=command_validate)

    table = commands.add_parser("table", help="print a pivot table of an experiment's runs")
    table.add_argument("results_dir", metavar="RESULTS_DIR", help="results/<name> or a runs.csv")
    table.add_argument("--rows", nargs="+", help="matrix key(s) along the rows")
    table.add_argument("--columns", nargs="+", help="matrix key(s) along the columns")
    table.add_argument("--value", help="metric in the cells")
    table.add_argument("--pool", nargs="+", default=[], metavar="KEY",
                       help="matrix or decoder key(s) to average over, as over seeds (else a key that varies "
                            "within a cell is an error)")
    table.add_argument("--format", choices=["md", "csv"], default="md",
                       help="md: mean ± std in each cell (default); csv: numbers, a column each for mean, std and n")
    table.add_argument("--baseline", metavar="KEY=VALUE",
                       help="mark each cell that differs beyond chance from the cell with KEY=VALUE and the same "
                            "other keys (e.g. model.cell=lstm): * p < 0.05 (paired t-test over shared seeds, else "
                            "Welch's), ? too few seeds; csv: p_value, test and verdict columns")
    table.add_argument("--untuned", metavar="UNTUNED_DIR",
                       help="RESULTS_DIR is a tuned experiment's: set the same experiment's untuned results (a "
                            "results folder or its runs.csv) beside it, a tuned and an untuned column per cell "
                            "(rows matched on the matrix values); --baseline tuning=untuned tests the difference")
    table.add_argument("--rebuild", action="store_true",
                       help="rebuild runs.csv from every run folder's metrics.json, then table.md and the plots")
    table.set_defaults(handler=command_table)

    listing = commands.add_parser("list", help="every section's options, and every task, model kind, cell, decoder, "
                                               "probe and metric")
    listing.add_argument("--markdown", action="store_true", help="as Markdown: the page docs/components.md is")
    listing.set_defaults(handler=command_list)

    compare = commands.add_parser("compare", help="compare two results (folders or runs.csv) run by run and over seeds")
    compare.add_argument("a", metavar="A",
                         help="results/<name>, a runs.csv, or a results root (experiments matched by name)")
    compare.add_argument("b", metavar="B", help="the same for the other side")
    compare.add_argument("--on", nargs="+", metavar="KEY", help="join columns (default: matrix keys, decoder, seed)")
    compare.add_argument("--metric", nargs="+", metavar="M", help="metrics to compare (default: all in both)")
    compare.add_argument("--relative-tolerance", type=float, default=0.0, metavar="R",
                         help="with --tolerance: allow |B - A| up to T + R·|A| (default 0)")
    compare.add_argument("--no-timings", dest="timings", action="store_false",
                         help="leave out timing metrics (seconds_per_sequence, step_ms, ...), "
                              "which measure the machine")
    compare.add_argument("--tolerance", type=float, metavar="T",
                         help="exit 1 when any |B - A| > T, a text differs, or a row is on one side only")
    compare.add_argument("--unpaired", action="store_true",
                         help="compare each matrix point's seeds as two samples (Welch's t-test), not seed by seed; "
                              "automatic when the sides share no seed")
    compare.add_argument("--common", action="store_true",
                         help="compare only what both sides have: rows and experiments on one side only are "
                              "noted, not failures (a partial rerun)")
    compare.add_argument("--format", choices=["md", "csv"], default="md")
    compare.set_defaults(handler=command_compare)

    report = commands.add_parser("report", help="write report.html per experiment and an index.html")
    report.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="results/<name> or a results root")
    report.add_argument("--out", default=None, metavar="DIR",
                        help="write the pages (and copies of the plots) here; default: beside the results")
    report.set_defaults(handler=command_report)

    export = commands.add_parser("export", help="log results that already exist to a tracker (MLflow)")
    export.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="results/<name> or a results root")
    export.add_argument("--track", default="mlflow", metavar="mlflow[=URI]",
                        help="the tracking store (default: sqlite:///<results root>/mlflow.db)")
    export.set_defaults(handler=command_export)

    predict = commands.add_parser("predict", help="predict with a run's kept model: classify, tag, translate, "
                                                  "continue a prompt or predict a value")
    predict.add_argument("run_folder", metavar="RUN", help="a run folder: results/<name>/<run_id>")
    inputs = predict.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--text", action="append", metavar="TEXT",
                        help="an input (repeatable); a prompt for a language model, steps of numbers for a regressor "
                             "('0.3,0 0.9,1')")
    inputs.add_argument("--file", metavar="FILE", help="a UTF-8 file of inputs, one a line")
    predict.add_argument("--decoder", default=None, metavar="DECODER",
                         help="seq2seq and language models: greedy (default), beam(width=5), "
                              "'{name: sample, temperature: 0.7}': any decoder of `seqkeras list`")
    predict.add_argument("--length", type=positive_int, default=None, metavar="N",
                         help="language models: tokens added to each prompt (default: the run's "
                              "evaluate.generate.length, else 30)")
    predict.add_argument("--format", choices=["md", "csv", "jsonl"], default="md",
                         help="md: a table (default); csv; jsonl: one JSON object a line")
    predict.add_argument("--attention", default=None, metavar="DIR",
                         help="seq2seq with attention: also write each input's attention map into DIR "
                              "(attention_<n>.csv and .png, n = the input's number)")
    predict.set_defaults(handler=command_predict)

    evaluate = commands.add_parser("evaluate", help="evaluate the kept models of results again with more decoders "
                                                    "or metrics, without training; rebuilds runs.csv and table.md")
    evaluate.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="results/<name> or a results root")
    evaluate.add_argument("--decoders", nargs="+", default=[], metavar="DECODER",
                          help="decoders to add (seq2seq and language models' generation): greedy, beam(width=5), "
                               "'{name: sample, temperature: 0.7}': any decoder of `seqkeras list`")
    evaluate.add_argument("--metrics", nargs="+", default=[], metavar="METRIC",
                          help="metrics to add to every row (each run's problem's metrics of `seqkeras list`)")
    evaluate.add_argument("--backend", choices=[AUTO, *BACKEND_PACKAGES], default=None,
                          help="Keras backend to load the models on (as run --backend)")
    evaluate.set_defaults(handler=command_evaluate)

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


def command_validate(args) -> int:
    for experiment in sweep.load_all(args.paths, args.overrides, args.only):
        print(f"ok  {experiment.source}  ({experiment.spec.name}: {len(experiment.runs)} runs)")
        for note in experiment.notes:
            print(f"    {note}")
    return EXIT_OK


def command_run(args) -> int:
    from seqkeras.api import run_paths

    outcome, _ = run_paths(args.paths, overrides=args.overrides, only=args.only, out=args.out, backend=args.backend,
                           jobs=args.jobs, force=args.force,
                           reference=args.reference, executor=args.executor, address=args.address,
                           cpus_per_run=args.cpus_per_run, gpus_per_run=args.gpus_per_run, dry_run=args.dry_run,
                           tensorboard=args.tensorboard, track=args.track)
    if outcome is None:  # --dry-run
        return EXIT_OK
    problems = [f"{outcome.failed_runs} failed run(s)", f"{outcome.failed_expectations} expectation(s) not reproduced"]
    if args.reference is not None:
        problems.append(f"{len(outcome.differing)} experiment(s) differ from the reference")
    if outcome.failed_runs or outcome.failed_expectations or outcome.differing:
        print(f"\n{', '.join(problems)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def command_table(args) -> int:
    from seqkeras.reporting.baseline import legend, parse_baseline
    from seqkeras.reporting.tables import declared_tables, pivot, summary_tables, to_markdown
    from seqkeras.reporting.tuned_vs_untuned import beside_untuned, pivot_beside, summary_tables_beside
    from seqkeras.reporting.tuned_vs_untuned import legend as untuned_legend
    from seqkeras.results.folder import is_matrix_column, print_warning, read_runs, read_saved_spec

    baseline = parse_baseline(args.baseline) if args.baseline is not None else None  # before reading anything
    results_dir = Path(args.results_dir)
    if args.rebuild:
        sweep.rebuild(results_dir)
    runs = read_runs(results_dir)
    beside = beside_untuned(runs, results_dir, Path(args.untuned)) if args.untuned is not None else None
    statistics = args.format == "csv"
    if args.rows or args.columns or args.value:
        if not (args.rows and args.value):
            raise SpecError("give --rows and --value (and optionally --columns), or none of them")
        table = TableSpec(rows=args.rows, columns=args.columns, value=args.value, pool=args.pool)
        frames = [("", pivot_beside(beside, table, statistics, baseline) if beside is not None
                   else pivot(runs, table, statistics=statistics, baseline=baseline))]
    else:
        folder = results_dir if results_dir.is_dir() else results_dir.parent
        saved = read_saved_spec(folder, warn=print_warning)
        tables = declared_tables(saved, folder / "experiment.yaml")
        if beside is not None:
            frames = summary_tables_beside(beside, tables, pool=args.pool, statistics=statistics, baseline=baseline,
                                           own_decoders=saved_decoder_labels(saved))
        else:
            matrix_columns = [c for c in runs.columns if is_matrix_column(c)]
            frames = summary_tables(runs, tables, matrix_columns, pool=args.pool, statistics=statistics,
                                    baseline=baseline, own_decoders=saved_decoder_labels(saved))
    if beside is not None and args.format == "md":
        print(f"{untuned_legend(results_dir, Path(args.untuned))}\n")
    for title, frame in frames:
        if title and args.format == "md":
            print(f"## {title}\n")
        print(frame.to_csv(index=False) if args.format == "csv" else to_markdown(frame))
        if baseline is not None and args.format == "md" and not frame.empty:
            print(f"\n{legend(baseline)}")
        print()
    for note in beside.notes if beside is not None else []:  # stdout is the CSV itself: notes go to stderr
        print(f"note: {note}", file=sys.stdout if args.format == "md" else sys.stderr)
    return EXIT_OK


def command_list(args) -> int:
    from seqkeras import catalog

    if args.markdown:
        sys.stdout.write(components_markdown(catalog.ALL))
        return EXIT_OK
    print("SECTIONS:")
    for path, model in section_models().items():
        print(f"  {path}")
        for line in describe_params(model):
            print(f"      {line}")
    print()
    for kind, registry in catalog.ALL.items():
        print(f"{kind}s:".upper())
        for component in registry:
            print(f"  {component.name} — {component.summary}")
            for line in describe_params(component.params):
                print(f"      {line}")
        print()
    return EXIT_OK


def command_compare(args) -> int:
    from seqkeras.reporting.compare import (compare_paths, render_csv, render_markdown, spec_change_lines,
                                            tolerance_summary)

    report = compare_paths(Path(args.a), Path(args.b), on=args.on, metrics=args.metric, tolerance=args.tolerance,
                           unpaired=args.unpaired, common=args.common, relative=args.relative_tolerance,
                           timings=args.timings)
    if args.format == "csv":
        sys.stdout.write(render_csv(report))
        for comparison in report.comparisons:  # the CSV is one table: what the specs differ in goes beside it
            for line in spec_change_lines(comparison):
                if line:
                    print(f"{comparison.name}: {line}", file=sys.stderr)
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


def command_export(args) -> int:
    from seqkeras.tracking.export import export_results

    failed = export_results([Path(p) for p in args.results_dirs], args.track)
    return EXIT_FAILED if failed else EXIT_OK


def command_predict(args) -> int:
    from seqkeras.kept.predict import parse_decoder, read_inputs

    texts = read_inputs(args.file) if args.file is not None else args.text
    decoder = parse_decoder(args.decoder, "--decoder") if args.decoder is not None else None
    select_backend(load=True)
    from seqkeras.kept.saving import load_model

    kept = load_model(args.run_folder)
    frame = kept.predict(texts, decoder=decoder, length=args.length)
    if args.attention is not None:
        write_attention_maps(Path(args.attention), texts, kept.attention(texts, decoder))
    if args.format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif args.format == "jsonl":
        sys.stdout.write(frame.to_json(orient="records", lines=True, force_ascii=False).rstrip("\n") + "\n")
    else:
        from seqkeras.reporting.tables import to_markdown

        print(to_markdown(frame.map(markdown_cell)))
    return EXIT_OK


def markdown_cell(cell):
    """A text as one Markdown table cell: a line break would end the row and a | would split the cell, so they
    are written as the two characters \\n and as \\|."""
    if not isinstance(cell, str):
        return cell
    return cell.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n").replace("|", "\\|")


def write_attention_maps(folder: Path, texts: list[str], maps: list) -> None:
    """attention_<n>.csv and attention_<n>.png (n = 1, 2, ... the inputs' order) into `folder`, drawn as the
    run's attention plot is; said on stderr, so stdout stays the table."""
    from seqkeras.reporting.curve_drawings import Curve, draw_attention
    from seqkeras.reporting.figures import save_png
    from seqkeras.results.folder import write_csv

    if folder.exists() and not folder.is_dir():
        raise SpecError(f"--attention {folder}: is a file, not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    for number, (text, frame) in enumerate(zip(texts, maps), start=1):
        write_csv(folder / f"attention_{number}.csv", frame)
        label = text if len(text) <= 60 else text[:59] + "…"
        save_png(draw_attention([Curve(label, 0, frame)], title="Attention over the decoded output (teacher-forced "
                                "on it)"), folder / f"attention_{number}.png")
    print(f"wrote {len(maps)} attention map(s) into {folder}", file=sys.stderr)


def command_evaluate(args) -> int:
    from seqkeras.execution.reevaluation import additions, choose_backend, reevaluate
    from seqkeras.results.folder import named_experiment_folders

    wanted = additions(args.decoders, args.metrics)
    folders = named_experiment_folders([Path(p) for p in args.results_dirs])
    select_backend(choose_backend(args.backend, folders), load=True)
    outcomes = reevaluate(folders, wanted)
    failed = evaluated = 0
    for outcome in outcomes:
        held = outcome.summary.verdicts if outcome.summary is not None else []
        print(f"\n{outcome.folder}: {len(outcome.added)} run(s) gained rows or columns, {len(outcome.unchanged)} had "
              f"them, {len(outcome.without_model)} without a kept model, {len(outcome.failed)} failed; "
              f"expectations: {sum(v.holds for v in held)} of {len(held)} reproduced")
        for run_id, why in outcome.without_model.items():
            print(f"  no kept model: {run_id} ({why})")
        failed += len(outcome.failed) + sum(not v.holds for v in held)
        evaluated += len(outcome.added) + len(outcome.unchanged)
    if not evaluated:
        print("nothing was evaluated: no run there kept its model", file=sys.stderr)
    return EXIT_FAILED if failed or not evaluated else EXIT_OK


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
