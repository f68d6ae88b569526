"""A Keras class or function a saved model may name is registered where it is defined, and nowhere else.

`@keras_serializable` at the definition is the one declaration (seqkeras/backends/serializable.py): the names
are read from the package's source, so a class written with the decorator loads in a fresh process after
`import seqkeras`, with no other edit. The kept models' own fresh-process check is in tests/test_kept_models.py.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import pytest

from seqkeras.backends import serializable

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "seqkeras"


def decorated_in_source() -> dict[str, str]:
    """Every definition the package's syntax trees show under a decorator named keras_serializable."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(REPOSITORY).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and any(
                    ast.unparse(decorator).split(".")[-1] == "keras_serializable" for decorator in node.decorator_list):
                found[node.name] = f"{module}:{node.name}"
    return found


def test_every_keras_serializable_object_is_declared_with_the_decorator_and_found_by_the_scan():
    direct = [str(path.relative_to(REPOSITORY)) for path in PACKAGE.rglob("*.py")
              if "register_keras_serializable" in path.read_text(encoding="utf-8")
              and path.name != "serializable.py"]
    assert direct == [], "register with @keras_serializable (seqkeras.backends.serializable), not Keras's own"
    declared = {item.name: item.path for item in serializable.declared()}
    assert declared == decorated_in_source()
    assert {"CRF", "Seq2SeqModel", "SequenceCRFTagger", "softmax_crossentropy"} <= set(declared)


def test_each_declared_name_is_what_its_module_registers():
    for item in serializable.declared():
        if item.module.startswith("seqkeras.backends.torch."):
            pytest.importorskip("torch")
        real = getattr(importlib.import_module(item.module), item.name)
        assert keras.saving.get_registered_object(f"seqkeras>{item.name}") is real, item.path
        assert callable(real) and (item.function == (not isinstance(real, type))), item.path


def test_a_stand_in_builds_the_real_class():
    from seqkeras.layers.crf import CRF

    (item,) = [item for item in serializable.declared() if item.name == "CRF"]
    crf = serializable._stand_in(item).from_config(CRF(3, name="crf").get_config())
    assert type(crf) is CRF and crf.num_tags == 3
    assert keras.saving.get_registered_object("seqkeras>CRF") is CRF


def test_the_decorator_refuses_a_class_that_cannot_be_imported_by_its_name():
    with pytest.raises(TypeError, match="at module level"):
        @serializable.keras_serializable
        class Inner(keras.layers.Layer):
            pass


SCALED = '''\
"""A layer added to the package by a contributor: the decorator is the whole registration."""

import keras

from seqkeras.backends.serializable import keras_serializable


@keras_serializable
class Scaled(keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}
'''


def save_a_model_with_the_copys_layer(copy: Path, path: Path) -> None:
    """In this process: the copy's seqkeras/layers/scaled.py imported by its module's name (as the copy's package
    would import it), a model with its layer saved to `path`; then the module and its registration are removed
    again, so nothing of it outlives this call (the loading process is a fresh one)."""
    from keras.src.saving import object_registration

    name = "seqkeras.layers.scaled"
    spec = importlib.util.spec_from_file_location(name, copy / "seqkeras" / "layers" / "scaled.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # @keras_serializable registers Scaled as seqkeras>Scaled
        assert keras.saving.get_registered_object("seqkeras>Scaled") is module.Scaled
        inputs = keras.Input((3,))
        keras.Model(inputs, module.Scaled(3.0)(inputs)).save(path)
    finally:
        del sys.modules[name]
        object_registration.GLOBAL_CUSTOM_OBJECTS.pop("seqkeras>Scaled", None)
        object_registration.GLOBAL_CUSTOM_NAMES.pop(getattr(module, "Scaled", None), None)
    assert keras.saving.get_registered_object("seqkeras>Scaled") is None


def test_a_class_written_with_the_decorator_loads_in_a_fresh_process_with_no_other_edit(tmp_path):
    """A copy of the package gains one module with a decorated layer; a model saved with that layer loads
    through Keras's own load_model in a fresh process that imported only seqkeras before Keras. The model is
    saved in this process (its module imported from the copy by its name): the loading process, the fresh one,
    never imported the module itself."""
    copy = tmp_path / "site"
    shutil.copytree(PACKAGE, copy / "seqkeras", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "seqkeras" / "layers" / "scaled.py").write_text(SCALED, encoding="utf-8")
    save_a_model_with_the_copys_layer(copy, tmp_path / "scaled.keras")
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import seqkeras
        assert seqkeras.__file__.startswith({str(copy)!r}), seqkeras.__file__
        assert "keras" not in sys.modules
        import keras
        path = {str(tmp_path / "scaled.keras")!r}
        model = keras.saving.load_model(path)  # safe_mode on
        layer = model.layers[-1]
        assert type(layer).__module__ == "seqkeras.layers.scaled" and layer.factor == 3.0, type(layer)
        print(model.predict(np.ones((1, 3)), verbose=0).tolist())
    """)
    environment = {**os.environ, "PYTHONPATH": str(copy), "KERAS_BACKEND": "tensorflow"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, env=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[[3.0, 3.0, 3.0]]"
