"""The benchmarks run end to end at a tiny size (no timing assertions: speed goes in `make bench`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import REPO

COLUMNS = ["benchmark", "figure", "value", "unit", "baseline", "ratio", "goal", "met", "machine", "measured_at"]


def in_two_halves(names: list[str]) -> list[list[str]]:
    return [names[0::2], names[1::2]]


@pytest.mark.system
def test_bench_runs_end_to_end_at_tiny_size(tmp_path):
    """Every benchmark, at its tiny size, through `run_all.py` as `make bench` runs it. Tiny sizes measure
    nothing, so the benchmarks run in two `run_all.py --only` commands side by side (half the wait)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from run_all import BENCHMARKS

    committed = set((REPO / "benchmarks" / "results").iterdir())
    halves = in_two_halves(BENCHMARKS)
    outputs = [(tmp_path / f"half-{index}", open(tmp_path / f"half-{index}.out", "w+"),
                open(tmp_path / f"half-{index}.err", "w+")) for index in range(len(halves))]
    commands = [subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "run_all.py"), "--tiny", "--only", *half,
                                  "--out", str(out)], stdout=stdout, stderr=stderr, text=True)
                for half, (out, stdout, stderr) in zip(halves, outputs)]
    tables = []
    for command, (out, stdout, stderr) in zip(commands, outputs):
        command.wait(timeout=900)
        stdout.seek(0), stderr.seek(0)
        printed, said = stdout.read(), stderr.read()
        assert command.returncode == 0, printed + said[-5000:]
        [csv] = out.glob("bench-tiny-*.csv")
        assert "| benchmark" in printed and str(csv) in printed  # the table is printed too
        tables.append(pd.read_csv(csv))
    assert set((REPO / "benchmarks" / "results").iterdir()) == committed  # nothing written into the repository
    table = pd.concat(tables, ignore_index=True)
    assert list(table.columns) == COLUMNS
    # Every benchmark gave its rows (the recurrent one, when it cannot run here, a row saying why).
    assert {"sweep throughput", "default path", "seeds together", "decoding cost", "lesson time", "thread scaling",
            "busy machine", "fixed costs", "tuning pruner"} <= set(table["benchmark"])
    assert not table["figure"].str.startswith("failed").any(), table["figure"].tolist()
    assert table["benchmark"].nunique() >= 5
    assert not table["figure"].str.startswith("failed:").any()
    assert table["met"].isin([True, False]).all()
    measured = table[~table["figure"].str.startswith("skipped:")]
    assert (measured["goal"].notna()).all()
    mine = table[table["benchmark"].isin(["sweep throughput", "decoding cost", "lesson time"])]
    assert (mine["value"] > 0).all()
    ratios = mine[mine["benchmark"] != "lesson time"]
    assert (ratios["ratio"] > 0).all() and (ratios["baseline"] > 0).all()
    # Against the plain scripts: the sentences' idle row at the tiny size (the addition's is gpu_check.sh's, below),
    # every contender timed with its accuracy.
    [plain] = table[table["benchmark"] == "plain scripts"].to_dict("records")
    assert plain["figure"].startswith("sentiment file") and "the suite (shuffled)" in plain["figure"]
    assert "plain PyTorch" in plain["figure"] and "plain Keras on tensorflow" in plain["figure"]
    assert plain["value"] > 0 and plain["baseline"] > 0


@pytest.mark.system
def test_gpu_check_script_runs_here_on_the_cpu(tmp_path):
    """benchmarks/gpu_check.sh's code path on the CPU: without a GPU `make bench` never runs it, so a break would
    wait for one. Every stacking of seeds it measures ends at each replica's own weights (1e-5)."""
    environment = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)}
    result = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu_check.sh"), "--tiny"], env=environment,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    [csv] = tmp_path.glob("gpu-tiny-*.csv")
    table = pd.read_csv(csv)
    recurrent = table[table["benchmark"] == "recurrent training"]
    # Each Keras backend installed here against PyTorch, said to be on the CPU, never met.
    assert {"suite (tensorflow backend, GPU)" in f for f in recurrent["figure"]} == {True, False}
    assert recurrent["figure"].str.startswith("no GPU here").all() and not recurrent["met"].any()
    assert (recurrent["value"] > 0).all() and (recurrent["baseline"] > 0).all()
    seeds = table[table["benchmark"] == "seeds together"]
    assert sorted(set(seeds["figure"].str.extract(r"^(\d+) seeds")[0].astype(int))) == [1, 8, 64]
    drift = seeds["figure"].str.extract(r"difference from alone ([0-9.e+-]+)")[0].astype(float)
    assert (drift < 1e-5).all(), seeds["figure"].tolist()
    assert (seeds["ratio"] > 0).all()
    # The addition example against the plain scripts: the suite and each contender timed, on the CPU here.
    [plain] = table[table["benchmark"] == "plain scripts"].to_dict("records")
    assert plain["figure"].startswith("no GPU here") and not plain["met"]
    assert "plain PyTorch" in plain["figure"] and "plain Keras on torch" in plain["figure"]
    assert plain["value"] > 0 and plain["baseline"] > 0


@pytest.mark.system
def test_gpu_check_script_plans_the_published_experiment_at_its_longer_budget(tmp_path):
    """`gpu_check.sh --published`, as a dry run: the spec it names validates on the torch backend at 20,000 steps,
    six runs, nothing written into the repository."""
    environment = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)}
    result = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu_check.sh"), "--published", "--dry-run"],
                            env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "6 to run, 0 reused" in result.stdout and str(tmp_path / "published") in result.stdout + result.stderr


def plain_scripts_module():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import plain_scripts

    return plain_scripts


def test_a_plain_scripts_row_compares_the_suite_with_the_fastest_script_that_finished_at_the_same_accuracy(tmp_path):
    """The row's arithmetic, on made-up times: a stopped script is never the fastest; the ratio is the fastest
    finished script's seconds over the suite's last variant's; the goal needs the accuracy within the spread."""
    plain = plain_scripts_module()
    workload = plain.Workload("sentiment", tmp_path / "spec.yaml", {"shuffled": [], "by_length": []}, "accuracy",
                              [], "the sentences")
    times = {"the suite (shuffled)": 12.0, "the suite (by_length)": 6.0, "plain Keras on jax": 10.0,
             "plain Keras on torch": 48.0, "plain PyTorch": 13.0}
    accuracy = {"the suite (shuffled)": 0.75, "the suite (by_length)": 0.75, "plain Keras on jax": 0.74,
                "plain Keras on torch": None, "plain PyTorch": 0.70}
    row = plain.row(workload, "idle", times, accuracy)
    assert (row["value"], row["baseline"], row["ratio"], row["met"]) == (6.0, 10.0, 1.67, True)
    assert "(plain Keras on jax)" in row["figure"] and "plain Keras on torch > 48 s (stopped)" in row["figure"]
    # The fastest script's accuracy 0.04 below the suite's: the speed is not compared at the same accuracy.
    row = plain.row(workload, "idle", times, {**accuracy, "plain Keras on jax": 0.71})
    assert row["ratio"] == 1.67 and not row["met"]
    # Every script stopped: no baseline, not met.
    stopped = {name: (None if name.startswith("plain") else value) for name, value in accuracy.items()}
    row = plain.row(workload, "one core busy", times, stopped)
    assert row["baseline"] is None and row["ratio"] is None and not row["met"]


def test_the_plain_scripts_read_the_files_the_benchmark_writes(tmp_path):
    """The sentences' files as the benchmark writes them (a header, tab-separated, quotes kept as text) read back
    the same by the scripts' reader and by the suite's `text_classification_file`."""
    plain = plain_scripts_module()
    workload = plain.sentiment(tmp_path, tiny=True)
    train = tmp_path / "train.tsv"
    sys.path.insert(0, str(REPO / "benchmarks" / "plain_scripts"))
    import keras_sentiment

    texts, labels = keras_sentiment.read(train)
    assert len(texts) == 600 and set(labels) == {"fresh", "rotten"}
    assert workload.script_arguments[:2] == [str(train), str(tmp_path / "test.tsv")]
    from seqkeras.spec.loader import load_experiment

    [run] = load_experiment(workload.spec).runs
    data = run.task.component.load()(run.task.params, run.seed)
    assert run.task.name == "text_classification_file"
    assert len(data.x_train) == len(texts) and len(data.x_test) == 200  # every sentence, no header, on both sides


def test_the_pair_scripts_read_the_words_the_suite_reads(tmp_path):
    """The numbers pairs as the benchmark writes them (`digits<TAB>words`): the scripts' reader gives the words of
    the suite's `sentence_pairs`, pair for pair, on both sides."""
    plain = plain_scripts_module()
    workload = plain.pairs(tmp_path, tiny=True)
    train = tmp_path / "pairs-train.tsv"
    assert workload.script_arguments[:2] == [str(train), str(tmp_path / "pairs-test.tsv")]
    sys.path.insert(0, str(REPO / "benchmarks" / "plain_scripts"))
    import pairs_data

    pairs = pairs_data.read(train)
    assert len(pairs) == 200 and pairs[0][0][0].isdigit() and pairs[0][1][0].isalpha()
    from seqkeras.spec.loader import load_experiment

    [run] = load_experiment(workload.spec).runs
    data = run.task.component.load()(run.task.params, run.seed)
    words = [data.vocabulary.decode([i for i in row if i]) for row in data.x_train["source"]]
    targets = [data.target_vocabulary.decode([i for i in row if i not in (0, data.end_id)]) for row in data.y_train]
    assert sorted(zip(map(tuple, words), map(tuple, targets))) == sorted((tuple(s), tuple(t)) for s, t in pairs)
