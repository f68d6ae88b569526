"""The suite's Keras classes and functions, found by `keras.saving.load_model` once `seqkeras` is imported.

A `.keras` file names each custom object by its registered name
(`seqkeras>Seq2SeqModel`), and Keras finds only the names registered in the
process that loads it (`@keras.saving.register_keras_serializable`, run when the
module defining the class is imported). `import seqkeras` must stay cheap and
import no Keras (`seqkeras validate`, a `--jobs N` parent), so it cannot import
those modules. Instead:

- when Keras is already imported, `install()` registers a stand-in under each
  name of `SERIALIZABLE` at once;
- otherwise it adds a finder to `sys.meta_path` that does so right after
  `keras` has been imported (whoever imports it), and removes itself.

A stand-in is a tiny class whose `from_config` imports the module of the real
class (which registers the real class under the same name, replacing the
stand-in) and builds the real object, or, for a function, a function that calls
the real one. So only the classes a file uses are imported, when it is loaded,
and never while another seqkeras module is half imported. Where the real class
is registered already, it is left as it is. Keras's `safe_mode` stays on: no
stand-in deserializes code.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

from seqkeras.registry import load_path

PACKAGE = "seqkeras"

# Every `@keras.saving.register_keras_serializable(package="seqkeras")` of the package, by its name
# (tests/test_kept_models.py checks that the two agree).
SERIALIZABLE = {
    "SpectralNormal": "seqkeras.layers.initializers:SpectralNormal",
    "BlockIdentity": "seqkeras.layers.initializers:BlockIdentity",
    "GateBias": "seqkeras.layers.initializers:GateBias",
    "BahdanauAttention": "seqkeras.layers.attention:BahdanauAttention",
    "LuongAttention": "seqkeras.layers.attention:LuongAttention",
    "CRF": "seqkeras.layers.crf:CRF",
    "CRFTagger": "seqkeras.layers.crf:CRFTagger",
    "SequenceCRFTagger": "seqkeras.models.crf_tagger:SequenceCRFTagger",
    "Seq2SeqModel": "seqkeras.models.seq2seq:Seq2SeqModel",
    "FusedDense": "seqkeras.backends.torch.fused_dense:FusedDense",
    "FusedSimpleRNN": "seqkeras.backends.torch.fused_rnn:FusedSimpleRNN",
    "FusedLSTM": "seqkeras.backends.torch.fused_rnn:FusedLSTM",
    "FusedGRU": "seqkeras.backends.torch.fused_rnn:FusedGRU",
    "softmax_crossentropy": "seqkeras.training.losses:softmax_crossentropy",
    "sparse_accuracy": "seqkeras.training.losses:sparse_accuracy",
}
FUNCTIONS = {"softmax_crossentropy", "sparse_accuracy"}


def install() -> None:
    """Make every name of SERIALIZABLE findable by Keras: now if Keras is loaded, else right after it loads."""
    if "keras" in sys.modules:
        register()
    elif not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKeras())


def register() -> None:
    """Register a stand-in under each name of SERIALIZABLE that Keras does not know yet."""
    import keras

    known = keras.saving.get_custom_objects()  # Keras's live global dictionary
    for name, path in SERIALIZABLE.items():
        known.setdefault(f"{PACKAGE}>{name}", _stand_in(name, path))


def _stand_in(name: str, path: str):
    if name in FUNCTIONS:
        def function(*args, **kwargs):
            return load_path(path)(*args, **kwargs)

        function.__name__ = function.__qualname__ = name
        function.__doc__ = f"Calls {path} (imported on first use)."
        return function

    def from_config(cls, config, custom_objects=None):
        real = load_path(path)  # importing it registers the real class under this name
        return real.from_config(config)

    def get_config(self):  # Keras registers only classes that have one; a stand-in is never instantiated
        return {}

    return type(name, (), {"from_config": classmethod(from_config), "get_config": get_config,
                           "__doc__": f"Stands for {path} until that module is imported.",
                           "__module__": __name__})


class _AfterKeras(importlib.abc.MetaPathFinder):
    """Finds `keras` as the other finders would, and registers the stand-ins once its module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "keras":
            return None
        sys.meta_path.remove(self)  # once: later imports of anything go on as before
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def exec_module(module):
            run_module(module)
            register()

        loader.exec_module = exec_module
        return spec
