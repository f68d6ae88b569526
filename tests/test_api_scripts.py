"""The Python API where users call it: a plain script (no `__main__` guard), stdin, a notebook;
its arguments checked as the command line checks them; failed runs never silent; `load` of a folder
made elsewhere (its data files absent, a claim unreadable, a link or a FIFO in it)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
import yaml

import seqkeras
from seqkeras.errors import SpecError
from tests.conftest import REPO, TINY_TRAINING_SPEC

PYTHON = REPO / ".venv" / "bin" / "python"

# Two runs (one seed, two cells), as small as a run gets: the worker processes' start is most of it.
TWO_RUNS = yaml.safe_load(TINY_TRAINING_SPEC) | {"seeds": [0]}
TWO_RUNS["task"] = {**TWO_RUNS["task"], "n_train": 32, "n_test": 16}

# No `if __name__ == "__main__":`, as docs/python-api.md's example is written.
SCRIPT = """\
import seqkeras

print("top level of the script")
results = seqkeras.run("spec.yaml", out="out", jobs=2)
print(repr(results))
print("ok:", results.ok)
"""


def script_environment(unset: tuple[str, ...] = ("SEQKERAS_JOBS",)) -> dict[str, str]:
    """This process's environment, with the worker processes allowed and this checkout's seqkeras."""
    env = {key: value for key, value in os.environ.items() if key not in unset}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def resolve_backend_in_a_fresh_process() -> str:
    """The backend `auto` picks where Keras is not imported yet (this process has TensorFlow's)."""
    from seqkeras.backends.runtime import AUTO_PREFERENCE, BACKEND_PACKAGES

    return next((b for b in AUTO_PREFERENCE if importlib.util.find_spec(BACKEND_PACKAGES[b])), "tensorflow")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["a script file", "stdin"])
def test_a_plain_script_without_a_main_guard_runs_in_worker_processes(tmp_path, how):
    """Spawned workers used to run the script's top level again: every run failed with BrokenProcessPool,
    two multiprocessing tracebacks were printed, and the script still exited 0. From stdin (`python -`,
    whose __file__ is "<stdin>") a worker could not even find the script to run again."""
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(TWO_RUNS), encoding="utf-8")
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    command, stdin = ([str(PYTHON), "script.py"], None) if how == "a script file" else ([str(PYTHON), "-"], SCRIPT)
    # A reader's defaults, as docs/python-api.md's example has them: no $KERAS_BACKEND, so the workers run on
    # the backend auto picks (torch where installed: its import costs each worker a third of TensorFlow's).
    environment = script_environment(unset=("SEQKERAS_JOBS", "KERAS_BACKEND"))
    done = subprocess.run(command, input=stdin, cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=540)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Traceback" not in output and "BrokenProcessPool" not in output, output
    assert "tiny: 2 run(s) in 2 worker processes" in done.stdout
    assert done.stdout.count("top level of the script") == 1  # the workers did not run it again
    assert "2 of 2 claim(s)" not in done.stdout and "ok: True" in done.stdout, output
    runs = pd.read_csv(tmp_path / "out" / "tiny" / "runs.csv")
    assert list(runs["status"]) == ["ok", "ok"]
    assert set(runs["backend"]) == {resolve_backend_in_a_fresh_process()}


@pytest.mark.parametrize("main_file", ["script", "<stdin>"])
def test_pool_workers_never_run_the_main_module_again(tmp_path, monkeypatch, main_file):
    """The workers' multiprocessing context starts them without the caller's `__main__`, whatever it is."""
    import types

    from seqkeras.execution.workers import WorkerContext

    marker = tmp_path / "ran"
    script = tmp_path / "main_script.py"
    script.write_text(f"open({str(marker)!r}, 'a').write('x')\n", encoding="utf-8")
    main = types.ModuleType("__main__")
    main.__file__ = str(script) if main_file == "script" else main_file
    main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", main)
    with ProcessPoolExecutor(max_workers=1, mp_context=WorkerContext()) as pool:
        worker = pool.submit(os.getpid).result(timeout=120)
    assert worker != os.getpid()
    assert not marker.exists()
    assert sys.modules["__main__"] is main  # given back as it was


def test_failed_runs_are_a_warning_and_not_ok(tmp_path, monkeypatch, capsys):
    """A run that fails does not raise (the others' results stay usable) but is never silent."""
    from seqkeras.execution import single_run

    def broken(run, folder, record, progress=None, live=None):
        raise RuntimeError("the model blew up")

    monkeypatch.setattr(single_run, "run_training", broken)
    spec = TWO_RUNS | {"name": "breaks"}
    results = seqkeras.run(spec, out=tmp_path)
    assert not results.ok
    assert list(results.runs["status"]) == ["failed", "failed"]
    warning = capsys.readouterr().err
    assert (f"warning: {tmp_path / 'breaks'}: 2 failed run(s) (the first: 'RuntimeError: the model blew up'), "
            "1 claim(s) not reproduced; results.ok is False") in warning


@pytest.mark.parametrize("arguments, message", [
    ({"jobs": 0}, "jobs: expected a whole number of at least 1 (worker processes, as --jobs N) or None "
                  "(the default), got 0"),
    ({"jobs": -2}, "jobs: expected a whole number of at least 1"),
    ({"jobs": True}, "jobs: expected a whole number of at least 1 (worker processes, as --jobs N) or None "
                     "(the default), got True"),
    ({"jobs": 1.5}, "jobs: expected a whole number of at least 1"),
    ({"overrides": "task.n_train=8"}, "overrides: 'task.n_train=8' is one text; overrides takes a list of "
                                      "KEY=VALUE texts, [\"model.units=32\"], or a mapping {\"model.units\": 32}"),
    ({"overrides": ["task.n_train"]}, "overrides[0]: expected a KEY=VALUE text such as \"model.units=32\", "
                                      "got 'task.n_train'"),
    ({"overrides": {"task.n_train": object}}, "overrides['task.n_train']: <class 'object'> is not a spec value"),
    ({"only": "seed=0"}, "only: 'seed=0' is one text; only takes a list of KEY=VALUE texts, [\"seed=0\"]"),
    ({"only": [0]}, "only[0]: expected a KEY=VALUE text such as \"seed=0\", got 0"),
    ({"backend": "tensorfow"}, "unknown backend 'tensorfow'. Did you mean 'tensorflow'? "
                               "Allowed: auto, jax, tensorflow, torch."),
    ({"out": ""}, "out: expected a folder's path (str or Path), got an empty text"),
    ({"out": None}, "out: expected a folder's path (str or Path), got None"),
    ({"force": "yes"}, "force: expected True or False, got 'yes'"),
    ({"track": 1}, "track: expected a text"),
])
def test_wrong_arguments_are_spec_errors_before_anything_runs(tiny_spec, tmp_path, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)
    options = {"out": tmp_path / "out", **arguments}
    with pytest.raises(SpecError) as raised:
        seqkeras.run(tiny_spec, **options)
    assert str(raised.value).startswith(message)
    assert not (tmp_path / "out").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


def test_numpy_numbers_are_override_values(tmp_path):
    np = pytest.importorskip("numpy")
    results = seqkeras.run(TWO_RUNS, out=tmp_path, overrides={"task.n_train": np.int64(24)},
                           only=("model.cell=lstm",), jobs=np.int64(1))
    assert results.ok and list(results.runs["model.cell"]) == ["lstm"]
    assert "n_train: 24" in (tmp_path / "tiny" / results.runs["run_id"][0] / "spec.yaml").read_text()


ELSEWHERE_DATA = {"name": "text_classification_file", "path": "/data/on/another/machine/train.csv",
                  "text_column": "text", "label_column": "label"}


def shared_folder(root: Path, expect: object, task: dict = ELSEWHERE_DATA) -> Path:
    """A results folder as a colleague's machine wrote it: by default its task reads data files this machine lacks."""
    folder = root / "shared"
    folder.mkdir()
    spec = {
        "version": 1, "name": "shared", "description": "made elsewhere",
        "task": task,
        "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4},
        "train": {"epochs": 1},
        "matrix": {"model.cell": ["simple_rnn", "lstm"]},
        "seeds": [0, 1],
        "table": {"rows": "model.cell", "value": "accuracy"},
        "expect": expect,
    }
    (folder / "experiment.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    rows = [("shared", f"cell={cell}_seed={seed}", "ok", cell, seed, accuracy, "")
            for cell, seed, accuracy in [("simple_rnn", 0, 0.5), ("simple_rnn", 1, 0.6), ("lstm", 0, 0.8),
                                         ("lstm", 1, 0.9)]]
    frame = pd.DataFrame(rows, columns=["experiment", "run_id", "status", "model.cell", "seed", "accuracy", "error"])
    frame.to_csv(folder / "runs.csv", index=False)
    return folder


LSTM_BETTER = {"claim": "lstm beats simple_rnn", "where": {"model.cell": "lstm"}, "metric": "accuracy",
               "greater_than": {"where": {"model.cell": "simple_rnn"}}}


def test_load_reads_a_shared_folder_whose_data_files_are_not_here(tmp_path, capsys):
    """`load` used to validate experiment.yaml as a spec to run: a missing data file refused the whole folder."""
    folder = shared_folder(tmp_path, [LSTM_BETTER])
    results = seqkeras.load(folder)
    assert results.ok and len(results.runs) == 4
    assert results.verdicts[["claim", "verdict"]].values.tolist() == [["lstm beats simple_rnn", "reproduced"]]
    [table] = results.tables.values()
    assert list(table["accuracy mean"]) == pytest.approx([0.55, 0.85])
    assert capsys.readouterr().err == ""


def test_an_unreadable_claim_is_a_warning_and_the_others_are_checked(tmp_path, capsys):
    broken = {"claim": "no kind of check", "metric": "accuracy"}
    folder = shared_folder(tmp_path, [broken, LSTM_BETTER, {"claim": "typo", "metric": "accuracy", "at_lest": 1}])
    results = seqkeras.load(folder)
    assert list(results.verdicts["claim"]) == ["lstm beats simple_rnn"]
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 2
    assert warnings[0].startswith(f"warning: {folder / 'experiment.yaml'}: expect[0]") \
        and warnings[0].endswith("; this claim is not checked")
    assert "expect[2].at_lest" in warnings[1]
    (folder / "experiment.yaml").write_text(yaml.safe_dump({"name": "shared", "expect": "all good"}))
    assert seqkeras.load(folder).verdicts.empty
    assert "its expect section is 'all good', not a list of claims" in capsys.readouterr().err


def test_load_does_not_follow_a_link_or_open_a_fifo_in_the_folder(tmp_path, capsys):
    """The folder may be someone else's: its experiment.yaml linked to a file elsewhere is not read, a FIFO
    in its place does not block."""
    elsewhere = shared_folder(tmp_path, [LSTM_BETTER], task=TWO_RUNS["task"]) / "experiment.yaml"
    folder = tmp_path / "theirs"
    folder.mkdir()
    (folder / "runs.csv").write_bytes((elsewhere.parent / "runs.csv").read_bytes())
    (folder / "experiment.yaml").symlink_to(elsewhere)
    results = seqkeras.load(folder)
    assert results.verdicts.empty and len(results.runs) == 4  # no claim from the linked file
    assert f"{folder / 'experiment.yaml'} is a symbolic link" in capsys.readouterr().err
    (folder / "experiment.yaml").unlink()
    os.mkfifo(folder / "experiment.yaml")
    done = subprocess.run([str(PYTHON), "-c", textwrap.dedent(f"""
        import seqkeras
        print(seqkeras.load({str(folder)!r}))
    """)], env=script_environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Results(" in done.stdout, done.stderr
