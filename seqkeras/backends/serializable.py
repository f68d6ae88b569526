"""The suite's Keras classes and functions: registered where they are defined, found by `keras.saving.load_model`.

A `.keras` file names each custom object by its registered name
(`seqkeras>Seq2SeqModel`), and Keras finds only the names registered in the
process that loads it. Each class or function a kept model may name is defined
with `@keras_serializable` (Keras's `register_keras_serializable(package="seqkeras")`):
that line, at the definition, is the one declaration. Nothing else lists them.

`import seqkeras` must stay cheap and import no Keras (`seqkeras validate`, a
`--jobs N` parent), so it cannot import the modules that define them. Instead
`install()` (called by `import seqkeras`):

- when Keras is already imported, registers a stand-in under each declared name at once;
- otherwise adds a finder to `sys.meta_path` that does so right after `keras` has
  been imported (whoever imports it: the user's own `import keras` included), and
  removes itself.

The meta_path finder is the one way to run code when another package is
imported without importing it first: Keras has no hook for plug-ins' objects, and
`load_model(custom_objects=...)` would need every caller to know the suite.

The declared names are read from the package's source (`declared`): every
module-level `class` or `def` under a `@keras_serializable` line, found by a
text scan of the package's .py files, which imports nothing and takes a few
milliseconds, once, when Keras is imported. A new class is found as soon as it
is written with the decorator.

A stand-in is a tiny class whose `from_config` imports the module of the real
class (which registers the real class under the same name, replacing the
stand-in) and builds the real object, or, for a function, a function that calls
the real one. So only the classes a file uses are imported, when it is loaded,
and never while another seqkeras module is half imported. Where the real class
is registered already, it is left as it is. Keras's `safe_mode` stays on: no
stand-in deserializes code.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from seqkeras.backends import runtime  # no Keras: it chooses the backend before Keras is imported

PACKAGE = "seqkeras"
SOURCE = Path(__file__).resolve().parents[1]  # the package's folder

# A module-level definition under the decorator (other decorators may stand between them).
DECORATED = re.compile(r"^@(?:[\w.]+\.)?keras_serializable[ \t]*\n(?:@[^\n]*\n)*(class|def)\s+(\w+)", re.MULTILINE)


def keras_serializable(obj):
    """Register a Keras class or function under `seqkeras>` its name, so a saved model that names it loads.

    Used at the definition, at module level: the name is found there without importing the module
    (`declared`), and the module is imported by that name when a file needs it.
    """
    if obj.__qualname__ != obj.__name__:
        raise TypeError(f"{obj.__qualname__}: define a Keras serializable object at module level, where "
                        f"`keras.saving.load_model` can import it by its module's name")
    import keras  # the defining module has imported it already: it defines a Keras class

    return keras.saving.register_keras_serializable(package=PACKAGE)(obj)


@dataclass(frozen=True)
class Declared:
    """One `@keras_serializable` object of the package, as its source declares it."""

    name: str
    module: str
    function: bool  # a function (a loss, a metric), else a class

    @property
    def path(self) -> str:
        return f"{self.module}:{self.name}"


@functools.cache
def declared(root: Path = SOURCE, package: str = PACKAGE) -> tuple[Declared, ...]:
    """Every `@keras_serializable` definition under `root` (the package `package`), by a scan of its source."""
    found: dict[str, Declared] = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "keras_serializable" not in text:
            continue
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))
        for kind, name in DECORATED.findall(text):
            if name in found:
                raise ValueError(f"two Keras serializable objects are named {PACKAGE}>{name}: in "
                                 f"{found[name].module} and {module}")
            found[name] = Declared(name, module, kind == "def")
    return tuple(found.values())


def install() -> None:
    """Make every declared name findable by Keras: now if Keras is loaded, else right after it loads."""
    if "keras" in sys.modules:
        register()
    elif not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKeras())


def register() -> None:
    """Register a stand-in under each declared name that Keras does not know yet; and, off the tensorflow backend,
    keep Keras's own serialization from importing TensorFlow (`runtime.serialize_without_importing_tensorflow`):
    loading a model must not bring a second backend's framework into the process."""
    import keras

    known = keras.saving.get_custom_objects()  # Keras's live global dictionary
    for item in declared():
        known.setdefault(f"{PACKAGE}>{item.name}", _stand_in(item))
    runtime.serialize_without_importing_tensorflow()


def _real(item: Declared):
    return getattr(importlib.import_module(item.module), item.name)  # importing it registers the real one


def _stand_in(item: Declared):
    if item.function:
        def function(*args, **kwargs):
            return _real(item)(*args, **kwargs)

        function.__name__ = function.__qualname__ = item.name
        function.__doc__ = f"Calls {item.path} (imported on first use)."
        return function

    def from_config(cls, config, custom_objects=None):
        return _real(item).from_config(config)

    def get_config(self):  # Keras registers only classes that have one; a stand-in is never instantiated
        return {}

    return type(item.name, (), {"from_config": classmethod(from_config), "get_config": get_config,
                                "__doc__": f"Stands for {item.path} until that module is imported.",
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
