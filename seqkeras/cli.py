"""The command line: run, validate, table, compare, report, track, predict, evaluate, schema, list.

Exit status: 0 all runs finished and every claim held; 1 a run failed or
a claim did not hold; 2 invalid input (nothing ran). Each command's own
statuses are in COMMANDS.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from seqkeras.backends.runtime import (
    AUTO,
    BACKEND_PACKAGES,
    QUIET_TF_LOG_LEVEL,
    TF_LOG_LEVEL_VARIABLE,
    claim_this_process,
    select_backend,
)
from seqkeras.errors import SpecError
from seqkeras.execution import sweep
from seqkeras.spec.reference import components_markdown, describe_params, section_models
from seqkeras.spec.runs import saved_decoder_labels
from seqkeras.spec.sections import TableSpec
from seqkeras.version import __version__

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
BACKEND_CHOICES = [AUTO, *BACKEND_PACKAGES]


def main(argv: list[str] | None = None) -> int:
    claim_this_process()  # every object here is the suite's (runtime.freeze_what_is_loaded)
    # TensorFlow's C++ chatter (oneDNN, CUDA probing) hides our output (runtime.QUIET_TF_LOG_LEVEL).
    os.environ.setdefault(TF_LOG_LEVEL_VARIABLE, QUIET_TF_LOG_LEVEL)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != args.command_name:  # an old name (argparse gives the name as typed)
        print(f"note: `seqkeras {args.command}` is the old name of `seqkeras {args.command_name}`", file=sys.stderr)
    with sigterm_as_ctrl_c():
        try:
            check_path_arguments(args)
            if args.command not in ("run", "evaluate", "export-model"):  # these pick their backend themselves
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
                  "attention": "--attention", "untuned": "--untuned", "output": "--output"}


def check_path_arguments(args: argparse.Namespace) -> None:
    """Refuse an empty or blank path argument (sweep.given_path) before any command reads or writes."""
    for attribute, label in PATH_ARGUMENTS.items():
        value = getattr(args, attribute, None)
        for text in value if isinstance(value, list) else [value]:
            if text is not None:
                sweep.given_path(text, label)


REDELIVER_AFTER_S = 0.05  # long enough to leave a garbage-collector callback


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
    previous_hook = sys.unraisablehook
    sys.unraisablehook = redeliver_swallowed_interrupt(previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGTERM, previous)


def redeliver_swallowed_interrupt(report):
    """An unraisable-exception hook that raises a swallowed Ctrl-C again, in the main program.

    A signal's handler runs in whatever Python code is running when it arrives. Inside a garbage-collector
    callback (JAX registers one), a `__del__` or a weakref callback, Python cannot raise: it prints "Exception
    ignored in ..." and goes on, and the run went on training after SIGTERM. So a KeyboardInterrupt reaching
    this hook signals it again a moment later, from a thread: signalled from here, the handler would run at
    once, still inside the callback, and be swallowed again. The signal is SIGTERM, whose handler is ours while
    this hook is set (SIGINT may be ignored in a background job). Should it land in such a callback again, the
    hook repeats. Any other exception is reported as before.
    """
    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            again = threading.Timer(REDELIVER_AFTER_S, _thread.interrupt_main, args=(signal.SIGTERM,))
            again.daemon = True
            again.start()
        else:
            report(unraisable)
    return hook


# The parser. Each command's options are added by a function of its own (`run_options`, ...), and
# COMMANDS, at the end of this module, names each command with its summary, exit status, options and
# handler. Their help texts are the one description of the command line: `seqkeras COMMAND --help`
# prints them, and the README's command table and docs/spec.md's option tables are generated from
# them (seqkeras/generated_files/cli_reference.py; `make generate`). So they are written for both:
# plain sentences, `code` in backticks, no Markdown links, no % (argparse formats help with it).

@dataclass(frozen=True)
class Command:
    name: str
    summary: str  # what it does: `seqkeras --help`'s list, the top of its own --help, the README's table
    exit_status: str  # its exit statuses, at the end of its --help and in the README's table
    add_options: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]
    old_names: tuple[str, ...] = ()  # still accepted, with a note on stderr naming the command's name now


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seqkeras", description="Declarative experiments for sequence models.")
    parser.add_argument("--version", action="version", version=f"seqkeras {__version__}",
                        help="print the package version and exit")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        subparser = subparsers.add_parser(command.name, help=command.summary, description=command.summary,
                                          epilog=f"exit status: {command.exit_status}", aliases=command.old_names)
        command.add_options(subparser)
        subparser.set_defaults(handler=command.handler, command_name=command.name)
    return parser


def add_spec_options(parser: argparse.ArgumentParser, what: str) -> None:
    """PATH..., --set and --only: which specs, changed how, and which of their runs (`run` and `validate`)."""
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a YAML file, or a folder: every `*.yaml` below it, in sorted order")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="change a spec value before the matrix is expanded, e.g. `--set model.units=32` "
                             "(repeatable)")
    parser.add_argument("--only", action="append", default=[], metavar="KEY=VALUE",
                        help=f"{what} only the matrix's runs with this value, e.g. `--only task.lag=10` "
                             "(repeatable: one key twice means either value)")


def run_options(parser: argparse.ArgumentParser) -> None:
    add_spec_options(parser, "run")
    parser.add_argument("--out", default="results", metavar="DIR",
                        help="the results root (default: `results/`); nothing is written outside it")
    parser.add_argument("--force", action="store_true", help="rerun runs that already have a finished record")
    parser.add_argument("--dry-run", action="store_true",
                        help="plan the runs (which would run, which are already done) and stop: nothing is "
                             "trained or written")
    parser.add_argument("--backend", choices=BACKEND_CHOICES, default=None,
                        help="the Keras backend (default: `$KERAS_BACKEND` when set, else `auto`: the "
                             "experiments' `backend:`, else the installed one most runs' models train fastest on: "
                             "JAX for encoder-decoders, torch for the others, then tensorflow); an experiment "
                             "whose spec names its `backend:` refuses another")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                        help="run N runs at once in separate processes (default: `$SEQKERAS_JOBS`, else one per "
                             "core, no more than the largest experiment's runs or than the memory holds)")
    parser.add_argument("--executor", choices=["local", "ray"], default="local",
                        help="where the runs run: local processes (default) or Ray tasks "
                             "(`pip install -r requirements-ray.txt`)")
    parser.add_argument("--address", default=None, metavar="ADDRESS",
                        help="Ray: the cluster's address (default: start a local Ray)")
    parser.add_argument("--cpus-per-run", type=float, default=1.0, metavar="CPUS",
                        help="Ray: CPUs reserved per run (default 1)")
    parser.add_argument("--gpus-per-run", type=float, default=0.0, metavar="GPUS",
                        help="Ray: GPUs reserved per run (default 0)")
    parser.add_argument("--reference", default=None, metavar="DIR",
                        help="afterwards check each experiment's results against `DIR/<name>` (computed numbers "
                             "to float rounding, trained ones within their seed spread, timings left out): one "
                             "line each, exit status 1 when one differs; `make run` uses it. Checked before "
                             "anything runs: DIR must hold a readable `<name>/runs.csv` for each experiment "
                             "(else exit status 2)")
    parser.add_argument("--tensorboard", action="store_true",
                        help="write TensorBoard event files into each run's folder (`train.tensorboard=true` "
                             "for every experiment that trains); then `tensorboard --logdir results/<name>`")
    parser.add_argument("--track", default=None, metavar="mlflow[=URI]",
                        help="log every run to MLflow while it trains, from the process that trains it: its spec as "
                             "parameters, each epoch's metrics as it ends, the final metrics, its files, its kept "
                             "model as an MLflow logged model (default store: `sqlite:///<out>/mlflow.db`; "
                             "`pip install -r requirements-tracking.txt`)")


def validate_options(parser: argparse.ArgumentParser) -> None:
    add_spec_options(parser, "check")


def table_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", metavar="RESULTS_DIR", help="`results/<name>`, or a `runs.csv`")
    parser.add_argument("--rows", nargs="+", metavar="KEY", help="matrix key(s) along the rows")
    parser.add_argument("--columns", nargs="+", metavar="KEY", help="matrix key(s) along the columns")
    parser.add_argument("--value", metavar="METRIC", help="the metric in the cells (mean ± std over seeds)")
    parser.add_argument("--pool", nargs="+", default=[], metavar="KEY",
                        help="matrix or decoder key(s) to average over, as over seeds (else a key that varies "
                             "within a cell is an error); also applies to the declared tables")
    parser.add_argument("--format", choices=["md", "csv"], default="md",
                        help="md: mean ± std in each cell (default); csv: numbers, a column each for the mean, "
                             "std and n (`accuracy mean`, `accuracy std`, `accuracy n`; with --columns, "
                             "`lstm mean` ...)")
    parser.add_argument("--baseline", metavar="KEY=VALUE",
                        help="test each cell against its baseline cell, the one with KEY = VALUE and the same "
                             "other keys (`model.cell=lstm`: the lstm column's cell in the same row, or the lstm "
                             "row's in the same column): md marks every cell, `[base]`, `[better]` or `[worse]` "
                             "(differs beyond chance: p < 0.05, a paired t-test over shared seeds, else Welch's; "
                             "`[higher]` / `[lower]` for a number with no better direction), `[n.s.]` (not shown "
                             "to differ), `[?]` (too few seeds to test: the title says how many it had) or "
                             "`[no base]`; csv adds `p_value`, `test` and `verdict` columns")
    parser.add_argument("--untuned", metavar="UNTUNED_DIR",
                        help="RESULTS_DIR is a tuned experiment's: set the same experiment's untuned results (a "
                             "results folder or its `runs.csv`) beside it, a tuned and an untuned column per "
                             "cell (rows matched on the matrix values); `--baseline tuning=untuned` tests the "
                             "difference")
    parser.add_argument("--rebuild", action="store_true",
                        help="rebuild `runs.csv` from every run folder's `metrics.json`, then `table.md` and "
                             "the plots")


def list_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true",
                        help="print it as Markdown: the page `docs/components.md` is")


def compare_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A",
                        help="`results/<name>`, a `runs.csv`, or a results root (experiments matched by name)")
    parser.add_argument("b", metavar="B", help="the same for the other side")
    parser.add_argument("--on", nargs="+", metavar="KEY",
                        help="join columns (default: the matrix keys, the decoder columns, `seed`)")
    parser.add_argument("--metric", nargs="+", metavar="M", help="metrics to compare (default: all in both)")
    parser.add_argument("--tolerance", type=float, metavar="T",
                        help="exit status 1 when any |B − A| > T, a text differs, or a row is on one side only")
    parser.add_argument("--relative-tolerance", type=float, default=0.0, metavar="R",
                        help="with --tolerance: allow |B − A| up to T + R·|A| (default 0)")
    parser.add_argument("--no-timings", dest="timings", action="store_false",
                        help="leave out timing metrics (`seconds_per_sequence`, `step_ms`, `us_per_token`, ...), "
                             "which measure the machine")
    parser.add_argument("--unpaired", action="store_true",
                        help="compare each matrix point's seeds as two samples (Welch's t-test), not seed by "
                             "seed; automatic when the two sides share no seed")
    parser.add_argument("--common", action="store_true",
                        help="compare only what both sides have: rows and experiments on one side only are "
                             "noted, not failures (a partial rerun)")
    parser.add_argument("--format", choices=["md", "csv"], default="md",
                        help="md: Markdown (default); csv: one CSV table")


def report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="`results/<name>` or a results root")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="write the pages (and copies of the plots) into this folder, not a file (default: "
                             "beside the results)")
    parser.add_argument("--baseline", metavar="KEY=VALUE",
                        help="mark each table's cells against their baseline cell, as `table --baseline` does, with "
                             "the legend under each marked table; an experiment whose tables lack KEY or VALUE "
                             "shows them unmarked, saying why")


def track_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR", help="`results/<name>` or a results root")
    parser.add_argument("--track", default="mlflow", metavar="mlflow[=URI]",
                        help="the tracking store (default: `sqlite:///<results root>/mlflow.db`)")


def predict_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_folder", metavar="RUN",
                        help="a training run's folder, `results/<name>/<run_id>`, or an experiment's results folder, "
                             "`results/<name>`, with `--where`, `--seed` or `--best` choosing one of its runs")
    add_selection_options(parser, one_run=True)
    inputs = parser.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--text", action="extend", nargs="+", metavar="TEXT",
                        help="one input or several (`--text 'A.' 'B.'`, or `--text` again): a prompt for a "
                             "language model; for a regressor, steps of numbers (`'0.3,0 0.9,1'`: whitespace "
                             "between steps, commas between a step's features, or a JSON list of steps)")
    inputs.add_argument("--file", metavar="FILE",
                        help="a UTF-8 file of inputs, one a line (blank lines left out)")
    parser.add_argument("--decoder", default=None, metavar="D",
                        help="seq2seq and language models: any decoder of `seqkeras list`, as a name (`beam`), "
                             "a label (`beam(width=5, length_penalty=0.6)`) or a spec's mapping "
                             "(`'{name: sample, temperature: 0.7}'`); greedy by default. Sampling uses the "
                             "run's seed: the same input gives the same output")
    parser.add_argument("--length", type=positive_int, default=None, metavar="N",
                        help="language models: tokens added to each prompt (default: the run's "
                             "`evaluate.generate.length`, else 30)")
    parser.add_argument("--format", choices=["md", "csv", "jsonl"], default="md",
                        help="md: a Markdown table (default), a text's line breaks and pipes escaped so that each "
                             "input stays one row; csv; jsonl: one JSON object a line")
    parser.add_argument("--attention", default=None, metavar="DIR",
                        help="an encoder-decoder with attention: also write each input's attention map into "
                             "DIR, `attention_<n>.csv` (the long table of a run's `attention.csv`) and "
                             "`attention_<n>.png` (its heat map, as the run's plot), n being the input's number. "
                             "The decoder is teacher-forced on the output it decoded, so each output token's row "
                             "is the attention that produced it")


def add_selection_options(parser: argparse.ArgumentParser, one_run: bool) -> None:
    """--where, --seed and --best: which runs of an experiment's results folder; `predict` needs exactly one
    (`one_run`), `evaluate` takes all that are left."""
    what = "the run" if one_run else "only the runs"
    refused = ("A selection that leaves several runs, or a tie, is refused, each candidate on a line" if one_run
               else "A tie is refused, each run tied on a line")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help=f"{what} with this matrix value, e.g. `--where model.cell=gru` (the key as "
                             "`runs.csv` names it, or its last part, `cell`; repeatable: one key twice means "
                             "either value)")
    parser.add_argument("--seed", type=non_negative_int, default=None, metavar="N",
                        help=f"{what} trained with this seed")
    parser.add_argument("--best", default=None, metavar="METRIC",
                        help=f"{'the run' if one_run else 'only the run'} with the best value of METRIC among "
                             "those selected: higher or lower is better as the metric catalog says (`accuracy`, "
                             f"`bleu`: higher; `perplexity`, `mse`: lower). {refused}")


def export_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_folder", metavar="RUN",
                        help="a training run's folder, `results/<name>/<run_id>`, or an experiment's results folder, "
                             "`results/<name>`, with `--where`, `--seed` or `--best` choosing one of its runs")
    add_selection_options(parser, one_run=True)
    parser.add_argument("--format", choices=["onnx", "savedmodel"], required=True,
                        help="onnx: `model.onnx` (ONNX Runtime and other ONNX servers; needs the `export` extra); "
                             "savedmodel: a TensorFlow SavedModel folder `model/` (TensorFlow Serving). An "
                             "encoder-decoder gives two graphs, `encoder` and `decoder_step`")
    parser.add_argument("--output", required=True, metavar="DIR",
                        help="the folder to write: the graphs, the run's `preprocessing.json` and vocabularies, and "
                             "`export.json` (each graph's inputs and outputs). It must not exist or be empty")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace DIR when it holds files (it says so)")


def evaluate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dirs", nargs="+", metavar="RESULTS_DIR",
                        help="`results/<name>`, a results root, or one run's folder, `results/<name>/<run_id>`")
    add_selection_options(parser, one_run=False)
    parser.add_argument("--decoders", nargs="+", default=[], metavar="D",
                        help="decoders to add, for seq2seq models and language models that generate (their spec "
                             "has `evaluate.generate` or decoders); each as `predict --decoder` takes it "
                             "(`greedy`, `beam(width=5)`, `'{name: sample, temperature: 0.7}'`). Each new decoder "
                             "adds a row to the run (its `decoder` columns); one the run has is left as it is")
    parser.add_argument("--metrics", nargs="+", default=[], metavar="M",
                        help="metrics to add, of each run's problem (`seqkeras list`); each new one is computed "
                             "for every row the run has (its decoders are run again for it)")
    parser.add_argument("--backend", choices=BACKEND_CHOICES, default=None,
                        help="the Keras backend to load the models on (default: `$KERAS_BACKEND` when set, else "
                             "the one the runs were trained on, when they agree and it is installed, else `auto`)")


def schema_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, metavar="FILE", help="write it to FILE instead of printing it")


def whole_number_from(minimum: int, words: str):
    """An argparse type: a whole number of at least `minimum` (`words` says the bound in the error)."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {words}, got {value}")
        return value

    return whole_number


positive_int = whole_number_from(1, "at least 1")
non_negative_int = whole_number_from(0, "0 or more")


def command_validate(args) -> int:
    for experiment in sweep.load_all(args.paths, args.overrides, args.only):
        print(f"ok  {experiment.source}  ({experiment.spec.name}: {len(experiment.runs)} runs)")
        for note in experiment.notes:
            print(f"    {note}")
    return EXIT_OK


def command_run(args) -> int:
    from seqkeras.api import RunOptions, run_paths

    # Each of RunOptions' fields is the run command's option of the same name (its `dest`).
    options = RunOptions(**{field.name: getattr(args, field.name) for field in fields(RunOptions)})
    outcome, _ = run_paths(args.paths, options)
    if outcome is None:  # --dry-run
        return EXIT_OK
    problems = [f"{outcome.failed_runs} failed run(s)", f"{outcome.failed_claims} expectation(s) not reproduced"]
    if args.reference is not None:
        problems.append(f"{len(outcome.differing)} experiment(s) differ from the reference")
    if outcome.failed_runs or outcome.failed_claims or outcome.differing:
        print(f"\n{', '.join(problems)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def command_table(args) -> int:
    from seqkeras.reporting.baseline import legend, parse_baseline
    from seqkeras.reporting.tables import csv_frame, declared_tables, pivot, summary_tables, table_title, titled
    from seqkeras.reporting.tables import to_markdown
    from seqkeras.reporting.tuned_vs_untuned import beside_untuned, pivot_beside, summary_tables_beside
    from seqkeras.reporting.tuned_vs_untuned import legend as untuned_legend
    from seqkeras.reporting.saved_spec import read_saved_experiment
    from seqkeras.results.folder import is_matrix_column, print_warning, read_runs

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
        frame = pivot_beside(beside, table, statistics, baseline) if beside is not None \
            else pivot(runs, table, statistics=statistics, baseline=baseline)
        frames = [(titled(table_title(table), frame), frame)]
    else:
        folder = results_dir if results_dir.is_dir() else results_dir.parent
        saved = read_saved_experiment(folder, warn=print_warning)
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
        print(csv_frame(frame).to_csv(index=False) if args.format == "csv" else to_markdown(frame))
        if baseline is not None and args.format == "md" and frame.attrs.get("baseline"):  # a marked table
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
            print(f"  {component.name} — {component.described}")
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
    from seqkeras.reporting.baseline import parse_baseline
    from seqkeras.reporting.html import write_reports

    baseline = parse_baseline(args.baseline) if args.baseline is not None else None  # before reading anything
    index, pages = write_reports([Path(p) for p in args.results_dirs], Path(args.out) if args.out else None,
                                 baseline=baseline)
    for page in pages:
        print(f"wrote {page}")
    print(f"wrote {index}")
    return EXIT_OK


def command_track(args) -> int:
    from seqkeras.tracking.results_logging import log_results

    failed = log_results([Path(p) for p in args.results_dirs], args.track)
    return EXIT_FAILED if failed else EXIT_OK


def command_predict(args) -> int:
    from seqkeras.kept.predict import parse_decoder, read_inputs

    from seqkeras.kept.selection import chosen_run, selection

    wanted = selection(args.where, args.seed, args.best)
    texts = read_inputs(args.file) if args.file is not None else args.text
    decoder = parse_decoder(args.decoder, "--decoder") if args.decoder is not None else None
    # Said on stderr: stdout stays the table.
    run_folder = chosen_run(Path(args.run_folder), wanted, echo=lambda line: print(line, file=sys.stderr))
    select_backend(load=True)
    from seqkeras.kept.saving import load_model

    kept = load_model(run_folder)
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


def command_export_model(args) -> int:
    from seqkeras.kept.selection import chosen_run, selection

    wanted = selection(args.where, args.seed, args.best)
    # Said on stderr, as predict says it.
    run_folder = chosen_run(Path(args.run_folder), wanted, echo=lambda line: print(line, file=sys.stderr))
    select_backend("tensorflow", load=True)  # Keras's SavedModel export, and its dynamic-shape ONNX export
    from seqkeras.api import export_model

    exported = export_model(run_folder, args.format, args.output, overwrite=args.overwrite)
    if exported.replaced:
        print(f"replaced what {exported.folder} held", file=sys.stderr)
    print(f"wrote {exported.folder}: {', '.join(exported.graphs)}, with its preprocessing (export.json says how "
          f"to call them)")
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
    from seqkeras.execution.reevaluation import additions, choose_backend, reevaluate, selected_runs, selection
    from seqkeras.reporting.expectations import held_said

    wanted = additions(args.decoders, args.metrics)
    chosen = selected_runs([Path(p) for p in args.results_dirs], selection(args.where, args.seed, args.best))
    folders = list(chosen)
    select_backend(choose_backend(args.backend, folders), load=True)
    outcomes = reevaluate(folders, wanted, runs=chosen)
    failed = evaluated = 0
    for outcome in outcomes:
        verdicts = outcome.summary.verdicts if outcome.summary is not None else []  # one per claim
        print(f"\n{outcome.folder}: {len(outcome.added)} run(s) gained rows or columns, {len(outcome.unchanged)} had "
              f"them, {len(outcome.without_model)} without a kept model, {len(outcome.failed)} failed; "
              f"expectations: {held_said(verdicts)}")
        for run_id, why in outcome.without_model.items():
            print(f"  no kept model: {run_id} ({why})")
        failed += len(outcome.failed) + sum(not v.holds for v in verdicts)
        evaluated += len(outcome.added) + len(outcome.unchanged)
    if not evaluated:
        print("nothing was evaluated: no run selected there has a kept model that may be read (why is said above)",
              file=sys.stderr)
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


# Every command, in the order `seqkeras --help` and the README list them.
COMMANDS = (
    Command("run", "validate every spec, then run each experiment and write `results/<name>/`: its runs, "
                   "`runs.csv`, `table.md` with the claims' verdicts, and plots",
            "0 every run finished and every claim held; 1 a run failed, a claim did not hold, or (with "
            "`--reference`) an experiment differs from its reference; 2 an invalid spec or option, nothing ran",
            run_options, command_run),
    Command("validate", "check specs as `run` would, without running anything",
            "0 valid; 2 invalid", validate_options, command_validate),
    Command("table", "print an experiment's tables (mean ± std over seeds), or a pivot you choose",
            "0; 2 missing or damaged results, an unknown key, a key that would be pooled, `--untuned` results of "
            "another experiment", table_options, command_table),
    Command("compare", "compare two results of one experiment run by run and over seeds (a paired t-test, or "
                       "Welch's when seeds cannot be paired), and say what their specs differ in",
            "0; 1 with `--tolerance`, when a difference exceeds it; 2 bad input or two different experiments",
            compare_options, command_compare),
    Command("report", "write static HTML pages: a `report.html` per experiment (tables, the main metric per "
                      "configuration, verdicts, plots) and an `index.html`",
            "0; 2 missing results", report_options, command_report),
    Command("track", "log results that already exist to MLflow, as `run --track` would have logged them",
            "0; 1 a run could not be logged; 2 bad input", track_options, command_track, old_names=("export",)),
    Command("predict", "use a run's kept model on new inputs: a label, tags, a translation with any decoder and "
                       "its attention map, a prompt continued, a value; words outside the vocabulary counted",
            "0; 2 bad input", predict_options, command_predict),
    Command("export-model", "export a run's kept model for serving, as ONNX or a TensorFlow SavedModel (Keras's "
                            "own export), beside the preprocessing that turns a text into its inputs",
            "0; 2 bad input, a model kind that cannot be exported (the line says why), or DIR holds files",
            export_model_options, command_export_model),
    Command("evaluate", "evaluate the kept models of finished runs again with more decoders or metrics, without "
                        "training: rows and columns added to the records, `runs.csv`, the tables and the "
                        "claims' verdicts",
            "0; 1 a run's evaluation failed, a claim did not hold, or no run kept its model; 2 bad input",
            evaluate_options, command_evaluate),
    Command("schema", "print the JSON Schema of experiment files, for editors", "0", schema_options, command_schema),
    Command("list", "list every section's options, and every task, model kind, cell, probe, metric and decoder, "
                    "with its parameters", "0", list_options, command_list),
)


if __name__ == "__main__":
    sys.exit(main())
