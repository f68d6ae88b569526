"""The package's shape: no import cycle, function-level imports only for heavy libraries, a loadable catalog.

Import-time cycles fail loudly, but a cycle through a function-level import
only shows when that function runs, and it tangles the layers all the same:
so the graph here counts every import statement, wherever it is written.
Imports under `if TYPE_CHECKING:` never execute and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seqkeras"

# What a function may defer importing: libraries that take from a few tenths of a second
# (pandas, scipy, seqeval with scikit-learn, sacrebleu) to seconds (TensorFlow, Keras,
# torch) to import, which `seqkeras validate` and a worker's start must not pay for,
# and seqkeras modules that import one of them when they load.
HEAVY = {"tensorflow", "keras", "keras_hub", "torch", "matplotlib", "ray", "jax", "mlflow", "tensorboard",
         "pandas", "scipy", "seqeval", "sacrebleu"}

# What the top level keeps: the entry points (docs/architecture.md); everything else is in a stage's subpackage.
# Entry points, and the foundations every stage may import (errors, user_files, registry, version).
TOP_LEVEL = {"__init__.py", "__main__.py", "cli.py", "errors.py", "user_files.py", "registry.py", "catalog.py",
             "api.py", "version.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(path: Path):
    """(imported module, line, written inside a function) for every executable import statement."""

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    yield from walk(other, in_function)
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, child.lineno, in_function
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = module_name(path).split(".")
                    if path.name != "__init__.py":
                        package = package[:-1]
                    base = ".".join(package[: len(package) - child.level + 1] + ([base] if base else []))
                submodules = [f"{base}.{alias.name}" for alias in child.names if f"{base}.{alias.name}" in MODULES]
                if len(submodules) < len(child.names):  # names defined in `base` itself
                    yield base, child.lineno, in_function
                for submodule in submodules:  # `from seqkeras.x import y` imports the module x.y
                    yield submodule, child.lineno, in_function
            yield from walk(child, inner)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


def internal_graph() -> dict[str, set[str]]:
    graph = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for imported, _, _ in imports_of(path):
            if imported.split(".")[0] == "seqkeras" and imported in MODULES and imported != name:
                graph[name].add(imported)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path of modules, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(internal_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def heavy_when_loaded(module: str, seen: set[str] | None = None) -> bool:
    """Whether importing `module` imports a HEAVY library, through its module-level imports."""
    seen = set() if seen is None else seen
    seen.add(module)
    for imported, _, in_function in imports_of(MODULES[module]):
        if in_function:
            continue
        if imported.split(".")[0] in HEAVY:
            return True
        if imported in MODULES and imported not in seen and heavy_when_loaded(imported, seen):
            return True
    return False


def test_function_level_imports_only_defer_heavy_libraries():
    light = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {imported}"
        for path in MODULES.values()
        for imported, line, in_function in imports_of(path)
        if in_function and imported.split(".")[0] not in HEAVY
        and not (imported in MODULES and heavy_when_loaded(imported))
    ]
    assert light == []


def test_the_top_level_keeps_only_the_entry_points():
    assert {path.name for path in PACKAGE.glob("*.py")} <= TOP_LEVEL


def test_every_subpackage_says_what_it_owns():
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent == PACKAGE:
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "import" in docstring and len(docstring.split()) >= 25, f"{init}: say what it owns and may import"


def _catalog_paths():
    from seqkeras import catalog
    from seqkeras.registry import Registry

    for registry_name, registry in vars(catalog).items():
        if isinstance(registry, Registry):
            for component in registry:
                for role in ("builder", "evaluator", "metric_names"):
                    path = getattr(component, role, None)
                    if path:
                        yield pytest.param(path, id=f"{registry_name}.{component.name}.{role}")


@pytest.mark.parametrize("path", list(_catalog_paths()))
def test_every_catalog_path_loads(path):
    from seqkeras.registry import load_path

    assert callable(load_path(path))
