"""Tables that explain themselves: each names its row and column keys (Markdown, terminal, CSV, report), its
digits follow one rule per table, the report's Runs table shows the metrics, and `--baseline` marks every cell
and says in the title when there are too few seeds to test."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from seqkeras.reporting.formatting import CellNumbers, cell_texts, mean_std
from tests.helpers import run_cli

COLUMNS = ["experiment", "run_id", "status", "model.cell", "model.bidirectional", "seed", "accuracy",
           "cross_entropy", "train_seconds", "params", "backend", "error"]


def results(root: Path, seeds: int, declared: dict | None = None) -> Path:
    """lstm (the baseline) and gru, each bidirectional or not, over `seeds` seeds: gru's accuracy is higher
    and its cross-entropy lower on every seed by about 0.05; its train_seconds higher by 10."""
    folder = root / "exp"
    folder.mkdir()
    rows = []
    for cell, shift in (("lstm", 0.0), ("gru", 0.05)):
        for bidirectional in (False, True):
            for seed in range(seeds):
                wobble = [0.01, -0.012, 0.004, 0.0][seed]
                rows.append(["exp", f"{cell}_{bidirectional}_{seed}", "ok", cell, bidirectional, seed,
                             0.7 + shift + wobble, 0.9 - shift + wobble, 30 + 200 * shift + seed / 10,
                             1000 + seed, "tensorflow", ""])
    pd.DataFrame(rows, columns=COLUMNS).to_csv(folder / "runs.csv", index=False)
    table = declared or {"rows": "model.cell", "columns": "model.bidirectional", "value": "accuracy"}
    spec = {"version": 1, "name": "exp", "table": table}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    (folder / "plots.json").write_text("[]", encoding="utf-8")  # no plot to draw for the report
    return folder


def markdown_rows(out: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("|") and not line.startswith("|:")]


# --------------------------------------------------------------------------- #
# The digit rule
# --------------------------------------------------------------------------- #


def test_a_spread_sets_the_mean_s_last_digit_and_has_two_significant_digits():
    assert cell_texts([CellNumbers(0.7377777, 0.0121905, 3)]) == ["0.738 ± 0.012"]
    assert cell_texts([CellNumbers(0.75699346, 0.00045282, 3)]) == ["0.75699 ± 0.00045"]
    assert cell_texts([CellNumbers(0.078107, 0.0026, 3), CellNumbers(0.8019, 0.0073, 3)]) == \
        ["0.0781 ± 0.0026", "0.8019 ± 0.0073"]  # the report's mixed cells, each to what its spread supports
    assert cell_texts([CellNumbers(647934.0, 2812.0, 3)]) == ["647900 ± 2800"]  # to hundreds, no exponent
    assert cell_texts([CellNumbers(0.5, 0.0996, 3)]) == ["0.50 ± 0.10"]  # 0.0996 rounds up a decimal place
    assert cell_texts([CellNumbers(3.3031e-06, 1.234e-07, 3)]) == ["3.30e-06 ± 1.2e-07"]


def test_cells_without_a_spread_follow_the_table_they_are_in():
    # Beside cells with a spread: the finest decimal place among them.
    assert cell_texts([CellNumbers(0.7377, 0.012, 3), CellNumbers(0.91, math.nan, 1),
                       CellNumbers(0.7569, 0.00045, 3), CellNumbers(1.0, 0.0, 3)]) == \
        ["0.738 ± 0.012", "0.91000", "0.75690 ± 0.00045", "1.00000 ± 0"]
    # A table with no spread at all: 5 significant digits, trailing zeros kept, whole numbers whole.
    assert cell_texts([CellNumbers(0.8808, math.nan, 1), CellNumbers(15268.0, math.nan, 1),
                       CellNumbers(3.30312e-06, math.nan, 1), CellNumbers(103.2249, math.nan, 1)]) == \
        ["0.88080", "15268", "3.3031e-06", "103.22"]
    assert mean_std(pd.Series([0.5, 0.5])) == "0.50000 ± 0"  # seeds that agree: told apart from one seed
    assert mean_std(pd.Series(["w", "v", "w"])) == "v / w"  # texts as they are


# --------------------------------------------------------------------------- #
# Keys: Markdown and terminal, CSV, Python
# --------------------------------------------------------------------------- #


def test_markdown_and_csv_name_the_row_and_column_keys(tmp_path, capsys):
    folder = results(tmp_path, seeds=3)
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0, err
    header, *rows = markdown_rows(out)
    assert header == ["model.cell \\ model.bidirectional", "False", "True"]
    # gru beats lstm by 0.05 on every seed: in each column gru is the best, lstm worse beyond chance (paired).
    assert rows == [["lstm", "0.701 ± 0.011 [worse]", "0.701 ± 0.011 [worse]"],
                    ["gru", "0.751 ± 0.011 [best]", "0.751 ± 0.011 [best]"]]
    assert "[best]: the best mean of its column; [worse]: worse than it beyond chance (p < 0.05" in out
    code, out, err = run_cli(capsys, "table", folder, "--format", "csv")
    frame = pd.read_csv(io.StringIO(out))
    assert code == 0 and frame.columns[0] == "model.cell \\ model.bidirectional"
    assert frame.columns[1:4].tolist() == ["False mean", "False std", "False n"]
    # A pivot chosen on the command line is titled by its keys too, and names them in its corner.
    code, out, _ = run_cli(capsys, "table", folder, "--rows", "model.bidirectional", "--columns", "model.cell",
                           "--value", "train_seconds")
    assert code == 0 and out.startswith("## train_seconds by model.bidirectional × model.cell\n")
    assert markdown_rows(out)[0] == ["model.bidirectional \\ model.cell", "lstm", "gru"]


def test_the_python_table_keeps_the_key_s_own_name_and_says_its_keys_in_attrs(tmp_path):
    import seqkeras

    frame = seqkeras.load(results(tmp_path, seeds=3)).table(rows="model.cell", columns="model.bidirectional",
                                                              value="accuracy")
    assert frame.columns[0] == "model.cell"  # to index by
    assert frame.attrs["rows"] == ["model.cell"] and frame.attrs["columns"] == ["model.bidirectional"]


# --------------------------------------------------------------------------- #
# --baseline: 2 seeds against 3
# --------------------------------------------------------------------------- #


def test_with_two_seeds_the_title_says_too_few_and_every_cell_is_marked(tmp_path, capsys):
    folder = results(tmp_path, seeds=2)
    code, out, err = run_cli(capsys, "table", folder, "--baseline", "model.cell=lstm")
    assert code == 0, err
    assert out.startswith("## accuracy by model.cell × model.bidirectional (against model.cell = lstm; too few "
                          "seeds to test: 2 pairs, 3 needed)\n")
    header, lstm, gru = markdown_rows(out)
    assert [cell.rsplit(" ", 1)[1] for cell in lstm[1:] + gru[1:]] == ["[base]", "[base]", "[?]", "[?]"]
    assert "[?]: too few seeds to test (under 3 pairs, or 3 seeds a side)" in out


@pytest.mark.parametrize("value, gru_mark", [
    ("accuracy", "[better]"),  # higher, and higher is better
    ("cross_entropy", "[better]"),  # lower, and lower is better
    ("train_seconds", "[higher]"),  # no better direction: which way it differs
])
def test_with_three_seeds_cells_say_which_way_they_differ(tmp_path, capsys, value, gru_mark):
    folder = results(tmp_path, seeds=3)
    code, out, err = run_cli(capsys, "table", folder, "--rows", "model.cell", "--columns", "model.bidirectional",
                             "--value", value, "--baseline", "model.cell=lstm")
    assert code == 0, err
    assert out.startswith(f"## {value} by model.cell × model.bidirectional (against model.cell = lstm)\n")
    _, lstm, gru = markdown_rows(out)
    assert [cell.rsplit(" ", 1)[1] for cell in lstm[1:]] == ["[base]", "[base]"]
    assert [cell.rsplit(" ", 1)[1] for cell in gru[1:]] == [gru_mark, gru_mark]
    code, out, _ = run_cli(capsys, "table", folder, "--rows", "model.cell", "--columns", "model.bidirectional",
                           "--value", value, "--baseline", "model.cell=lstm", "--format", "csv")
    verdicts = pd.read_csv(io.StringIO(out)).set_index("model.cell \\ model.bidirectional")["False verdict"]
    assert verdicts.to_dict() == {"lstm": "baseline", "gru": gru_mark.strip("[]")}


def test_a_cell_not_shown_to_differ_is_marked_so(tmp_path, capsys):
    folder = results(tmp_path, seeds=3)
    code, out, _ = run_cli(capsys, "table", folder, "--rows", "model.cell", "--columns", "model.bidirectional",
                           "--value", "accuracy", "--baseline", "model.bidirectional=False")
    _, lstm, gru = markdown_rows(out)  # True and False hold the same numbers: a difference of 0
    assert code == 0 and lstm[2].endswith(" [n.s.]") and gru[1].endswith(" [base]")


# --------------------------------------------------------------------------- #
# The report
# --------------------------------------------------------------------------- #


def test_the_report_names_keys_marks_cells_and_shows_each_run_s_metric(tmp_path, capsys):
    folder = results(tmp_path, seeds=2)
    code, out, err = run_cli(capsys, "report", folder, "--out", tmp_path / "report",
                             "--baseline", "model.cell=lstm")
    assert code == 0, err
    page = (tmp_path / "report" / "exp" / "report.html").read_text(encoding="utf-8")
    tables = page.split("<h2>Tables</h2>")[1].split("<h2")[0]
    assert "<h3>accuracy by model.cell × model.bidirectional (against model.cell = lstm; too few seeds to test: " \
           "2 pairs, 3 needed)</h3>" in tables
    assert "<th>model.cell \\ model.bidirectional</th><th>False</th><th>True</th>" in tables
    assert '<td class="number">0.749 ± 0.016 [?]</td>' in tables  # gru, not bidirectional: seeds 0 and 1
    assert '<p class="legend">Each cell against its baseline cell (model.cell = lstm' in tables
    runs = page.split('id="runs"')[1]
    head = runs.split("</thead>")[0]
    assert "<th>status</th><th>accuracy</th><th>parameters</th>" in head
    assert '<td class="number">0.76000</td>' in runs  # gru, seed 0: one value, 5 significant digits


def test_a_report_baseline_an_experiment_lacks_leaves_its_tables_unmarked_and_says_why(tmp_path, capsys):
    folder = results(tmp_path, seeds=3)
    code, _, err = run_cli(capsys, "report", folder, "--out", tmp_path / "report", "--baseline", "task.lag=5")
    page = (tmp_path / "report" / "exp" / "report.html").read_text(encoding="utf-8")
    assert code == 0, err
    assert "tables not marked against task.lag = 5: --baseline: unknown column &#x27;task.lag&#x27;" in page
    assert "[base]" not in page and "<th>model.cell \\ model.bidirectional</th>" in page


def test_a_table_says_per_row_how_many_of_its_runs_were_still_improving(tmp_path, capsys):
    folder = results(tmp_path, seeds=3)
    runs = pd.read_csv(folder / "runs.csv")
    runs["still_improving"] = [run_id in {"gru_False_0", "gru_True_2"} for run_id in runs["run_id"]]
    runs.to_csv(folder / "runs.csv", index=False)
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0, err
    header, *rows = markdown_rows(out)
    assert header[-1] == "still improving"
    assert [row[0] for row in rows] == ["lstm", "gru"] and [row[-1] for row in rows] == ["0 of 6", "2 of 6"]
    runs["still_improving"] = False  # none: no column
    runs.to_csv(folder / "runs.csv", index=False)
    assert "still improving" not in run_cli(capsys, "table", folder)[1]


def test_the_table_of_every_run_marks_each_metrics_best_too(tmp_path, capsys):
    folder = results(tmp_path, seeds=3)
    (folder / "experiment.yaml").write_text(yaml.safe_dump({"version": 1, "name": "exp"}), encoding="utf-8")
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0, err
    header, *rows = markdown_rows(out)
    accuracy = [row[header.index("accuracy")] for row in rows]
    # gru (both directions) is 0.05 above lstm on every seed: the best is a gru row, each lstm row worse.
    assert sum(text.endswith("[best]") for text in accuracy) == 1
    assert all(text.endswith("[worse]") for row, text in zip(rows, accuracy) if "lstm" in row)
    assert "[best]: the best mean of its column" in out
