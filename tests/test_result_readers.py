"""Readers of results never crash and never silently mix.

`table`, `compare`, `report`, `table --rebuild` and a run's resume checkpoint,
each fed damaged or foreign files: every one is an error naming the file and
what is wrong (exit 2), or a warning while the command goes on where it safely
can, and never a traceback. Tables pool over seeds only; `compare` compares one
experiment with itself, says what the specs differ in, and tests unpaired seeds
with Welch's t-test. Results folders are built with the suite's own writers; no
training, except one tiny run that resumes from a damaged checkpoint.
"""

from __future__ import annotations

import io
import json
import math
import shutil
import textwrap

import numpy as np
import pandas as pd
import pytest
import yaml

from seqkeras.errors import SpecError
from seqkeras.reporting.compare import WELCH, compare_paths, welch_test
from seqkeras.reporting.expectations import check
from seqkeras.reporting.tables import pivot, render_page, summary_tables, to_markdown
from seqkeras.results.folder import read_runs, rebuild_runs, runs_frame, write_csv, write_json, write_yaml
from seqkeras.results.record import read_record
from seqkeras.spec.loader import build_experiment
from seqkeras.spec.sections import ExpectSpec, TableSpec
from tests.conftest import TINY_TRAINING_SPEC
from tests.helpers import run_cli

# --------------------------------------------------------------------------- #
# Results folders, written as the suite writes them
# --------------------------------------------------------------------------- #

TINY = yaml.safe_load(textwrap.dedent(TINY_TRAINING_SPEC))  # model.cell: simple_rnn, lstm; seeds 0, 1


def record(experiment: str, run_id: str, seed: int, matrix: dict, accuracy: float | None = 0.5,
           status: str = "ok", error: str = "") -> dict:
    line = {"experiment": experiment, "run_id": run_id, "status": status, "seed": seed, "matrix": matrix,
            "metrics": {} if accuracy is None else {"accuracy": accuracy},
            "params": 100, "train_seconds": 1.0, "backend": "tensorflow"}
    if error:
        line["error"] = error
    return line


def results_folder(root, spec: dict = TINY, accuracy=lambda run: 0.5 + 0.1 * run.seed, status: str = "ok"):
    """results/<name>/ of `spec`: experiment.yaml, a metrics.json per run and runs.csv, as `run` writes them."""
    experiment = build_experiment(spec, source="test", overrides=[])
    folder = root / experiment.spec.name
    write_yaml(folder / "experiment.yaml", experiment.spec.model_dump(mode="json", exclude_none=True))
    records = []
    for run in experiment.runs:
        failed = status == "failed"
        line = record(experiment.spec.name, run.run_id, run.seed, run.matrix_values,
                      None if failed else accuracy(run), status, "ValueError: boom" if failed else "")
        write_json(folder / run.run_id / "metrics.json", line)
        records.append(line)
    write_csv(folder / "runs.csv", runs_frame(records, experiment.matrix_columns))
    return folder, experiment


def csv_text(folder) -> str:
    return (folder / "runs.csv").read_text(encoding="utf-8")


def assert_clean_error(result, *names):
    assert result.code == 2, result.output
    assert result.err.startswith("error: ")
    for name in names:
        assert str(name) in result.err, result.err
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- #
# 1. runs.csv damaged: table, compare, report, table --rebuild
# --------------------------------------------------------------------------- #


def truncate_mid_row(text: str) -> str:
    return text[: text.rindex("\n", 0, len(text) - 1) + 25]  # the last row cut 25 characters in


def short_row_in_the_middle(text: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[1] = ",".join(lines[1].split(",")[:4]) + "\n"
    return "".join(lines)


def conflicting_duplicate(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return text + lines[1].replace(",0.5,", ",0.75,")


def without_matrix_column(text: str) -> str:
    frame = pd.read_csv(io.StringIO(text))
    return frame.drop(columns=["model.cell"]).to_csv(index=False)


def two_experiments_mixed(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:2]) + "".join(line.replace("tiny,", "other,", 1) for line in lines[2:])


def another_experiments_runs(text: str) -> str:
    lines = text.splitlines(keepends=True)
    return lines[0] + "".join(line.replace("tiny,", "other,", 1) for line in lines[1:])


def two_versions_of_one_run(text: str) -> str:
    """A second run id for seed 0 of simple_rnn: a stale run from an earlier spec mixed in."""
    lines = text.splitlines(keepends=True)
    return text + lines[1].replace("_seed=0_", "_seed=0_stale", 1)


RUNS_CSV_ERRORS = [
    (truncate_mid_row, "is truncated mid-row"),
    (short_row_in_the_middle, "has a short row: line 2"),
    (conflicting_duplicate, "has two different rows for run"),
    (without_matrix_column, "has no column 'model.cell', which experiment.yaml's matrix varies"),
    (two_experiments_mixed, "mixes the runs of several experiments (tiny, other)"),
    (another_experiments_runs, "holds runs of experiment 'other', but experiment.yaml beside it is 'tiny'"),
    (two_versions_of_one_run, "has several runs of one matrix point and seed"),
    (lambda text: "", "is empty"),
    (lambda text: "a,b\n1,2\n", "is not a seqkeras runs.csv"),
]


@pytest.mark.parametrize(("damage", "message"), RUNS_CSV_ERRORS, ids=lambda x: getattr(x, "__name__", None))
def test_a_damaged_runs_csv_is_an_error_naming_the_file_for_table_compare_and_report(
        tmp_path, capsys, damage, message):
    folder, _ = results_folder(tmp_path / "a")
    good, _ = results_folder(tmp_path / "b")
    (folder / "runs.csv").write_text(damage(csv_text(folder)), encoding="utf-8")
    runs_csv = folder / "runs.csv"
    assert_clean_error(run_cli(capsys, "table", folder), runs_csv, message)
    assert_clean_error(run_cli(capsys, "table", folder, "--rows", "model.cell", "--value", "accuracy"), runs_csv)
    assert_clean_error(run_cli(capsys, "compare", folder, good), runs_csv, message)
    assert_clean_error(run_cli(capsys, "compare", good.parent, folder.parent), runs_csv, message)
    assert_clean_error(run_cli(capsys, "report", folder), runs_csv, message)
    # --rebuild rebuilds it from the run folders, which are intact: the remedy every message names.
    assert f"seqkeras table {folder} --rebuild" in run_cli(capsys, "table", folder).err
    rebuilt = run_cli(capsys, "table", folder, "--rebuild")
    assert rebuilt.code == 0 and "Traceback" not in rebuilt.output, rebuilt.output
    assert csv_text(folder) == csv_text(good)


def test_report_of_a_root_leaves_out_the_damaged_experiment_and_writes_the_others(tmp_path, capsys):
    damaged, _ = results_folder(tmp_path)
    results_folder(tmp_path, {**TINY, "name": "fine"})
    (damaged / "runs.csv").write_text(truncate_mid_row(csv_text(damaged)), encoding="utf-8")
    code, out, err = run_cli(capsys, "report", tmp_path)
    assert code == 0 and "Traceback" not in err
    assert f"warning: {damaged} left out of the report" in err and "truncated mid-row" in err
    assert (tmp_path / "fine" / "report.html").is_file() and not (damaged / "report.html").exists()
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "Left out" in index and "truncated mid-row" in index


def test_identical_duplicate_rows_are_dropped_with_a_warning(tmp_path, capsys):
    folder, _ = results_folder(tmp_path)
    text = csv_text(folder)
    (folder / "runs.csv").write_text(text + text.splitlines(keepends=True)[1], encoding="utf-8")
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0 and "dropped 1 duplicate row(s)" in err and str(folder / "runs.csv") in err
    assert "0.550 ± 0.071" in out  # seeds 0 and 1 once each: the duplicate does not weigh twice
    assert len(read_runs(folder, warn=lambda message: None)) == 4


def test_a_runs_csv_without_rows_is_a_warning_and_tables_say_no_finished_runs(tmp_path, capsys):
    folder, _ = results_folder(tmp_path / "a")
    good, _ = results_folder(tmp_path / "b")
    (folder / "runs.csv").write_text(csv_text(folder).splitlines(keepends=True)[0], encoding="utf-8")
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0 and "_no finished runs_" in out
    assert f"warning: {folder / 'runs.csv'} has no runs yet" in err
    code, out, err = run_cli(capsys, "compare", folder, good, "--tolerance", "0")
    assert code == 1 and "### Only in B (4 row(s))" in out and "Traceback" not in err
    code, out, err = run_cli(capsys, "report", folder)
    assert code == 0 and "0 runs: 0 ok, 0 failed." in (folder / "report.html").read_text(encoding="utf-8")


def test_a_runs_csv_without_a_final_newline_is_a_warning(tmp_path, capsys):
    folder, _ = results_folder(tmp_path)
    (folder / "runs.csv").write_text(csv_text(folder).rstrip("\n"), encoding="utf-8")
    code, _, err = run_cli(capsys, "table", folder)
    assert code == 0 and "does not end with a newline" in err


# --------------------------------------------------------------------------- #
# 1. metrics.json of the wrong shape
# --------------------------------------------------------------------------- #

GOOD = record("tiny", "RUN", 0, {"model.cell": "lstm"})
BAD_RECORDS = [
    ([GOOD], "not a JSON object (a list)"),
    ("ok", "not a JSON object (a text)"),
    ({**GOOD, "metrics": [0.5]}, "'metrics' is a list, not an object"),
    ({**GOOD, "metrics": {"accuracy": [0.5, 0.6]}}, "metrics.accuracy is a list, not a single value"),
    ({**GOOD, "rows": {"keys": {}}}, "'rows' is an object, not a list"),
    ({**GOOD, "rows": [{"keys": {"decoder": "greedy"}, "metrics": 1}]}, "rows[0] is not an object"),
    ({**GOOD, "rows": ["greedy"]}, "rows[0] is not an object"),
    ({**GOOD, "matrix": ["lstm"]}, "'matrix' is a list, not an object"),
    ({**GOOD, "seed": "0"}, "'seed' is '0', not a whole number"),
    ({**GOOD, "seed": True}, "'seed' is True, not a whole number"),
    ({**GOOD, "status": "done"}, "'status' is 'done'"),
    ({k: v for k, v in GOOD.items() if k != "run_id"}, "no 'run_id'"),
    ({**GOOD, "experiment": 3}, "'experiment' is 3, not a name"),
    ({**GOOD, "error": {"type": "ValueError"}}, "'error' is an object, not a text"),
]


@pytest.mark.parametrize(("document", "why"), BAD_RECORDS)
def test_a_metrics_json_of_the_wrong_shape_is_damaged_everywhere(tmp_path, capsys, document, why):
    folder, experiment = results_folder(tmp_path)
    victim = folder / experiment.runs[0].run_id / "metrics.json"
    if isinstance(document, dict) and document.get("run_id") == "RUN":
        document = {**document, "run_id": experiment.runs[0].run_id}
    victim.write_text(json.dumps(document), encoding="utf-8")
    assert read_record(victim).record is None and why in read_record(victim).problem
    with pytest.raises(SpecError, match="damaged record"):  # never a KeyError or TypeError
        runs_frame([document], ["model.cell"])
    code, out, err = run_cli(capsys, "table", folder, "--rebuild")
    assert code == 0 and "Traceback" not in err
    assert f"skipped damaged record: {victim}: " in err and why in err
    assert len(pd.read_csv(folder / "runs.csv")) == 3


def test_a_metrics_json_that_is_not_json_is_skipped_by_rebuild(tmp_path, capsys):
    folder, experiment = results_folder(tmp_path)
    victim = folder / experiment.runs[1].run_id / "metrics.json"
    victim.write_text('{"status": "ok", "metr', encoding="utf-8")
    code, _, err = run_cli(capsys, "table", folder, "--rebuild")
    assert code == 0 and f"skipped damaged record: {victim}: not JSON" in err


# --------------------------------------------------------------------------- #
# 1. foreign run folders copied in
# --------------------------------------------------------------------------- #


def test_foreign_and_stale_run_folders_are_never_mixed_into_runs_csv(tmp_path, capsys):
    folder, experiment = results_folder(tmp_path / "results")
    other, other_experiment = results_folder(tmp_path / "elsewhere", {**TINY, "name": "other"})
    first = experiment.runs[0].run_id
    # another experiment's run folder, copied in
    foreign = f"{other_experiment.runs[0].run_id}x"
    shutil.copytree(other / other_experiment.runs[0].run_id, folder / foreign)
    # one of ours, copied under a new name
    shutil.copytree(folder / first, folder / "copy-of-a-run")
    # a run of an earlier version of the spec: same matrix point and seed, another hash
    stale_id = first.rsplit("_", 1)[0] + "_00000000"
    write_json(folder / stale_id / "metrics.json",
               record("tiny", stale_id, experiment.runs[0].seed, experiment.runs[0].matrix_values, 0.01))
    code, out, err = run_cli(capsys, "table", folder, "--rebuild")
    assert code == 0, err
    assert f"skipped foreign run folder: {folder / foreign / 'metrics.json'}: " \
           "it names experiment 'other', this folder holds 'tiny'" in err
    assert f"skipped foreign run folder: {folder / 'copy-of-a-run' / 'metrics.json'}: it names run {first!r}" in err
    assert (f"skipped stale run folder: {folder / stale_id / 'metrics.json'}: "
            f"same matrix point and seed as {first}") in err
    runs = pd.read_csv(folder / "runs.csv")
    assert list(runs["run_id"]) == [run.run_id for run in experiment.runs]
    assert "rebuilt" in out and "4 run folder(s)" in out
    # rebuild_runs alone (no experiment.yaml order): the folder's name is the experiment's
    count, skipped = rebuild_runs(folder)
    assert count == 5 and {s.kind for s in skipped} == {"foreign run folder"}


# --------------------------------------------------------------------------- #
# 1. .resume/state.json, the trainer's checkpoint
# --------------------------------------------------------------------------- #


@pytest.fixture
def tiny_model():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    return model


def good_checkpoint(folder, model):
    from seqkeras.training.trainer import Checkpoint, TrainingState

    Checkpoint(folder).save(model, TrainingState(epoch=1, history=[{"loss": 1.0}], seconds=2.0))
    return json.loads((folder / "state.json").read_text())


BAD_STATES = [
    (lambda state: [state], "not a JSON object (a list)"),
    (lambda state: "epoch 1", "not a JSON object (a str)"),
    (lambda state: {**state, "weights": "epoch9.weights.h5"},
     "the weights file it names, epoch9.weights.h5, is missing"),
    (lambda state: {k: v for k, v in state.items() if k != "weights"}, "'weights' is None"),
    (lambda state: {**state, "weights": "../../metrics.json"}, "not a file name"),
    (lambda state: {**state, "epoch": "1"}, "'epoch' is '1'"),
    (lambda state: {**state, "epoch": 3}, "'history' does not hold one row per completed epoch"),
    (lambda state: {**state, "seconds": None}, "'seconds' is None"),
    (lambda state: {**state, "optimizer": "adam"}, "unexpected content"),
]


@pytest.mark.parametrize(("damage", "why"), BAD_STATES)
def test_a_damaged_checkpoint_is_ignored_with_a_warning(tmp_path, capsys, tiny_model, damage, why):
    from seqkeras.training.trainer import Checkpoint

    folder = tmp_path / ".resume"
    state = good_checkpoint(folder, tiny_model)
    (folder / "state.json").write_text(json.dumps(damage(state)))
    assert Checkpoint(folder).restore(tiny_model) is None
    err = capsys.readouterr().err
    assert f"warning: ignoring the checkpoint {folder / 'state.json'}: " in err and why in err
    assert "training starts from scratch" in err


def test_a_weights_file_that_cannot_be_loaded_leaves_the_fresh_weights(tmp_path, capsys, tiny_model):
    from seqkeras.training.trainer import Checkpoint

    folder = tmp_path / ".resume"
    state = good_checkpoint(folder, tiny_model)
    (folder / state["weights"]).write_bytes(b"not an HDF5 file")
    fresh = [w.copy() for w in tiny_model.get_weights()]
    assert Checkpoint(folder).restore(tiny_model) is None
    assert "cannot be loaded" in capsys.readouterr().err
    assert all(np.array_equal(a, b) for a, b in zip(fresh, tiny_model.get_weights()))
    # and an intact checkpoint still resumes
    good_checkpoint(folder, tiny_model)
    assert Checkpoint(folder).restore(tiny_model).epoch == 1


def test_a_run_with_a_damaged_checkpoint_trains_from_scratch_even_under_force(write_spec, tmp_path, capsys):
    spec = write_spec(TINY_TRAINING_SPEC)
    experiment = build_experiment(TINY, source="test", overrides=["model.cell=lstm", "seeds=[0]"])
    resume = tmp_path / "out" / "tiny" / experiment.runs[0].run_id / ".resume"
    resume.mkdir(parents=True)
    (resume / "state.json").write_text("[1, 2, 3]")
    result = run_cli(capsys, "run", spec, "--out", tmp_path / "out", "--set", "model.cell=lstm",
                     "--set", "seeds=[0]", "--force")
    assert result.code == 0, result.output
    assert "ignoring the checkpoint" in result.output and "not a JSON object (a list)" in result.output
    assert not resume.exists()  # a finished run clears its checkpoint


# --------------------------------------------------------------------------- #
# 1. report --out, and an experiment named index.html
# --------------------------------------------------------------------------- #


def test_report_out_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    folder, _ = results_folder(tmp_path)
    blocker = tmp_path / "site.html"
    blocker.write_text("mine")
    assert_clean_error(run_cli(capsys, "report", folder, "--out", blocker), blocker, "is a file")
    assert blocker.read_text() == "mine"


@pytest.mark.parametrize("with_out", [False, True])
def test_an_experiment_named_index_html_does_not_collide_with_the_index_page(tmp_path, capsys, with_out):
    root = tmp_path / "results"
    results_folder(root, {**TINY, "name": "index.html"})
    results_folder(root, TINY)
    args = ["report", root] + (["--out", tmp_path / "site"] if with_out else [])
    code, out, err = run_cli(capsys, *args)
    assert code == 0 and "Traceback" not in err, err
    site = tmp_path / "site" if with_out else root
    assert (site / "index.html" / "report.html").is_file() and (site / "tiny" / "report.html").is_file()
    index = (site / "_index.html").read_text(encoding="utf-8")
    assert '<a href="index.html/report.html">index.html</a>' in index
    assert "the index page is" in err and f"wrote {site / '_index.html'}" in out
    page = (site / "index.html" / "report.html").read_text(encoding="utf-8")
    assert '<a href="../_index.html">' in page


# --------------------------------------------------------------------------- #
# 1. every run failed: the summary lists the failures, `run` exits 1
# --------------------------------------------------------------------------- #


def test_when_every_run_failed_the_tables_say_so_and_list_the_failures(tmp_path, capsys):
    folder, experiment = results_folder(tmp_path, {**TINY, "table": [
        {"rows": "model.cell", "value": "accuracy"},
        {"rows": "seed", "columns": "model.cell", "value": "accuracy", "where": {"model.cell": "lstm"}}]},
        status="failed")
    runs = read_runs(folder)
    assert "accuracy" not in runs.columns  # no run wrote the metric
    tables = summary_tables(runs, experiment.spec.tables(), experiment.matrix_columns)
    assert [to_markdown(frame) for _, frame in tables] == ["_no finished runs_"] * 2
    assert to_markdown(summary_tables(runs, [], experiment.matrix_columns)[0][1]) == "_no finished runs_"
    verdict = check(ExpectSpec(claim="c", where={"model.cell": "lstm"}, metric="accuracy", at_least=0.5), runs)
    assert not verdict.holds and verdict.measured == "no finished run"
    page = render_page("tiny", "", runs, tables, [verdict])
    assert "4 runs: 0 ok, 4 failed." in page and "## Failed runs" in page and "ValueError: boom" in page
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0 and "_no finished runs_" in out and "Traceback" not in err


def test_a_run_whose_every_run_fails_exits_1_with_the_failures_in_table_md(write_spec, tmp_path, capsys,
                                                                             monkeypatch):
    import seqkeras.execution.single_run

    def broken(run, folder, record, progress=None, live=None):
        raise RuntimeError("the data went away")

    monkeypatch.setattr(seqkeras.execution.single_run, "run_training", broken)  # every run fails, in this process
    result = run_cli(capsys, "run", write_spec(TINY_TRAINING_SPEC), "--out", tmp_path / "out", "--set", "seeds=[0]")
    assert result.code == 1 and "Traceback" not in result.output, result.output
    page = (tmp_path / "out" / "tiny" / "table.md").read_text()
    assert "2 runs: 0 ok, 2 failed." in page and "_no finished runs_" in page
    assert "## Failed runs" in page and "RuntimeError: the data went away" in page
    assert "| accuracy is a share | ≥ 0 and ≤ 1 | no finished run | NOT reproduced |" in page


# --------------------------------------------------------------------------- #
# 2. a table pools over seeds only
# --------------------------------------------------------------------------- #

BIDIRECTIONAL = {**{key: value for key, value in TINY.items() if key not in ("table", "expect")},
                 "matrix": {"model.cell": ["lstm", "gru"], "model.bidirectional": [False, True]}}


def test_a_key_that_varies_within_a_cell_is_an_error_naming_it_and_its_values(tmp_path, capsys):
    folder, _ = results_folder(tmp_path, BIDIRECTIONAL)
    result = run_cli(capsys, "table", folder, "--rows", "model.cell", "--value", "accuracy")
    assert_clean_error(result, "model.bidirectional (False, True) varies among the selected runs but is not a row "
                               "or column", "--pool model.bidirectional")
    result = run_cli(capsys, "table", folder, "--rows", "seed", "--value", "accuracy")
    assert_clean_error(result, "model.cell (lstm, gru), model.bidirectional (False, True) vary")
    # a row, a column, a where key or a pool key each make it fine
    for extra in (["--columns", "model.bidirectional"], ["--pool", "model.bidirectional"]):
        code, out, _ = run_cli(capsys, "table", folder, "--rows", "model.cell", "--value", "accuracy", *extra)
        assert code == 0 and "| lstm" in out
    runs = read_runs(folder)
    assert not pivot(runs, TableSpec(rows="model.cell", value="accuracy", where={"model.bidirectional": True})).empty
    result = run_cli(capsys, "table", folder, "--rows", "model.cell", "--value", "accuracy", "--pool", "model.bidi")
    assert_clean_error(result, "Did you mean 'model.bidirectional'?")
    assert_clean_error(run_cli(capsys, "table", folder, "--pool", "model.bidi"), "Did you mean 'model.bidirectional'?")


def test_a_declared_table_that_pools_is_an_error_unless_it_says_pool(tmp_path, capsys):
    # validate refuses such a spec (tests/test_run_integrity.py); a results folder may still hold one,
    # written by hand or by an older seqkeras
    folder, _ = results_folder(tmp_path, BIDIRECTIONAL)
    spec = yaml.safe_load((folder / "experiment.yaml").read_text())
    write_yaml(folder / "experiment.yaml", {**spec, "table": {"rows": "model.cell", "value": "accuracy"}})
    assert_clean_error(run_cli(capsys, "table", folder), "pool: [model.bidirectional]")
    code, out, _ = run_cli(capsys, "table", folder, "--pool", "model.bidirectional")
    assert code == 0 and "| lstm" in out
    spec = yaml.safe_load((folder / "experiment.yaml").read_text())
    spec["table"]["pool"] = ["model.bidirectional"]
    write_yaml(folder / "experiment.yaml", spec)
    code, out, _ = run_cli(capsys, "table", folder)
    assert code == 0 and "0.550 ± 0.058" in out  # 2 directions × 2 seeds


def test_decoder_parameters_fixed_by_the_decoder_row_are_not_pooling():
    rows = [{"keys": {"decoder": label, "decoder.width": width}, "metrics": {"bleu": bleu}}
            for label, width, bleu in [("greedy", None, 1.0), ("beam(width=2)", 2, 2.0), ("beam(width=5)", 5, 3.0)]]
    records = [{**record("d", f"seed={s}", s, {}), "rows": rows} for s in (0, 1)]
    runs = runs_frame(records, [])
    assert len(pivot(runs, TableSpec(rows="decoder", value="bleu"))) == 3
    with pytest.raises(SpecError, match=r"decoder \(greedy, beam\(width=2\), beam\(width=5\)\)"):
        pivot(runs, TableSpec(rows="seed", value="bleu"))


def test_every_committed_results_folder_still_renders(capsys):
    from tests.conftest import REPO

    for folder in sorted(p.parent for p in (REPO / "results").glob("*/runs.csv")):
        result = run_cli(capsys, "table", folder)
        assert result.code == 0, f"{folder.name}: {result.err}"


def test_an_experiment_yaml_whose_table_cannot_be_read_falls_back_to_every_run(tmp_path, capsys):
    folder, _ = results_folder(tmp_path)
    spec = yaml.safe_load((folder / "experiment.yaml").read_text())
    write_yaml(folder / "experiment.yaml", {**spec, "table": {"rows": "model.cell"}})  # no value
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0 and "its table section cannot be read" in err and "Runs (mean ± std over seeds)" in out
    (folder / "experiment.yaml").write_text("- a list\n- not a spec\n")
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0 and "is not a mapping" in err


# --------------------------------------------------------------------------- #
# 3. compare
# --------------------------------------------------------------------------- #


def test_compare_refuses_two_different_experiments(tmp_path, capsys):
    a, _ = results_folder(tmp_path / "a")
    b, _ = results_folder(tmp_path / "b", {**TINY, "name": "other"})
    assert_clean_error(run_cli(capsys, "compare", a, b), "holds experiment 'tiny'", "holds 'other'",
                       "never two different experiments")
    assert_clean_error(run_cli(capsys, "compare", a / "runs.csv", b / "runs.csv"), "holds 'other'")


def test_compare_says_what_differs_between_the_two_specs(tmp_path, capsys):
    a, _ = results_folder(tmp_path / "a")
    b, _ = results_folder(tmp_path / "b", {**TINY, "train": {**TINY["train"], "epochs": 10}})
    code, out, _ = run_cli(capsys, "compare", a, b)
    assert code == 0 and "Spec changes, A → B (experiment.yaml, 1):" in out and "- train.epochs: 1 → 10" in out
    assert out.index("train.epochs") < out.index("### Per run")
    code, out, _ = run_cli(capsys, "compare", a, a)
    assert "Spec: the same experiment.yaml on both sides." in out
    code, out, err = run_cli(capsys, "compare", a, b, "--format", "csv")
    assert code == 0 and "tiny: - train.epochs: 1 → 10" in err


def test_seeds_that_cannot_be_paired_are_compared_with_welch(tmp_path, capsys):
    a, _ = results_folder(tmp_path / "a", {**TINY, "seeds": [0, 1, 2]})
    b, _ = results_folder(tmp_path / "b", {**TINY, "seeds": [3, 4, 5, 6]})
    (comparison,) = compare_paths(a, b, tolerance=1.0).comparisons
    assert not comparison.paired and comparison.keys == ["model.cell"]
    assert comparison.only_in_a.empty and comparison.only_in_b.empty
    row = comparison.over_seeds.set_index(["model.cell", "metric"]).loc[("lstm", "accuracy")]
    expected_a, expected_b = np.array([0.5, 0.6, 0.7]), np.array([0.8, 0.9, 1.0, 1.1])
    assert row["test"] == WELCH and row["seeds"] == "3 vs 4"
    assert row["mean_difference"] == pytest.approx(expected_b.mean() - expected_a.mean())
    from scipy import stats
    assert row["p_value"] == pytest.approx(stats.ttest_ind(expected_b, expected_a, equal_var=False).pvalue)
    assert row["ci_low"] < row["mean_difference"] < row["ci_high"]
    code, out, _ = run_cli(capsys, "compare", a, b, "--tolerance", "1")
    assert code == 0 and "have none in common" in out and "Welch's t-test" in out and "| Welch t" in out
    assert "### Per matrix point" in out
    code, out, _ = run_cli(capsys, "compare", a, b, "--tolerance", "0.1")
    assert code == 1 and "accuracy at model.cell=lstm: 0.6 → 0.95, |difference| 0.35 > 0.1" in out


def test_unpaired_compares_shared_seeds_as_two_samples_too(tmp_path, capsys):
    a, _ = results_folder(tmp_path / "a", {**TINY, "seeds": [0, 1, 2]})
    b, _ = results_folder(tmp_path / "b", {**TINY, "seeds": [0, 1, 2]},
                          accuracy=lambda run: 0.5 + 0.1 * run.seed + 0.01)
    (paired,) = compare_paths(a, b).comparisons
    assert paired.paired and set(paired.over_seeds["test"].dropna()) == {"paired t"}
    (unpaired,) = compare_paths(a, b, unpaired=True).comparisons
    assert not unpaired.paired and set(unpaired.over_seeds["test"]) == {WELCH}
    code, out, _ = run_cli(capsys, "compare", a, b, "--unpaired")
    assert code == 0 and "unpaired: Welch's t-test" in out


def test_welch_edge_cases():
    assert welch_test(np.array([1.0, 1.0, 1.0]), np.array([1.0, 1.0, 1.0])) == (1.0, 0.0, 0.0)
    assert welch_test(np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0, 2.0]))[0] == 0.0
    p, low, high = welch_test(np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5, 1.0, 0.8]))
    assert 0 < p < 1 and low < 0 < high and math.isfinite(low)


def test_common_compares_only_what_both_sides_have(tmp_path, capsys):
    reference = tmp_path / "results"
    results_folder(reference)
    results_folder(reference, {**TINY, "name": "not-rerun"})
    rerun = tmp_path / "rerun"
    folder, experiment = results_folder(rerun)
    keep = [r.run_id for r in experiment.runs if r.matrix_values["model.cell"] == "lstm"]
    runs = read_runs(folder)
    write_csv(folder / "runs.csv", runs[runs["run_id"].isin(keep)])  # a partial rerun: --only model.cell=lstm
    code, out, _ = run_cli(capsys, "compare", rerun, reference, "--tolerance", "0")
    assert code == 1 and "experiment only in B: not-rerun" in out and "row only in B" in out
    code, out, _ = run_cli(capsys, "compare", rerun, reference, "--tolerance", "0", "--common")
    assert code == 0, out
    assert "--common: 0 row(s) only in A and 2 only in B are left out" in out
    assert "Experiments only in B (left out: --common): not-rerun" in out and "Within tolerance 0" in out
    # --common does not hide a difference in what both have
    write_csv(folder / "runs.csv", runs[runs["run_id"].isin(keep)].assign(accuracy=0.9))
    code, out, _ = run_cli(capsys, "compare", rerun, reference, "--tolerance", "0", "--common")
    assert code == 1 and "|difference|" in out
