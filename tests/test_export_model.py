"""`seqkeras export-model`: a kept model exported for serving by Keras's own `model.export`, beside its preprocessing.

ONNX graphs are run by ONNX Runtime and give Keras's outputs within 1e-4; SavedModels are loaded by
`tf.saved_model.load` and called. An encoder-decoder's two graphs (encoder, one decoder step) are checked
against the model's own step. The kinds that cannot be exported, an output folder that holds files and a
wrong format are one line each. The models are the session's tiny TensorFlow runs (`trained_runs`), in the
TensorFlow test process.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import seqkeras
from seqkeras.kept.export import flat_states
from tests.helpers import run_cli
from tests.model_kind_specs import CASES

pytest.importorskip("onnxruntime", reason="the export extra is not installed (pip install -r requirements-export.txt)")
pytest.importorskip("tf2onnx", reason="the export extra is not installed (pip install -r requirements-export.txt)")

import onnxruntime  # noqa: E402

# Keras's export traces the model with TensorFlow (a SavedModel, and tf2onnx from it): the kept models are the
# session's tiny TensorFlow runs, in the TensorFlow test process (tests/conftest.py).
pytestmark = pytest.mark.tensorflow

CASE = {case.id: case for case in CASES}


def onnx_outputs(path, feeds: dict) -> dict:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, {item.name: feeds[item.name] for item in session.get_inputs()})))


def test_a_classifier_exports_as_onnx_that_onnx_runtime_runs_as_keras_does(trained_runs, tmp_path, capsys):
    folder = trained_runs.run_folder(CASE["classifier"])
    kept = seqkeras.load_model(folder)
    ids = kept.encode(["SA n1 n2 SB n3", "n1 SB"]).ids.astype("int32")
    out = tmp_path / "served"
    code, printed, err = run_cli(capsys, "export-model", folder, "--format", "onnx", "--output", out)
    assert code == 0, err
    assert f"wrote {out}" in printed
    assert sorted(path.name for path in out.iterdir()) == ["export.json", "model.onnx", "preprocessing.json",
                                                            "vocabulary.json"]
    manifest = json.loads((out / "export.json").read_text())
    (graph,) = manifest["graphs"].values()
    (input_name,) = graph["inputs"]
    assert graph["inputs"][input_name]["shape"] == [None, None]  # any batch, any length
    (served,) = onnx_outputs(out / "model.onnx", {input_name: ids}).values()
    np.testing.assert_allclose(served, kept.model.predict(ids, verbose=0), atol=1e-4)
    # The preprocessing beside it is the run's own: the same labels, the same vocabulary.
    copied, own = (json.loads((where / "preprocessing.json").read_text()) for where in (out, folder))
    assert copied == own


def test_a_classifier_exports_as_a_savedmodel_that_tensorflow_loads_and_calls(trained_runs, tmp_path):
    import tensorflow as tf

    folder = trained_runs.run_folder(CASE["classifier"])
    kept = seqkeras.load_model(folder)
    ids = kept.encode(["SA n1 n2 SB n3"]).ids.astype("int32")
    exported = seqkeras.export_model(folder, "savedmodel", tmp_path / "served")
    assert exported.graphs == ["model"] and not exported.replaced
    served = tf.saved_model.load(str(tmp_path / "served" / "model"))
    np.testing.assert_allclose(served.serve(tf.constant(ids)).numpy(), kept.model.predict(ids, verbose=0), atol=1e-5)


@pytest.mark.parametrize("case_id", ["seq2seq", "seq2seq-repeat-vector"])
def test_an_encoder_decoder_exports_its_encoder_and_one_decoder_step(case_id, trained_runs, tmp_path):
    import tensorflow as tf

    folder = trained_runs.run_folder(CASE[case_id])
    kept = seqkeras.load_model(folder)
    source = kept.encode(["a b c", "b a"]).ids.astype("int32")
    start = kept.preprocessing.outputs.index["<s>"]
    step_model = kept.model.step_model(source, start, kept.preprocessing.outputs.index["</s>"])
    state = step_model.start(len(source))
    tokens = np.full(len(source), start, dtype="int32")
    expected, state = step_model.step(tokens, state)

    seqkeras.export_model(folder, "onnx", tmp_path / "onnx")
    manifest = json.loads((tmp_path / "onnx" / "export.json").read_text())
    loop = manifest["loop"]
    assert (loop["encoder"], loop["step"]) == ("encoder.onnx", "decoder_step.onnx")
    encoded = onnx_outputs(tmp_path / "onnx" / "encoder.onnx", {"source": source})
    assert set(encoded) == set(loop["memory"]) | set(loop["states"])
    # With attention the step reads the encoder's outputs; reading the encoder's vector, that vector alone.
    assert ("memory" in encoded) if case_id == "seq2seq" else (set(loop["memory"]) == {"vector"})
    stepped = onnx_outputs(tmp_path / "onnx" / "decoder_step.onnx", {"token": tokens, **encoded})
    np.testing.assert_allclose(stepped["log_probabilities"], expected, atol=1e-4)
    for name, value in flat_states(state["carry"]).items():  # the next states: next_<the input they replace>
        np.testing.assert_allclose(stepped[loop["states"][name]], np.asarray(value), atol=1e-4)

    seqkeras.export_model(folder, "savedmodel", tmp_path / "savedmodel")
    encoder = tf.saved_model.load(str(tmp_path / "savedmodel" / "encoder"))
    step = tf.saved_model.load(str(tmp_path / "savedmodel" / "decoder_step"))
    memory_and_states = encoder.serve({"source": tf.constant(source)})
    served = step.serve({"token": tf.constant(tokens), **memory_and_states})
    np.testing.assert_allclose(served["log_probabilities"].numpy(), expected, atol=1e-4)


@pytest.mark.parametrize("case_id, why", [("ngram", "not a Keras graph"), ("tagger-crf", "Viterbi"),
                                          ("transformer_seq2seq", "key/value caches")])
def test_a_kind_that_cannot_be_exported_says_why_in_one_line(case_id, why, trained_runs, tmp_path, capsys):
    folder = trained_runs.run_folder(CASE[case_id])
    capsys.readouterr()  # what training the session's run printed, if this test trained it
    code, printed, err = run_cli(capsys, "export-model", folder, "--format", "onnx", "--output", tmp_path / "out")
    assert code == 2 and printed == ""
    assert err.count("\n") == 1 and why in err and "cannot be exported" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_an_output_folder_that_holds_files_is_replaced_only_when_asked_and_that_is_said(trained_runs, tmp_path, capsys):
    folder = trained_runs.run_folder(CASE["classifier"])
    out = tmp_path / "served"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    code, printed, err = run_cli(capsys, "export-model", folder, "--format", "savedmodel", "--output", out)
    assert code == 2 and err.count("\n") == 1 and "already holds files" in err and "--overwrite" in err, err
    assert (out / "mine.txt").read_text() == "keep me"
    code, printed, err = run_cli(capsys, "export-model", folder, "--format", "savedmodel", "--output", out,
                                 "--overwrite")
    assert code == 0 and f"replaced what {out} held" in err
    assert not (out / "mine.txt").exists() and (out / "model" / "saved_model.pb").is_file()
    assert [path.name for path in tmp_path.iterdir()] == ["served"]  # no staging folder left beside it


def test_bad_input_is_one_line(tmp_path, capsys):
    code, _, err = run_cli(capsys, "export-model", tmp_path / "nothing", "--format", "onnx", "--output", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "not a run folder" in err, err
    with pytest.raises(seqkeras.SpecError, match="'tflite' is not an export format"):
        seqkeras.export_model(tmp_path, "tflite", tmp_path / "o")


@pytest.mark.parametrize("output", ["sub/..", ".", "{experiment}", "{run}", "{root}"])
def test_overwrite_never_replaces_the_current_folder_nor_the_results_it_exports(output, trained_runs, tmp_path,
                                                                                 monkeypatch, capsys):
    import shutil

    run = tmp_path / "results" / "exp" / "seed=0_abc"
    shutil.copytree(trained_runs.run_folder(CASE["classifier"]), run)
    (run.parent / "runs.csv").write_text("experiment,run_id,status\nexp,seed=0_abc,ok\n")
    here = tmp_path / "here"
    (here / "sub").mkdir(parents=True)
    (here / "note.txt").write_text("keep")
    monkeypatch.chdir(here)
    before = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*"))
    given = output.format(experiment=run.parent, run=run, root=run.parent.parent)
    code, printed, err = run_cli(capsys, "export-model", run, "--format", "savedmodel", "--output", given,
                                 "--overwrite")
    assert code == 2 and printed == "" and err.count("\n") == 1 and "never removed or replaced" in err, err
    assert sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*")) == before


def test_export_selects_a_run_as_predict_does(trained_runs, tmp_path, capsys):
    from tests.conftest import TINY_TRAINING_SPEC

    experiment = trained_runs.experiment(TINY_TRAINING_SPEC)
    (lstm_1,) = experiment.glob("cell=lstm_seed=1_*")
    code, printed, err = run_cli(capsys, "export-model", experiment, "--where", "cell=lstm", "--seed", "1",
                                 "--format", "onnx", "--output", tmp_path / "served")
    assert code == 0, err
    assert err.strip() == f"run: {lstm_1} (model.cell=lstm, seed=1)"
    manifest = json.loads((tmp_path / "served" / "export.json").read_text())
    assert json.loads((tmp_path / "served" / "preprocessing.json").read_text()) == \
        json.loads((lstm_1 / "preprocessing.json").read_text()) and manifest["graphs"]
    code, printed, err = run_cli(capsys, "export-model", experiment, "--where", "cell=lstm", "--format", "onnx",
                                 "--output", tmp_path / "other")
    assert code == 2 and "2 finished runs with cell=lstm" in err and not (tmp_path / "other").exists()
    exported = seqkeras.export_model(experiment, "onnx", tmp_path / "api", where={"model.cell": "lstm"}, seed=1)
    assert exported.folder == tmp_path / "api" and (tmp_path / "api" / "model.onnx").is_file()
