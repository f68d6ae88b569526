"""A model kept on the torch backend loads there and scores what its run recorded, and loads on TensorFlow too.

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend/test_kept_models_torch.py

On torch the recurrent layers and the softmax are the suite's fused subclasses (FusedLSTM, FusedDense),
and the saved config names them; loaded where seqkeras is imported, on any backend, they are Keras's
LSTM and Dense with the same weights.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import numpy as np

import seqkeras

REPOSITORY = Path(__file__).resolve().parents[2]
SPEC = {
    "version": 1, "name": "kept-torch",
    "task": {"name": "delayed_recall", "lag": 3, "n_train": 48, "n_test": 16},
    "model": {"kind": "classifier", "cell": "lstm", "units": 4, "embedding_dim": 4, "bidirectional": True},
    "train": {"epochs": 1, "batch_size": 16, "verbose": 0},
    "evaluate": {"metrics": ["accuracy", "cross_entropy"]},
    "seeds": [0],
}


def test_a_recurrent_model_kept_on_torch_loads_on_torch_and_on_tensorflow(tmp_path):
    seqkeras.run(SPEC, out=tmp_path, backend="torch")
    (folder,) = [p for p in (tmp_path / "kept-torch").iterdir() if p.is_dir()]
    config = json.dumps(json.loads(__import__("zipfile").ZipFile(folder / "model.keras").read("config.json")))
    assert "seqkeras>FusedLSTM" in config and "seqkeras>FusedDense" in config  # the torch classes, saved

    kept = seqkeras.load_model(folder)
    assert kept.preprocessing.document.backend == "torch"
    (row,) = kept.evaluate(tmp_path / "again")
    record = json.loads((folder / "metrics.json").read_text())["metrics"]
    for name, value in record.items():
        assert row.metrics[name] == pytest.approx(value, rel=1e-5, abs=1e-7), name
    x = kept.data().x_test
    on_torch = np.asarray(kept.model.predict(x, verbose=0))
    np.save(tmp_path / "x.npy", x)

    script = textwrap.dedent(f"""
        import json, numpy as np, seqkeras, keras
        assert keras.backend.backend() == "tensorflow"
        kept = seqkeras.load_model({str(folder)!r})
        model = keras.saving.load_model({str(folder / "model.keras")!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        print(json.dumps([np.asarray(kept.model.predict(x, verbose=0)).tolist(),
                          np.asarray(model.predict(x, verbose=0)).tolist()]))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            cwd=REPOSITORY, env={**os.environ, "KERAS_BACKEND": "tensorflow"})
    assert result.returncode == 0, result.stderr[-3000:]
    kept_on_tf, keras_on_tf = json.loads(result.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(kept_on_tf, on_torch, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(keras_on_tf, on_torch, rtol=1e-4, atol=1e-6)
