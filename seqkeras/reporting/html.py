"""`seqkeras report`: one static report.html per experiment and an index.html linking them.

A page shows the experiment's description, its tables (mean ± std over seeds),
a chart of its main test metric per configuration (`metric_chart`), its
verdicts, its plots, its data card (`data_card`: each task's splits, classes, vocabulary, lengths and
duplicates), sample outputs of seq2seq and language models (the first
rows of each configuration's outputs.csv / samples.csv), a row per run (its
matrix values, status, the metrics its tables show, parameters, run time and
links to its files) and the spec as run, all computed from the results folder (runs.csv, experiment.yaml,
plots.json, the PNGs and the run folders). Pages are plain HTML with inline
CSS: no script, no network, images referenced relatively, so a results folder
can be opened from disk, zipped or served as is.

A results folder written before plotting existed gets its plots drawn first.
With a baseline (`report --baseline`), the tables' cells carry `table --baseline`'s
marks and each marked table its legend.
"""

from __future__ import annotations

import html
import io
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from seqkeras.errors import SpecError
from seqkeras.reporting import data_card, tuning
from seqkeras.reporting.baseline import Baseline, legend
from seqkeras.reporting.expectations import check, held_said
from seqkeras.reporting.formatting import cell_numbers, cell_texts
from seqkeras.reporting.metric_chart import main_metric, write_metric_chart
from seqkeras.reporting.plots import plot_folder, read_manifest
from seqkeras.reporting.spec_rows import own_rows
from seqkeras.reporting.tables import summary_tables, table_notes
from seqkeras.reporting import training_notes
from seqkeras.results.files import (
    inside, is_file, is_folder, present, read_bytes, read_text, single_name_problem,
)
from seqkeras.results.folder import (
    FAILED, OK, is_matrix_column, named_experiment_folders, one_row_per_run, read_runs, run_counts, write_atomic,
)
from seqkeras.spec.runs import own_decoder_labels
from seqkeras.spec.sections import ExperimentSpec
from seqkeras.yaml_reader import parse_yaml

REPORT, INDEX = "report.html", "index.html"
FALLBACK_INDEX = "_index.html"  # when an experiment is named index.html
# Numbers and "mean ± std" align right, with a baseline mark after them ("0.75 ± 0.01 [n.s.]").
NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?( ± \S+)?( \[[a-z.? ]+\])?$")
_WARNED: set[str] = set()  # what this report has warned about: a page reads a run folder more than once


def print_warning(message: str) -> None:
    """`warning: ...` on stderr, once per message and report."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr)


STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 2rem auto;
       max-width: 70rem; padding: 0 1.5rem; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 1rem; }
nav { font-size: .9rem; } a { color: #0969da; }
.description { max-width: 50rem; } .summary { color: #57606a; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .88rem; }
th, td { border: 1px solid #d0d7de; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
.reproduced { color: #1a7f37; font-weight: 600; } .not-reproduced { color: #cf222e; font-weight: 600; }
.undecided { color: #9a6700; font-weight: 600; }
figure { margin: 1rem 0 2rem; } figure img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption { color: #57606a; font-size: .9rem; } pre { background: #f6f8fa; padding: 1rem; overflow-x: auto; }
footer { margin-top: 3rem; color: #57606a; font-size: .8rem; }
.files { font-size: .78rem; color: #57606a; max-width: 34rem; } .legend { color: #57606a; font-size: .85rem; }
"""


@dataclass
class ExperimentPage:
    """What one experiment's page shows, read from its results folder."""

    folder: Path
    name: str
    description: str
    runs: pd.DataFrame
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)
    verdicts: list[Any] = field(default_factory=list)
    plots: list[dict[str, str]] = field(default_factory=list)
    spec_text: str = ""
    problems: list[str] = field(default_factory=list)
    matrix_columns: list[str] = field(default_factory=list)
    plots_folder: Path | None = None  # where the PNGs are: the results folder, or the report's when drawn for it
    declared_tables: list[Any] = field(default_factory=list)  # the spec's tables: the first names the chart's metric
    chart: dict[str, str] | None = None  # the main metric per configuration ({file, title}), beside the page
    data_cards: list[dict[str, Any]] = field(default_factory=list)  # data_card.json's cards (reporting.data_card)
    tune: Any = None  # the spec's `tune` section (a TuneSpec), when it has one and can be read
    tuning: tuning.Section | None = None  # what tuning found, its charts beside the page (reporting.tuning)
    baseline: Baseline | None = None  # `report --baseline`: the tables' cells are marked against it

    @property
    def total_runs(self) -> int:
        return run_counts(self.runs)[0]

    @property
    def ok_runs(self) -> int:
        return run_counts(self.runs)[1]

    @property
    def failed_runs(self) -> int:
        return run_counts(self.runs)[2]

    @property
    def held(self) -> int:
        return sum(v.holds for v in self.verdicts)


def write_reports(paths: list[Path], out: Path | None = None,
                  baseline: Baseline | None = None) -> tuple[Path, list[Path]]:
    """Write every report.html and the index page; returns (index, pages). baseline: see the module.

    An experiment whose results cannot be read is left out with a warning (and
    named on the index page) while the others are written; when none can be
    read, that is the error.
    """
    if out is not None and out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} is a file; give a folder for the report pages")
    _WARNED.clear()
    folders = named_experiment_folders(paths)
    if out is not None:
        names = [f.name for f in folders]
        clash = sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise SpecError(f"two results folders are both named {clash[0]!r}; with --out their pages would collide")
    index_dir = out if out is not None else Path(os.path.commonpath([f.resolve().parent for f in folders]))
    page_dirs = {folder: out / folder.name if out is not None else folder for folder in folders}
    index = _index_path(index_dir, list(page_dirs.values()))
    pages, written, skipped = [], [], []
    for folder, page_dir in page_dirs.items():
        try:
            page_dir.mkdir(parents=True, exist_ok=True)
            page = read_experiment(folder, plots_into=page_dir, baseline=baseline)
        except SpecError as error:  # one damaged experiment must not cost the others their pages
            skipped.append((folder, str(error)))
            continue
        if page.plots_folder != page_dir and not _same_folder(page_dir, page.plots_folder):
            page.plots = _copy_plots(page.plots_folder, page_dir, page.plots)
        page.chart = _metric_chart(page, page_dir)
        page.tuning = _tuning(page, page_dir)
        target = page_dir / REPORT
        _write_page(target, render_experiment(page, index_href=_href(index, page_dir), page_dir=page_dir))
        pages.append((page, target))
        written.append(target)
    if not pages:
        raise SpecError("\n".join(reason for _, reason in skipped))
    for folder, reason in skipped:
        print(f"warning: {folder} left out of the report: {reason}", file=sys.stderr)
    _write_page(index, render_index([(p, _href(target, index_dir)) for p, target in pages],
                                    [(folder.name, reason) for folder, reason in skipped]))
    return index, written


def _metric_chart(page: ExperimentPage, page_dir: Path) -> dict[str, str] | None:
    """The main metric per configuration, drawn beside the page; a chart that cannot be drawn is a warning."""
    try:
        return write_metric_chart(page.runs, page.declared_tables, page.matrix_columns, page_dir,
                                  taken={plot["file"] for plot in page.plots})
    except Exception as error:  # a view of the results, as the plots are: the page goes on without it
        print_warning(f"{page.folder}: the chart of the main metric per configuration is not drawn: "
                      f"{type(error).__name__}: {error}")
        return None


def _tuning(page: ExperimentPage, page_dir: Path) -> tuning.Section | None:
    """What tuning found, its charts drawn beside the page (never into results read with --out); None for an
    experiment that was not tuned. A file or a chart that cannot be read or drawn is a warning."""
    if page.tune is None and not tuning.has_tuning(page.folder):
        return None
    taken = {plot["file"] for plot in page.plots} | ({page.chart["file"]} if page.chart else set())
    try:
        return tuning.tuning_section(page.folder, page.tune, page_dir, print_warning, expected=True, taken=taken)
    except Exception as error:  # a view of the results, as the plots are: the page goes on without it
        print_warning(f"{page.folder}: the tuning section is left out: {type(error).__name__}: {error}")
        return None


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _copy_plots(folder: Path, page_dir: Path, plots: list[dict[str, str]]) -> list[dict[str, str]]:
    """Copy each plot's PNG beside the page, as `results.files` reads it (a regular file inside the folder,
    bounded); the plots that could not be copied are named in a warning and left off the page."""
    copied = []
    for plot in plots:
        try:
            data = read_bytes(folder, plot["file"])
        except SpecError as error:
            print_warning(f"plot left out of the report: {error}")
            continue
        write_atomic(page_dir / plot["file"], data)
        copied.append(plot)
    return copied


def _index_path(index_dir: Path, page_dirs: list[Path]) -> Path:
    """index.html, unless an experiment's folder has that name (names may hold dots): then _index.html.

    No experiment can be named _index.html (a name starts with a letter or digit),
    so the fallback never collides with a page folder.
    """
    index = index_dir / INDEX
    taken = {d.resolve() for d in page_dirs}
    if index.is_dir() or index.resolve() in taken:
        fallback = index_dir / FALLBACK_INDEX
        print(f"warning: {index} is a folder (an experiment named {INDEX}); the index page is {fallback}",
              file=sys.stderr)
        return fallback
    return index


def _write_page(path: Path, text: str) -> None:
    if path.is_dir():
        raise SpecError(f"cannot write the page {path}: a folder has that name")
    write_atomic(path, text)


def read_experiment(folder: Path, plots_into: Path | None = None, baseline: Baseline | None = None) -> ExperimentPage:
    """The page of the results in `folder`. Its plots are those its plots.json lists; a folder without
    one (written before plots existed) has them drawn into `plots_into` (default: the folder itself).
    baseline: the tables' cells marked against it, where their keys have it (else said among the problems)."""
    runs = read_runs(folder)
    matrix_columns = [c for c in runs.columns if is_matrix_column(c)]
    problems: list[str] = []
    spec = None
    try:
        spec_text = read_text(folder, "experiment.yaml") if present(folder, "experiment.yaml") else ""
    except SpecError as error:  # a link, a FIFO, too big, not UTF-8: named, never followed nor inlined
        spec_text = ""
        print_warning(f"{error}; the report shows no spec")
        problems.append("experiment.yaml could not be read (it is not a regular file inside the results "
                        "folder, or not UTF-8 text); tables show every run")
    if spec_text:
        try:
            spec = ExperimentSpec.model_validate(parse_yaml(spec_text))  # bounded, as the spec it was
        except Exception as error:  # an old or edited experiment.yaml: show the numbers anyway
            problems.append(f"experiment.yaml could not be read as a spec ({type(error).__name__}); "
                            "tables show every run, without verdicts")
    # A runs.csv without an experiment column (an older or edited one) is named by its folder.
    name = spec.name if spec else (str(runs["experiment"].iloc[0]) if len(runs) and "experiment" in runs
                                   else folder.name)
    own = own_decoder_labels(spec) if spec else None  # the rows its claims are about (reporting.spec_rows)
    tables = _tables(runs, spec.tables() if spec else [], matrix_columns, own, baseline, problems)
    verdicts = [check(expect, own_rows(runs, own)) for expect in spec.expect] if spec else []
    plots_folder = folder
    plots = read_manifest(folder)
    if plots is None:
        plots_folder = folder if plots_into is None else plots_into
        try:
            plot_folder(folder, spec.plots if spec else [], matrix_columns, runs,
                        axes=list(spec.matrix) if spec else None, into=plots_folder)
        except Exception as error:  # plots are a view of the results: the page goes on without them
            problems.append(f"plots could not be drawn ({type(error).__name__}: {error})")
        plots = read_manifest(plots_folder) or []
    plots = [p for p in plots if _plot_shown(plots_folder, p["file"])]
    return ExperimentPage(folder, name, spec.description if spec else "", runs, tables, verdicts, plots,
                          spec_text, problems, matrix_columns, plots_folder, spec.tables() if spec else [],
                          data_cards=data_card.read_experiment_card(folder, print_warning),
                          tune=spec.tune if spec else None, baseline=baseline)


def _tables(runs: pd.DataFrame, declared: list[Any], matrix_columns: list[str], own: list[str] | None,
            baseline: Baseline | None, problems: list[str]) -> list[tuple[str, pd.DataFrame]]:
    """The page's tables, marked against `baseline` where they can be. A report may cover experiments of
    other keys: a baseline this one lacks leaves its tables unmarked, said once among the page's problems."""
    def warn(message: str) -> None:
        problems.append(message)

    if baseline is not None:
        try:
            return summary_tables(runs, declared, matrix_columns, baseline=baseline, warn=warn, own_decoders=own)
        except SpecError as error:
            problems.append(f"tables not marked against {baseline}: {error}")
    try:
        return summary_tables(runs, declared, matrix_columns, own_decoders=own)
    except SpecError as error:
        problems.append(f"tables: {error}")
        return []


def _plot_shown(folder: Path, name: str) -> bool:
    """Whether plots.json's `name` is a regular file inside the folder; a link or a special file is a warning."""
    if is_file(folder, name):
        return True
    if present(folder, name):
        try:
            path = inside(folder, name)
            why = f"{path} is not a regular file"
        except SpecError as error:
            why = str(error)
        print_warning(f"plot left out of the report: {why}")
    return False


def run_folder(folder: Path, run_id: Any) -> Path | None:
    """The folder of a run id taken from runs.csv: a single plain name of a real folder inside `folder`.

    A run id that is a path (absolute, with `..` or `/`) or a folder that is a link is refused with a
    warning naming it, never listed or linked; a run id with no folder (yet) is None without one.
    """
    name = str(run_id)
    problem = single_name_problem(name)
    if problem:
        print_warning(f"{folder}/runs.csv: run id {problem}; its folder is not shown")
        return None
    if is_folder(folder, name):
        return folder / name
    if os.path.islink(folder / name):
        print_warning(f"{folder / name} is a symbolic link; links inside a results folder are not followed")
    return None


def _run_files(run: Path) -> list[Path]:
    """The files and folders of a run folder the page links to: no links, no special files, no dot files."""
    try:
        entries = sorted(os.scandir(run), key=lambda entry: entry.name)
    except OSError:
        return []
    shown = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            shown.append(run / entry.name)
        elif stat.S_ISLNK(mode):
            print_warning(f"{run / entry.name} is a symbolic link; links inside a results folder are not followed")
    return shown


# --------------------------------------------------------------------------- #
# HTML
# --------------------------------------------------------------------------- #


def render_experiment(page: ExperimentPage, *, index_href: str, page_dir: Path | None = None) -> str:
    """The page; `page_dir`: where it is written (links to the run folders are relative to it)."""
    e = html.escape
    page_dir = page_dir or page.folder
    body = [f'<nav><a href="{e(index_href)}">← all experiments</a></nav>', f"<h1>{e(page.name)}</h1>"]
    if page.description:
        body.append(f'<p class="description">{e(page.description.strip())}</p>')
    summary = f"{page.total_runs} runs: {page.ok_runs} ok, {page.failed_runs} failed."
    if page.verdicts:
        summary += f" Expectations: {held_said(page.verdicts)}."
    body.append(f'<p class="summary">{e(summary)}</p>')
    body += [f"<p><em>{e(note)}</em></p>" for note in training_notes.notes(page.folder, page.runs)]
    body += [f"<p><em>{e(problem)}</em></p>" for problem in page.problems]
    if page.tables:
        body.append("<h2>Tables</h2>")
        for title, frame in page.tables:
            body += [f"<h3>{e(title)}</h3>", frame_html(frame)]
            body += [f'<p class="note">{e(note)}</p>' for note in table_notes(frame)]
            if page.baseline is not None and frame.attrs.get("baseline"):
                body.append(f'<p class="legend">{e(legend(page.baseline))}</p>')
    if page.chart:
        body += ['<h2 id="per-configuration">Test metric per configuration</h2>',
                 f'<figure><img src="{e(page.chart["file"])}" alt="{e(page.chart["title"])}">'
                 f'<figcaption>{e(page.chart["title"])}</figcaption></figure>']
    if page.tuning is not None:
        body += ['<h2 id="tuning">Tuning (tuning.md)</h2>', *tuning_html(page.tuning)]
    if page.verdicts:
        body.append(f"<h2>Expectations ({held_said(page.verdicts)})</h2>")
        body.append(verdicts_html(page.verdicts))
    if page.plots:
        body.append("<h2>Plots</h2>")
        for plot in page.plots:
            title = plot.get("title") or plot["file"]
            body.append(f'<figure><img src="{e(plot["file"])}" alt="{e(title)}">'
                        f"<figcaption>{e(title)}</figcaption></figure>")
    data = data_card.html_section(page.data_cards, print_warning)
    if data:
        body += ['<h2 id="data">Data (data_card.md)</h2>', *data]
    samples = samples_html(page, page_dir)
    if samples:
        body += ['<h2 id="samples">Sample outputs</h2>', *samples]
    if page.failed_runs:
        failures = page.runs[page.runs["status"] == FAILED][[c for c in ("run_id", "error") if c in page.runs]]
        body += ["<h2>Failed runs</h2>", frame_html(failures)]
    body += [f'<h2 id="runs">Runs ({page.total_runs})</h2>', runs_html(page, page_dir)]
    if page.spec_text:
        body.append(f"<details><summary>The experiment as run (experiment.yaml)</summary>"
                    f"<pre>{e(page.spec_text)}</pre></details>")
    body.append(f"<footer>Written by <code>seqkeras report</code> from {e(page.folder.name)}/runs.csv.</footer>")
    return _document(f"{page.name} — seqkeras report", body)


def render_index(pages: list[tuple[ExperimentPage, str]], skipped: list[tuple[str, str]] = ()) -> str:
    e = html.escape
    total = sum(len(p.verdicts) for p, _ in pages)
    held = sum(p.held for p, _ in pages)
    body = ["<h1>seqkeras results</h1>",
            f'<p class="summary">{len(pages)} experiment(s); expectations: {held} of {total} reproduced.</p>',
            "<table><thead><tr><th>experiment</th><th>description</th><th>runs</th>"
            "<th>expectations</th><th>plots</th></tr></thead><tbody>"]
    for page, href in pages:
        description = page.description.strip()
        if len(description) > 220:
            description = description[:217].rstrip() + "…"
        runs = f"{page.ok_runs} ok" + (f", {page.failed_runs} failed" if page.failed_runs else "")
        if page.verdicts:
            css = "reproduced" if page.held == len(page.verdicts) else "not-reproduced"
            verdict = f'<span class="{css}">{page.held} of {len(page.verdicts)}</span>'
        else:
            verdict = "—"
        body.append(f'<tr><td><a href="{e(href)}">{e(page.name)}</a></td><td>{e(description)}</td>'
                    f'<td class="number">{e(runs)}</td><td>{verdict}</td>'
                    f'<td class="number">{len(page.plots)}</td></tr>')
    body.append("</tbody></table>")
    if skipped:
        body.append("<h2>Left out (results that cannot be read)</h2><ul>")
        body += [f"<li>{e(name)}: {e(reason)}</li>" for name, reason in skipped]
        body.append("</ul>")
    body.append("<footer>Written by <code>seqkeras report</code>.</footer>")
    return _document("seqkeras results", body)


# What a run row shows besides its matrix values: (runs.csv column, heading).
RUN_COLUMNS = (("seed", "seed"), ("status", "status"), ("params", "parameters"), ("train_seconds", "training s"),
               ("seconds", "run s"), ("backend", "backend"))
SAMPLE_FILES = {"outputs.csv": ("decoder", "source", "reference", "output"),
                "samples.csv": ("decoder", "prompt", "continuation")}
SAMPLES_PER_DECODER, SAMPLE_RUNS = 3, 8


def run_metrics(page: ExperimentPage) -> list[str]:
    """The metrics the Runs table shows: the values of the declared tables (else the main metric), in order;
    parameters and training seconds have their own columns."""
    declared = [table.value for table in page.declared_tables]
    chosen = declared or [main_metric(page.runs, [], page.matrix_columns)]
    own = {column for column, _ in RUN_COLUMNS}
    return [metric for metric in dict.fromkeys(chosen) if metric is not None and metric in page.runs
            and metric not in own]


def run_metric_texts(runs: pd.DataFrame, metric: str) -> dict[Any, str]:
    """{run_id: its value of `metric`}, one rule for the column (`formatting.cell_texts`: each run is one
    value); a run with a row per decoder shows each, `greedy 0.31 · beam 0.35`."""
    rows = runs[runs["status"] == OK] if "status" in runs else runs
    texts = cell_texts([cell_numbers(pd.Series([value])) for value in rows[metric]])
    labels = rows["decoder"].astype(str).tolist() if "decoder" in rows else [""] * len(rows)
    shown: dict[Any, list[tuple[str, str]]] = {}
    for run_id, label, text in zip(rows["run_id"], labels, texts):
        shown.setdefault(run_id, []).append((label, text))
    return {run_id: " · ".join(f"{label} {text}" if len(values) > 1 and label else text for label, text in values)
            for run_id, values in shown.items()}


def runs_html(page: ExperimentPage, page_dir: Path) -> str:
    """A row per run: its link, matrix values, seed, status, the metrics of its tables, parameters, run times,
    backend and files."""
    e = html.escape
    runs = one_row_per_run(page.runs) if "run_id" in page.runs else page.runs
    matrix = [c for c in page.matrix_columns if c in runs and runs[c].nunique(dropna=False) > 1]
    shown = [(column, heading) for column, heading in RUN_COLUMNS if column in runs]
    # Seed and status, then the metrics, then sizes and times.
    before = [(column, heading) for column, heading in shown if column in ("seed", "status")]
    after = [(column, heading) for column, heading in shown if column not in ("seed", "status")]
    metrics = {metric: run_metric_texts(page.runs, metric) for metric in run_metrics(page)} \
        if "run_id" in page.runs else {}
    head = "".join(f"<th>{e(h)}</th>" for h in ["run and its files", *matrix, *(h for _, h in before), *metrics,
                                                  *(h for _, h in after)])
    rows = []
    for _, run in runs.iterrows():
        folder = run_folder(page.folder, run["run_id"])
        link = f'<a href="{e(_href(folder, page_dir))}/">{e(str(run["run_id"]))}</a>' if folder is not None \
            else e(str(run["run_id"]))
        files = _run_files(folder) if folder is not None else []
        links = " · ".join(f'<a href="{e(_href(f, page_dir))}{"/" if f.is_dir() else ""}">{e(f.name)}</a>'
                           for f in files)
        cells = [f'<td>{link}<div class="files">{links}</div></td>', *(_cell(_short(run[c])) for c in matrix),
                 *(_cell(_short(run[c], digits=3)) for c, _ in before),
                 *(_cell(texts.get(run["run_id"], "")) for texts in metrics.values()),
                 *(_cell(_short(run[c], digits=3)) for c, _ in after)]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    if len(rows) > 24:  # a sweep's rows: folded, so that the tables and plots stay on top
        return f"<details><summary>every run, with links to its files</summary>{table}</details>"
    return table


def tuning_html(section: tuning.Section) -> list[str]:
    """The Tuning section: what the table shows, the best setting per matrix point, a chart per tuned key."""
    e = html.escape
    parts = [f"<p>{e(tuning.introduction(section.found))}</p>"]
    parts += [f"<p><em>{e(note)}</em></p>" for note in section.found.notes]
    parts.append(frame_html(section.table) if not section.table.empty else
                 "<p><em>no tuning results could be read</em></p>")
    parts += [f'<figure><img src="{e(chart["file"])}" alt="{e(chart["title"])}">'
              f'<figcaption>{e(chart["title"])}</figcaption></figure>' for chart in section.charts]
    return parts


def samples_html(page: ExperimentPage, page_dir: Path) -> list[str]:
    """The first outputs of each configuration's first seed (seq2seq translations, language-model samples)."""
    e = html.escape
    if "run_id" not in page.runs or page.runs.empty:
        return []
    runs = one_row_per_run(page.runs[page.runs["status"] == OK])
    matrix = [c for c in page.matrix_columns if c in runs and runs[c].nunique(dropna=False) > 1]
    if "seed" in runs and matrix:
        runs = runs.sort_values("seed", kind="stable").drop_duplicates(matrix)
    elif "seed" in runs:
        runs = runs.sort_values("seed", kind="stable").head(1)
    parts = []
    for _, run in runs.head(SAMPLE_RUNS).iterrows():
        folder = run_folder(page.folder, run["run_id"])
        for name, columns in SAMPLE_FILES.items():
            if folder is None or not present(folder, name):
                continue
            path = folder / name
            try:
                frame = pd.read_csv(io.StringIO(read_text(folder, name)), keep_default_na=False)
            except SpecError as error:
                print_warning(f"sample outputs left out of the report: {error}")
                continue
            except (ValueError, OSError):  # pandas' ParserError and EmptyDataError are ValueErrors
                continue
            shown_columns = [c for c in columns if c in frame]
            if "decoder" in frame:
                frame = frame.groupby("decoder", sort=False).head(SAMPLES_PER_DECODER)
            else:
                frame = frame.head(SAMPLES_PER_DECODER)
            label = ", ".join(f"{c.split('.', 1)[-1]}={_short(run[c])}" for c in matrix if not pd.isna(run[c]))
            title = f"{label or run['run_id']}, seed {run['seed']}" if "seed" in run else (label or run["run_id"])
            parts += [f'<h3>{e(str(title))} (<a href="{e(_href(path, page_dir))}">{e(name)}</a>)</h3>',
                      frame_html(frame[shown_columns])]
    if len(runs) > SAMPLE_RUNS and parts:
        parts.append(f"<p><em>{len(runs) - SAMPLE_RUNS} more configuration(s): their files are linked under "
                     "Runs.</em></p>")
    return parts


def _short(value: Any, digits: int = 6) -> Any:
    """A cell's value as the page shows it: whole floats without '.0', others to `digits` significant digits."""
    if isinstance(value, float) and not pd.isna(value):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.{digits}g}"
    return value


def frame_html(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "<p><em>no finished runs</em></p>"
    e = html.escape
    head = "".join(f"<th>{e(str(c))}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = "".join(_cell(v) for v in values)
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def verdicts_html(verdicts: list[Any]) -> str:
    e = html.escape
    rows = []
    for verdict in verdicts:
        row = verdict.as_row()
        css = "reproduced" if verdict.holds else "undecided" if verdict.undecided else "not-reproduced"
        rows.append(f"<tr><td>{e(row['claim'])}</td><td>{e(row['expected'])}</td><td>{e(row['measured'])}</td>"
                    f'<td class="{css}">{e(row["verdict"])}</td></tr>')
    return ("<table><thead><tr><th>claim</th><th>expected</th><th>measured</th><th>verdict</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "<td></td>"
    text = str(value)
    css = ' class="number"' if NUMBER.match(text) else ""
    return f"<td{css}>{html.escape(text)}</td>"


def _document(title: str, body: list[str]) -> str:
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no favicon request: the page loads nothing it does not show
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
        "",
    ])


def _href(target: Path, start: Path) -> str:
    """A relative link from a page in `start` to `target`, with forward slashes."""
    relative = os.path.relpath(target.resolve(), start.resolve())
    return "/".join(quote(part) for part in Path(relative).parts)
