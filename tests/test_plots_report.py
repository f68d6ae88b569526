"""Plots (declared and natural), the HTML report, and the report page in a real headless browser."""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from seqkeras.cli import main
from seqkeras.errors import SpecError
from seqkeras.reporting.html import write_reports
from seqkeras.reporting.plots import plot_folder, read_manifest
from seqkeras.spec.loader import build_experiment
from seqkeras.spec.sections import PlotSpec
from tests.conftest import TINY_TRAINING_SPEC

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- #
# Small results folders, written by hand (no training)
# --------------------------------------------------------------------------- #


def training_results(root: Path) -> Path:
    """cells × lags × 3 seeds of accuracy, each run with a history.csv."""
    folder = root / "sweep"
    rows = []
    for cell_index, cell in enumerate(["simple_rnn", "lstm"]):
        for lag in [5, 20, 50]:
            for seed in range(3):
                run_id = f"cell={cell}_lag={lag}_seed={seed}_0000"
                accuracy = 0.5 + 0.4 * cell_index * (1 - lag / 100) + 0.01 * seed
                rows.append(["sweep", run_id, "ok", cell, lag, seed, accuracy, "x y", 1000, 1.0, "tensorflow", ""])
                history = pd.DataFrame({"epoch": [1, 2, 3], "loss": [1.0, 0.7 - 0.01 * seed, 0.5],
                                        "accuracy": [0.5, 0.6, accuracy], "val_loss": [1.1, 0.8, 0.6],
                                        "val_accuracy": [0.45, 0.55, accuracy - 0.05]})
                (folder / run_id).mkdir(parents=True)
                history.to_csv(folder / run_id / "history.csv", index=False)
    columns = ["experiment", "run_id", "status", "model.cell", "task.lag", "seed", "accuracy", "output",
               "params", "train_seconds", "backend", "error"]
    pd.DataFrame(rows, columns=columns).to_csv(folder / "runs.csv", index=False)
    spec = {"version": 1, "name": "sweep", "description": "A <small> sweep & its plots.",
            "table": {"rows": "task.lag", "columns": "model.cell", "value": "accuracy"},
            "expect": [{"claim": "lstm beats simple_rnn", "where": {"model.cell": "lstm", "task.lag": 5},
                        "metric": "accuracy", "greater_than": {"where": {"model.cell": "simple_rnn", "task.lag": 5}}}],
            "plots": [{"x": "task.lag", "y": "accuracy", "hue": "model.cell"}]}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    return folder


def probe_results(root: Path) -> Path:
    """Two runs of a made-up probe, each with every curve the lesson probes write."""
    folder = root / "probes"
    rows = []
    steps = np.arange(0, 20)
    tokens = ["the", "keys", "to", "the", "cabinet"]
    for radius in [0.8, 1.2]:
        run_id = f"spectral_radius={radius}_seed=0_0000"
        run = folder / run_id
        run.mkdir(parents=True)
        pd.DataFrame({"steps_back": steps, "grad_norm": radius ** -steps * 0.5 ** steps,
                      "linear_grad_norm": radius ** steps}).to_csv(run / "gradient_norms.csv", index=False)
        pd.DataFrame({"step": steps + 1, "c": 0.9 ** steps,
                      "h": 0.7 * 0.9 ** steps}).to_csv(run / "memory.csv", index=False)
        states = pd.DataFrame({"step": range(1, 6), "token": tokens})
        for cell in range(4):
            states[f"cell_{cell}"] = np.tanh(np.linspace(-1, 1, 5) * (cell + 1) * radius)
        states.to_csv(run / "states.csv", index=False)
        pd.DataFrame({"step": range(1, 6), "token": tokens, "influence": 0.3 ** np.arange(5)}).to_csv(
            run / "influence.csv", index=False)
        pd.DataFrame({"word": ["dog", "cat"], "count": [5, 4], "probability": [0.5, 0.4]}).to_csv(
            run / "next_word.csv", index=False)
        rows.append(["probes", run_id, "ok", radius, 0, 0.5 * radius, "", 0.1, "tensorflow", ""])
    columns = ["experiment", "run_id", "status", "probe.spectral_radius", "seed", "grad_norm_10",
               "params", "train_seconds", "backend", "error"]
    pd.DataFrame(rows, columns=columns).to_csv(folder / "runs.csv", index=False)
    spec = {"version": 1, "name": "probes", "probe": {"name": "gradient_flow"},
            "matrix": {"probe.spectral_radius": [0.8, 1.2]}}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    return folder


def seq2seq_results(root: Path) -> Path:
    """Two seq2seq runs (with and without attention), each with attention.csv and by_length.csv."""
    folder = root / "seq2seq"
    source, output = list("abcd"), list("dcba") + ["</s>"]
    rows = []
    for attention in ["luong", "none"]:
        run_id = f"attention={attention}_seed=0_0000"
        run = folder / run_id
        run.mkdir(parents=True)
        # Reversal: output step t attends to source position 3 - t.
        weights = [{"output_position": t, "output_token": output[t], "source_position": s, "source_token": source[s],
                    "weight": 0.9 if s == 3 - t else 0.1 / 3} for t in range(len(output)) for s in range(len(source))]
        pd.DataFrame(weights).to_csv(run / "attention.csv", index=False)
        pd.DataFrame({"decoder": ["greedy"] * 3, "bucket": ["1-20", "21-40", "41-60"], "length_min": [1, 21, 41],
                      "length_max": [20, 40, 60], "bleu": [99.0, 90.0, 40.0 if attention == "none" else 95.0],
                      "exact_match": [0.9, 0.7, 0.1]}).to_csv(run / "by_length.csv", index=False)
        rows.append(["seq2seq", run_id, "ok", attention, 0, 80.0, "", 1.0, "tensorflow", ""])
    columns = ["experiment", "run_id", "status", "model.attention", "seed", "bleu", "params", "train_seconds",
               "backend", "error"]
    pd.DataFrame(rows, columns=columns).to_csv(folder / "runs.csv", index=False)
    return folder


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    return struct.unpack(">II", data[16:24])


def assert_drawn_png(path: Path) -> None:
    """A PNG with real pixels: not empty, not one flat colour."""
    import matplotlib.image

    width, height = png_size(path)
    assert width > 100 and height > 100
    pixels = matplotlib.image.imread(path)
    assert pixels.std() > 0.01, f"{path.name} is blank"


# --------------------------------------------------------------------------- #
# Plots
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "plot",
    [
        {"x": "task.lag", "y": "accuracy", "hue": "model.cell", "kind": "line"},
        {"x": "task.lag", "y": "accuracy", "hue": "model.cell", "kind": "bar", "logy": True},
        {"x": "task.lag", "y": "accuracy", "kind": "scatter", "logx": True, "facet": "model.cell"},
        {"x": "model.cell", "y": "accuracy", "kind": "line", "errorbars": False, "where": {"task.lag": 5},
         "title": "lag 5", "file": "lag5"},
    ],
    ids=["line", "bar", "scatter-facet", "categorical-x"],
)
def test_each_declared_plot_kind_renders_a_png(tmp_path, plot):
    folder = training_results(tmp_path)
    runs = pd.read_csv(folder / "runs.csv")
    spec = PlotSpec(**plot)
    written = plot_folder(folder, [spec], ["model.cell", "task.lag"], runs)
    path = folder / f"{spec.default_file()}.png"
    assert path in written
    assert_drawn_png(path)
    assert read_manifest(folder)[0] == {"file": path.name, "title": spec.default_title(), "source": "spec"}


def test_natural_plots_of_probe_curves_and_learning_curves(tmp_path):
    probes = probe_results(tmp_path)
    written = plot_folder(probes, [], ["probe.spectral_radius"], pd.read_csv(probes / "runs.csv"))
    assert [p.name for p in written] == [
        "gradient_norms.png", "memory.png", "states.png", "influence.png", "next_word.png"]
    for path in written:
        assert_drawn_png(path)
    training = training_results(tmp_path)
    written = plot_folder(training, [], ["model.cell", "task.lag"], pd.read_csv(training / "runs.csv"))
    assert [p.name for p in written] == ["learning_curves.png"]
    assert_drawn_png(written[0])


def test_seq2seq_runs_get_an_attention_heatmap_and_quality_by_length(tmp_path):
    folder = seq2seq_results(tmp_path)
    written = plot_folder(folder, [], ["model.attention"], pd.read_csv(folder / "runs.csv"))
    assert [p.name for p in written] == ["attention.png", "by_length.png"]
    for path in written:
        assert_drawn_png(path)
    assert [entry["source"] for entry in read_manifest(folder)] == ["attention", "by_length"]


def test_a_plot_that_cannot_be_drawn_is_a_warning_and_the_others_are_written(tmp_path, capsys):
    folder = training_results(tmp_path)
    plots = [PlotSpec(x="task.lag", y="no_such_metric"), PlotSpec(x="task.lag", y="output"),
             PlotSpec(x="task.lag", y="accuracy")]
    written = plot_folder(folder, plots, ["model.cell", "task.lag"], pd.read_csv(folder / "runs.csv"))
    assert [p.name for p in written] == ["accuracy_by_task-lag.png", "learning_curves.png"]
    err = capsys.readouterr().err
    assert "no column 'no_such_metric'" in err and "text metrics cannot be plotted" in err


def test_plots_no_longer_drawn_are_removed_but_other_files_are_kept(tmp_path):
    folder = training_results(tmp_path)
    runs = pd.read_csv(folder / "runs.csv")
    for run_id in runs["run_id"]:  # no learning curves: only the declared plot matters here
        shutil.rmtree(folder / run_id)
    (folder / "mine.png").write_bytes(PNG_SIGNATURE)
    plot_folder(folder, [PlotSpec(x="task.lag", y="accuracy", file="old")], ["task.lag"], runs)
    assert (folder / "old.png").is_file()
    plot_folder(folder, [PlotSpec(x="task.lag", y="accuracy", file="new")], ["task.lag"], runs)
    assert not (folder / "old.png").exists() and (folder / "new.png").is_file() and (folder / "mine.png").is_file()


def test_plot_specs_are_validated_with_the_spec(write_spec):
    base = TINY_TRAINING_SPEC + "    plots:\n      - {x: task.lag, y: accuracy}\n"
    raw = yaml.safe_load(textwrap.dedent(base))
    with pytest.raises(SpecError, match=r"plots\[0\]\.x: task.lag is 3 in every run, not a matrix key: nothing to "
                       r"lay out by it; use a key that varies \(model.cell, seed\)"):
        build_experiment(raw, source="s", overrides=[])
    raw["plots"] = [{"x": "task.lagg", "y": "accuracy"}]
    with pytest.raises(SpecError, match=r"plots\[0\]\.x: unknown matrix key 'task.lagg'"):
        build_experiment(raw, source="s", overrides=[])
    raw["plots"] = [{"x": "model.cell", "y": "accuracy", "kind": "pie"}]
    with pytest.raises(SpecError, match=r"plots\[0\]\.kind: 'pie' is not allowed.*Allowed: line, bar, scatter"):
        build_experiment(raw, source="s", overrides=[])
    raw["plots"] = [{"x": "model.cell", "y": "accuracy", "colour": "model.cell"}]
    with pytest.raises(SpecError, match=r"unknown key 'colour'"):
        build_experiment(raw, source="s", overrides=[])
    raw["plots"] = [{"x": "model.cell", "y": "accuracy", "kind": "bar", "logx": True}]
    with pytest.raises(SpecError, match="logx does not apply to bar plots"):
        build_experiment(raw, source="s", overrides=[])
    raw["plots"] = [{"x": "seed", "y": ["accuracy"], "hue": "model.cell", "where": {"model.cell": "lstm"}}]
    assert build_experiment(raw, source="s", overrides=[]).spec.plots[0].hue == "model.cell"


@pytest.mark.slow
def test_run_writes_plots_and_a_failing_plot_loses_no_result(write_spec, tmp_path, capsys, monkeypatch):
    spec = write_spec(TINY_TRAINING_SPEC + textwrap.indent(textwrap.dedent("""\
        plots:
          - {x: model.cell, y: accuracy, kind: bar}
          - {x: model.cell, y: accuracy, title: breaks}
    """), "    "))
    import seqkeras.reporting.plots

    # A misspelt metric is refused by validation; a plot can still fail while it is drawn.
    draw = seqkeras.reporting.plots.draw_declared

    def draw_or_break(plot, *args):
        if plot.title == "breaks":
            raise ValueError("this plot breaks")
        return draw(plot, *args)

    monkeypatch.setattr(seqkeras.reporting.plots, "draw_declared", draw_or_break)
    out = tmp_path / "results"
    code = main(["run", str(spec), "--out", str(out), "--set", "seeds=[0]", "--set", "model.cell=[lstm]"])
    captured = capsys.readouterr()
    assert code == 0
    folder = out / "tiny"
    assert_drawn_png(folder / "accuracy_by_model-cell_bar.png")
    assert_drawn_png(folder / "learning_curves.png")
    assert "plot accuracy_by_model-cell.png" in captured.err and "this plot breaks" in captured.err
    assert "plots: accuracy_by_model-cell_bar.png" in captured.out

    def broken(*args, **kwargs):
        raise RuntimeError("no fonts today")

    monkeypatch.setattr(seqkeras.reporting.plots, "plan_plots", broken)
    (folder / "runs.csv").unlink()
    code = main(["run", str(spec), "--out", str(out), "--set", "seeds=[0]", "--set", "model.cell=[lstm]"])
    captured = capsys.readouterr()
    assert code == 0 and "no plots written" in captured.err and "no fonts today" in captured.err
    assert (folder / "runs.csv").is_file() and (folder / "table.md").is_file()


# --------------------------------------------------------------------------- #
# The HTML report
# --------------------------------------------------------------------------- #


def test_report_pages_show_description_tables_verdicts_and_plots(tmp_path, capsys):
    training_results(tmp_path)
    probe_results(tmp_path)
    code = main(["report", str(tmp_path)])
    assert code == 0
    page = (tmp_path / "sweep" / "report.html").read_text(encoding="utf-8")
    assert "<title>sweep — seqkeras report</title>" in page
    assert "A &lt;small&gt; sweep &amp; its plots." in page  # escaped
    assert "accuracy by task.lag × model.cell" in page and "<th>lstm</th>" in page
    assert 'class="reproduced"' in page and "1 of 1 reproduced" in page
    assert '<img src="accuracy_by_task-lag_by_model-cell.png"' in page and '<img src="learning_curves.png"' in page
    assert '<a href="../index.html">' in page
    assert "<script" not in page and "http://" not in page and "https://" not in page
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert '<a href="probes/report.html">probes</a>' in index and '<a href="sweep/report.html">sweep</a>' in index
    # plots were drawn for results that had none
    assert (tmp_path / "probes" / "gradient_norms.png").is_file()
    assert f"wrote {tmp_path / 'index.html'}" in capsys.readouterr().out


def test_report_out_folder_is_self_contained(tmp_path):
    results = tmp_path / "results"
    training_results(results)
    out = tmp_path / "site"
    index, pages = write_reports([results / "sweep"], out)
    assert index == out / "index.html" and pages == [out / "sweep" / "report.html"]
    # results without plots.json get their plots drawn for the report, into --out: the results are input
    drawn = read_manifest(out / "sweep")
    assert drawn and all((out / "sweep" / entry["file"]).is_file() for entry in drawn)
    assert read_manifest(results / "sweep") is None and not list((results / "sweep").glob("*.png"))
    # results with plots.json (a report beside them draws them there) have those copied beside the page
    write_reports([results / "sweep"])
    write_reports([results / "sweep"], tmp_path / "second-site")
    for entry in read_manifest(results / "sweep"):
        assert (tmp_path / "second-site" / "sweep" / entry["file"]).read_bytes() == \
            (results / "sweep" / entry["file"]).read_bytes()


def test_report_of_a_missing_folder_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such results folder" in capsys.readouterr().err


# --------------------------------------------------------------------------- #
# The page in a real browser (Chromium headless, driven over the DevTools protocol)
# --------------------------------------------------------------------------- #

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--remote-debugging-pipe",
]


def chromium_or_skip() -> str:
    binary = next((shutil.which(name) for name in ("chromium", "chromium-browser") if shutil.which(name)), None)
    if binary is None:
        reason = "chromium is not installed (make test installs it with apt-get when run as root)"
        pytest.skip(reason if shutil.which("apt-get") else reason + "; no apt-get on this machine")
    try:
        subprocess.run([binary, "--version"], capture_output=True, timeout=30, check=True)
    except (subprocess.SubprocessError, OSError) as error:
        pytest.skip(f"{binary} does not run here: {error}")
    return binary


class Chromium:
    """Headless Chromium speaking the DevTools protocol over a pipe (fd 3 in, fd 4 out): no port, no network."""

    def __init__(self, binary: str, profile: str):
        command_read, self._commands = os.pipe()
        self._replies, reply_write = os.pipe()

        def onto_fds_3_and_4():
            high_read = fcntl.fcntl(command_read, fcntl.F_DUPFD, 100)
            high_write = fcntl.fcntl(reply_write, fcntl.F_DUPFD, 100)
            os.dup2(high_read, 3)
            os.dup2(high_write, 4)

        self.process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=onto_fds_3_and_4,
        )
        os.close(command_read)
        os.close(reply_write)
        self._buffer = b""
        self._id = 0
        self.events: list[dict] = []

    def send(self, method: str, session: str | None = None, timeout: float = 30, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._receive(deadline))

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)


def browse(binary: str, pages: list[Path]) -> list[dict]:
    """Open each page from its file; for each: title, images (src, naturalWidth) and every console/log error."""
    results = []
    with tempfile.TemporaryDirectory() as profile:
        browser = Chromium(binary, profile)
        try:
            target = browser.send("Target.createTarget", url="about:blank")["targetId"]
            session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                browser.send(f"{domain}.enable", session)
            for page in pages:
                browser.events.clear()
                browser.send("Page.navigate", session, url=page.resolve().as_uri())
                browser.wait_for("Page.loadEventFired")
                found = browser.send("Runtime.evaluate", session, returnByValue=True, expression="""
                    JSON.stringify({title: document.title, links: document.links.length,
                                    images: Array.from(document.images).map(
                                        image => ({src: image.getAttribute('src'), complete: image.complete,
                                                   width: image.naturalWidth}))})""")
                result = json.loads(found["result"]["value"])
                result["errors"] = console_errors(browser.events)
                results.append(result)
        finally:
            browser.close()
    return results


def console_errors(events: list[dict]) -> list[str]:
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert", "warning"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            errors.append("exception: " + params["exceptionDetails"].get("text", ""))
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            errors.append(f"log: {params['entry']['text']} {params['entry'].get('url', '')}")
    return errors


@pytest.mark.system
def test_the_browser_check_notices_a_broken_image_and_a_console_error(tmp_path):
    """The harness itself: a page with a missing image and a console error must fail it."""
    binary = chromium_or_skip()
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><title>broken</title></head><body>'
                    '<img src="missing.png"><script>console.error("boom")</script></body></html>')
    (result,) = browse(binary, [page])
    assert result["images"] == [{"src": "missing.png", "complete": True, "width": 0}]
    assert any("boom" in e for e in result["errors"])
    assert any("ERR_FILE_NOT_FOUND" in e for e in result["errors"])


@pytest.mark.system
def test_report_pages_load_in_a_headless_browser_with_every_image_and_no_errors(tmp_path):
    binary = chromium_or_skip()
    results = tmp_path / "results"
    training_results(results)
    probe_results(results)
    index, pages = write_reports([results])
    loaded = browse(binary, [index, *pages])
    assert [r["title"] for r in loaded] == ["seqkeras results", "probes — seqkeras report", "sweep — seqkeras report"]
    assert loaded[0]["links"] == 2
    for page, result in zip([index, *pages], loaded):
        assert result["errors"] == [], f"{page}: {result['errors']}"
        for image in result["images"]:
            assert image["complete"] and image["width"] > 0, f"{page}: {image['src']} did not load"
    # each page's plots, and first its chart of the main metric per configuration
    assert len(loaded[1]["images"]) == 6 and len(loaded[2]["images"]) == 3
    assert loaded[1]["images"][0]["src"] == loaded[2]["images"][0]["src"] == "metric_by_configuration.png"


def test_curves_of_matrix_points_that_differ_in_a_key_only_one_sets_get_different_labels(tmp_path):
    """Two GRUs, one with chrono and one without: their curves must not be drawn (and averaged) as one."""
    from seqkeras.reporting.curves import read_curves as _read_curves

    folder = tmp_path / "gru"
    rows = []
    for index, chrono in enumerate(["", "100"]):
        run_id = f"gru_{index}_seed=0"
        (folder / run_id).mkdir(parents=True)
        pd.DataFrame({"epoch": [1, 2], "loss": [1.0, 0.5]}).to_csv(folder / run_id / "history.csv", index=False)
        rows.append(f"{run_id},ok,gru,{chrono},0")
    (folder / "runs.csv").write_text("run_id,status,model.cell,model.chrono,seed\n" + "\n".join(rows) + "\n")
    runs = pd.read_csv(folder / "runs.csv")
    curves = _read_curves(folder, runs, "history", ["model.cell", "model.chrono"])
    assert [curve.label for curve in curves] == ["chrono=-", "chrono=100"]


# --------------------------------------------------------------------------- #
# Plots at the scale of a sweep; the report's runs and samples (issue 21)
# --------------------------------------------------------------------------- #


def test_learning_curves_are_small_multiples_along_the_matrix_axes(tmp_path):
    """2 cells × 3 lags × 3 seeds: a row per lag, a column per quantity, a line (the mean of 3 seeds) per cell,
    one legend outside the panels, and each panel saying what it shows."""
    from seqkeras.reporting.curve_drawings import draw_learning_curves
    from seqkeras.reporting.curves import axis_groups, read_curves as _read_curves

    folder = training_results(tmp_path)
    runs = pd.read_csv(folder / "runs.csv")
    curves = _read_curves(folder, runs, "history", ["task.lag", "model.cell"],
                          axis_groups(["task.lag", "model.cell"], ["task.lag", "model.cell"]))
    figure = draw_learning_curves(curves)
    axes = [ax for ax in figure.axes if ax.get_visible()]
    assert len(axes) == 3 * 2  # lags × (loss, accuracy)
    assert [ax.get_title() for ax in axes[::2]] == ["lag=5", "lag=20", "lag=50"]  # numeric order, not text order
    assert {ax.get_ylabel() for ax in axes} == {"loss", "accuracy"}
    for ax in axes:
        assert ax.get_legend() is None
        solid = [line for line in ax.get_lines() if line.get_linestyle() == "-"]
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        assert len(solid) == 2 and len(dashed) == 2  # a training and a validation line per cell, seeds pooled
    [legend] = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == [
        "cell=lstm", "cell=simple_rnn", "training set", "validation (held-out share of training)"]
    assert "mean ± std over 3 seeds" in figure._suptitle.get_text()
    # Without axes known (a results folder's own spec missing), each section is one axis: the same layout.
    assert axis_groups(["task.lag", "model.cell"], None) == [["task.lag"], ["model.cell"]]
    plot_folder(folder, [], ["task.lag", "model.cell"], runs, axes=["task.lag", "model.cell"])
    assert_drawn_png(folder / "learning_curves.png")


def test_quality_by_length_pools_seeds_into_one_line_per_configuration(tmp_path):
    from seqkeras.reporting.curve_drawings import draw_by_length
    from seqkeras.reporting.curves import read_curves as _read_curves

    folder = seq2seq_results(tmp_path)
    runs = pd.read_csv(folder / "runs.csv")
    for run_id in list(runs["run_id"]):  # a second seed of each, with other scores
        copy = folder / run_id.replace("seed=0", "seed=1")
        shutil.copytree(folder / run_id, copy)
        frame = pd.read_csv(copy / "by_length.csv")
        frame["bleu"] -= 10
        frame.to_csv(copy / "by_length.csv", index=False)
    runs = pd.concat([runs, runs.assign(run_id=runs["run_id"].str.replace("seed=0", "seed=1"), seed=1)])
    curves = _read_curves(folder, runs, "by_length", ["model.attention"])
    figure = draw_by_length(curves)
    bleu = figure.axes[0]
    assert [line.get_label() for line in bleu.get_lines()] == ["attention=luong", "attention=none"]
    assert list(bleu.get_lines()[0].get_ydata()) == [94.0, 85.0, 90.0]  # the mean of the two seeds
    assert bleu.get_legend() is None and len(figure.legends) == 1


def test_report_has_a_row_per_run_with_links_to_its_files_and_sample_outputs(tmp_path):
    import re

    results = tmp_path / "results"
    folder = seq2seq_results(results)
    for run_id in pd.read_csv(folder / "runs.csv")["run_id"]:
        pd.DataFrame({"decoder": ["greedy"] * 5 + ["beam"] * 5, "pair": list(range(5)) * 2,
                      "source": [f"source {i}" for i in range(5)] * 2, "reference": ["ref"] * 10,
                      "output": [f"{run_id} says {i}" for i in range(10)], "log_prob": [-1.0] * 10}).to_csv(
            folder / run_id / "outputs.csv", index=False)
    for out in (None, tmp_path / "site"):  # beside the results, and in a folder of its own
        _, [page_path] = write_reports([folder], out)
        page = page_path.read_text(encoding="utf-8")
        assert '<h2 id="runs">Runs (2)</h2>' in page and "<th>parameters</th>" in page and "<th>status</th>" in page
        # Sample outputs: the first 3 of each decoder, of each configuration.
        assert '<h2 id="samples">Sample outputs</h2>' in page
        assert "attention=luong_seed=0_0000 says 2" in page and "attention=luong_seed=0_0000 says 3" not in page
        assert "attention=none_seed=0_0000 says 7" in page  # beam's third
        links = [link for link in re.findall(r'href="([^"]+)"', page)
                 if not link.endswith(".html") and link != "data:,"]
        assert len(links) >= 2 * 4  # each run's folder and files
        for link in links:
            from urllib.parse import unquote

            assert (page_path.parent / unquote(link)).exists(), link
