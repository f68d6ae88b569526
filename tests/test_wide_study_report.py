"""A tuned experiment of hundreds of tuned keys (a wide study): `seqkeras report` and tuning.md are written
without pandas fragmenting a frame (PerformanceWarning), and only the first tuning.MAX_CHARTS keys are charted,
a note saying how many more the table shows.

The results folder is written by hand, as tests/test_tuning_report.py writes its own: runs.csv,
experiment.yaml and the tuning/trials.csv and best.csv that execution.tuning writes; nothing trains.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import yaml

from seqkeras.reporting import tuning
from seqkeras.spec.sections import ExperimentSpec
from tests.helpers import run_cli

KEYS = [f"model.p{index:03d}" for index in range(400)]
KINDS = [{"uniform": [0.0, 1.0]}, {"log_uniform": [0.001, 0.1]}, {"integer": [1, 64]},
         {"choice": ["a", "b", "c"]}]  # a quarter text: pandas keeps a block per text column
CELLS = ["simple_rnn", "lstm"]
TRIALS = 5


def value(index: int, trial: int):
    kind = index % 4
    return [0.1 * trial, 0.001 * (trial + 1), trial + 1, "abc"[trial % 3]][kind]


def wide_results(root: Path, name: str = "wide") -> Path:
    """A tuned experiment of 2 matrix points × 400 tuned keys × 5 trials, its best setting trained on 3 seeds."""
    folder = root / name
    (folder / "tuning").mkdir(parents=True)
    search = {key: KINDS[index % 4] for index, key in enumerate(KEYS)}
    document = {"version": 1, "name": name, "task": {"name": "delayed_recall", "lag": 5},
                "model": {"kind": "classifier", "units": 8}, "train": {"epochs": 4},
                "matrix": {"model.cell": CELLS}, "seeds": [0, 1, 2],
                "table": {"rows": "model.cell", "value": "accuracy"}, "tune": {"search": search, "trials": TRIALS}}
    (folder / "experiment.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")
    trials, best, runs = [], [], []
    for shift, cell in enumerate(CELLS):
        study = f"cell={cell}_0123abcd"
        for trial in range(1, TRIALS + 1):
            state = "fail" if trial == TRIALS else "pruned" if trial == TRIALS - 1 else "complete"
            trials.append({"model.cell": cell, "study": study, "trial": trial, "state": state,
                           "objective": None if state == "fail" else 0.1 * trial + 0.05 * shift,
                           **{f"value.{key}": value(index, trial) for index, key in enumerate(KEYS)},
                           "epochs": 2 if state == "pruned" else 4, "seconds": 1.0,
                           "run_id": f"trial-{trial:03d}_{study}", "error": "boom" if state == "fail" else ""})
        chosen = {key: value(index, 1) for index, key in enumerate(KEYS)}  # trial 1: the lowest val_loss
        best.append({"model.cell": cell, "study": study, "objective": "val_loss", "direction": "minimize",
                     "best": 0.1 + 0.05 * shift, "best_trial": 1, **{f"best.{key}": v for key, v in chosen.items()},
                     "median": 0.2 + 0.05 * shift, "best_minus_median": -0.1, "complete": TRIALS - 2, "pruned": 1,
                     "failed": 1})
        runs += [{"experiment": name, "run_id": f"cell={cell}_seed={seed}_0000", "status": "ok", "model.cell": cell,
                  **{f"tuned.{key}": v for key, v in chosen.items()}, "seed": seed,
                  "accuracy": 0.8 - 0.1 * shift + 0.01 * seed, "params": 100, "train_seconds": 1.0,
                  "backend": "torch", "error": ""} for seed in range(3)]
    pd.DataFrame(runs).to_csv(folder / "runs.csv", index=False)
    pd.DataFrame(trials).to_csv(folder / "tuning" / "trials.csv", index=False)
    pd.DataFrame(best).to_csv(folder / "tuning" / "best.csv", index=False)
    return folder


def performance_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, pd.errors.PerformanceWarning)]


def test_a_study_of_400_tuned_keys_is_read_into_unfragmented_frames(tmp_path):
    folder = wide_results(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)  # raised here: read_found does not catch
        found = tuning.read_found(folder, None, lambda message: None, expected=True)
    assert found.keys == KEYS and found.notes == []
    assert found.trials.shape == (2 * TRIALS, 10 + len(KEYS)) and list(found.trials.columns)[-1] == "point"
    assert list(found.trials["point"].unique()) == ["cell=simple_rnn", "cell=lstm"]
    assert found.trials["objective"].dtype == float and found.trials["state"].iloc[-1] == "fail"
    assert found.best.shape == (2, 12 + len(KEYS)) and list(found.best["point"]) == ["cell=simple_rnn", "cell=lstm"]


def test_report_and_tuning_md_of_a_wide_study_are_written_without_a_performance_warning_and_few_charts(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tuning, "MAX_CHARTS", 3)  # each chart takes a fraction of a second; 3 show the limit
    folder = wide_results(tmp_path)
    site = tmp_path / "site"
    spec = ExperimentSpec.model_validate(yaml.safe_load((folder / "experiment.yaml").read_text(encoding="utf-8")))
    said: list[str] = []
    # Recorded, not raised: the report and tuning.md turn any exception into a warning and go on without the
    # section, so an error filter alone would not fail this test.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, "report", folder, "--out", site)
        tuning.write_tuning_report(folder, spec, said.append)
    assert performance_warnings(caught) == []
    assert code == 0 and "warning" not in err, err
    charts = ["tuning_model-p000.png", "tuning_model-p001.png", "tuning_model-p002.png"]
    assert said == [f"tuning: tuning.md, {', '.join(charts)}"]
    note = "Charts of the first 3 of the 400 tuned keys only"
    page = (site / "wide" / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="tuning">Tuning (tuning.md)</h2>' in page and note in page
    assert "<th>best model.p399</th>" in page and page.count('<img src="tuning_') == 3
    assert sorted(p.name for p in site.joinpath("wide").glob("tuning_*.png")) == sorted(charts)
    markdown = (folder / "tuning.md").read_text(encoding="utf-8")
    assert note in markdown and "best model.p399" in markdown
    assert sorted(p.name for p in folder.glob("tuning_*.png")) == sorted(charts)


def test_a_study_of_as_many_keys_as_charts_is_charted_whole_without_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(tuning, "MAX_CHARTS", len(KEYS))
    monkeypatch.setattr(tuning, "draw_key_chart", lambda found, key: None)  # counted, not drawn
    monkeypatch.setattr(tuning, "save_png", lambda figure, path, tight: None)
    found = tuning.read_found(wide_results(tmp_path), None, lambda message: None, expected=True)
    charts = tuning.draw_charts(found, tmp_path, lambda message: None)
    assert len(charts) == len(KEYS) and found.notes == []
