"""What tuning found (tuning.md, a chart per tuned key, the report's Tuning section) and `table --untuned`.

Every results folder here is written by hand: runs.csv, experiment.yaml and the
tuning/trials.csv and best.csv that execution.tuning writes; nothing trains.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from seqkeras.reporting import tuning
from seqkeras.reporting.html import write_reports
from seqkeras.reporting.tuned_vs_untuned import tuning_in_columns
from seqkeras.spec.sections import ExperimentSpec
from tests.helpers import run_cli
from tests.test_plots_report import assert_drawn_png

SEARCH = {"train.optimizer.learning_rate": {"log_uniform": [0.001, 0.1]}, "model.units": {"integer": [4, 32]},
          "model.cell_kind": {"choice": ["plain", "peephole"]}}
LR, UNITS, KIND = (f"value.{key}" for key in SEARCH)
CELLS = ["simple_rnn", "lstm"]


def spec_document(name: str, tuned: bool, cells: list[str] = CELLS) -> dict:
    document = {"version": 1, "name": name, "task": {"name": "delayed_recall", "lag": 5},
                "model": {"kind": "classifier", "units": 8}, "train": {"epochs": 4},
                "matrix": {"model.cell": list(cells)}, "seeds": [0, 1, 2],
                "table": {"rows": "model.cell", "value": "accuracy"}}
    if tuned:
        document["tune"] = {"search": SEARCH, "trials": 4}
    return document


def trial_rows() -> list[dict]:
    """Four trials a cell: two complete, one pruned, one failed; the lstm's best is trial 2 (val_loss 0.2)."""
    rows = []
    for cell, shift in zip(CELLS, (0.3, 0.0)):
        study = f"cell={cell}_0123abcd"
        for trial, state, objective, lr, units, kind in [(1, "complete", 0.4, 0.002, 8, "plain"),
                                                         (2, "complete", 0.2, 0.02, 16, "peephole"),
                                                         (3, "pruned", 1.1, 0.09, 4, "plain"),
                                                         (4, "fail", None, 0.05, 32, "peephole")]:
            rows.append({"model.cell": cell, "study": study, "trial": trial, "state": state,
                         "objective": None if objective is None else objective + shift, LR: lr, UNITS: units,
                         KIND: kind, "epochs": 2 if state == "pruned" else 4, "seconds": 1.0,
                         "run_id": f"trial-00{trial}_{study}", "error": "boom" if state == "fail" else ""})
    return rows


def best_rows() -> list[dict]:
    return [{"model.cell": cell, "study": f"cell={cell}_0123abcd", "objective": "val_loss", "direction": "minimize",
             "best": 0.2 + shift, "best_trial": 2, "best.train.optimizer.learning_rate": 0.02, "best.model.units": 16,
             "best.model.cell_kind": "peephole", "median": 0.3 + shift, "best_minus_median": -0.1, "complete": 2,
             "pruned": 1, "failed": 1} for cell, shift in zip(CELLS, (0.3, 0.0))]


def results(root: Path, name: str, *, tuned: bool, cells: list[str] = CELLS, accuracy: float = 0.9) -> Path:
    """A results folder of `cells` × 3 seeds (tuned: with tuned.* columns and the two tuning files)."""
    folder = root / name
    folder.mkdir(parents=True)
    rows = []
    for index, cell in enumerate(cells):
        for seed in range(3):
            row = {"experiment": name, "run_id": f"cell={cell}_seed={seed}_0000", "status": "ok", "model.cell": cell}
            if tuned:
                row.update({"tuned.train.optimizer.learning_rate": 0.02, "tuned.model.units": 16,
                            "tuned.model.cell_kind": "peephole"})
            row.update({"seed": seed, "accuracy": accuracy - 0.1 * index + 0.01 * seed, "params": 100,
                        "train_seconds": 1.0, "backend": "torch", "error": ""})
            rows.append(row)
    pd.DataFrame(rows).to_csv(folder / "runs.csv", index=False)
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec_document(name, tuned, cells)), encoding="utf-8")
    if tuned:
        (folder / "tuning").mkdir()
        pd.DataFrame(trial_rows()).to_csv(folder / "tuning" / "trials.csv", index=False)
        pd.DataFrame(best_rows()).to_csv(folder / "tuning" / "best.csv", index=False)
    return folder


def spec_of(folder: Path) -> ExperimentSpec:
    return ExperimentSpec.model_validate(yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8")))


def write_report(folder: Path) -> list[str]:
    """write_tuning_report on the folder; returns what it said."""
    said: list[str] = []
    tuning.write_tuning_report(folder, spec_of(folder), said.append)
    return said


def table_lines(page: str) -> dict[str, str]:
    """The best table's rows of a tuning.md, by their first cell."""
    return {line.split("|")[1].strip(): line for line in page.splitlines()
            if line.startswith("| ") and not line.startswith("| model.cell")}


# --------------------------------------------------------------------------- #
# tuning.md and the charts
# --------------------------------------------------------------------------- #


def test_tuning_md_shows_each_point_s_best_setting_median_spread_and_trial_counts(tmp_path):
    folder = results(tmp_path, "tuned", tuned=True)
    said = write_report(folder)
    assert said == ["tuning: tuning.md, tuning_train-optimizer-learning_rate.png, tuning_model-units.png, "
                    "tuning_model-cell_kind.png"]
    page = (folder / "tuning.md").read_text(encoding="utf-8")
    header = next(line for line in page.splitlines() if line.startswith("| model.cell"))
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "model.cell", "best train.optimizer.learning_rate", "best model.units", "best model.cell_kind",
        "best val_loss", "best trial", "median val_loss", "best − median", "complete", "pruned", "failed"]
    rows = table_lines(page)
    assert [cell.strip() for cell in rows["lstm"].strip("|").split("|")] == [
        "lstm", "0.02", "16", "peephole", "0.2", "2", "0.3", "-0.1", "2", "1", "1"]
    assert [cell.strip() for cell in rows["simple_rnn"].strip("|").split("|")][4:7] == ["0.5", "2", "0.6"]
    assert "(lower is better)" in page
    for key in ("train-optimizer-learning_rate", "model-units", "model-cell_kind"):
        assert f"](tuning_{key}.png)" in page
        assert_drawn_png(folder / f"tuning_{key}.png")


def test_an_untuned_experiment_gets_no_tuning_page(tmp_path):
    folder = results(tmp_path, "plain", tuned=False)
    assert write_report(folder) == []
    assert not (folder / "tuning.md").exists() and not list(folder.glob("tuning_*.png"))


def found_of(folder: Path) -> tuning.Found:
    return tuning.read_found(folder, spec_of(folder).tune, lambda message: None, expected=True)


def test_each_chart_has_its_key_s_axis_every_drawn_trial_and_each_point_s_best_as_a_star(tmp_path):
    found = found_of(results(tmp_path, "tuned", tuned=True))
    learning_rate = tuning.draw_key_chart(found, "train.optimizer.learning_rate").axes[0]
    assert learning_rate.get_xscale() == "log"  # a log_uniform key
    units = tuning.draw_key_chart(found, "model.units").axes[0]
    assert units.get_xscale() == "linear"
    kind = tuning.draw_key_chart(found, "model.cell_kind").axes[0]
    assert [label.get_text() for label in kind.get_xticklabels()] == ["plain", "peephole"]  # a choice: categories
    # Per point: its complete trials filled, its pruned one hollow, its best a star; the failed one is not drawn.
    complete, pruned, star = (units.collections[i] for i in range(3))  # the first point's (simple_rnn's)
    assert complete.get_offsets().ravel().tolist() == pytest.approx([8, 0.7, 16, 0.5])
    assert pruned.get_offsets().ravel().tolist() == pytest.approx([4, 1.4]) and len(pruned.get_facecolor()) == 0
    assert star.get_offsets().ravel().tolist() == pytest.approx([16, 0.5])
    assert len(units.collections) == 6  # two points × (complete, pruned, best)
    assert "2 failed trial(s) not drawn" in units.figure.get_suptitle()


# --------------------------------------------------------------------------- #
# Missing or damaged tuning files: a warning, never a traceback
# --------------------------------------------------------------------------- #


def test_a_missing_best_csv_is_a_warning_and_the_best_table_comes_from_the_trials(tmp_path):
    folder = results(tmp_path, "tuned", tuned=True)
    (folder / "tuning" / "best.csv").unlink()
    said = write_report(folder)
    assert said[0] == f"warning: no {folder / 'tuning' / 'best.csv'}: the tuning of tuned shows without it"
    page = (folder / "tuning.md").read_text(encoding="utf-8")
    assert "computed from tuning/trials.csv" in page
    assert [cell.strip() for cell in table_lines(page)["lstm"].strip("|").split("|")] == [
        "lstm", "0.02", "16", "peephole", "0.2", "2", "0.3", "-0.1", "2", "1", "1"]


@pytest.mark.parametrize("damage, why", [
    ("not,a\ntrials,file\n", "is not a seqkeras trials.csv (no column study, trial, state, objective)"),
    ("", "cannot be read as CSV (EmptyDataError"),
    (b"\xff\xfe\x00", "is not UTF-8 text"),
], ids=["other-columns", "empty", "not-utf8"])
def test_a_damaged_trials_csv_is_a_warning_and_the_table_still_shows(tmp_path, damage, why):
    folder = results(tmp_path, "tuned", tuned=True)
    path = folder / "tuning" / "trials.csv"
    path.write_bytes(damage if isinstance(damage, bytes) else damage.encode())
    said = write_report(folder)
    assert len(said) == 2 and said[0].startswith(f"warning: {path}") and why in said[0], said
    assert said[1] == "tuning: tuning.md"  # no chart without the trials
    assert "| lstm " in (folder / "tuning.md").read_text(encoding="utf-8")


def test_a_tuning_file_that_is_a_link_is_not_followed(tmp_path):
    folder = results(tmp_path, "tuned", tuned=True)
    outside = tmp_path / "elsewhere.csv"
    (folder / "tuning" / "best.csv").rename(outside)
    os.symlink(outside, folder / "tuning" / "best.csv")
    said = write_report(folder)
    assert "is a symbolic link; links inside a results folder are not followed" in said[0]
    assert (folder / "tuning.md").is_file()


def test_no_tuning_files_at_all_is_a_warning_each_and_a_page_that_says_so(tmp_path):
    folder = results(tmp_path, "tuned", tuned=True)
    for name in ("trials.csv", "best.csv"):
        (folder / "tuning" / name).unlink()
    said = write_report(folder)
    assert [line.split(": the tuning")[0] for line in said[:2]] == [
        f"warning: no {folder / 'tuning' / 'trials.csv'}", f"warning: no {folder / 'tuning' / 'best.csv'}"]
    assert "_no tuning results could be read_" in (folder / "tuning.md").read_text(encoding="utf-8")


def test_an_error_while_writing_is_a_warning_never_an_exception(tmp_path, monkeypatch):
    folder = results(tmp_path, "tuned", tuned=True)
    monkeypatch.setattr(tuning, "best_table", lambda found: 1 / 0)
    assert write_report(folder) == [f"warning: {folder / 'tuning.md'} not written: ZeroDivisionError: division by zero"]


# --------------------------------------------------------------------------- #
# The report's Tuning section
# --------------------------------------------------------------------------- #


def test_the_report_has_a_tuning_section_with_its_charts_drawn_beside_the_page_only(tmp_path):
    tuned = results(tmp_path / "results", "tuned", tuned=True)
    plain = results(tmp_path / "results", "plain", tuned=False)
    before = sorted(p.name for p in tuned.iterdir())
    write_reports([tuned, plain], tmp_path / "site")
    page = (tmp_path / "site" / "tuned" / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="tuning">Tuning (tuning.md)</h2>' in page and "<td>peephole</td>" in page
    for key in ("train-optimizer-learning_rate", "model-units", "model-cell_kind"):
        assert f'<img src="tuning_{key}.png"' in page
        assert_drawn_png(tmp_path / "site" / "tuned" / f"tuning_{key}.png")
    assert sorted(p.name for p in tuned.iterdir()) == before  # --out: nothing written into the results
    assert 'id="tuning"' not in (tmp_path / "site" / "plain" / "report.html").read_text(encoding="utf-8")


def test_the_report_of_damaged_tuning_files_warns_and_renders(tmp_path, capsys):
    tuned = results(tmp_path, "tuned", tuned=True)
    (tuned / "tuning" / "trials.csv").write_text("garbage\n", encoding="utf-8")
    (tuned / "tuning" / "best.csv").unlink()
    write_reports([tuned], tmp_path / "site")
    err = capsys.readouterr().err
    assert "trials.csv is not a seqkeras trials.csv" in err and f"no {tuned / 'tuning' / 'best.csv'}" in err
    page = (tmp_path / "site" / "tuned" / "report.html").read_text(encoding="utf-8")
    assert "no tuning results could be read" in page and "<table>" in page  # the other tables still render


# --------------------------------------------------------------------------- #
# table --untuned
# --------------------------------------------------------------------------- #


@pytest.fixture
def two_sides(tmp_path):
    """The tuned results (simple_rnn, lstm) and the untuned ones (simple_rnn, lstm, gru), 0.1 less accurate."""
    tuned = results(tmp_path, "cells-tuned", tuned=True)
    untuned = results(tmp_path, "cells", tuned=False, cells=[*CELLS, "gru"], accuracy=0.8)
    return tuned, untuned


def test_table_untuned_sets_a_tuned_and_an_untuned_column_per_cell(capsys, two_sides):
    tuned, untuned = two_sides
    code, out, err = run_cli(capsys, "table", tuned, "--untuned", untuned)
    assert code == 0, err
    assert out.startswith(f"tuning: tuned = {tuned} (each matrix point's best setting")
    assert "## accuracy by model.cell × tuning" in out
    assert "| model.cell \\ tuning   | tuned         | untuned       |" in out
    assert "| lstm                  | 0.810 ± 0.010 | 0.710 ± 0.010 |" in out
    assert "gru" not in out.split("note:")[0]  # the untuned point the tuned results lack is left out …
    assert f"note: 3 run(s) of {untuned} left out: the tuned results have no matrix point model.cell=gru" in out


def test_table_untuned_with_a_pivot_and_a_baseline_tests_tuned_against_untuned(capsys, two_sides):
    tuned, untuned = two_sides
    code, out, err = run_cli(capsys, "table", tuned, "--untuned", untuned, "--rows", "model.cell",
                             "--value", "accuracy", "--baseline", "tuning=untuned", "--format", "csv")
    assert code == 0, err
    frame = pd.read_csv(pd.io.common.StringIO(out))
    assert list(frame.columns[:4]) == ["model.cell \\ tuning", "tuned mean", "tuned std", "tuned n"]
    lstm = frame.set_index("model.cell \\ tuning").loc["lstm"]
    assert lstm["tuned mean"] == pytest.approx(0.81) and lstm["untuned mean"] == pytest.approx(0.71)
    assert lstm["tuned verdict"] == "better" and lstm["untuned verdict"] == "baseline"
    assert "note: 3 run(s)" in err  # stdout is the CSV: the note goes to stderr


def test_the_table_of_every_run_gets_two_columns_per_metric_in_the_rows_order():
    frame = pd.DataFrame({"model.cell": ["b", "a", "b", "a"], "tuning": ["tuned", "tuned", "untuned", "untuned"],
                          "accuracy": ["1", "2", "3", "4"], "params": ["5", "6", "7", "8"]})
    wide = tuning_in_columns(frame, ["model.cell"])
    assert wide.columns.tolist() == ["model.cell \\ metric / tuning", "accuracy / tuned", "accuracy / untuned",
                                     "params / tuned", "params / untuned"]
    assert wide.values.tolist() == [["b", "1", "3", "5", "7"], ["a", "2", "4", "6", "8"]]


def test_table_untuned_without_a_declared_table_shows_every_metric_beside(capsys, two_sides):
    tuned, untuned = two_sides
    for folder in two_sides:
        spec = yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8"))
        del spec["table"]
        (folder / "experiment.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    code, out, err = run_cli(capsys, "table", tuned, "--untuned", untuned)
    assert code == 0, err
    assert "| model.cell \\ metric / tuning   | accuracy / tuned   | accuracy / untuned   |" in out
    assert "| lstm                           | 0.810 ± 0.010      | 0.710 ± 0.010        |" in out
    assert "tuned.model.units" not in out  # what tuning chose is tuning.md's, not a column here


def rename_matrix(folder: Path) -> None:
    runs = pd.read_csv(folder / "runs.csv").rename(columns={"model.cell": "task.lag"})
    runs.to_csv(folder / "runs.csv", index=False)
    (folder / "experiment.yaml").unlink()


@pytest.mark.parametrize("make_untuned, message", [
    (lambda tmp, tuned: tmp / "nope", "--untuned {untuned}: no such results folder or runs.csv"),
    (lambda tmp, tuned: (tmp / "empty").mkdir() or tmp / "empty", "--untuned: no runs.csv in {untuned}"),
    (lambda tmp, tuned: tuned, "--untuned {untuned} names the tuned results themselves"),
    (lambda tmp, tuned: results(tmp, "tuned-too", tuned=True), "--untuned {untuned}: its runs are tuned too"),
    (lambda tmp, tuned: rename_matrix(results(tmp, "other", tuned=False)) or tmp / "other",
     "--untuned {untuned}: its matrix columns (task.lag) are not the tuned results' (model.cell)"),
    (lambda tmp, tuned: results(tmp, "disjoint", tuned=False, cells=["gru"]),
     "--untuned {untuned}: none of its runs is at a matrix point of {tuned} (its points: model.cell=gru)"),
], ids=["missing", "no-runs-csv", "itself", "tuned-too", "other-matrix", "no-shared-point"])
def test_table_untuned_refuses_bad_input_in_one_line(capsys, tmp_path, make_untuned, message):
    tuned = results(tmp_path, "cells-tuned", tuned=True)
    untuned = make_untuned(tmp_path, tuned)
    code, out, err = run_cli(capsys, "table", tuned, "--untuned", untuned)
    assert code == 2 and out == ""
    assert err.startswith("error: " + message.format(untuned=untuned, tuned=tuned)) and err.count("\n") == 1, err


def test_table_untuned_of_results_that_are_not_tuned_is_refused(capsys, tmp_path):
    plain = results(tmp_path, "plain", tuned=False)
    other = results(tmp_path, "other", tuned=False)
    code, _, err = run_cli(capsys, "table", plain, "--untuned", other)
    assert code == 2 and err.startswith(f"error: {plain} holds no tuned runs")


def test_results_give_a_tuned_experiments_trials_and_chosen_settings():
    import seqkeras

    results = Path(__file__).resolve().parent.parent / "results"
    tuned = seqkeras.load(results / "cells-long-range-tuned")
    trials, best = tuned.tuning()
    assert len(trials) == 60 and len(best) == 12  # 12 matrix points × 5 trials each
    assert trials.groupby("point").size().eq(5).all()
    assert (best["best_trial"] >= 1).all() and "best.train.optimizer.learning_rate" in best
    assert seqkeras.load(results / "cells-long-range").tuning() == (None, None)
