"""A record is reused across code changes that alter no number: its identity names a results version, not the code.

The package declares its results version (seqkeras/version.py) and bumps it only with a change that alters
numbers, saying why. A record made by other code of the same results version (or by code from before results
versions, which named a hash of its source) is reused; one of another results version is run again, and `run`
says which version and why.
"""

from __future__ import annotations

import json

import keras

from seqkeras.version import RESULTS_CHANGES, RESULTS_VERSION
from tests.conftest import TINY_TRAINING_SPEC
from tests.helpers import run_cli


def edit_identities(experiment, edit) -> None:
    for path in experiment.glob("*/metrics.json"):
        record = json.loads(path.read_text())
        edit(record["identity"])
        path.write_text(json.dumps(record))


def dry_run(capsys, experiment):
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent,
                             "--dry-run", "--backend", keras.backend.backend())
    assert code == 0, out + err
    return out


def test_records_of_other_code_are_reused_and_of_another_results_version_run_again(trained_runs, tmp_path, capsys):
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    identity = json.loads(next(experiment.glob("*/metrics.json")).read_text())["identity"]
    assert identity["results"] == str(RESULTS_VERSION) and "seqkeras" not in identity
    assert dry_run(capsys, experiment).endswith("0 to run, 4 reused\n")

    def made_before_results_versions(identity):  # as records made before them read: the code's source hash
        del identity["results"]
        identity["seqkeras"] = "0.0.9+0123456789"

    edit_identities(experiment, made_before_results_versions)
    assert dry_run(capsys, experiment).endswith("0 to run, 4 reused\n")

    edit_identities(experiment, lambda identity: identity.update(results="0"))
    out = dry_run(capsys, experiment)
    assert out.endswith("4 to run, 0 reused\n")
    assert (f"recorded under a different results version 0 → {RESULTS_VERSION} "
            f"({RESULTS_CHANGES[RESULTS_VERSION]})") in out


def test_the_results_version_is_the_last_change_listed_and_each_change_says_why():
    assert RESULTS_VERSION == max(RESULTS_CHANGES) and sorted(RESULTS_CHANGES) == list(range(1, RESULTS_VERSION + 1))
    assert all(isinstance(why, str) and len(why) > 20 for why in RESULTS_CHANGES.values())


def test_tensorboard_is_no_part_of_a_run_id_so_it_reuses_every_recorded_run_and_says_which_lack_events(
        trained_runs, tmp_path, capsys):
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    runs_before = sorted((experiment / "runs.csv").read_text().splitlines())
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent,
                             "--only", "seed=0", "--tensorboard", "--backend", keras.backend.backend())
    assert code == 0, out + err
    assert "2 of 2 runs done before, reused" in out
    assert "tiny: 2 reused run(s) were trained without TensorBoard events" in out and "--force" in out
    # All four recorded runs, as they were (--only puts the selected ones first).
    assert sorted((experiment / "runs.csv").read_text().splitlines()) == runs_before


def test_runs_of_another_version_of_the_spec_are_counted_and_named_when_runs_csv_leaves_them_out(
        trained_runs, tmp_path, capsys):
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    old_ids = sorted(p.parent.name for p in experiment.glob("*/metrics.json"))
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent,
                             "--only", "seed=0", "--set", "model.units=3", "--backend", keras.backend.backend())
    assert code == 0, out + err
    (line,) = [line for line in out.splitlines() if "left out of runs.csv" in line]
    assert line.startswith(f"tiny: 4 finished run folder(s) in {experiment} are not runs of this spec")
    assert f"the first, {old_ids[0]}" in line and "running that version again puts them back" in line
    assert all((experiment / run_id / "metrics.json").is_file() for run_id in old_ids)  # their folders stay


def test_another_verbosity_reuses_every_recorded_run_in_its_folder(trained_runs, tmp_path, capsys):
    # train.verbose changes no number, but recorded run ids name it: a run finds its folder recorded at another
    # verbosity and reuses it, under that folder's id; a run never recorded gets its own id.
    experiment = trained_runs.copied_experiment(TINY_TRAINING_SPEC, tmp_path)
    folders_before = sorted(path.name for path in experiment.iterdir() if path.is_dir())
    runs_before = sorted((experiment / "runs.csv").read_text().splitlines())
    louder = ["--set", "train.verbose=2", "--backend", keras.backend.backend()]
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent, "--dry-run",
                             *louder)
    assert code == 0, out + err
    assert "0 to run, 4 reused" in out and all(f"reuse  {name}" in out for name in folders_before)
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent, *louder)
    assert code == 0, out + err
    assert "4 of 4 runs done before, reused" in out
    assert sorted(path.name for path in experiment.iterdir() if path.is_dir()) == folders_before
    assert sorted((experiment / "runs.csv").read_text().splitlines()) == runs_before
    # A new seed has no recorded folder at any verbosity: it trains, under its own id.
    code, out, err = run_cli(capsys, "run", experiment / "experiment.yaml", "--out", experiment.parent, "--dry-run",
                             "--set", "seeds=[0, 1, 2]", *louder)
    assert code == 0, out + err
    assert "2 to run, 4 reused" in out
