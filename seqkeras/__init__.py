"""seqkeras: declarative experiments for sequence models on Keras 3.

    seqkeras.run(spec, overrides=..., only=..., out="results")  → Results (DataFrames)
    seqkeras.load("results/<name>")                              → Results

(seqkeras/api.py). Both are imported on first use, so that `import seqkeras` stays cheap.
"""

from seqkeras.errors import SpecError
from seqkeras.version import __version__
__all__ = ["Results", "SpecError", "__version__", "load", "run"]


def __getattr__(name: str):
    if name in ("run", "load", "Results"):
        from seqkeras import api

        return getattr(api, name)
    raise AttributeError(f"module 'seqkeras' has no attribute {name!r}")
