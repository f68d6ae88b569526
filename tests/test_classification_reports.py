"""Comparing classifiers and configurations: macro and per-class scores, the confusion matrix (file and plot),
the report's chart of the main metric per configuration, and `table --baseline`'s markers over seeds."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from seqkeras.evaluation import classification
from seqkeras.evaluation.metric_catalog import DEFAULT_METRICS, METRICS
from seqkeras.reporting.metric_chart import CHART_FILE, configuration_stats, main_metric
from seqkeras.reporting.plots import plot_folder, read_manifest
from seqkeras.spec.sections import TableSpec
from seqkeras.tasks.base import CLASSIFICATION
from seqkeras.training.predictions import Predictions
from tests.helpers import run_cli

# --------------------------------------------------------------------------- #
# Macro and per-class scores
# --------------------------------------------------------------------------- #


def predictions(true: list[int], predicted: list[int], labels: list[str]) -> Predictions:
    return Predictions(np.eye(len(labels))[predicted], np.array(true), labels=labels)


# Four classes: a is half recalled, b over-predicted, c never predicted, d neither true nor predicted.
BY_HAND = predictions([0, 0, 1, 1, 2], [0, 1, 1, 1, 1], ["a", "b", "c", "d"])


def test_macro_scores_and_per_class_table_by_hand():
    # a: P 1/1, R 1/2, F1 2/3; b: P 2/4, R 2/2, F1 2·2/(4+2) = 2/3; c: P 0 (never predicted), R 0, F1 0;
    # d is in neither the test labels nor the predictions, so it is not one of the classes averaged.
    assert classification.macro_precision(BY_HAND) == pytest.approx((1 + 0.5 + 0) / 3)
    assert classification.macro_recall(BY_HAND) == pytest.approx((0.5 + 1 + 0) / 3)
    assert classification.macro_f1(BY_HAND) == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)
    table = classification.per_class_table(BY_HAND)
    assert list(table.columns) == ["class", "precision", "recall", "f1", "support"]
    assert list(table["class"]) == ["a", "b", "c", "d"] and list(table["support"]) == [2, 2, 1, 0]
    assert table["f1"].iloc[:3].tolist() == pytest.approx([2 / 3, 2 / 3, 0.0])
    assert table.iloc[3][["precision", "recall", "f1"]].isna().all()  # undefined, not a made-up 0
    confusion = classification.confusion_table(BY_HAND)
    assert list(confusion.columns) == ["true", "a", "b", "c", "d"]
    assert confusion.set_index("true").to_numpy().tolist() == [[1, 1, 0, 0], [0, 2, 0, 0], [0, 1, 0, 0],
                                                               [0, 0, 0, 0]]


def test_macro_scores_match_scikit_learn_zero_division_0():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(20):
        classes = int(rng.integers(2, 6))
        true, guessed = rng.integers(0, classes, 12), rng.integers(0, classes, 12)
        p = predictions(true.tolist(), guessed.tolist(), [f"c{i}" for i in range(classes)])
        for name, reference in (("f1", metrics.f1_score), ("precision", metrics.precision_score),
                                ("recall", metrics.recall_score)):
            expected = reference(true, guessed, average="macro", zero_division=0)
            assert getattr(classification, f"macro_{name}")(p) == pytest.approx(expected, abs=1e-12)


def test_macro_metrics_are_opt_in_and_listed(capsys):
    # The defaults are hashed into every run's id: adding to them would orphan the committed results.
    assert DEFAULT_METRICS[CLASSIFICATION] == ["accuracy"]
    for name in ("macro_f1", "macro_precision", "macro_recall"):
        assert set(METRICS.get(name).computes) == {CLASSIFICATION}
        assert "zero_division=0" in METRICS.get(name).summary
    code, listing, _ = run_cli(capsys, "list")
    assert code == 0 and "macro_f1 — " in listing and "macro_recall — " in listing


# --------------------------------------------------------------------------- #
# A tiny classification run: its files, the confusion plot, the report's chart
# --------------------------------------------------------------------------- #

CLASSIFIER_SPEC = """
    version: 1
    name: classes
    task: {name: delayed_recall, lag: 2, n_train: 32, n_test: 16}
    model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
    train: {epochs: 1, batch_size: 16, verbose: 0, keep_model: false}
    evaluate: {metrics: [accuracy, macro_f1, macro_precision, macro_recall]}
    seeds: [0, 1]
"""


def test_a_classification_run_writes_its_confusion_and_per_class_files_and_their_plot(write_spec, tmp_path, capsys):
    out = tmp_path / "results"
    code, _, err = run_cli(capsys, "run", write_spec(CLASSIFIER_SPEC), "--out", out)
    assert code == 0, err
    folder = out / "classes"
    runs = pd.read_csv(folder / "runs.csv")
    assert {"macro_f1", "macro_precision", "macro_recall"} <= set(runs.columns)
    assert runs["macro_f1"].between(0, 1).all()
    for run_id in runs["run_id"]:
        confusion = pd.read_csv(folder / run_id / "confusion.csv", keep_default_na=False)
        names = list(confusion.columns[1:])
        assert confusion.columns[0] == "true" and list(confusion["true"]) == names and len(names) >= 2
        assert confusion[names].to_numpy().sum() == 16  # every test sequence once
        per_class = pd.read_csv(folder / run_id / "per_class.csv", keep_default_na=False)
        assert list(per_class.columns) == ["class", "precision", "recall", "f1", "support"]
        assert list(per_class["class"]) == names and per_class["support"].sum() == 16
    plots = {entry["file"]: entry for entry in read_manifest(folder)}
    assert "confusion.png" in plots and (folder / "confusion.png").stat().st_size > 1000
    # the report shows the main metric per configuration, by default (the spec declares no plot)
    assert run_cli(capsys, "report", folder)[0] == 0
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "Test metric per configuration" in page and f'<img src="{CHART_FILE}.png"' in page
    assert (folder / f"{CHART_FILE}.png").is_file() and '<img src="confusion.png"' in page


def write_confusion(folder, run_id: str, text: str) -> None:
    (folder / run_id).mkdir(parents=True, exist_ok=True)
    (folder / run_id / "confusion.csv").write_text(text, encoding="utf-8")


def test_a_missing_or_malformed_confusion_file_is_left_out_with_a_warning(tmp_path, capsys):
    folder = tmp_path / "exp"
    rows = [["exp", f"r{i}", "ok", cell, seed, 0.5] for i, (cell, seed) in
            enumerate([("lstm", 0), ("lstm", 1), ("gru", 0), ("gru", 1), ("rnn", 0)])]
    folder.mkdir()
    runs = pd.DataFrame(rows, columns=["experiment", "run_id", "status", "model.cell", "seed", "accuracy"])
    runs.to_csv(folder / "runs.csv", index=False)
    write_confusion(folder, "r0", "true,neg,pos\nneg,5,1\npos,2,7\n")
    write_confusion(folder, "r1", "true,neg,pos\nneg,x,1\npos,2,7\n")  # not a count
    write_confusion(folder, "r2", "label,neg\nneg,3\n")  # no true column
    write_confusion(folder, "r3", "true,neg,pos\nneg,-1,1\npos,2,7\n")  # a negative count
    (folder / "r4").mkdir()
    os.symlink("/etc/hostname", folder / "r4" / "confusion.csv")  # never followed
    written = plot_folder(folder, [], ["model.cell"], runs)
    assert folder / "confusion.png" in written
    err = capsys.readouterr().err
    assert "r1/confusion.csv holds a count that is not a number ≥ 0; left out of its plot" in err
    assert "r2/confusion.csv has no 'true' column" in err and "r3/confusion.csv holds a count" in err
    assert "r4/confusion.csv is a symbolic link" in err
    # lstm's first seed was the one drawable file: without it there is no confusion plot at all
    (folder / "r0" / "confusion.csv").unlink()
    assert folder / "confusion.png" not in plot_folder(folder, [], ["model.cell"], runs)
    assert "confusion.png" not in {entry["file"] for entry in read_manifest(folder)}


def test_the_charts_metric_is_the_first_tables_value_else_the_first_numeric_metric():
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "status": ["ok"] * 4, "model.cell": ["x", "x", "y", "y"],
                         "seed": [0, 1, 0, 1], "output": ["w", "w", "w", "w"], "loss": [1.0, 2.0, 3.0, 5.0],
                         "accuracy": [0.5, 0.7, 0.2, 0.2], "params": [10] * 4})
    assert main_metric(runs, [TableSpec(rows="model.cell", value="accuracy")], ["model.cell"]) == "accuracy"
    assert main_metric(runs, [], ["model.cell"]) == "loss"  # "output" is text: no bar of it
    stats = configuration_stats(runs, "accuracy", ["model.cell"])
    assert stats[["label", "n"]].values.tolist() == [["cell=x", 2], ["cell=y", 2]]
    assert stats["mean"].tolist() == pytest.approx([0.6, 0.2]) and stats["std"].iloc[1] == 0
    assert main_metric(runs.assign(status="failed"), [], ["model.cell"]) is None


# --------------------------------------------------------------------------- #
# table --baseline
# --------------------------------------------------------------------------- #

LSTM = [0.60, 0.62, 0.61, 0.63]


def baseline_results(root: Path) -> Path:
    """lag 5 and 20 × lstm (seeds 0-3, the baseline), gru (the same seeds: paired), rnn (seeds 10-12: Welch),
    tiny (seeds 20-21: too few); gru differs at lag 5 only."""
    folder = root / "exp"
    folder.mkdir()
    rows = []

    def add(cell, lag, seeds, values):
        rows.extend(["exp", f"{cell}_{lag}_{s}", "ok", cell, lag, s, v, "tensorflow", ""]
                    for s, v in zip(seeds, values))

    for lag in (5, 20):
        add("lstm", lag, range(4), LSTM)
        shift = [0.05, 0.051, 0.049, 0.05] if lag == 5 else [0.02, -0.02, 0.01, -0.01]
        add("gru", lag, range(4), [a + b for a, b in zip(LSTM, shift)])
        add("rnn", lag, [10, 11, 12], [0.30, 0.31, 0.32])
        add("tiny", lag, [20, 21], [0.9, 0.95])
    columns = ["experiment", "run_id", "status", "model.cell", "task.lag", "seed", "accuracy", "backend", "error"]
    pd.DataFrame(rows, columns=columns).to_csv(folder / "runs.csv", index=False)
    spec = {"version": 1, "name": "exp", "table": {"rows": "task.lag", "columns": "model.cell", "value": "accuracy"}}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    return folder


def test_baseline_marks_cells_paired_unpaired_and_with_too_few_seeds(tmp_path, capsys):
    folder = baseline_results(tmp_path)
    code, out, err = run_cli(capsys, "table", folder, "--baseline", "model.cell=lstm")
    assert code == 0, err
    table = pd.read_csv(io.StringIO("\n".join(line for line in out.splitlines() if line.startswith("|")
                                              and not line.startswith("|:"))), sep="|").iloc[:, 1:-1]
    table.columns = [c.strip() for c in table.columns]
    cells = {(str(row["task.lag \\ model.cell"]).strip(), cell): str(row[cell]).strip() for _, row in table.iterrows()
             for cell in ("lstm", "gru", "rnn", "tiny")}
    # accuracy: higher is better. gru is higher on paired seeds, rnn lower (Welch: other seeds).
    assert cells["5", "gru"].endswith(" [better]") and cells["5", "rnn"].endswith(" [worse]")
    assert cells["20", "gru"].endswith(" [n.s.]")  # a mean difference of 0: not shown to differ
    assert cells["5", "tiny"].endswith(" [?]") and cells["20", "tiny"].endswith(" [?]")
    assert cells["5", "lstm"].endswith(" [base]")  # the baseline itself
    # Some cells had too few seeds: the title says how many of them, and how many seeds they had.
    assert "## accuracy by task.lag × model.cell (against model.cell = lstm; 2 of 6 cells with too few seeds to " \
           "test: 2 seeds a side, 3 needed)" in out
    assert "Each cell against its baseline cell (model.cell = lstm, the same other keys): [base] the baseline" in out
    assert "[?]: too few seeds to test" in out


def test_baseline_csv_carries_p_values_tests_and_verdicts(tmp_path, capsys):
    from scipy import stats

    folder = baseline_results(tmp_path)
    code, out, _ = run_cli(capsys, "table", folder, "--rows", "task.lag", "--columns", "model.cell",
                           "--value", "accuracy", "--baseline", "model.cell=lstm", "--format", "csv")
    assert code == 0
    frame = pd.read_csv(io.StringIO(out), keep_default_na=False).set_index("task.lag \\ model.cell")
    assert ["gru mean", "gru std", "gru n", "gru p_value", "gru test", "gru verdict"] == \
        [c for c in frame.columns if c.startswith("gru ")]
    assert frame.loc[5, "lstm verdict"] == "baseline"
    assert (frame.loc[5, "gru test"], frame.loc[5, "gru verdict"]) == ("paired t", "better")
    gru = [a + b for a, b in zip(LSTM, [0.05, 0.051, 0.049, 0.05])]
    assert float(frame.loc[5, "gru p_value"]) == pytest.approx(stats.ttest_rel(gru, LSTM).pvalue)
    assert (frame.loc[5, "rnn test"], frame.loc[5, "rnn verdict"]) == ("Welch t", "worse")
    assert float(frame.loc[5, "rnn p_value"]) == pytest.approx(
        stats.ttest_ind([0.30, 0.31, 0.32], LSTM, equal_var=False).pvalue)
    assert frame.loc[20, "gru verdict"] == "not shown to differ" and float(frame.loc[20, "gru p_value"]) > 0.05
    assert (frame.loc[20, "tiny verdict"], frame.loc[20, "tiny p_value"]) == ("too few seeds", "")


def test_baseline_in_the_table_of_every_run_compares_rows(tmp_path, capsys):
    folder = baseline_results(tmp_path)
    (folder / "experiment.yaml").unlink()  # no declared table: a row per configuration, a column per metric
    code, out, _ = run_cli(capsys, "table", folder, "--baseline", "task.lag=20", "--format", "csv")
    frame = pd.read_csv(io.StringIO(out), keep_default_na=False)
    verdicts = dict(zip(zip(frame["model.cell"], frame["task.lag"]), frame["accuracy verdict"]))
    assert code == 0 and verdicts["lstm", 20] == "baseline" and verdicts["gru", 5] == "better"
    assert verdicts["lstm", 5] == "not shown to differ" and verdicts["tiny", 5] == "too few seeds"


@pytest.mark.parametrize("args, message", [
    (["--baseline", "model.cell"], "error: --baseline expects KEY=VALUE"),
    (["--baseline", "model.cel=lstm"], "error: --baseline: unknown column 'model.cel'. Did you mean 'model.cell'?"),
    (["--baseline", "model.cell=transformer"],
     "error: --baseline: no finished run has model.cell = 'transformer'; its values are: lstm, gru, rnn, tiny"),
    (["--baseline", "task.lag=5", "--rows", "model.cell", "--value", "accuracy", "--pool", "task.lag"],
     "error: --baseline: task.lag is not a row or column of the table 'accuracy by model.cell'"),
])
def test_a_bad_baseline_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    code, out, err = run_cli(capsys, "table", baseline_results(tmp_path), *args)
    assert code == 2 and out == "" and err.startswith(message) and len(err.strip().splitlines()) == 1


def test_a_declared_table_without_the_baseline_key_is_shown_unmarked_with_a_warning(tmp_path, capsys):
    folder = baseline_results(tmp_path)
    spec = {"version": 1, "name": "exp", "table": [
        {"rows": "task.lag", "columns": "model.cell", "value": "accuracy"},
        {"rows": "model.cell", "value": "accuracy", "pool": ["task.lag"]}]}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    code, out, err = run_cli(capsys, "table", folder, "--baseline", "task.lag=5")
    assert code == 0 and " [worse] |" in out.split("## accuracy by model.cell\n")[0]  # gru at lag 20
    assert " [" not in out.split("## accuracy by model.cell\n")[1]
    assert "--baseline task.lag: not a row or column of the table 'accuracy by model.cell'" in err


@pytest.mark.parametrize("baseline", ["model.cell=lstm", {"model.cell": "lstm"}])
def test_the_python_api_table_takes_a_baseline_as_the_command_does(tmp_path, capsys, baseline):
    import seqkeras

    folder = baseline_results(tmp_path)
    code, out, _ = run_cli(capsys, "table", folder, "--rows", "task.lag", "--columns", "model.cell",
                           "--value", "accuracy", "--baseline", "model.cell=lstm", "--format", "csv")
    # The command's CSV names its corner by both keys; the Python frame keeps the row key's name, to index by.
    command = pd.read_csv(io.StringIO(out), keep_default_na=False).set_index("task.lag \\ model.cell")
    table = seqkeras.load(folder).table(rows="task.lag", columns="model.cell", value="accuracy",
                                        baseline=baseline).set_index("task.lag")
    assert code == 0 and list(table.columns) == list(command.columns)
    assert table["gru verdict"].tolist() == command["gru verdict"].tolist() == ["better", "not shown to differ"]
    assert table["rnn p_value"].tolist() == pytest.approx(command["rnn p_value"].astype(float).tolist())


@pytest.mark.parametrize("baseline, message", [
    ({"model.cell": "lstm", "task.lag": 5}, "baseline: expected a \"KEY=VALUE\" text or a mapping of one key"),
    (["model.cell=lstm"], "baseline: expected a \"KEY=VALUE\" text"),
    ("model.cell=transformer", "no finished run has model.cell = 'transformer'"),
])
def test_a_bad_baseline_in_the_python_api_is_a_spec_error(tmp_path, baseline, message):
    import seqkeras
    from seqkeras.errors import SpecError

    results = seqkeras.load(baseline_results(tmp_path))
    with pytest.raises(SpecError, match=re.escape(message)):
        results.table(rows="task.lag", columns="model.cell", value="accuracy", baseline=baseline)
