"""`seqkeras predict` and `KeptModel.predict`: a kept model on new inputs, per problem, in each output format.

One tiny run per model kind (tests/model_kind_specs.py), trained once per session (`trained_runs`); each check goes
through the command line in-process and parses its output back, and compares it with what the model or the
run's own evaluator gives for the same input.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import seqkeras
from seqkeras.errors import SpecError
from seqkeras.kept.predict import parse_decoder
from tests.helpers import run_cli
from tests.model_kind_specs import CASES

FORMATS = ["md", "csv", "jsonl"]


@pytest.fixture(scope="module")
def folders(trained_runs):
    """The run folder of each model kind used here (one epoch, a few examples); shared, so read only."""
    return {case.id: trained_runs.run_folder(case) for case in CASES
            if case.id in ("classifier", "tagger-crf", "seq2seq", "transformer_seq2seq", "lm", "ngram", "regressor")}


def parsed(text: str, fmt: str) -> pd.DataFrame:
    """The command's stdout in `fmt` as a DataFrame of texts."""
    if fmt == "csv":
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    if fmt == "jsonl":
        lines = text.splitlines()
        assert lines and all(line.startswith("{") for line in lines), text
        return pd.DataFrame([{k: str(v) for k, v in json.loads(line).items()} for line in lines])
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].startswith("|") and set(lines[1]) <= set("|:- "), text
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    return pd.DataFrame(rows, columns=header)


def predict_cli(capsys, folder: Path, *args, fmt: str = "md") -> pd.DataFrame:
    code, out, err = run_cli(capsys, "predict", folder, *args, "--format", fmt)
    assert code == 0, err
    return parsed(out, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_classifier_labels_each_text_with_its_argmax_and_counts_unknown_words(folders, capsys, fmt):
    folder = folders["classifier"]
    kept = seqkeras.load_model(folder)
    known = [token for token in kept.preprocessing.vocabulary.tokens[2:6]]
    texts = [" ".join(known), " ".join(known[:2] + ["zebra", "quagga"])]
    frame = predict_cli(capsys, folder, "--text", texts[0], "--text", texts[1], fmt=fmt)
    assert list(frame.columns) == ["input", "label", "probability", "unknown"]
    assert frame["input"].tolist() == texts
    assert frame["unknown"].astype(int).tolist() == [0, 2]
    probabilities = kept.model.predict(kept.encode(texts).ids, verbose=0)
    assert frame["label"].tolist() == kept.preprocessing.labels_of(probabilities.argmax(-1))
    np.testing.assert_allclose(frame["probability"].astype(float), probabilities.max(-1), rtol=1e-4)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_crf_tagger_tags_each_token_by_its_viterbi_path(folders, capsys, fmt, tmp_path):
    folder = folders["tagger-crf"]
    kept = seqkeras.load_model(folder)
    words = kept.preprocessing.vocabulary.tokens[2:8]
    sentences = [" ".join(words), " ".join(words[:3] + ["zebra"])]
    inputs = tmp_path / "sentences.txt"
    inputs.write_text("\n".join(sentences) + "\n\n", encoding="utf-8")
    frame = predict_cli(capsys, folder, "--file", inputs, fmt=fmt)
    assert list(frame.columns) == ["input", "tokens", "tags", "unknown"]
    assert frame["unknown"].astype(int).tolist() == [0, 1]
    encoded = kept.encode(sentences)
    paths = kept.model.predict_tags(encoded.ids)
    for row, tokens in enumerate(encoded.tokens):
        assert frame["tokens"][row].split() == tokens
        assert frame["tags"][row].split() == kept.preprocessing.labels_of(paths[row, : len(tokens)])


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_seq2seq_model_decodes_as_its_evaluator_did_with_greedy_and_beam(folders, capsys, fmt):
    folder = folders["seq2seq"]
    outputs = pd.read_csv(folder / "outputs.csv", dtype=str, keep_default_na=False)
    for decoder in ("greedy", "beam(width=2)"):
        shown = outputs[outputs["decoder"] == decoder].head(3)
        assert len(shown) == 3, outputs["decoder"].unique()
        sources = [source.replace(" ", "") for source in shown["source"]]  # one token per character
        args = [arg for source in sources for arg in ("--text", source)]
        frame = predict_cli(capsys, folder, *args, "--decoder", decoder, fmt=fmt)
        assert frame["decoder"].tolist() == [decoder] * 3
        assert frame["output"].tolist() == [output.replace(" ", "") for output in shown["output"]]
        np.testing.assert_allclose(frame["log_prob"].astype(float), shown["log_prob"].astype(float), rtol=1e-4)
        assert frame["unknown"].astype(int).tolist() == [0, 0, 0]
    frame = predict_cli(capsys, folder, "--text", "ab?", "--decoder", "{name: beam, width: 2}", fmt=fmt)
    assert frame["unknown"].astype(int).tolist() == [1] and frame["decoder"].tolist() == ["beam(width=2)"]


@pytest.mark.parametrize("case_id", ["seq2seq", "transformer_seq2seq"])  # bahdanau; the last block's cross-attention
def test_attention_maps_are_written_for_each_input_over_its_decoded_output(case_id, folders, capsys, tmp_path):
    folder = folders[case_id]
    maps = tmp_path / "maps"
    code, out, err = run_cli(capsys, "predict", folder, "--text", "abc", "--text", "dcba", "--attention", maps,
                             "--format", "csv")
    assert code == 0, err
    frame = parsed(out, "csv")
    assert sorted(p.name for p in maps.iterdir()) == ["attention_1.csv", "attention_1.png", "attention_2.csv",
                                                      "attention_2.png"]
    kept = seqkeras.load_model(folder)
    for number, (text, output) in enumerate(zip(["abc", "dcba"], frame["output"]), start=1):
        written = pd.read_csv(maps / f"attention_{number}.csv", keep_default_na=False)
        pd.testing.assert_frame_equal(written, kept.attention([text])[0], check_dtype=False)
        outputs = written.drop_duplicates("output_position")["output_token"].tolist()
        assert "".join(outputs[:-1]) == output and outputs[-1] == "</s>"  # one row per decoded token, then the end
        assert written.drop_duplicates("source_position")["source_token"].tolist() == list(text)
        # Each output token's attention is a distribution over the source.
        np.testing.assert_allclose(written.groupby("output_position")["weight"].sum(), 1.0, rtol=1e-5)
    code, out, err = run_cli(capsys, "predict", folders["classifier"], "--text", "a", "--attention", maps)
    assert code == 2 and "an attention map needs an encoder-decoder with attention" in err and out == ""


def test_a_source_longer_than_a_transformers_position_table_is_one_line(folders, capsys, tmp_path):
    kept = seqkeras.load_model(folders["transformer_seq2seq"])
    longest = "abcd" * kept.shape.positions
    for options in ([], ["--attention", tmp_path / "maps"]):
        code, out, err = run_cli(capsys, "predict", folders["transformer_seq2seq"], "--text", "ab", "--text", longest,
                                 *options)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert f"input 2 ({longest!r}) has {len(longest)} tokens; this model reads at most {kept.shape.positions}" \
            in err
    assert not (tmp_path / "maps").exists()


def test_a_line_break_inside_a_text_stays_inside_its_markdown_cell(folders, capsys):
    code, out, err = run_cli(capsys, "predict", folders["classifier"], "--text", "a fine\nfilm", "--text", "a|b")
    assert code == 0, err
    rows = out.strip().splitlines()[2:]
    assert len(rows) == 2 and rows[0].startswith("| a fine\\nfilm ") and rows[1].startswith("| a\\|b "), out


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_language_model_continues_a_prompt_with_a_sampler_as_its_run_did(folders, capsys, fmt):
    folder = folders["lm"]
    samples = pd.read_csv(folder / "samples.csv", dtype=str, keep_default_na=False)
    sampler = "sample(temperature=1.0, top_k=3)"
    (expected,) = samples[samples["decoder"] == sampler]["continuation"].tolist()
    frame = predict_cli(capsys, folder, "--text", "the ", "--decoder", sampler, fmt=fmt)
    assert frame["output"].tolist() == [expected.strip() if fmt == "md" else expected]  # md cells are stripped
    greedy = predict_cli(capsys, folder, "--text", "the ", "--length", "7", fmt="jsonl")
    assert greedy["decoder"].tolist() == ["greedy"] and len(greedy["output"][0]) == 7  # characters
    assert predict_cli(capsys, folder, "--text", "th\u00e9", fmt="csv")["unknown"].tolist() == ["1"]


def test_an_ngram_model_continues_a_prompt_as_its_run_did(folders, capsys):
    folder = folders["ngram"]
    samples = pd.read_csv(folder / "samples.csv", dtype=str, keep_default_na=False)
    (expected,) = samples["continuation"].tolist()
    frame = predict_cli(capsys, folder, "--text", "the ", "--decoder", "greedy", fmt="jsonl")
    assert frame["output"].tolist() == [expected] and frame["decoder"].tolist() == ["greedy"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_regressor_predicts_a_value_from_steps_of_features(folders, capsys, fmt):
    folder = folders["regressor"]
    kept = seqkeras.load_model(folder)
    assert kept.preprocessing.document.input.features == 2
    steps = [[0.5, 1.0], [0.25, 0.0], [0.75, 1.0], [0.1, 0.0]]
    text = " ".join(f"{a},{b}" for a, b in steps)
    frame = predict_cli(capsys, folder, "--text", text, "--text", json.dumps(steps), fmt=fmt)
    expected = float(kept.model.predict(np.asarray([steps], "float32"), verbose=0)[0, 0])
    np.testing.assert_allclose(frame["value"].astype(float), [expected, expected], rtol=1e-4)


def test_the_python_twin_returns_the_same_table(folders):
    kept = seqkeras.load_model(folders["seq2seq"])
    frame = kept.predict(["abc", "dcb"], decoder={"name": "beam", "width": 2})
    assert list(frame.columns) == ["input", "decoder", "output", "log_prob", "unknown"] and len(frame) == 2
    assert frame.equals(kept.predict(["abc", "dcb"], decoder="beam(width=2)"))


def test_decoders_are_read_as_a_spec_writes_them():
    assert parse_decoder("beam(width=5, length_penalty=0.6)").model_dump() == \
        parse_decoder('{"name": "beam", "width": 5, "length_penalty": 0.6}').model_dump()
    assert parse_decoder("sample").name == "sample"
    with pytest.raises(SpecError, match="width"):
        parse_decoder("beam(width=0)")
    with pytest.raises(SpecError, match="bean"):
        parse_decoder("bean")


# --------------------------------------------------------------------------- bad input


def listing(root: Path, experiments: set[str] | None = None) -> list[tuple[str, int]]:
    """Every file under `root` and its size; with `experiments`, only those of these experiments (the folder, its
    .lock and .trained markers): the shared trained runs' root, where other workers make other experiments."""
    def kept(path: Path) -> bool:  # decided before the file is read: another worker may be removing it
        return experiments is None or path.parts[0].removesuffix(".lock").removesuffix(".trained") in experiments

    return sorted((str(relative), (root / relative).stat().st_size)
                  for relative in (p.relative_to(root) for p in root.rglob("*")) if kept(relative))


def finished_experiments(root: Path) -> set[str]:
    """The experiments of the shared trained runs' root that are finished (tests/trained_runs.py marks them)."""
    return {marker.name.removesuffix(".trained") for marker in root.glob("*.trained")}


@pytest.mark.parametrize("case", ["not a run folder", "no kept model", "a decoder for a classifier",
                                  "an empty text", "a missing file", "a folder as file", "a file of blank lines",
                                  "an unknown decoder", "a bad decoder parameter", "a bad regression",
                                  "a regression step short of features", "a length for a classifier"])
def test_bad_input_is_one_line_naming_it_and_exit_2(folders, capsys, tmp_path, case):
    classifier = folders["classifier"]
    copy = tmp_path / "run"
    shutil.copytree(classifier, copy)
    (copy / "preprocessing.json").unlink()
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    args, expected = {
        "not a run folder": ([tmp_path, "--text", "a"], str(tmp_path)),
        "no kept model": ([copy, "--text", "a"], "preprocessing.json is missing"),
        "a decoder for a classifier": ([classifier, "--text", "a", "--decoder", "beam"], "classification"),
        "an empty text": ([classifier, "--text", "  "], "input 1 is empty"),
        "a missing file": ([classifier, "--file", tmp_path / "nowhere.txt"], "nowhere.txt"),
        "a folder as file": ([classifier, "--file", tmp_path], "is a folder"),
        "a file of blank lines": ([classifier, "--file", blank], "blank.txt: has no inputs"),
        "an unknown decoder": ([folders["seq2seq"], "--text", "ab", "--decoder", "bean(width=2)"], "--decoder"),
        "a bad decoder parameter": ([folders["seq2seq"], "--text", "ab", "--decoder", "beam(width=-1)"], "width"),
        "a length for a classifier": ([classifier, "--text", "a", "--length", "3"], "a length is for language"),
        "a bad regression": ([folders["regressor"], "--text", "1,2,3 4"], "steps of 2 finite number"),
        "a regression step short of features": ([folders["regressor"], "--text", "1 2"], "needs 2 finite number"),
    }[case]
    # Nothing written anywhere: in tmp_path, nor in any finished experiment of the shared root (while the command
    # runs, another pytest worker may be training a new experiment there).
    shared = classifier.parent.parent
    finished = finished_experiments(shared)
    before = listing(tmp_path), listing(shared, finished)
    code, out, err = run_cli(capsys, "predict", *args)
    assert code == 2, (out, err)
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("error: ") and expected in err, err
    assert (listing(tmp_path), listing(shared, finished)) == before


# --------------------------------------------------------------------------- a run chosen by what it is


@pytest.fixture(scope="module")
def tiny_experiment(trained_runs):
    """Four classifier runs (model.cell simple_rnn and lstm, seeds 0 and 1), trained once; read only."""
    from tests.conftest import TINY_TRAINING_SPEC

    return trained_runs.experiment(TINY_TRAINING_SPEC)


def ranked_copy(tiny_experiment, tmp_path, accuracy: list[float], cross_entropy: list[float]) -> Path:
    """A copy of the tiny experiment whose runs.csv gives its four runs (simple_rnn 0, 1, lstm 0, 1) these
    metrics, so that which run is best is known."""
    copy = tmp_path / "tiny"
    shutil.copytree(tiny_experiment, copy)
    runs = pd.read_csv(copy / "runs.csv").sort_values(["model.cell", "seed"], ascending=[False, True])
    runs["accuracy"], runs["cross_entropy"] = accuracy, cross_entropy
    runs.to_csv(copy / "runs.csv", index=False)
    return copy


def run_of(folder: Path, cell: str, seed: int) -> Path:
    (found,) = folder.glob(f"cell={cell}_seed={seed}_*")
    return found


def test_an_experiment_folder_and_a_selection_name_the_run_they_mean(tiny_experiment, capsys):
    direct = predict_cli(capsys, run_of(tiny_experiment, "lstm", 1), "--text", "SA n1 n2", "n3 SB", fmt="csv")
    for selection in (["--where", "model.cell=lstm", "--seed", "1"], ["--where", "cell=lstm", "--seed", "1"],
                      ["--seed", "1", "--where", "cell=lstm", "--where", "cell=gru"]):  # a key twice: either value
        code, out, err = run_cli(capsys, "predict", tiny_experiment, *selection, "--text", "SA n1 n2", "n3 SB",
                                 "--format", "csv")
        assert code == 0, err
        pd.testing.assert_frame_equal(parsed(out, "csv"), direct)
        assert err.strip() == f"run: {run_of(tiny_experiment, 'lstm', 1)} (model.cell=lstm, seed=1)"
    kept = seqkeras.load_model(tiny_experiment, where={"model.cell": "lstm"}, seed=1)
    assert kept.folder == run_of(tiny_experiment, "lstm", 1)


def test_the_best_run_is_the_metric_catalogs_best_direction(tiny_experiment, tmp_path, capsys):
    from seqkeras.kept.selection import chosen_run, selection

    copy = ranked_copy(tiny_experiment, tmp_path, accuracy=[0.2, 0.9, 0.5, 0.7], cross_entropy=[1.1, 1.3, 0.4, 0.9])
    assert chosen_run(copy, selection(best="accuracy")) == copy / run_of(copy, "simple_rnn", 1).name  # higher
    assert chosen_run(copy, selection(best="cross_entropy")) == copy / run_of(copy, "lstm", 0).name  # lower
    assert chosen_run(copy, selection(["cell=lstm"], best="accuracy")) == copy / run_of(copy, "lstm", 1).name
    code, out, err = run_cli(capsys, "predict", copy, "--where", "cell=lstm", "--best", "accuracy", "--text", "SA")
    assert code == 0 and "| input" in out, err
    assert err.strip() == f"run: {run_of(copy, 'lstm', 1)} (model.cell=lstm, seed=1, accuracy=0.7)"


def test_an_ambiguous_selection_is_refused_with_each_candidate_on_a_line(tiny_experiment, tmp_path, capsys):
    code, out, err = run_cli(capsys, "predict", tiny_experiment, "--where", "cell=lstm", "--text", "SA")
    assert code == 2 and out == "" and "Traceback" not in err
    first, *candidates = err.strip().splitlines()
    assert first.startswith(f"error: {tiny_experiment}: 2 finished runs with cell=lstm; narrow it with --where")
    # Each candidate is told apart by what differs between them (not model.cell: both are lstm).
    assert candidates == [f"  {run_of(tiny_experiment, 'lstm', seed).name}  (seed={seed})" for seed in (0, 1)]
    # A tie at the best value is as ambiguous: the tied runs are listed, with their value.
    copy = ranked_copy(tiny_experiment, tmp_path, accuracy=[0.9, 0.2, 0.5, 0.9], cross_entropy=[1.0] * 4)
    code, out, err = run_cli(capsys, "predict", copy, "--best", "accuracy", "--text", "SA")
    first, *candidates = err.strip().splitlines()
    assert code == 2 and "2 finished runs tied at the best accuracy (0.9)" in first
    assert [line.split()[0] for line in candidates] == [run_of(copy, "simple_rnn", 0).name,
                                                        run_of(copy, "lstm", 1).name]


@pytest.mark.parametrize("case", ["an unknown key", "a value no run has", "a metric that ranks nothing",
                                  "an unknown metric", "a metric the runs lack", "a selection of one run's folder"])
def test_a_selection_that_cannot_be_met_is_one_line_naming_it(tiny_experiment, capsys, case):
    args, expected = {
        "an unknown key": (["--where", "cel=lstm"], "--where cel: unknown matrix key 'cel'"),
        "a value no run has": (["--where", "cell=gru"], "no finished run with cell=gru"),
        "a metric that ranks nothing": (["--best", "length_ratio"], "length_ratio is no score"),
        "an unknown metric": (["--best", "acuracy"], "Did you mean 'accuracy'?"),
        "a metric the runs lack": (["--best", "bleu"], "measured no bleu (they measured: accuracy)"),
        "a selection of one run's folder": (["--seed", "0"], "is one run's folder: seed 0 selects among"),
    }[case]
    folder = run_of(tiny_experiment, "lstm", 0) if case == "a selection of one run's folder" else tiny_experiment
    code, out, err = run_cli(capsys, "predict", folder, *args, "--text", "SA")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("error: ") and expected in err, err


def test_text_takes_several_values_and_may_be_given_again(folders, capsys):
    frame = predict_cli(capsys, folders["classifier"], "--text", "a b", "c d", "--text", "e", fmt="jsonl")
    assert frame["input"].tolist() == ["a b", "c d", "e"]


def test_many_inputs_are_predicted_one_model_call_per_batch_as_each_alone(tiny_experiment, monkeypatch):
    from seqkeras.kept.predict import PREDICT_BATCH

    kept = seqkeras.load_model(run_of(tiny_experiment, "lstm", 0))
    words = kept.preprocessing.vocabulary.tokens[2:12]
    texts = [" ".join(words[: 1 + index % len(words)]) for index in range(2 * PREDICT_BATCH + 10)]
    alone = [kept.predict([text]).iloc[0] for text in texts[:12]]
    calls = []
    batch = kept.model.predict_on_batch
    monkeypatch.setattr(kept.model, "predict_on_batch", lambda ids: calls.append(ids.shape) or batch(ids))
    frame = kept.predict(texts)
    assert len(calls) == 3 and sum(shape[0] for shape in calls) == len(texts)
    assert frame["input"].tolist() == texts  # in the inputs' order, whatever the batches' order
    assert frame["label"].tolist()[:12] == [row["label"] for row in alone]
    np.testing.assert_allclose(frame["probability"][:12], [row["probability"] for row in alone], rtol=1e-5)


def test_a_regressors_inputs_are_batched_by_length(folders, monkeypatch):
    kept = seqkeras.load_model(folders["regressor"])
    texts = ["0.5,1 0.25,0", "0.1,0 0.2,1 0.3,0", "0.75,1 0.5,0", "0.9,1"]
    alone = [float(kept.predict([text])["value"].iloc[0]) for text in texts]
    calls = []
    batch = kept.model.predict_on_batch
    monkeypatch.setattr(kept.model, "predict_on_batch", lambda steps: calls.append(steps.shape) or batch(steps))
    values = kept.predict(texts)["value"]
    assert sorted(calls) == [(1, 1, 2), (1, 3, 2), (2, 2, 2)]  # one call per length
    np.testing.assert_allclose(values, alone, rtol=1e-5)


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "--version")
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"seqkeras {seqkeras.__version__}"


def test_evaluate_takes_every_run_a_selection_leaves_but_one_best(tiny_experiment, tmp_path):
    from seqkeras.execution.reevaluation import selected_runs, selection

    copy = ranked_copy(tiny_experiment, tmp_path, accuracy=[0.2, 0.9, 0.5, 0.9], cross_entropy=[1.1, 1.3, 0.4, 0.9])
    assert selected_runs([copy], selection(["cell=lstm"])) == {
        copy: [run_of(copy, "lstm", 0).name, run_of(copy, "lstm", 1).name]}
    assert selected_runs([copy], selection(best="cross_entropy")) == {copy: [run_of(copy, "lstm", 0).name]}
    assert selected_runs([copy], selection()) == {copy: None}  # every run
    assert selected_runs([run_of(copy, "lstm", 1)], selection()) == {copy: [run_of(copy, "lstm", 1).name]}
    with pytest.raises(SpecError, match="tied at the best accuracy"):
        selected_runs([copy], selection(best="accuracy"))


def test_a_run_folder_that_is_a_link_is_never_read_and_the_reason_is_said(tiny_experiment, tmp_path, capsys):
    copy = tmp_path / "tiny"
    shutil.copytree(tiny_experiment, copy)
    chosen = run_of(copy, "lstm", 1)
    outside = tmp_path / "outside"
    chosen.rename(outside)  # someone's results folder whose run is a link to a model elsewhere
    chosen.symlink_to(outside)
    code, out, err = run_cli(capsys, "predict", copy, "--where", "cell=lstm", "--seed", "1", "--text", "SA")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{chosen}: the run" in err and "is a symbolic link; links inside a results folder are not followed" in err
    code, out, err = run_cli(capsys, "evaluate", copy, "--seed", "1", "--where", "cell=lstm", "--metrics",
                             "cross_entropy")
    assert code != 0 and "symbolic link" in out + err and "Traceback" not in err
    assert not (outside / "metrics.json").read_text().count("cross_entropy")  # nothing written through the link
