"""Sweeps that survive: skip, resume after SIGKILL, failure isolation, parallel and Ray runs, bad input."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

from seqkeras.cli import main
from seqkeras.models.recurrent import ClassifierParams, build_classifier, estimated_parameters
from seqkeras.training.settings import TrainSpec
from seqkeras.tasks import delayed_recall
from seqkeras.training import trainer
from tests.conftest import TINY_TRAINING_SPEC as TINY_SPEC_TEXT
from tests.helpers import run_cli

RESUMABLE_SPEC = """
    version: 1
    name: resumable
    task: {name: delayed_recall, lag: 30, n_train: 3000, n_test: 100}
    model: {kind: classifier, cell: lstm, units: 16, embedding_dim: 8}
    train: {epochs: 4, batch_size: 32, verbose: 0}
    seeds: [0]
"""


def cli(*args, cwd=None, **kwargs):
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.Popen([sys.executable, "-m", "seqkeras", *map(str, args)], cwd=cwd, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def metrics_of(folder):
    runs = pd.read_csv(folder / "runs.csv", keep_default_na=False)
    return runs.drop(columns=["train_seconds"]).to_dict("records")


@pytest.mark.system
def test_sigkill_mid_training_resumes_to_identical_metrics(write_spec, tmp_path):
    spec = write_spec(RESUMABLE_SPEC)
    reference = cli("run", spec, "--out", tmp_path / "reference")
    interrupted = cli("run", spec, "--out", tmp_path / "interrupted")
    state = None
    deadline = time.time() + 240
    while time.time() < deadline and interrupted.poll() is None:
        found = list((tmp_path / "interrupted" / "resumable").glob("*/.resume/state.json"))
        if found and json.loads(found[0].read_text())["epoch"] >= 2:
            state = found[0]
            break
        time.sleep(0.2)
    assert state is not None, interrupted.communicate()[0]
    interrupted.send_signal(signal.SIGKILL)
    interrupted.wait()
    assert not (state.parent.parent / "metrics.json").exists()  # killed before it finished
    resumed = cli("run", spec, "--out", tmp_path / "interrupted")
    output = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 0, output
    assert "resuming after epoch" in output
    assert reference.wait(timeout=300) == 0
    assert metrics_of(tmp_path / "interrupted" / "resumable") == metrics_of(tmp_path / "reference" / "resumable")
    history = pd.read_csv(next((tmp_path / "interrupted" / "resumable").glob("*/history.csv")))
    reference_history = pd.read_csv(next((tmp_path / "reference" / "resumable").glob("*/history.csv")))
    assert list(history["epoch"]) == [1, 2, 3, 4]
    assert list(history["loss"]) == list(reference_history["loss"])  # bit-identical training
    assert not list((tmp_path / "interrupted" / "resumable").glob("*/.resume"))  # cleaned up


def process_state(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) from /proc/<pid>/stat, or None once the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()  # after the command name
    except OSError:
        return None
    return fields[0], int(fields[1])


def children_of(pid: int) -> list[int]:
    pids = [int(path.name) for path in Path("/proc").glob("[0-9]*")]
    return [child for child in pids if (process_state(child) or ("", 0))[1] == pid]


def running(pid: int) -> bool:
    """Alive and not a zombie (an ended process nobody has reaped yet)."""
    state = process_state(pid)
    return state is not None and state[0] != "Z"


def parallel_sweep_in_training(write_spec, tmp_path):
    """A `--jobs 2` sweep of three runs, returned once both workers are training, with the workers' pids. The
    runs are given 40 epochs, which no test lets them finish: on torch 4 epochs could end before a worker notices
    that its parent is gone."""
    spec = write_spec(RESUMABLE_SPEC.replace("seeds: [0]", "seeds: [0, 1, 2]").replace("epochs: 4", "epochs: 40"))
    sweep = cli("run", spec, "--out", tmp_path, "--jobs", "2")
    deadline = time.time() + 240
    while len(list((tmp_path / "resumable").glob("*/spec.yaml"))) < 2:
        assert time.time() < deadline and sweep.poll() is None, sweep.communicate()[0]
        time.sleep(0.2)
    workers = [pid for pid in children_of(sweep.pid) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert len(workers) == 2
    return sweep, workers


def assert_ended_mid_run(workers, results):
    deadline = time.time() + 30
    while any(map(running, workers)) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(map(running, workers))
    assert not list(results.glob("*/metrics.json"))  # stopped mid-run, not left to finish


@pytest.mark.system
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_sigterm_stops_a_parallel_sweep_and_its_workers(write_spec, tmp_path):
    sweep, workers = parallel_sweep_in_training(write_spec, tmp_path)
    sweep.send_signal(signal.SIGTERM)
    output = sweep.communicate(timeout=120)[0]
    assert sweep.returncode == 130, output
    assert "interrupted: finished runs are recorded" in output
    assert_ended_mid_run(workers, tmp_path / "resumable")
    assert (tmp_path / "resumable" / "runs.csv").exists()


@pytest.mark.system
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_workers_end_when_their_parent_is_killed(write_spec, tmp_path):
    """SIGKILL cannot be caught: the workers notice their parent is gone and end."""
    sweep, workers = parallel_sweep_in_training(write_spec, tmp_path)
    sweep.send_signal(signal.SIGKILL)
    sweep.wait()
    assert_ended_mid_run(workers, tmp_path / "resumable")


@pytest.mark.slow
def test_two_processes_sharing_a_results_folder_leave_a_consistent_runs_csv(write_spec, tmp_path, capsys):
    """A fresh process and this one (whose TensorFlow is imported already), the second started once the first
    is training its first run."""
    spec = write_spec(RESUMABLE_SPEC.replace("n_train: 3000", "n_train: 200").replace("seeds: [0]", "seeds: [0, 1, 2]"))
    first = cli("run", spec, "--out", tmp_path)
    deadline = time.time() + 240
    while not list((tmp_path / "resumable").glob("*/spec.yaml")):
        assert time.time() < deadline and first.poll() is None, first.communicate()[0]
        time.sleep(0.1)
    second = run_cli(capsys, "run", spec, "--out", tmp_path)
    outputs = [first.communicate(timeout=300)[0], second.output]
    assert first.returncode == 0 and second.code == 0, outputs
    runs = pd.read_csv(tmp_path / "resumable" / "runs.csv")
    assert sorted(runs["seed"]) == [0, 1, 2] and set(runs["status"]) == {"ok"}
    # Each run was trained once: the other process waited on its lock and reused it.
    trained = sum(out.count(": ok (") for out in outputs)
    assert trained == 3, outputs


# Prints the deep-learning packages the calling process imported, after the CLI calls in argv.
IMPORTED_AFTER = """
import sys
from seqkeras.cli import main
for command in sys.argv[1:]:
    main(command.split("|"))
print(sorted({m.split(".")[0] for m in sys.modules} & {"keras", "tensorflow", "torch", "jax"}))
"""


def imported_by(*commands, cwd=None, output: list | None = None, unset=("KERAS_BACKEND",),
                script: str = IMPORTED_AFTER) -> str:
    """The packages a process imported running `commands`; with a list as `output`, its stdout lines go there.

    Without $KERAS_BACKEND (this process sets it), as a user's shell: the backend is the default one.
    """
    environment = {key: value for key, value in os.environ.items() if key not in unset}
    environment.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    result = subprocess.run([sys.executable, "-c", script, *commands], cwd=cwd, env=environment,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    if output is not None:
        output.extend(lines)
    return lines[-1]


def test_commands_that_only_read_specs_and_results_never_import_tensorflow(tiny_spec):
    """validate, list, schema and table take a second, not the 3-5 s of importing TensorFlow."""
    repo = Path(__file__).resolve().parents[1]
    results = repo / "results" / "lesson-decoding"
    commands = ["validate|experiments", "list", f"schema|--out|{tiny_spec.parent / 'schema.json'}", f"table|{results}"]
    assert imported_by(*commands, cwd=repo) == "[]"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_the_default_backend_is_torch_and_a_torch_run_never_imports_tensorflow(tiny_spec, tmp_path):
    """Keras's set_random_seed would import it (to seed tf.data): seconds and memory a torch run never uses.
    (Keras imports JAX, when installed, for its Orbax checkpoint callback whatever the backend: kept, see
    runtime.KERAS_EXTRAS.)"""
    output = []
    assert imported_by(f"run|{tiny_spec}|--out|{tmp_path}", output=output) in ("['keras', 'torch']",
                                                                                 "['jax', 'keras', 'torch']")
    assert "backend: torch (auto: the fastest installed here; --backend tensorflow, --backend jax to choose)" in output
    runs = pd.read_csv(tmp_path / "tiny" / "runs.csv")
    assert list(runs["status"]) == ["ok"] * 4 and set(runs["backend"]) == {"torch"}
    record = json.loads((tmp_path / "tiny" / runs.run_id[0] / "metrics.json").read_text())
    assert record["backend_choice"] == "auto: the fastest installed here; --backend tensorflow, --backend jax to choose"


ENCODER_DECODERS = """
    version: 1
    name: pairs
    task: {name: reverse, n_train: 32, n_test: 8, max_length: 4}
    model: {kind: seq2seq, units: 4, embedding_dim: 4}
    train: {epochs: 1}
    matrix:
      model.attention: [none, bahdanau, luong]
"""
CLASSIFIERS = TINY_SPEC_TEXT  # 4 runs


@pytest.mark.skipif(not all(importlib.util.find_spec(name) for name in ("torch", "jax")),
                    reason="torch and JAX are not both installed")
def test_auto_runs_encoder_decoders_on_jax_and_says_why_before_a_dry_run(write_spec, tmp_path):
    environment = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    result = subprocess.run([sys.executable, "-m", "seqkeras", "run", write_spec(ENCODER_DECODERS), "--out", tmp_path,
                             "--dry-run"], env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[0] == (
        "backend: jax (auto: the fastest installed here for 3 of 3 runs (seq2seq, as make bench measured); "
        "--backend tensorflow, --backend torch to choose)")


@pytest.mark.parametrize(("specs", "chosen"), [
    ([ENCODER_DECODERS], "jax"),
    ([ENCODER_DECODERS, CLASSIFIERS], "torch"),  # 4 runs fastest on torch, 3 on JAX
    ([ENCODER_DECODERS.replace("[none, bahdanau, luong]", "[none, luong]"),
      ENCODER_DECODERS.replace("name: pairs", "name: more").replace("[none, bahdanau, luong]", "[bahdanau]"),
      CLASSIFIERS.replace("seeds: [0, 1]", "seeds: [0]")], "jax"),  # 3 runs against 2
    ([CLASSIFIERS], "torch"),
], ids=["encoder-decoders", "more classifiers", "more encoder-decoders", "classifiers"])
def test_auto_takes_the_backend_most_runs_train_fastest_on(write_spec, monkeypatch, specs, chosen):
    from seqkeras.execution import sweep

    # As in a fresh process with the three installed: this one has imported Keras already.
    monkeypatch.setattr(sweep, "loaded_keras_backend", lambda: None)
    monkeypatch.setattr(sweep, "installed_backends", lambda: ["torch", "jax", "tensorflow"])
    monkeypatch.setattr(sweep, "resolve_backend", lambda name: "torch")
    paths = [str(write_spec(text, f"spec{index}.yaml")) for index, text in enumerate(specs)]
    backend, why = sweep.choose_backend("auto", sweep.load_all(paths, [], []))
    assert backend == chosen
    assert why.startswith("auto: the fastest installed here" + (" for " if chosen == "jax" else ";"))
    monkeypatch.setattr(sweep, "loaded_keras_backend", lambda: "torch")  # Keras imported: only its backend
    assert sweep.auto_backend(sweep.load_all(paths, [], [])) == (
        "torch", "auto: the fastest installed here; --backend tensorflow, --backend jax to choose")


# Put before IMPORTED_AFTER: says so each time the command starts a pool of worker processes.
POOLS_SAID = """
from seqkeras.execution import executors

class SaidPool(executors.ProcessPoolExecutor):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        print("a worker pool started", flush=True)

executors.ProcessPoolExecutor = SaidPool
"""


@pytest.mark.tensorflow  # the workers' runs on TensorFlow against this process's
@pytest.mark.slow
def test_parallel_runs_go_one_per_core_in_one_set_of_workers_and_give_the_serial_table(write_spec, tmp_path,
                                                                                        trained_runs):
    """By default one worker per core (at most one per run); the workers import the backend side by side, never
    the parent (importing it first would delay them all), and serve every experiment of the command (one
    import per worker, not per experiment); the runs give what one run at a time gives."""
    serial = trained_runs.experiment(TINY_SPEC_TEXT)  # trained once per session, one run at a time ($SEQKERAS_JOBS=1)
    first = write_spec(TINY_SPEC_TEXT, "first.yaml")
    second = write_spec(TINY_SPEC_TEXT.replace("name: tiny", "name: tiny-again"), "second.yaml")
    cores = os.cpu_count() or 1
    # One core runs one run at a time by default, in no pool: there, two workers are asked for.
    jobs = [] if cores >= 2 else ["--jobs", "2"]
    said = []
    imported = imported_by("|".join(["run", str(first), str(second), "--out", str(tmp_path), "--backend", "tensorflow",
                                     *jobs]), output=said, unset=("KERAS_BACKEND", "SEQKERAS_JOBS"),
                           script=POOLS_SAID + IMPORTED_AFTER)
    assert imported == "[]" and said.count("a worker pool started") == 1, said
    workers = min(cores, 4) if cores >= 2 else 2  # the tiny spec has 4 runs
    plan = f"tiny: 4 run(s) in {workers} worker processes (1 thread(s) each"
    if not jobs:
        plan += "; the default: one per core" if workers == cores else "; the default: one per run"
    assert any(line.startswith(plan) for line in said), said
    assert metrics_of(tmp_path / "tiny") == metrics_of(serial)
    again = pd.read_csv(tmp_path / "tiny-again" / "runs.csv")["accuracy"].tolist()
    assert again == pd.read_csv(serial / "runs.csv")["accuracy"].tolist()  # the same runs, the same numbers


def test_an_invalid_spec_starts_no_worker(tiny_spec, monkeypatch, capsys):
    """The specs are read before any worker starts (how many start depends on the runs): a spec error costs
    no backend import."""
    import multiprocessing

    from seqkeras import cli as cli_module

    def invalid_specs(paths, overrides, only=(), tensorboard=False):
        raise cli_module.SpecError("tiny.yaml: model.units: must be at least 1")

    monkeypatch.setattr(cli_module.sweep, "load_all", invalid_specs)
    assert main(["run", str(tiny_spec), "--jobs", "2"]) == 2
    assert "model.units: must be at least 1" in capsys.readouterr().err
    assert multiprocessing.active_children() == []


@pytest.mark.system
def test_ray_local_executor_gives_the_same_table_as_serial(tiny_spec, tmp_path, capsys):
    pytest.importorskip("ray", reason="Ray is optional: pip install -r requirements-ray.txt")
    assert main(["run", str(tiny_spec), "--out", str(tmp_path / "serial")]) == 0
    code = main(["run", str(tiny_spec), "--out", str(tmp_path / "ray"), "--executor", "ray", "--cpus-per-run", "1"])
    import ray

    ray.shutdown()
    assert code == 0, capsys.readouterr()
    assert metrics_of(tmp_path / "ray" / "tiny") == metrics_of(tmp_path / "serial" / "tiny")


@pytest.mark.system
def test_a_sweep_across_a_two_node_ray_cluster_gives_the_same_table_as_serial(tiny_spec, tmp_path, capsys):
    """A head and one worker node on this machine, one CPU each: the four runs go to both nodes, as on a cluster
    whose nodes share the results folder."""
    pytest.importorskip("ray", reason="Ray is optional: pip install -r requirements-ray.txt")
    import ray
    from ray.cluster_utils import Cluster

    assert main(["run", str(tiny_spec), "--out", str(tmp_path / "serial")]) == 0
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    address = cluster.address  # None once it is shut down
    try:
        cluster.add_node(num_cpus=1)
        code = main(["run", str(tiny_spec), "--out", str(tmp_path / "ray"), "--executor", "ray",
                     "--address", address, "--cpus-per-run", "1"])
        ray.shutdown()
    finally:
        cluster.shutdown()
    assert code == 0, capsys.readouterr()
    assert f"4 run(s) as Ray tasks on {address}" in capsys.readouterr().out
    assert metrics_of(tmp_path / "ray" / "tiny") == metrics_of(tmp_path / "serial" / "tiny")
    records = [json.loads(path.read_text()) for path in (tmp_path / "ray" / "tiny").glob("*/metrics.json")]
    assert len(records) == 4 and len({record["worker"]["ray_node"] for record in records}) == 2


def test_nan_loss_fails_the_run():
    data = delayed_recall.build(delayed_recall.Params(lag=3, n_train=32, n_test=8), 0)
    model = build_classifier(ClassifierParams(cell="simple_rnn", units=2), data)
    model.compile(optimizer="sgd", loss=lambda y_true, y_pred: keras.ops.mean(y_pred) * np.nan)
    with pytest.raises(FloatingPointError, match="became nan in epoch 1"):
        trainer.fit(model, data, TrainSpec(epochs=2, verbose=0))


def test_early_stopping_state_and_validation_split():
    data = delayed_recall.build(delayed_recall.Params(lag=3, n_train=64, n_test=8), 0)
    model = build_classifier(ClassifierParams(cell="gru", units=2), data)
    # A learning rate this small leaves val_accuracy flat: no improvement, so it stops after patience.
    spec = TrainSpec(epochs=30, verbose=0, validation_split=0.25, optimizer={"learning_rate": 1e-9},
                     early_stopping={"monitor": "val_accuracy", "patience": 1})
    history, _ = trainer.fit(model, data, spec)
    assert "val_loss" in history and len(history) == 2


@pytest.mark.tensorflow  # TensorFlow's traced train step
def test_the_train_step_is_traced_once_and_trains_as_before():
    """Optimizer and metric variables exist before fit traces (else TensorFlow traces it twice)."""

    def trained(prebuild: bool):
        keras.utils.set_random_seed(0)
        data = delayed_recall.build(delayed_recall.Params(lag=3, n_train=64, n_test=8), 0)
        model = build_classifier(ClassifierParams(cell="lstm", units=4, embedding_dim=4), data)
        traces = []
        train_step = model.train_step
        model.train_step = lambda batch: traces.append(1) or train_step(batch)  # runs once per trace
        with pytest.MonkeyPatch.context() as patch:
            if not prebuild:  # Keras's own behaviour, for comparison
                patch.setattr(trainer, "build_before_tracing", lambda *args: None)
            history, _ = trainer.fit(model, data, TrainSpec(epochs=2, batch_size=16, verbose=0))
        return len(traces), history, model.get_weights()

    traces, history, weights = trained(prebuild=True)
    keras_traces, keras_history, keras_weights = trained(prebuild=False)
    assert (traces, keras_traces) == (1, 2)
    pd.testing.assert_frame_equal(history, keras_history)
    for ours, theirs in zip(weights, keras_weights):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_estimated_parameters_match_the_built_model(bidirectional):
    data = delayed_recall.build(delayed_recall.Params(lag=3, n_train=8, n_test=8), 0)
    params = ClassifierParams(cell="lstm", units=5, embedding_dim=3, layers=2, bidirectional=bidirectional)
    model = build_classifier(params, data)
    assert estimated_parameters(params, len(data.vocabulary), data.num_outputs) == model.count_params()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("name: tiny", "name: ../escape"), "name"),
        (lambda t: t.replace("name: tiny", "name: /abs/path"), "name"),
        (lambda t: t.replace("units: 4", "units: 60000").replace("embedding_dim: 4", "embedding_dim: 60000"),
         "parameters"),
        (lambda t: t.replace("n_train: 64", "n_train: -5"), "task.n_train"),
        (lambda t: t.replace("batch_size: 16", "batch_size: 0"), "train.batch_size"),
    ],
)
def test_bad_input_exits_2_without_touching_results(write_spec, tmp_path, capsys, edit, message):
    from tests.conftest import TINY_TRAINING_SPEC

    path = write_spec(edit(TINY_TRAINING_SPEC))
    run = run_cli(capsys, "run", path, "--out", tmp_path / "results")
    assert run.code == 2 and message in run.output and "Traceback" not in run.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert not (tmp_path / "escape").exists()


def test_huge_model_names_its_estimated_size(write_spec, tmp_path, capsys):
    from tests.conftest import TINY_TRAINING_SPEC

    path = write_spec(TINY_TRAINING_SPEC.replace("units: 4", "units: 60000"))
    run = run_cli(capsys, "validate", path)
    assert run.code == 2 and "about 3.6e+09 parameters" in run.output and "GB" in run.output


def test_unwritable_output_folder(tiny_spec, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    run = run_cli(capsys, "run", tiny_spec, "--out", blocker / "results")
    assert run.code == 2 and "cannot write results" in run.output


def test_damaged_records_are_rerun_and_runs_csv_rebuilt(tiny_spec, tmp_path, capsys, trained_runs):
    out = tmp_path / "r"
    # The tiny spec's seed-0 runs, finished, as `run --set seeds=[0]` leaves them (trained once per session).
    folder = trained_runs.copied_experiment(TINY_SPEC_TEXT, out)
    for run_folder in folder.glob("*_seed=1_*"):
        shutil.rmtree(run_folder)
    assert run_cli(capsys, "run", tiny_spec, "--out", out, "--set", "seeds=[0]").code == 0
    assert len(pd.read_csv(folder / "runs.csv")) == 2
    first_run = sorted(p for p in folder.iterdir() if p.is_dir())[0]
    (first_run / "metrics.json").write_text("{ half-writ")
    (folder / "runs.csv").write_text('"unclosed,quote\n1,2,3\n')
    run = run_cli(capsys, "table", folder)
    assert run.code == 2 and "runs.csv" in run.output and "Traceback" not in run.output
    (folder / "table.md").unlink()
    run = run_cli(capsys, "table", folder, "--rebuild")
    assert run.code == 0 and "skipped damaged record" in run.output and "rebuilt" in run.output
    # table.md is written again from the rebuilt runs.csv: the one intact run, not the damaged one.
    assert "rewrote" in run.output and "1 runs: 1 ok, 0 failed." in (folder / "table.md").read_text()
    run = run_cli(capsys, "run", tiny_spec, "--out", out, "--set", "seeds=[0]")
    assert run.code == 0 and "its metrics.json is damaged; running it again" in run.output
    assert len(pd.read_csv(folder / "runs.csv")) == 2


def test_ray_missing_is_a_clear_error(tiny_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    run = run_cli(capsys, "run", tiny_spec, "--out", tmp_path, "--executor", "ray")
    assert run.code == 2 and "pip install -r requirements-ray.txt" in run.output


@pytest.mark.tensorflow  # TensorFlow's distribution strategy
def test_mirrored_distribution_runs_on_the_cpu_and_says_so(tiny_spec, tmp_path, capsys):
    run = run_cli(capsys, "run", tiny_spec, "--out", tmp_path, "--set", "train.distribution=mirrored",
                  "--set", "seeds=[0]", "--only", "model.cell=lstm")  # one run says it as well as two
    assert run.code == 0 and "no GPU found, running on the CPU" in run.output
    (metrics,) = (tmp_path / "tiny").glob("*/metrics.json")
    record = json.loads(metrics.read_text())
    assert record["devices"] == "/cpu:0"


def test_table_page_counts_runs_not_their_decoder_rows():
    from seqkeras.reporting.html import ExperimentPage, render_experiment
    from seqkeras.reporting.tables import render_page

    runs = pd.DataFrame({"run_id": ["a", "a", "b"], "status": ["ok", "ok", "failed"],
                         "decoder": ["greedy", "beam(width=4)", None], "error": ["", "", "boom"]})
    assert "2 runs: 1 ok, 1 failed." in render_page("x", "", runs, [], [])
    page = ExperimentPage(Path("x"), "x", "", runs)
    assert "2 runs: 1 ok, 1 failed." in render_experiment(page, index_href="index.html")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stream_draws_the_next_job_once_a_worker_is_free_and_the_result_before_it_was_taken(monkeypatch, workers):
    """`stream` (tuning's trials): the next job is drawn only after the consumer took a result, so it can depend on
    it; with two workers a job that ends early frees its worker at once, while the other job still runs."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from seqkeras.execution import executors

    release = threading.Event()

    def fake_execute_once(run, folder, force, label, progress=None, tracking=None):
        if run == "slow":  # waits until the consumer has the results of both fast jobs (never, in batches of two)
            return {"run": run, "released": release.wait(timeout=30)}
        return {"run": run}

    monkeypatch.setattr(executors, "execute_once", fake_execute_once)
    executor = executors.ProcessExecutor(workers, "tensorflow") if workers > 1 else executors.SerialExecutor()
    if workers > 1:
        executor.pool = ThreadPoolExecutor(workers)  # started: threads stand in for the worker processes
    queue = ["slow", "fast", "fast-again"] if workers > 1 else ["fast", "fast-again"]
    taken: list[str] = []
    drawn_after: list[int] = []

    def next_job():
        if not queue:
            return None
        drawn_after.append(len(taken))
        return executors.Job(len(drawn_after) - 1, queue.pop(0), Path("unused"))

    records = []
    for _job, record in executor.stream(next_job, False):
        records.append(record)
        taken.append(record["run"])
        if taken.count("fast") + taken.count("fast-again") == 2:
            release.set()
    if workers > 1:
        executor.pool.shutdown()
        assert taken == ["fast", "fast-again", "slow"] and records[-1]["released"] is True
        assert drawn_after == [0, 0, 1]  # two in flight; the third once the first result was taken
    else:
        assert taken == ["fast", "fast-again"] and drawn_after == [0, 1]
