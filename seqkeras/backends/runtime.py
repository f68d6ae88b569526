"""Process set-up before Keras is first imported: backend choice and a quiet TensorFlow.

TensorFlow's C++ layer prints start-up notices (oneDNN, CUDA probing) to file
descriptor 2 before its logging is configured, so no environment variable
silences them in TF 2.21; we point descriptor 2 at /dev/null while TensorFlow
imports and probes devices, then restore it. Python-level errors still surface.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import sys
import typing
from typing import Literal

from seqkeras.backends.torch.memory import reuse_freed_memory
from seqkeras.errors import SpecError

# The backends the suite runs on (a spec's `backend:` and --backend take these, besides auto), each with its package.
Backend = Literal["tensorflow", "jax", "torch"]
BACKEND_PACKAGES: dict[str, str] = {name: name for name in typing.get_args(Backend)}

# TensorFlow's C++ log lines at run time ("E0000 … oneDNN supports DT_BOOL only on platforms with
# AVX-512", "failed call to cuInit") are notices, not errors of the run, and 2 lets ERROR-level ones
# through: 3 keeps them out of every process the suite starts (workers inherit it). A value the
# user sets wins; TensorFlow's Python errors are exceptions and surface whatever the level.
TF_LOG_LEVEL_VARIABLE, QUIET_TF_LOG_LEVEL = "TF_CPP_MIN_LOG_LEVEL", "3"


@contextlib.contextmanager
def quiet_stderr():
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _ImportHook:
    """A meta-path finder: the first `import <name>` of the process, wherever it happens, runs inside
    `context()`; the finder then removes itself.

    Two are installed by `select_backend`:

    - `import tensorflow` with descriptor 2 on /dev/null (`quiet_stderr`): on the other backends
      TensorFlow is imported only if something asks for it, long after `select_backend`, and
      without this printed `I0000 … oneDNN custom operations are on` and the CUDA probe's lines.
    - on torch and JAX, `import keras_hub` with TensorFlow hidden: keras-hub imports all of
      TensorFlow at its own import whenever it is installed (keras_hub/src/utils/tensor_utils.py,
      for tf.data preprocessing and tokenizers the suite never uses), which cost a torch run that
      builds a Transformer or a decoder's sampler 3.5 s. Without it keras-hub takes TensorFlow to be
      absent, as on the GPU machines: the layers and samplers compute with Keras ops either way.
    """

    def __init__(self, name: str, context):
        self.name = name
        self.context = context

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        # The other finders' spec (find_spec also answers Keras's `is it installed?` checks, which import nothing).
        spec = next((spec for finder in sys.meta_path if finder is not self and hasattr(finder, "find_spec")
                     for spec in [finder.find_spec(name, path, target)] if spec is not None), None)
        if spec is not None and spec.loader is not None:
            spec.loader = _HookedLoader(spec.loader, self)
        return spec


class _HookedLoader:
    """The package's own loader, executing it inside its hook's context; afterwards the module names its own loader."""

    def __init__(self, loader, hook: _ImportHook):
        self.loader = loader
        self.hook = hook

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self.loader
        if self.hook in sys.meta_path:  # imported once: the hook's work is done
            sys.meta_path.remove(self.hook)
        with self.hook.context():
            self.loader.exec_module(module)


def install_import_hook(name: str, context) -> None:
    """Install an `_ImportHook` for `name`, unless it is imported already or a hook for it is in place."""
    if name not in sys.modules and not any(isinstance(f, _ImportHook) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook(name, context))


def quiet_tensorflow_import() -> None:
    install_import_hook("tensorflow", quiet_stderr)


def keras_hub_without_tensorflow() -> None:
    install_import_hook("keras_hub", lambda: hidden_from_import(("tensorflow", "tensorflow_text")))


NOTED: set[str] = set()  # notes already said in this process


def note_once(reason: str) -> None:
    """Say `note: reason` the first time this process meets it (a fallback to a slower path, say)."""
    if reason not in NOTED:
        NOTED.add(reason)
        print(f"note: {reason}")


AUTO = "auto"

# What `auto` picks: the first of these that is installed, fastest first as measured on the suite's own
# workload (`make bench`'s busy machine rows: the lag-100 slice of cells_long_range, six recurrent models,
# one worker per core on 2 cores): torch 24.2 s, JAX 43.2 s, TensorFlow 87.0 s. The same rows check, at
# every `make bench`, that the backend auto picks is within 5% of the fastest installed one. torch is
# also the backend with CUDA on the GPU machines (which have no TensorFlow).
AUTO_PREFERENCE = ("torch", "jax", "tensorflow")


def installed_backends() -> list[str]:
    """The backends installed here, in AUTO_PREFERENCE's order (their packages found, not imported)."""
    return [name for name in AUTO_PREFERENCE if importlib.util.find_spec(BACKEND_PACKAGES[name])]


def resolve_backend(name: str | None = None) -> str:
    """The backend `name` means: itself; `auto` → the first installed of AUTO_PREFERENCE;
    None → $KERAS_BACKEND when set, else as auto. Imports nothing.

    Keras reads its backend once, at its import: in a process that has imported Keras
    already, that backend is the only one possible, and asking for another is an error.
    """
    loaded = loaded_keras_backend()
    if name in (None, AUTO) and loaded:
        return loaded
    if name is None:
        name = os.environ.get("KERAS_BACKEND") or AUTO
    if name == AUTO:
        name = next(iter(installed_backends()), "tensorflow")
    if name not in BACKEND_PACKAGES:
        return name  # select_backend names it in its error
    if loaded and name != loaded:
        raise SpecError(f"Keras is already imported in this process with backend {loaded!r}, so it cannot run on "
                        f"{name!r}: choose the backend before importing Keras (KERAS_BACKEND={name})")
    return name


def loaded_keras_backend() -> str | None:
    """The backend of the Keras this process has imported already; None before Keras is imported."""
    keras = sys.modules.get("keras")
    backend = getattr(getattr(keras, "backend", None), "backend", None)
    return backend() if callable(backend) else None


def current_backend() -> str:
    """The backend this process runs or plans runs on, read without importing Keras.

    `select_backend` sets $KERAS_BACKEND in every such process before Keras is imported;
    without it Keras's own default is TensorFlow.
    """
    return os.environ.get("KERAS_BACKEND", "tensorflow")


def running_backend() -> str:
    """The backend Keras computes on in this process, for a run's record (imports Keras if nothing has yet)."""
    import keras

    return keras.backend.backend()


def backend_version() -> dict[str, str]:
    """{the running backend: its package's version}, for a run's record; {} on a Keras backend the suite does
    not run (Keras's numpy or openvino)."""
    import keras

    backend = keras.backend.backend()
    if backend not in BACKEND_PACKAGES:
        return {}
    package = importlib.import_module(BACKEND_PACKAGES[backend])  # imported already: Keras runs on it
    return {backend: str(package.__version__)}  # torch's is a TorchVersion, not a str


def select_backend(name: str | None = None, *, load: bool = True) -> str:
    """Choose the Keras backend (must run before Keras is imported; `resolve_backend` says which)
    and, with `load`, import it and Keras quietly, without the Keras integrations seqkeras never
    uses (`KERAS_EXTRAS`).

    Without `load` nothing heavy is imported: a process that only validates
    specs, reads results or hands runs to worker processes never needs
    TensorFlow, whose import takes seconds (3-5 s on 2 cores), seconds that a
    `--jobs N` parent would spend before its workers start importing their own.
    """
    backend = resolve_backend(name)
    package = BACKEND_PACKAGES.get(backend)
    if package is None:  # a misspelt --backend or $KERAS_BACKEND
        raise SpecError(f"unknown Keras backend {backend!r}. Allowed: {AUTO}, {', '.join(BACKEND_PACKAGES)}.")
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault(TF_LOG_LEVEL_VARIABLE, QUIET_TF_LOG_LEVEL)
    if importlib.util.find_spec(package) is None:
        raise SpecError(f"backend {backend!r} is not installed: .venv/bin/pip install {package}")
    quiet_tensorflow_import()
    if backend != "tensorflow":
        keras_hub_without_tensorflow()
    if not load:
        return backend
    if backend == "torch":
        reuse_freed_memory()
    first_import = "keras" not in sys.modules
    with hidden_from_import(KERAS_EXTRAS), collector_paused():
        if backend == "tensorflow":
            with quiet_stderr():
                import tensorflow as tf

                tf.config.list_physical_devices()  # the CUDA probe prints here
                tf.get_logger().setLevel("ERROR")  # retracing notices: each run builds new models
        import keras  # noqa: F401  (TensorFlow's import has imported it already)
        if _ALL_OURS and first_import:  # before the collector is on again, whose next collection would walk it all
            freeze_what_is_loaded()  # once: a later call would freeze what the runs since left, cycles included
    serialize_without_importing_tensorflow()
    return backend


def serialize_without_importing_tensorflow() -> None:
    """Off the tensorflow backend, Keras's serialization asks about TensorFlow only once it is imported
    (`_TensorFlowIfImported`); Keras must be imported. Called by `select_backend`, and once Keras is imported in
    a process that imported seqkeras (`backends.serializable`): loading a kept model with a Bidirectional layer
    would import TensorFlow into a torch or JAX process otherwise. So would keras-hub, which a kept Transformer
    names (its layers), unless it is imported without TensorFlow (`keras_hub_without_tensorflow`)."""
    import keras
    from keras.src.saving import serialization_lib

    if keras.backend.backend() == "tensorflow":
        return
    keras_hub_without_tensorflow()
    if not isinstance(serialization_lib.tf, _TensorFlowIfImported):
        serialization_lib.tf = _TensorFlowIfImported(serialization_lib.tf)


# Packages Keras imports at its own import only for integrations seqkeras never
# uses, each inside a try/except ImportError: scikit-learn (and SciPy with it)
# for keras.wrappers' estimators, matplotlib for keras.visualization's image
# galleries. Hidden while Keras imports, they cost nothing there: 1.3 s of a
# 4.3 s start on TensorFlow (2 cores), in every process that trains, each
# `--jobs N` worker included. Both stay importable afterwards (seqeval imports
# scikit-learn, the plots matplotlib); only those two Keras integrations stay
# off in the process.
KERAS_EXTRAS = ("sklearn", "matplotlib")
# Not hidden, though Keras imports it only for an integration seqkeras never uses (its Orbax checkpoint
# callback, 0.4 s of a worker's start): importing JAX draws from NumPy's global random state, so a JAX
# imported later (by TensorFlow, say) would change what a run seeded before it draws.


@contextlib.contextmanager
def hidden_from_import(names: tuple[str, ...]):
    """`import name` raises ImportError inside the block, for each of `names` not imported yet."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # the import system's own mark for "cannot be imported"
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


@contextlib.contextmanager
def collector_paused():
    """The garbage collector off inside the block (as it was after it).

    An import makes objects and frees almost none, so the collections it triggers find nothing, yet each walks
    more of a growing heap: importing Keras on torch spent 0.9 s of its 4.2 s collecting (2 cores). Paused, the
    import takes 3.2 s. In a process of the suite's own the import's objects are frozen before the collector is
    on again (`freeze_what_is_loaded`); elsewhere (a notebook) its first collection after walks them once.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_ALL_OURS = False  # whether every object of this process is the suite's (`claim_this_process`)


def claim_this_process() -> None:
    """Say that this process holds no one else's objects (the command line's, a worker's): `select_backend` then
    freezes what importing Keras loaded (`freeze_what_is_loaded`). Never called where the API runs in a caller's
    process (a notebook)."""
    global _ALL_OURS
    _ALL_OURS = True


def freeze_what_is_loaded() -> None:
    """Move every object alive now out of the garbage collector's reach (`gc.freeze`).

    For a process whose objects are all the suite's (`claim_this_process`: a worker, or the command line's own
    process when its runs train there), as its backend is imported (`select_backend`). Keras's `clear_session`,
    at each run's start, collects in full: walking the 400,000 objects of TensorFlow, Keras and the suite took
    it 0.2 s a run in a fresh process (0.29 s in a test worker); frozen, it walks only what was made since
    (0.06 s there). No collection comes first: importing Keras leaves nothing unreachable (none found on any of
    the three backends), and one would walk all those objects for nothing (0.33 s on torch). A frozen object is
    still freed when its last reference goes, but never as part of a cycle: a process holding someone else's
    objects (a notebook's) is not frozen.
    """
    gc.freeze()


def set_random_seed(seed: int) -> None:
    """keras.utils.set_random_seed, without importing TensorFlow on the other backends.

    Keras's own also seeds TensorFlow whenever it is installed (for tf.data
    pipelines), and so imports it: seconds and a few hundred MB in every torch
    or JAX process, which never uses it. Here Keras's function runs as if
    TensorFlow were absent; on the tensorflow backend it runs as it is.
    """
    import keras
    from keras.src.utils import rng_utils

    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(seed)
        return
    tensorflow = rng_utils.tf
    rng_utils.tf = _Absent()
    try:
        keras.utils.set_random_seed(seed)
    finally:
        rng_utils.tf = tensorflow


class _Absent:
    available = False  # what Keras's lazy module says when the package is not installed


class _TensorFlowIfImported:
    """Keras's lazy `tensorflow` module as serialization_lib sees it on the other backends: available only once
    imported.

    `serialize_keras_object` asks `tf.available` (which imports TensorFlow when it is
    installed) to test whether a value is a TensorShape, DType or TypeSpec. Bidirectional
    serializes its layer to copy it, so a torch worker that builds one imported all of
    TensorFlow for that test: 3.2 s of its first run on 2 cores (issue 20). A value can
    be a TensorFlow object only if TensorFlow is imported, so the answer is the same.
    """

    def __init__(self, lazy_module):
        self._lazy_module = lazy_module

    @property
    def available(self) -> bool:
        return "tensorflow" in sys.modules and self._lazy_module.available

    def __getattr__(self, name):
        return getattr(self._lazy_module, name)


