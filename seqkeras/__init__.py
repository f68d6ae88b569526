"""seqkeras: declarative experiments for sequence models on Keras 3.

    seqkeras.run(spec, overrides=..., only=..., out="results")  → Results (DataFrames)
    seqkeras.load("results/<name>")                              → Results
    seqkeras.evaluate("results/<name>", decoders=[...], metrics=[...])  → Results (kept models evaluated again)
    seqkeras.load_model("results/<name>/<run_id>")               → KeptModel (the run's model and preprocessing)
    seqkeras.export_model("results/<name>/<run_id>", "onnx", "served/")  → Exported (ONNX or SavedModel, for serving)

(seqkeras/api.py, seqkeras/kept/saving.py). They are imported on first use, so that `import seqkeras`
stays cheap: it imports no Keras. It does make the suite's Keras classes findable by
`keras.saving.load_model` as soon as Keras is imported (seqkeras/backends/serializable.py).
"""

from seqkeras.errors import SpecError
from seqkeras.backends import serializable
from seqkeras.version import __version__

__all__ = ["KeptModel", "Results", "SpecError", "__version__", "evaluate", "export_model", "load", "load_model", "run"]

serializable.install()


def __getattr__(name: str):
    if name in ("run", "load", "evaluate", "export_model", "Results"):
        from seqkeras import api

        return getattr(api, name)
    if name in ("load_model", "KeptModel"):
        from seqkeras.kept import saving

        return getattr(saving, name)
    raise AttributeError(f"module 'seqkeras' has no attribute {name!r}")
