"""`seqkeras evaluate`: kept models evaluated again with more decoders and metrics, without training.

One tiny seq2seq experiment (two seeds) is trained once for the session (`trained_runs`, shared by pytest-xdist's
workers); each test copies its results folder.
The decoder a re-evaluation adds must score what a run that had it from the start scores: the same spec with
both decoders, trained again (same seed, same data), is the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

import seqkeras
from tests.helpers import process_backend, run_cli

SEQ2SEQ_SPEC = {
    "version": 1,
    "name": "reeval",
    "task": {"name": "reverse", "n_train": 48, "n_test": 8, "min_length": 2, "max_length": 5, "symbols": 4,
             "bucket_width": 2},
    "model": {"kind": "seq2seq", "cell": "gru", "units": 8, "embedding_dim": 4, "attention": "bahdanau"},
    "train": {"epochs": 1, "batch_size": 16, "verbose": 0},
    "evaluate": {"metrics": ["bleu", "exact_match"]},
    "seeds": [0, 1],
    "table": {"rows": "seed", "value": "bleu"},
    "expect": [{"claim": "greedy's BLEU is measured", "metric": "bleu", "at_least": 0}],
}
BEAM = {"name": "beam", "width": 2}


def timing(name: str) -> bool:
    return name.startswith("seconds_") or "_seconds" in name


@pytest.fixture
def results(trained_runs, tmp_path) -> Path:
    """A copy of the session's trained experiment, as tmp_path/results/reeval."""
    (tmp_path / "results").mkdir()
    return trained_runs.copied_experiment(SEQ2SEQ_SPEC, tmp_path / "results")


def records(folder: Path) -> dict[str, dict]:
    return {path.parent.name: json.loads(path.read_text()) for path in sorted(folder.glob("*/metrics.json"))}


def test_a_decoder_and_a_metric_are_added_without_training(results, capsys, tmp_path):
    before = records(results)
    verdict_before = (results / "table.md").read_text().split("## Expectations")[1]
    code, out, err = run_cli(capsys, "evaluate", results, "--decoders", "beam(width=2)", "--metrics", "mean_log_prob")
    assert code == 0, err
    assert out.count("added decoder beam(width=2), metric mean_log_prob") == 2, out
    after = records(results)
    for run_id, record in after.items():
        old = before[run_id]
        assert "rows" not in old and record["train_seconds"] == old["train_seconds"]  # not trained again
        greedy, beam = record["rows"]
        assert greedy["keys"]["decoder"] == "greedy" and beam["keys"]["decoder"] == "beam(width=2)"
        # What was recorded keeps its values; the new metric joins it.
        assert {k: v for k, v in greedy["metrics"].items() if k != "mean_log_prob"} == old["metrics"]
        assert set(beam["metrics"]) == {"bleu", "exact_match", "mean_log_prob"}
        (evaluation,) = record["evaluations"]
        assert evaluation["added_decoders"] == ["beam(width=2)"] and evaluation["added_metrics"] == ["mean_log_prob"]
        assert evaluation["backend"] == process_backend()
        outputs = pd.read_csv(results / run_id / "outputs.csv")
        assert outputs["decoder"].value_counts().to_dict() == {"greedy": 8, "beam(width=2)": 8}
        assert set(pd.read_csv(results / run_id / "by_length.csv")["decoder"]) == {"greedy", "beam(width=2)"}
        assert not list((results / run_id).glob(".evaluate-*"))  # its scratch folder is gone

    runs = pd.read_csv(results / "runs.csv")
    assert sorted(runs["decoder"]) == ["beam(width=2)"] * 2 + ["greedy"] * 2
    assert "mean_log_prob" in runs
    table = (results / "table.md").read_text()
    assert "## bleu by seed\n" in table and "with the decoders added by seqkeras evaluate" in table
    # The claim reads the spec's own decoder (greedy), as it did before.
    assert table.split("## Expectations")[1] == verdict_before

    # The same spec with both decoders from the start, trained again: the added row is the row it has.
    spec = {**SEQ2SEQ_SPEC, "evaluate": {"metrics": ["bleu", "exact_match", "mean_log_prob"],
                                         "decoders": [{"name": "greedy"}, BEAM]},
            "table": {"rows": "seed", "columns": "decoder", "value": "bleu"}}
    seqkeras.run(spec, out=tmp_path / "fresh", backend=process_backend())
    fresh = {record["seed"]: record for record in records(tmp_path / "fresh" / "reeval").values()}
    for record in after.values():
        for added, reference in zip(record["rows"], fresh[record["seed"]]["rows"]):
            assert added["keys"]["decoder"] == reference["keys"]["decoder"]
            for name, value in reference["metrics"].items():
                if not timing(name):
                    assert added["metrics"][name] == pytest.approx(value, rel=1e-5, abs=1e-7), (name, record["seed"])


def test_asking_again_adds_nothing_and_run_reuses_the_grown_records(results, capsys):
    assert run_cli(capsys, "evaluate", results, "--decoders", "beam(width=2)").code == 0
    grown = {path: path.read_bytes() for path in results.glob("*/metrics.json")}
    code, out, _ = run_cli(capsys, "evaluate", results, "--decoders", "greedy", "beam(width=2)",
                           "--metrics", "bleu", "accuracy")
    assert code == 0
    assert out.count("nothing to add (metric accuracy does not apply to seq2seq)") == 2, out
    assert {path: path.read_bytes() for path in grown} == grown
    # `run` of the same spec finds its finished runs and keeps the rows they gained.
    spec_file = results.parent.parent / "reeval.yaml"
    spec_file.write_text(yaml.safe_dump(SEQ2SEQ_SPEC))
    code, out, err = run_cli(capsys, "run", spec_file, "--out", results.parent, "--backend", process_backend())
    assert code == 0, err
    assert "2 of 2 runs done before, reused" in out
    assert set(pd.read_csv(results / "runs.csv")["decoder"]) == {"greedy", "beam(width=2)"}


def test_runs_without_a_model_are_named_and_a_damaged_model_fails_only_its_run(results, capsys):
    first, second = sorted(p for p in results.iterdir() if p.is_dir())
    (first / "model.keras").write_bytes(b"not a zip file")
    (second / "preprocessing.json").unlink()
    code, out, _ = run_cli(capsys, "evaluate", results, "--metrics", "mean_log_prob")
    assert code == 1
    assert f"{first.name}: FAILED: {first / 'model.keras'} cannot be loaded as a Keras model" in out
    assert f"no kept model: {second.name} (trained before models were kept" in out
    assert "mean_log_prob" not in json.loads((first / "metrics.json").read_text())["metrics"]


def test_a_classifier_gains_a_metric_and_no_decoder(tmp_path, capsys):
    spec = {"version": 1, "name": "reeval-cls",
            "task": {"name": "delayed_recall", "lag": 3, "n_train": 48, "n_test": 16},
            "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4},
            "train": {"epochs": 1, "batch_size": 16, "verbose": 0}, "evaluate": {"metrics": ["accuracy"]},
            "seeds": [0]}
    seqkeras.run(spec, out=tmp_path, backend=process_backend())
    folder = tmp_path / "reeval-cls"
    code, out, err = run_cli(capsys, "evaluate", folder, "--metrics", "cross_entropy", "--decoders", "greedy")
    assert code == 0, err
    assert "added metric cross_entropy" in out
    (record,) = records(folder).values()
    assert set(record["metrics"]) == {"accuracy", "cross_entropy"} and "rows" not in record
    assert "cross_entropy" in pd.read_csv(folder / "runs.csv")
    # Nothing kept at all: said, and a failure of the command.
    no_keep = {**spec, "name": "reeval-none", "train": {**spec["train"], "keep_model": False}}
    seqkeras.run(no_keep, out=tmp_path, backend=process_backend())
    code, out, err = run_cli(capsys, "evaluate", tmp_path / "reeval-none", "--metrics", "cross_entropy")
    assert code == 1 and "trained with train.keep_model: false" in out
    assert "nothing was evaluated: no run selected there has a kept model" in err


@pytest.mark.parametrize("arguments, message", [
    (["--decoders", "bem"], "--decoders 'bem': unknown decoder 'bem'. Did you mean 'beam'?"),
    (["--decoders", "beam(width=0)"], "--decoders 'beam(width=0)': width"),
    (["--metrics", "blue"], "--metrics 'blue': unknown metric 'blue'. Did you mean 'bleu'?"),
    ([], "nothing to add: give --decoders and/or --metrics"),
])
def test_bad_input_is_one_line_and_exit_2(arguments, message, tmp_path, capsys):
    (tmp_path / "runs.csv").write_text("experiment,run_id,status,seed\n")
    code, out, err = run_cli(capsys, "evaluate", tmp_path, *arguments)
    assert code == 2 and err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1, err


def test_a_folder_that_is_not_results_is_exit_2(tmp_path, capsys):
    code, _, err = run_cli(capsys, "evaluate", tmp_path / "nowhere", "--metrics", "bleu")
    assert code == 2 and "no such results folder" in err


def test_the_python_twin_adds_the_same_and_returns_the_results(results, capsys):
    grown = seqkeras.evaluate(results, decoders=[{"name": "beam", "width": 2}], metrics=["mean_log_prob"])
    assert sorted(grown.runs["decoder"]) == ["beam(width=2)"] * 2 + ["greedy"] * 2
    assert grown.verdicts["verdict"].tolist() == ["reproduced"]
    assert any("with the decoders added by seqkeras evaluate" in title for title in grown.tables)
    with pytest.raises(seqkeras.SpecError, match="decoders takes a list"):
        seqkeras.evaluate(results, decoders="beam")
    with pytest.raises(seqkeras.SpecError, match="nothing to add: give decoders and/or metrics"):
        seqkeras.evaluate(results)
    with pytest.raises(seqkeras.SpecError, match="not an experiment's results folder"):
        seqkeras.evaluate(results.parent, metrics=["bleu"])


def test_a_selection_evaluates_only_the_runs_it_names(results, capsys):
    def gained() -> dict[int, bool]:
        return {record["seed"]: "mean_log_prob" in json.dumps(record["rows"] if "rows" in record
                                                              else record["metrics"])
                for record in records(results).values()}

    code, out, err = run_cli(capsys, "evaluate", results, "--seed", "1", "--metrics", "mean_log_prob")
    assert code == 0, err
    assert gained() == {0: False, 1: True} and "1 run(s) gained rows or columns" in out
    (seed_0,) = [path.parent for path in results.glob("*/metrics.json") if "seed=0" in path.parent.name]
    code, out, err = run_cli(capsys, "evaluate", seed_0, "--metrics", "mean_log_prob")  # one run's folder
    assert code == 0, err
    assert gained() == {0: True, 1: True}
    grown = seqkeras.evaluate(results, metrics=["log_prob_per_token"], seed=0)
    assert grown.runs.set_index("seed")["log_prob_per_token"].notna().to_dict() == {0: True, 1: False}
    code, out, err = run_cli(capsys, "evaluate", results, "--seed", "5", "--metrics", "chrf")
    assert code == 2 and f"{results}: no finished run with seed 5" in err and len(err.strip().splitlines()) == 1
