"""`seqkeras export-model`: a kept model exported for serving by Keras's own `model.export`, beside its preprocessing.

ONNX graphs are run by ONNX Runtime and give Keras's outputs within 1e-4; SavedModels are loaded by
`tf.saved_model.load` and called. An encoder-decoder's two graphs (encoder, one decoder step) are checked
against the model's own step. The kinds that cannot be exported, an output folder that holds files and a
wrong format are one line each. The models are the session's tiny TensorFlow runs (`trained_runs`), in the
TensorFlow test process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import seqkeras
from seqkeras.models.seq2seq_graphs import flat_states
from tests.helpers import run_cli
from tests.model_kind_specs import CASES
from tests.test_subword_levels import pair_runs  # noqa: F401 (a fixture: a tiny run at each subword level)

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
                                                            "serve.py", "vocabulary.json"]
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


def first_step(kept):
    """Two sources' ids, the kept encoder-decoder's own step model on them, the start tokens and its first state."""
    source = kept.encode(["a b c", "b a"]).ids.astype("int32")
    start = kept.preprocessing.outputs.index["<s>"]
    step_model = kept.model.step_model(source, start, kept.preprocessing.outputs.index["</s>"])
    return source, step_model, np.full(len(source), start, dtype="int32"), step_model.start(len(source))


@pytest.mark.parametrize("case_id", ["seq2seq", "seq2seq-repeat-vector"])
def test_an_encoder_decoder_exports_its_encoder_and_one_decoder_step(case_id, trained_runs, tmp_path):
    import tensorflow as tf

    folder = trained_runs.run_folder(CASE[case_id])
    source, step_model, tokens, state = first_step(seqkeras.load_model(folder))
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


def onnx_interface(path) -> dict:
    """An ONNX graph's inputs and outputs as a server sees them: name → dimensions (sizes, or their names)."""
    import onnx

    graph = onnx.load(str(path)).graph
    return {value.name: [dimension.dim_param or dimension.dim_value for dimension in value.type.tensor_type.shape.dim]
            for value in [*graph.input, *graph.output]}


def greedy_onnx_loop(folder, source: np.ndarray, steps: int):
    """export.json's loop driven with ONNX Runtime, greedily, for `steps` steps: (the tokens chosen [rows, steps],
    each step's log-probabilities [steps, rows, vocabulary], what the loop carries after the last step)."""
    manifest = json.loads((folder / "export.json").read_text())
    loop = manifest["loop"]
    vocabulary = json.loads((folder / manifest["preprocessing"]).read_text())["output"]["vocabulary"]
    tokens = json.loads((folder / vocabulary).read_text())
    encoder = onnxruntime.InferenceSession(str(folder / loop["encoder"]), providers=["CPUExecutionProvider"])
    step = onnxruntime.InferenceSession(str(folder / loop["step"]), providers=["CPUExecutionProvider"])
    carried = dict(zip([output.name for output in encoder.get_outputs()], encoder.run(None, {"source": source})))
    assert set(carried) == set(loop["memory"]) | set(loop["states"])
    token = np.full(len(source), tokens.index(loop["start"]), dtype="int32")
    chosen, log_probabilities = [], []
    for _ in range(steps):
        outputs = dict(zip([output.name for output in step.get_outputs()],
                           step.run(None, {item.name: {"token": token, **carried}[item.name]
                                           for item in step.get_inputs()})))
        carried |= {name: outputs[replaced_by] for name, replaced_by in loop["states"].items()}
        token = outputs["log_probabilities"].argmax(axis=-1).astype("int32")
        chosen.append(token)
        log_probabilities.append(outputs["log_probabilities"])
    return np.stack(chosen, axis=1), np.stack(log_probabilities), carried


# Two blocks, pre-LN (each block's self-attention reads its input normalized), sine positions.
PRE_LN = dataclasses.replace(CASE["transformer_seq2seq"], id="transformer_seq2seq-pre-ln",
                             model={**CASE["transformer_seq2seq"].model, "layers": 2, "normalize_first": True,
                                    "positions": "sine"},
                             evaluate={"decoders": [{"name": "greedy"}]})


@pytest.mark.parametrize("case", [CASE["transformer_seq2seq"], PRE_LN], ids=lambda case: case.id)
def test_a_transformer_encoder_decoder_exports_its_encoder_and_a_step_carrying_its_key_value_caches(case,
                                                                                                    trained_runs,
                                                                                                    tmp_path):
    folder = trained_runs.run_folder(case)
    kept = seqkeras.load_model(folder)
    texts = ["a b c", "b a", "c"]
    source = kept.encode(texts).ids.astype("int32")
    seqkeras.export_model(folder, "onnx", tmp_path / "onnx")
    manifest = json.loads((tmp_path / "onnx" / "export.json").read_text())
    loop, config = manifest["loop"], kept.model.config
    layers, positions = config["layers"], config["target_positions"]
    assert (loop["encoder"], loop["step"]) == ("encoder.onnx", "decoder_step.onnx")
    assert set(loop["memory"]) == {"mask"} | {f"layer{n}_cross_cache" for n in range(layers)}
    assert loop["states"] == {"index": "next_index"} | {f"layer{n}_self_cache": f"next_layer{n}_self_cache"
                                                        for n in range(layers)}
    assert loop["max_steps"] == positions > loop["max_output_length"]
    # Real names, and every dimension a size or a name: the caches' positions are the model's target positions.
    heads, width = config["num_heads"], config["embedding_dim"] // config["num_heads"]
    assert onnx_interface(tmp_path / "onnx" / "encoder.onnx") == {
        "source": ["batch", "source_length"], "mask": ["batch", "source_length"], "index": ["batch"],
        **{f"layer{n}_cross_cache": ["batch", 2, "source_length", heads, width] for n in range(layers)},
        **{f"layer{n}_self_cache": ["batch", 2, positions, heads, width] for n in range(layers)}}
    step_interface = onnx_interface(tmp_path / "onnx" / "decoder_step.onnx")
    assert step_interface["log_probabilities"] == ["batch", config["target_vocabulary_size"]]
    assert step_interface["token"] == ["batch"] and step_interface["next_index"] == ["batch"]
    assert step_interface["next_layer0_self_cache"] == step_interface["layer0_self_cache"]
    assert manifest["graphs"]["decoder_step.onnx"]["inputs"]["layer0_self_cache"]["shape"] == \
        [None, 2, positions, heads, width]

    # The exported loop, greedy, against the model's own step model (its log-probabilities at every step) ...
    start, end = (kept.preprocessing.outputs.index[token] for token in ("<s>", "</s>"))
    chosen, served, carried = greedy_onnx_loop(tmp_path / "onnx", source, loop["max_output_length"])
    step_model = kept.model.step_model(source, start, end)
    state = step_model.start(len(source))
    tokens = np.full(len(source), start, dtype="int32")
    for step, log_probabilities in enumerate(served):
        expected, state = step_model.step(tokens, state)
        np.testing.assert_allclose(log_probabilities, expected, atol=1e-4)
        tokens = chosen[:, step]
    for n in range(layers):  # the caches the loop carries are the model's own
        own = np.asarray(state["carry"]["self_caches"][n])[: len(source)]
        np.testing.assert_allclose(carried[f"layer{n}_self_cache"], own, atol=1e-4)
    np.testing.assert_array_equal(carried["index"], np.full(len(source), len(served)))
    # ... and against what the kept model decodes (greedy): the same outputs, the same log-probabilities.
    predicted = kept.predict(texts)
    words = kept.preprocessing.outputs.tokens
    for row, (output, log_prob) in enumerate(zip(predicted["output"], predicted["log_prob"])):
        written = list(chosen[row])
        length = written.index(end) + 1 if end in written else len(written)
        assert "".join(words[token] for token in written[:length] if token != end) == output
        assert served[np.arange(length), row, written[:length]].sum() == pytest.approx(log_prob, abs=1e-4)


def test_a_transformer_encoder_decoder_exports_as_savedmodels_that_give_its_step(trained_runs, tmp_path):
    import tensorflow as tf

    folder = trained_runs.run_folder(CASE["transformer_seq2seq"])
    source, step_model, tokens, state = first_step(seqkeras.load_model(folder))
    first, state = step_model.step(tokens, state)
    second, _ = step_model.step(first.argmax(axis=-1).astype("int32"), state)

    exported = seqkeras.export_model(folder, "savedmodel", tmp_path / "savedmodel")
    assert exported.graphs == ["encoder", "decoder_step"]
    loop = json.loads((tmp_path / "savedmodel" / "export.json").read_text())["loop"]
    encoder = tf.saved_model.load(str(tmp_path / "savedmodel" / "encoder"))
    step = tf.saved_model.load(str(tmp_path / "savedmodel" / "decoder_step"))
    carried = encoder.serve({"source": tf.constant(source)})
    served = step.serve({"token": tf.constant(tokens), **carried})
    np.testing.assert_allclose(served["log_probabilities"].numpy(), first, atol=1e-4)
    carried |= {name: served[replaced_by] for name, replaced_by in loop["states"].items()}
    token = tf.constant(served["log_probabilities"].numpy().argmax(axis=-1).astype("int32"))
    np.testing.assert_allclose(step.serve({"token": token, **carried})["log_probabilities"].numpy(), second,
                               atol=1e-4)


@pytest.mark.parametrize("case_id", ["classifier", "seq2seq"])
def test_onnx_graphs_name_their_inputs_outputs_and_dimensions(case_id, trained_runs, tmp_path):
    folder = trained_runs.run_folder(CASE[case_id])
    exported = seqkeras.export_model(folder, "onnx", tmp_path / "onnx")
    manifest = json.loads((tmp_path / "onnx" / "export.json").read_text())
    for graph in exported.graphs:  # file names: model.onnx, or encoder.onnx and decoder_step.onnx
        interface = onnx_interface(tmp_path / "onnx" / graph)
        assert set(interface) == set(manifest["graphs"][graph]["inputs"]) | set(manifest["graphs"][graph]["outputs"])
        assert not any(":" in name or "Identity" in name for name in interface), interface  # no TensorFlow op's
        if manifest["problem"] != "seq2seq":
            assert manifest["graphs"][graph]["outputs"] == {"output_0": {"dtype": "float32", "shape": [None, 2]}} \
                or list(manifest["graphs"][graph]["outputs"]) == ["output_0"], manifest["graphs"][graph]
        for name, dimensions in interface.items():
            assert dimensions and all(isinstance(size, int) and size > 0 or size in ("batch", "length", "source_length")
                                      for size in dimensions), (name, dimensions)
            assert dimensions[0] == "batch", (name, dimensions)


@pytest.mark.parametrize("case_id, why", [("ngram", "not a Keras graph"), ("tagger-crf", "Viterbi")])
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


def served(folder, text: str, tmp_path) -> str:
    """What the export's serve.py prints for `text`, run by this Python in isolated mode (no PYTHONPATH, no
    script folder on sys.path) from a folder of its own; the modules it imported (-X importtime) hold no seqkeras."""
    here = tmp_path / "elsewhere"
    here.mkdir(exist_ok=True)
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-I", "-X", "importtime", str(folder / "serve.py"), text], cwd=here,
                          env=environment, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")]
    assert "onnxruntime" in imported and not [name for name in imported if name.startswith("seqkeras")], imported
    return done.stdout.rstrip("\n")


SERVED_TEXTS = {"classifier": ["SA n1 n2 SB n3", "n1 SB zz", "SB"], "seq2seq": ["a b c", "b a zz"],
                "transformer_seq2seq": ["a b c", "c"]}


@pytest.mark.parametrize("case_id", list(SERVED_TEXTS))
def test_an_onnx_export_serves_a_text_with_its_serve_py_as_the_kept_model_predicts(case_id, trained_runs,
                                                                                   tmp_path):
    folder = trained_runs.run_folder(CASE[case_id])
    kept = seqkeras.load_model(folder)
    out = tmp_path / "served"
    seqkeras.export_model(folder, "onnx", out)
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["serve"] == "serve.py" and "tokenizer" not in manifest  # a word-level run: its vocabulary alone
    script = (out / "serve.py").read_text()
    assert "import seqkeras" not in script and "from seqkeras" not in script and len(script.splitlines()) < 120
    for text in SERVED_TEXTS[case_id]:
        predicted = kept.predict([text])
        column = "label" if kept.problem == "classification" else "output"
        assert served(out, text, tmp_path) == predicted[column][0], text


@pytest.mark.slow
def test_a_bpe_runs_export_holds_its_tokenizer_json_and_serves_as_the_kept_model_predicts(request, tmp_path):
    from tokenizers import Tokenizer

    folder = request.getfixturevalue("pair_runs")["bpe"]  # a tiny sentence_pairs GRU encoder-decoder at level bpe
    kept = seqkeras.load_model(folder)
    out = tmp_path / "served"
    seqkeras.export_model(folder, "onnx", out)
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["tokenizer"] == {"file": "tokenizer.json", "library": "tokenizers",
                                     "read": "tokenizers.Tokenizer.from_file('tokenizer.json').encode(text).ids"}
    texts = ["seventy one", "forty five", "zyzzyva quokka"]  # the last: letters never trained on, <unk> pieces
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))  # the library's own file: the run's pieces
    for text, encoded in zip(texts, kept.encode(texts).ids):
        assert tokenizer.encode(text).ids == [int(i) for i in encoded if i != 0], text
    for text in texts:
        assert served(out, text, tmp_path) == kept.predict([text])["output"][0], text
