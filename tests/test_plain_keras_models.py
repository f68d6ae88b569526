"""A kept model.keras is plain Keras: Keras's own classes wherever one computes the same function, loaded by
`keras.saving.load_model` in a fresh process without a warning and without another backend's framework.

The normal tier checks models trained on TensorFlow (the session's `trained_runs`), loaded on TensorFlow; the
torch process checks a torch-trained model and one kept the old way (tests/torch_backend/test_kept_models_torch.py).
The system tier trains a model of every kind on each backend and loads each on each backend (9 combinations, 6
processes).
"""

from __future__ import annotations

import json
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import seqkeras
from seqkeras import catalog
from seqkeras.backends.serializable import declared
from seqkeras.kept.plain_keras import plain_compile_config
from tests.model_kind_specs import CASES
from tests.plain_keras_loading import (
    first_test_inputs,
    load_in_fresh_process,
    predictions,
    save_inputs,
    train_in_fresh_process,
)

BACKENDS = ("tensorflow", "torch", "jax")
KERAS_CASES = [case for case in CASES if catalog.MODELS.get(case.kind).model_file.name == "model.keras"]
FUSED = {"FusedSimpleRNN", "FusedLSTM", "FusedGRU", "FusedDense"}  # the torch fast path's layers
SUITES_OWN = {item.name for item in declared() if not item.function} - FUSED


def on_each_backend(start_process) -> dict:
    """`start_process(backend)` for each backend, side by side (each waits on a fresh process), by backend."""
    with ThreadPoolExecutor(len(BACKENDS)) as pool:
        return dict(zip(BACKENDS, pool.map(start_process, BACKENDS)))


def suite_names(model_file) -> set[str]:
    """The `seqkeras>` names a .keras file's config uses (registered classes and functions)."""
    config = zipfile.ZipFile(model_file).read("config.json").decode()
    return set(re.findall(r'"seqkeras>(\w+)"', config))


def assert_plain_keras(model_file) -> None:
    config = zipfile.ZipFile(model_file).read("config.json").decode()
    assert suite_names(model_file) <= SUITES_OWN, suite_names(model_file)
    assert "keras.src.backend." not in config, "a backend's own class (its optimizer subclass) is named"
    compile_config = json.loads(config)["compile_config"]
    assert compile_config["optimizer"]["module"] == "keras.optimizers", compile_config["optimizer"]


def test_the_suites_loss_and_accuracy_and_a_backends_optimizer_are_saved_as_keras_own():
    torch_style = {
        "optimizer": {"module": "keras.src.backend.torch.optimizers.torch_adam", "class_name": "Adam",
                      "config": {"name": "adam", "learning_rate": 0.001}, "registered_name": "Adam"},
        "loss": {"module": "builtins", "class_name": "function", "config": "seqkeras>softmax_crossentropy",
                 "registered_name": "function"},
        "metrics": None,
        "weighted_metrics": [{"module": "keras.metrics", "class_name": "MeanMetricWrapper",
                              "config": {"name": "accuracy", "dtype": "float32",
                                         "fn": {"module": "builtins", "class_name": "function",
                                                "config": "seqkeras>sparse_accuracy", "registered_name": "function"}},
                              "registered_name": None}],
    }
    plain = plain_compile_config(torch_style)
    assert plain["optimizer"] == {**torch_style["optimizer"], "module": "keras.optimizers", "registered_name": None}
    assert plain["loss"] == "sparse_categorical_crossentropy"
    assert plain["weighted_metrics"] == ["accuracy"]
    assert plain["metrics"] is None
    # What Keras's own TensorFlow compile config has, and a user's own function, stay as they are.
    assert plain_compile_config(plain) == plain
    own = {"module": "builtins", "class_name": "function", "config": "my>loss", "registered_name": "function"}
    assert plain_compile_config({**plain, "loss": own})["loss"] == own


@pytest.mark.parametrize("case_id", ["classifier", "tagger-crf", "seq2seq"])
def test_a_kept_model_names_keras_classes_and_only_the_suites_own_layers(case_id, trained_runs):
    (case,) = [case for case in CASES if case.id == case_id]
    assert_plain_keras(trained_runs.run_folder(case) / "model.keras")


def test_plain_keras_loads_kept_models_in_a_fresh_tensorflow_process(trained_runs, tmp_path):
    """A classifier needs nothing but Keras; a CRF tagger and an encoder-decoder need `import seqkeras`, and no
    more. No warning (the optimizer's state is kept), the same predictions, no second framework imported.
    One fresh process: the classifier is loaded before seqkeras is imported, the others after."""
    models, expected, keras_alone = [], {}, {}
    for case in [case for case in CASES if case.id in ("classifier", "tagger-crf", "seq2seq")]:
        folder = trained_runs.run_folder(case)
        kept = seqkeras.load_model(folder)
        x = first_test_inputs(kept)
        model_file = str(folder / "model.keras")
        expected[model_file] = predictions(kept.model, x)
        keras_alone[model_file] = case.id == "classifier"
        inputs = str(save_inputs(x, tmp_path / f"{case.id}.npz"))
        models.append({"file": model_file, "inputs": inputs, "keras_alone": keras_alone[model_file]})
    loaded = load_in_fresh_process("tensorflow", models, tmp_path, import_seqkeras=True)
    assert loaded["frameworks_added"] == [], loaded["frameworks_added"]
    assert set(loaded["models"]) == set(expected)
    for model_file, result in loaded["models"].items():
        assert result["seqkeras_imported"] is not keras_alone[model_file], (model_file, result["seqkeras_imported"])
        assert result["warnings"] == [], result["warnings"]
        np.testing.assert_allclose(result["predictions"], expected[model_file], rtol=1e-5, atol=1e-5)


@pytest.mark.system
@pytest.mark.slow
def test_every_kind_trained_on_each_backend_loads_on_each_backend_with_plain_keras(tmp_path):
    """3 × 3: a tiny model of every Keras model kind trained on each backend, loaded by `keras.saving.load_model`
    in a fresh process on each backend after `import seqkeras`: no warning, the predictions of the backend that
    trained it to 1e-5, and no framework of another backend imported (beyond what `import keras` imports by
    itself): not by keras-hub either, which Keras imports to read a Transformer's layers."""
    ids = [case.id for case in KERAS_CASES]
    # Three training processes side by side, then three loading processes side by side, one per backend, each
    # loading all the files: the processes' start (a backend's import) is much of their time.
    manifests = on_each_backend(lambda backend: train_in_fresh_process(backend, ids, tmp_path / backend))
    for manifest in manifests.values():
        for entry in manifest.values():
            assert_plain_keras(entry["file"])
    models = [{"file": entry["file"], "inputs": entry["inputs"]}
              for manifest in manifests.values() for entry in manifest.values()]
    for loaded_on, loaded in on_each_backend(lambda backend: load_in_fresh_process(backend, models, tmp_path)).items():
        assert loaded["frameworks_added"] == [], (loaded_on, loaded["frameworks_added"])
        for trained_on, manifest in manifests.items():
            for case_id, entry in manifest.items():
                result = loaded["models"][entry["file"]]
                assert result["warnings"] == [], (trained_on, loaded_on, case_id, result["warnings"])
                np.testing.assert_allclose(result["predictions"], entry["predictions"], rtol=1e-5, atol=1e-5,
                                           err_msg=f"{case_id}: trained on {trained_on}, loaded on {loaded_on}")


def test_a_classifier_trained_with_a_schedule_loads_with_keras_alone(tmp_path):
    """A schedule without a warmup is Keras's own; one with a warmup (none of Keras's) is kept as the rate it reached,
    with the optimizer's step and moments: no `seqkeras>` name, no warning, the same predictions."""
    spec = {"version": 1, "name": "schedules",
            "task": {"name": "delayed_recall", "lag": 3, "n_train": 48, "n_test": 16},
            "model": {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4},
            "train": {"epochs": 1, "batch_size": 16, "verbose": 0,
                      "optimizer": {"schedule": {"decay": "cosine", "final_learning_rate": 1e-4}}},
            "matrix": {"train.optimizer.schedule.decay": ["cosine", "exponential"],
                       "train.optimizer.schedule.warmup_steps": [0, 5]},
            "seeds": [0]}
    seqkeras.run(spec, out=tmp_path / "results")
    models, expected = [], {}
    for folder in sorted((tmp_path / "results" / "schedules").glob("decay=*")):
        kept = seqkeras.load_model(folder)
        model_file = str(folder / "model.keras")
        assert_plain_keras(model_file)
        assert suite_names(model_file) == set(), suite_names(model_file)
        x = first_test_inputs(kept)
        expected[model_file] = predictions(kept.model, x)
        models.append({"file": model_file, "inputs": str(save_inputs(x, tmp_path / f"{folder.name}.npz")),
                       "keras_alone": True})
    assert len(models) == 4
    loaded = load_in_fresh_process("tensorflow", models, tmp_path, import_seqkeras=False)
    for model_file, result in loaded["models"].items():
        assert not result["seqkeras_imported"] and result["warnings"] == [], (model_file, result["warnings"])
        np.testing.assert_allclose(result["predictions"], expected[model_file], rtol=1e-5, atol=1e-5)
