"""A rerun that fails never rewrites what was finished: not runs.csv, not a finished run's files.

`run --force` (or a record of another version) reruns finished runs. Each rerun
writes beside the finished files (results.rerun) and replaces them only once it
has finished; until then, and when it fails (a full disk, an error), runs.csv keeps
the run's finished record, while the command still counts and says the failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import pandas as pd

from seqkeras.execution import single_run
from seqkeras.results import rerun
from tests.conftest import TINY_TRAINING_SPEC
from tests.helpers import run_cli
from tests.test_full_disk import FillingDisk, files_under


def snapshot(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in files_under(root)}


def finished_tiny(trained_runs, tmp_path) -> tuple[Path, Path, dict[str, Path]]:
    """A copy of the session's tiny 4-run experiment: (its spec file, its results root, {run id prefix: folder})."""
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path / "out")
    folders = {p.name.rsplit("_", 1)[0]: p for p in experiment.iterdir() if p.is_dir()}
    return experiment / "experiment.yaml", experiment.parent, folders


def force_rerun(capsys, spec: Path, out: Path):
    return run_cli(capsys, "run", spec, "--out", out, "--force", "--backend", keras.backend.backend())


def test_a_forced_rerun_that_finds_the_disk_full_keeps_every_finished_record_and_file(
        trained_runs, tmp_path, capsys, monkeypatch):
    spec, out, folders = finished_tiny(trained_runs, tmp_path)
    runs_csv = out / "tiny" / "runs.csv"
    before_csv, before = pd.read_csv(runs_csv), snapshot(out / "tiny")
    order = [run_id.rsplit("_", 1)[0] for run_id in before_csv["run_id"]]
    failing = order.index("cell=lstm_seed=0")  # the runs before it are rerun to the end, those after it not
    records = {name: json.loads((folders[name] / "metrics.json").read_text()) for name in order}
    FillingDisk(lambda target: target.name == "epoch1.weights.h5" and "cell=lstm_seed=0" in str(target)
                ).install(monkeypatch)
    code, output, err = force_rerun(capsys, spec, out)
    assert code == 1, output + err
    (line,) = [line for line in output.splitlines() if "FAILED" in line]
    assert "cell=lstm_seed=0" in line and "no space left on device" in line
    assert "its finished record of " in line and " is kept)" in line
    assert f"disk full: stopped at run {failing + 1} of 4 of tiny" in err
    # runs.csv: four finished runs, those rerun with their new records, the others as they were.
    after_csv = pd.read_csv(runs_csv)
    assert list(after_csv["status"]) == ["ok"] * 4
    assert list(after_csv["run_id"]) == list(before_csv["run_id"])
    for name in order[:failing]:  # replaced, once each had finished
        rerun_record = json.loads((folders[name] / "metrics.json").read_text())
        assert rerun_record["status"] == "ok" and rerun_record != records[name]
    assert after_csv.iloc[failing:].equals(before_csv.iloc[failing:])
    # Every file of the runs not rerun to the end is as it was; no staging folder is left anywhere.
    for name in order[failing:]:
        assert snapshot(folders[name]) == {p: b for p, b in before.items() if folders[name] in p.parents}
    assert not [p for p in out.rglob("*") if p.name in (rerun.STAGING, rerun.REPLACED)]


def test_a_forced_rerun_that_fails_keeps_the_finished_runs_and_says_each_failure(
        trained_runs, tmp_path, capsys, monkeypatch):
    spec, out, folders = finished_tiny(trained_runs, tmp_path)
    runs_csv = out / "tiny" / "runs.csv"
    before_csv, before = runs_csv.read_bytes(), {name: snapshot(f) for name, f in folders.items()}

    def broken(*args, **kwargs):
        raise RuntimeError("a bug in this version")

    monkeypatch.setattr(single_run, "run_training", broken)
    code, output, err = force_rerun(capsys, spec, out)
    assert code == 1, output + err
    failed = [line for line in output.splitlines() if "FAILED: RuntimeError: a bug in this version" in line]
    assert len(failed) == 4 and all("is kept)" in line for line in failed)
    assert "4 failed run(s)" in err
    assert list(pd.read_csv(runs_csv)["status"]) == ["ok"] * 4
    assert pd.read_csv(runs_csv).equals(pd.read_csv(pd.io.common.BytesIO(before_csv)))
    assert {name: snapshot(f) for name, f in folders.items()} == before
    assert not [p for p in out.rglob("*") if p.name in (rerun.STAGING, rerun.REPLACED)]


def test_a_move_cut_short_is_undone_before_the_new_record_is_in_and_finished_after(tmp_path):
    folder = tmp_path / "run"
    (folder / rerun.REPLACED).mkdir(parents=True)
    (folder / rerun.REPLACED / "metrics.json").write_text('{"old": true}')
    (folder / rerun.REPLACED / "history.csv").write_text("old history")
    (folder / "history.csv").write_text("new history")  # moved in; the new record was not yet
    rerun.recover(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["history.csv", "metrics.json"]
    assert (folder / "history.csv").read_text() == "old history"
    assert (folder / "metrics.json").read_text() == '{"old": true}'

    (folder / rerun.REPLACED).mkdir()
    (folder / rerun.REPLACED / "history.csv").write_text("old history")
    rerun.recover(folder)  # the new record was in: only the old files' folder is left to delete
    assert sorted(p.name for p in folder.iterdir()) == ["history.csv", "metrics.json"]


def test_a_results_folder_of_a_newer_format_is_read_with_a_warning_naming_what_is_not_understood(
        trained_runs, tmp_path, capsys):
    import seqkeras

    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    seqkeras.load(experiment)
    assert capsys.readouterr().err == ""  # this version's own folder: not a word
    saved = experiment / "experiment.yaml"
    saved.write_text(saved.read_text().replace("version: 1", "version: 2") + "calibration: {bins: 10}\n")
    seqkeras.load(experiment)
    err = capsys.readouterr().err.splitlines()
    assert err == [f"warning: {saved}: spec format version 2, this seqkeras reads version 1: its tables and "
                   "claims are read as that version's",
                   f"warning: {saved}: section(s) this seqkeras does not know, ignored: 'calibration'"]
    code, _, table_err = run_cli(capsys, "table", experiment)
    assert code == 0 and table_err.splitlines() == err  # the command line says the same
