"""The catalogs name their functions directly, `Lazy` only where importing the module would load a backend.

`seqkeras validate` and `seqkeras list` import the catalog, so a directly named function's module is imported
at CLI start: it must not load Keras (tests/test_sweeps.py checks those commands end to end). A run sent to a
worker process (--jobs, Ray) is pickled with its components, and so with the functions they name.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from seqkeras import catalog
from seqkeras.registry import Lazy, Registry, loaded
from tests.conftest import REPO
from tests.test_architecture import catalog_references, loads_one_of

BACKENDS = {"keras", "keras_hub", "tensorflow", "tensorflow_text", "torch", "jax"}


def loads_a_backend(module: str) -> bool:
    """Whether importing `module` imports Keras, TensorFlow, torch or JAX, through its module-level imports."""
    return loads_one_of(BACKENDS, module)


def test_importing_the_catalog_loads_no_backend():
    code = ("import sys, seqkeras.catalog; "
            f"print(sorted({{name.split('.')[0] for name in sys.modules}} & set({sorted(BACKENDS)!r})))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


LAZY = [(where, reference) for where, reference in catalog_references() if isinstance(reference, Lazy)]


def test_the_catalog_has_lazy_references_and_direct_ones():
    references = list(catalog_references())
    assert LAZY and len(LAZY) < len(references)


@pytest.mark.parametrize("reference", [pytest.param(reference, id=where) for where, reference in LAZY])
def test_a_reference_is_lazy_only_where_its_module_loads_a_backend(reference):
    assert loads_a_backend(reference.module), f"{reference}: import it directly, its module loads no backend"


@pytest.mark.parametrize("reference", [pytest.param(reference, id=where) for where, reference in catalog_references()
                                       if not isinstance(reference, Lazy)])
def test_a_direct_reference_is_its_modules_function(reference):
    # Pickled by its qualified name: a closure or a lambda could not go to a worker process.
    assert getattr(sys.modules[reference.__module__], reference.__qualname__) is reference


def test_every_entry_goes_to_a_worker_process_and_back_unchanged():
    for registry in (value for value in vars(catalog).values() if isinstance(value, Registry)):
        for component in registry:
            assert pickle.loads(pickle.dumps(component)) == component, component.name


def test_a_lazy_reference_imports_its_function_when_used():
    reference = Lazy("seqkeras.errors", "shown")
    from seqkeras.errors import shown

    assert loaded(reference) is shown and reference("x") == shown("x")
    assert str(reference) == "seqkeras.errors:shown"
    assert loaded(shown) is shown  # a direct reference is itself
