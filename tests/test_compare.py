"""`seqkeras compare`: joins, differences, seed noise, one-sided rows, tolerance exit codes."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from seqkeras.reporting.compare import compare_paths, compare_runs, key_text, paired_test
from tests.conftest import REPO
from tests.helpers import run_cli

COLUMNS = ["experiment", "run_id", "status", "model.cell", "task.lag", "seed", "accuracy", "output",
           "params", "train_seconds", "backend", "error"]


def runs_table(rows: list[tuple], experiment: str = "cells") -> pd.DataFrame:
    """rows: (cell, lag, seed, accuracy, output)."""
    return pd.DataFrame(
        [[experiment, f"cell={c}_lag={lag}_seed={s}", "ok", c, lag, s, acc, out, 100, 1.0, "tensorflow", ""]
         for c, lag, s, acc, out in rows],
        columns=COLUMNS,
    )


A_ROWS = [
    ("lstm", 5, 0, 0.90, "a b"), ("lstm", 5, 1, 0.92, "a b"), ("lstm", 5, 2, 0.91, "a b"),
    ("gru", 5, 0, 0.80, "c d"), ("gru", 5, 1, 0.82, "c d"), ("gru", 5, 2, 0.81, "c d"),
    ("lstm", 50, 0, 0.70, "e f"),  # missing from B
]
B_ROWS = [
    ("lstm", 5, 0, 0.91, "a b"), ("lstm", 5, 1, 0.90, "a b"), ("lstm", 5, 2, 0.925, "a b"),  # seed noise
    ("gru", 5, 0, 0.90, "c d"), ("gru", 5, 1, 0.94, "c d"), ("gru", 5, 2, 0.89, "X"),  # +0.1, one text differs
    ("simple_rnn", 5, 0, 0.5, "g"),  # only in B
]


def write_results(root, name: str, frame: pd.DataFrame):
    folder = root / name
    folder.mkdir(parents=True)
    frame.to_csv(folder / "runs.csv", index=False)
    return folder


@pytest.fixture
def folders(tmp_path):
    a = write_results(tmp_path / "a", "cells", runs_table(A_ROWS))
    b = write_results(tmp_path / "b", "cells", runs_table(B_ROWS))
    return a, b


def test_rows_join_on_matrix_keys_and_seed_with_differences(folders):
    a, b = folders
    report = compare_paths(a, b)
    (comparison,) = report.comparisons
    assert comparison.keys == ["model.cell", "task.lag", "seed"]
    assert comparison.metrics == ["accuracy", "output"]
    per_run = comparison.per_run.set_index(["model.cell", "seed", "metric"])
    gru0 = per_run.loc[("gru", "0", "accuracy")]
    assert gru0["a"] == pytest.approx(0.80) and gru0["b"] == pytest.approx(0.90)
    assert gru0["difference"] == pytest.approx(0.10)
    assert gru0["relative"] == pytest.approx(0.125)
    assert per_run.loc[("gru", "2", "output")]["difference"] == "different"
    assert per_run.loc[("gru", "1", "output")]["difference"] == "equal"
    assert not comparison.per_run["outside"].any()  # no tolerance, nothing fails


def test_rows_on_one_side_are_listed_not_dropped(folders):
    a, b = folders
    (comparison,) = compare_paths(a, b).comparisons
    assert comparison.only_in_a[["model.cell", "task.lag", "seed"]].values.tolist() == [["lstm", "50", "0"]]
    assert comparison.only_in_b[["model.cell", "task.lag", "seed"]].values.tolist() == [["simple_rnn", "5", "0"]]
    assert comparison.only_in_a["run_id"].iloc[0] == "cell=lstm_lag=50_seed=0"


def test_over_seeds_a_systematic_shift_exceeds_seed_noise_and_noise_does_not(folders):
    a, b = folders
    (comparison,) = compare_paths(a, b, metrics=["accuracy"]).comparisons
    over = comparison.over_seeds.set_index(["model.cell", "metric"])
    gru = over.loc[("gru", "accuracy")]
    assert gru["seeds"] == 3
    assert gru["mean_difference"] == pytest.approx(0.10)
    assert gru["std_difference"] == pytest.approx(0.02)
    assert gru["p_value"] < 0.05 and gru["beyond_seed_noise"] == "yes"
    assert gru["ci_low"] > 0
    lstm = over.loc[("lstm", "accuracy")]
    assert lstm["p_value"] > 0.05 and lstm["beyond_seed_noise"] == "no"
    assert lstm["ci_low"] < 0 < lstm["ci_high"]
    # a matrix point with a single matched seed gets no over-seed row
    assert ("simple_rnn", "accuracy") not in over.index


def test_paired_test_edge_cases():
    assert paired_test(pd.Series([0.25, 0.25, 0.25]).to_numpy())[0] == 0.0  # the same shift on every seed
    assert paired_test(pd.Series([0.1, 0.1, 0.1]).to_numpy())[0] < 1e-10  # (float rounding: nearly so)
    assert paired_test(pd.Series([0.0, 0.0, 0.0]).to_numpy())[0] == 1.0
    p, low, high = paired_test(pd.Series([1.0, -1.0, 0.5, -0.5]).to_numpy())
    assert p > 0.5 and low < 0 < high


def test_two_seeds_give_mean_and_std_but_no_test(tmp_path):
    a = runs_table([("lstm", 5, 0, 0.9, "x"), ("lstm", 5, 1, 0.8, "x")])
    b = runs_table([("lstm", 5, 0, 1.0, "x"), ("lstm", 5, 1, 0.9, "x")])
    comparison = compare_runs(a, b, metrics=["accuracy"])
    row = comparison.over_seeds.iloc[0]
    assert row["mean_difference"] == pytest.approx(0.1) and math.isnan(row["p_value"])
    assert row["beyond_seed_noise"].startswith("n/a")


def test_key_values_join_across_number_formats():
    assert key_text(1.0) == key_text(1) == "1"
    assert key_text(0.8) == "0.8" and key_text(float("nan")) == "-" and key_text("lstm") == "lstm"
    a = pd.DataFrame({"run_id": ["r"], "status": ["ok"], "probe.width": [1.0], "seed": [0], "p": [0.5]})
    b = pd.DataFrame({"run_id": ["r"], "status": ["ok"], "probe.width": [1], "seed": [0], "p": [0.5]})
    comparison = compare_runs(a, b)
    assert comparison.only_in_a.empty and comparison.only_in_b.empty
    assert comparison.per_run["difference"].tolist() == [0.0]


def test_inf_equals_inf_and_failed_runs_show_as_status_differences():
    a = pd.DataFrame({"run_id": ["r", "s"], "status": ["ok", "ok"], "m.k": [1, 2], "seed": [0, 0],
                      "half_life": [math.inf, 3.0]})
    b = pd.DataFrame({"run_id": ["r", "s"], "status": ["ok", "failed"], "m.k": [1, 2], "seed": [0, 0],
                      "half_life": [math.inf, math.nan]})
    comparison = compare_runs(a, b, tolerance=0.0)
    rows = comparison.per_run.set_index(["m.k", "metric"])
    assert rows.loc[("1", "half_life")]["difference"] == 0.0
    assert rows.loc[("2", "status")]["difference"] == "different"
    reasons = comparison.outside_tolerance()
    assert any("status" in r for r in reasons) and any("one side only" in r for r in reasons)


def test_markdown_output_shows_per_run_over_seeds_and_one_sided_rows(folders, capsys):
    a, b = folders
    code, out, err = run_cli(capsys, "compare", a, b)
    assert code == 0 and err == ""
    assert "### Per run" in out and "### Over seeds" in out
    assert "### Only in A (1 row(s))" in out and "### Only in B (1 row(s))" in out
    assert "| gru" in out and "+0.1" in out and "different" in out
    assert "No tolerance given" in out


def test_csv_output_is_one_table_with_levels(folders, capsys):
    a, b = folders
    code, out, _ = run_cli(capsys, "compare", a / "runs.csv", b / "runs.csv", "--format", "csv")
    assert code == 0
    frame = pd.read_csv(io.StringIO(out))
    assert set(frame["level"]) == {"run", "over_seeds", "only_in_a", "only_in_b"}
    assert {"model.cell", "seed", "metric", "a", "b", "difference", "relative", "p_value"} <= set(frame.columns)


def test_tolerance_exit_codes(tmp_path, folders, capsys):
    a, b = folders
    # A rerun that differs only by rounding noise: within a tolerance of 1e-6, outside 1e-12.
    noisy = runs_table([(c, lag, s, acc + 1e-9, out) for c, lag, s, acc, out in A_ROWS])
    c = write_results(tmp_path / "c", "cells", noisy)
    code, out, _ = run_cli(capsys, "compare", a, c, "--tolerance", "1e-6")
    assert code == 0 and "Within tolerance 1e-06" in out
    code, out, _ = run_cli(capsys, "compare", a, c, "--tolerance", "1e-12")
    assert code == 1 and "OUTSIDE tolerance 1e-12" in out and "|difference|" in out
    assert "OUTSIDE" in out.split("### Per run")[1]
    # B: differences beyond 0.2 in none, but a text differs and rows are on one side only
    code, out, _ = run_cli(capsys, "compare", a, b, "--metric", "accuracy", "--tolerance", "0.2")
    assert code == 1 and "row only in A" in out and "row only in B" in out
    code, out, _ = run_cli(capsys, "compare", a, a, "--tolerance", "0")
    assert code == 0


def test_bad_input_exits_2_with_a_message(tmp_path, folders, capsys):
    a, _ = folders
    code, out, err = run_cli(capsys, "compare", a, tmp_path / "nowhere")
    assert code == 2 and "nowhere: no such file or folder" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "compare", a, a, "--metric", "acuracy")
    assert code == 2 and "Did you mean 'accuracy'?" in err
    code, _, err = run_cli(capsys, "compare", a, a, "--on", "model.cel")
    assert code == 2 and "Did you mean 'model.cell'?" in err
    code, _, err = run_cli(capsys, "compare", a, a, "--on", "model.cell")
    assert code == 2 and "not unique" in err
    code, _, err = run_cli(capsys, "compare", a, a, "--tolerance", "-1")
    assert code == 2 and "--tolerance" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(capsys, "compare", a, tmp_path / "empty")
    assert code == 2 and "holds no runs.csv" in err


def test_results_roots_compare_experiments_by_name(tmp_path, capsys):
    for root in ("a", "b"):
        write_results(tmp_path / root, "cells", runs_table(A_ROWS))
    write_results(tmp_path / "a", "extra", runs_table(A_ROWS[:1], experiment="extra"))
    report = compare_paths(tmp_path / "a", tmp_path / "b", tolerance=0.0)
    assert [c.name for c in report.comparisons] == ["cells"]
    assert report.experiments_only_in_a == ["extra"]
    code, out, _ = run_cli(capsys, "compare", tmp_path / "a", tmp_path / "b", "--tolerance", "0")
    assert code == 1 and "experiment only in A: extra" in out and "## cells" in out


def test_committed_lesson_results_compare_equal_to_themselves(capsys):
    code, out, _ = run_cli(capsys, "compare", REPO / "results", REPO / "results", "--tolerance", "0")
    assert code == 0, out
    assert "## lesson-decoding" in out and "the dog </s>" in out
