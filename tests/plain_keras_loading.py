"""Kept models loaded by plain Keras in a fresh process: what the tests of kept models as plain Keras share.

    .venv/bin/python -m tests.plain_keras_loading load JOBS.json OUT.json   (KERAS_BACKEND chooses the backend)
    .venv/bin/python -m tests.plain_keras_loading train OUT_DIR CASE_ID...

JOBS.json: {"import_seqkeras": bool, "models": [{"file": model.keras, "inputs": inputs.npz}, ...]}. The process
imports Keras, notes which backend frameworks are in `sys.modules` then, imports seqkeras if asked, and loads each
file with `keras.saving.load_model` (compile and safe_mode at Keras's defaults; Keras imports keras_hub itself
for a file that names its layers). A model job marked `"keras_alone": true` is loaded before seqkeras is imported
(so one process checks both a model that needs Keras alone and those that need `import seqkeras`). OUT.json: per
file its predictions on its inputs, the warnings its loading gave and whether any seqkeras module was imported
when it was loaded; and the frameworks that loading added to the process.

`train` runs model kind cases (tests/model_kind_specs.py) on the backend into OUT_DIR and writes
OUT_DIR/manifest.json: per case its model file, a few test inputs and the kept model's predictions on them,
as `seqkeras.load_model` gives it on the backend that trained it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

FRAMEWORKS = ("tensorflow", "torch", "jax")
REPOSITORY = Path(__file__).resolve().parents[1]


def frameworks() -> set[str]:
    return {name for name in FRAMEWORKS if name in sys.modules}


def save_inputs(x, path: Path) -> Path:
    """A model's inputs (an array, or seq2seq's dict of arrays) as an .npz file the loading process reads."""
    np.savez(path, **(x if isinstance(x, dict) else {"x": x}))
    return path


def read_inputs(path: str):
    with np.load(path) as arrays:
        loaded = {name: arrays[name] for name in arrays.files}
    return loaded["x"] if list(loaded) == ["x"] else loaded


def predictions(model, x) -> list:
    return np.asarray(model.predict(x, verbose=0)).tolist()


def load_in_fresh_process(backend: str, models: list[dict], scratch: Path, *, import_seqkeras: bool = True) -> dict:
    """Run this module in a fresh process on `backend`; its OUT.json as a dict."""
    jobs, out = scratch / f"jobs-{backend}.json", scratch / f"out-{backend}.json"
    jobs.write_text(json.dumps({"import_seqkeras": import_seqkeras, "models": models}))
    result = subprocess.run([sys.executable, "-m", "tests.plain_keras_loading", "load", str(jobs), str(out)],
                            capture_output=True, text=True, timeout=600, cwd=REPOSITORY,
                            env={**os.environ, "KERAS_BACKEND": backend})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


def train_in_fresh_process(backend: str, case_ids: list[str], out: Path) -> dict:
    """Run `train` in a fresh process on `backend`; its manifest."""
    result = subprocess.run([sys.executable, "-m", "tests.plain_keras_loading", "train", str(out), *case_ids],
                            capture_output=True, text=True, timeout=1800, cwd=REPOSITORY,
                            env={**os.environ, "KERAS_BACKEND": backend})
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "manifest.json").read_text())


def first_test_inputs(kept, count: int = 4):
    """The first `count` test inputs of a kept run's own data."""
    x = kept.data().x_test
    return {name: array[:count] for name, array in x.items()} if isinstance(x, dict) else x[:count]


def kept_model_spec(case) -> dict:
    """The case's spec scored by its first metric alone: what is kept is the same model, and the decoders and
    the other metrics, which the backends' own tiers run, took most of these processes' time (JAX compiles each
    decoding step's shapes)."""
    spec = case.spec()
    spec["evaluate"] = {"metrics": case.metrics[:1]}
    return spec


def train(out_dir: str, *case_ids: str) -> None:
    import keras

    import seqkeras
    from tests.model_kind_specs import CASES

    out = Path(out_dir)
    manifest = {}
    for case in [case for case in CASES if case.id in case_ids]:
        spec = kept_model_spec(case)
        seqkeras.run(spec, out=out, backend=keras.backend.backend())
        (folder,) = [path for path in (out / spec["name"]).iterdir() if path.is_dir()]
        kept = seqkeras.load_model(folder)
        x = first_test_inputs(kept)
        manifest[case.id] = {"file": str(folder / "model.keras"), "inputs": str(save_inputs(x, out / f"{case.id}.npz")),
                             "predictions": predictions(kept.model, x)}
    (out / "manifest.json").write_text(json.dumps(manifest))


def load(jobs_file: str, out_file: str) -> None:
    jobs = json.loads(Path(jobs_file).read_text())
    import keras

    before = frameworks()
    results = {}
    # The jobs marked keras_alone first, with no seqkeras imported; then seqkeras, if asked, and the others.
    ordered = sorted(jobs["models"], key=lambda job: not job.get("keras_alone", False))
    for job in ordered:
        if not job.get("keras_alone", False) and jobs["import_seqkeras"] and "seqkeras" not in sys.modules:
            import seqkeras  # noqa: F401
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = keras.saving.load_model(job["file"])
        results[job["file"]] = {
            "class": type(model).__name__,
            "optimizer": f"{type(model.optimizer).__module__}" if getattr(model, "optimizer", None) else None,
            "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
            "predictions": predictions(model, read_inputs(job["inputs"])),
            "seqkeras_imported": any(name == "seqkeras" or name.startswith("seqkeras.") for name in sys.modules),
        }
    Path(out_file).write_text(json.dumps({"backend": keras.backend.backend(), "models": results,
                                          "frameworks_added": sorted(frameworks() - before)}))


if __name__ == "__main__":
    {"train": train, "load": load}[sys.argv[1]](*sys.argv[2:])
