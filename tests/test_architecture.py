"""The package's shape: stages that import one way, no import cycle, function-level imports only for heavy
libraries, a loadable catalog.

Import-time cycles fail loudly, but a cycle through a function-level import
only shows when that function runs, and it tangles the layers all the same:
so the graph here counts every import statement, wherever it is written.
Imports under `if TYPE_CHECKING:` never execute and are left out.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seqkeras"

# What a function may defer importing: libraries that take from a tenth of a second (tqdm, which
# draws the training bar) or a few tenths (pandas, scipy, seqeval with scikit-learn, sacrebleu)
# to seconds (TensorFlow, Keras, torch) to import, which `seqkeras validate` and a worker's start
# must not pay for, and seqkeras modules that import one of them when they load.
HEAVY = {"tensorflow", "tensorflow_text", "keras", "keras_hub", "torch", "matplotlib", "ray", "jax", "mlflow",
         "tensorboard", "pandas", "scipy", "seqeval", "sacrebleu", "optuna", "tqdm",
         "onnx",  # and the export extra's, which only `export-model --format onnx` needs
         "sentencepiece", "tokenizers"}  # the subword levels' learners, which only their tasks need

# What the top level keeps: the entry points (docs/architecture.md); everything else is in a stage's subpackage.
# Entry points, and the foundations every stage may import (errors, user_files, registry, version).
TOP_LEVEL = {"__init__.py", "__main__.py", "cli.py", "errors.py", "user_files.py", "yaml_reader.py", "registry.py",
             "catalog.py", "api.py", "version.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@functools.cache  # each module's source is parsed once: the checks below walk the import graph many times
def imports_of(path: Path) -> tuple[tuple[str, int, bool], ...]:
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

    return tuple(walk(ast.parse(path.read_text(encoding="utf-8")), False))


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


ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
STAGE_TABLE_HEADING = "## Which stage may import which"


def stage_of(module: str) -> str:
    """`spec/` for any module of seqkeras.spec, `catalog` for a top-level module, `seqkeras` for the package."""
    parts = module.split(".")
    if len(parts) == 1:
        return "seqkeras"
    if (PACKAGE / parts[1]).is_dir():
        return f"{parts[1]}/"
    return parts[1]


def stage_table() -> dict[str, set[str]]:
    """docs/architecture.md's table of stages: each stage → the stages it may import (the one written rule)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert STAGE_TABLE_HEADING in text, f"{ARCHITECTURE} has no section {STAGE_TABLE_HEADING!r}"
    section = text.split(STAGE_TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        allowed = {name.strip().strip("`") for name in cells[1].split(",")} - {"—", ""}
        table[cells[0].strip("`")] = allowed
    return table


def stage_edges() -> dict[tuple[str, str], list[str]]:
    """(importing stage, imported stage) → the import statements that make that edge, as file:line."""
    edges: dict[tuple[str, str], list[str]] = {}
    for name, path in MODULES.items():
        for imported, line, _ in imports_of(path):
            if imported in MODULES and stage_of(imported) != stage_of(name):
                where = f"{path.relative_to(PACKAGE.parent)}:{line} imports {imported}"
                edges.setdefault((stage_of(name), stage_of(imported)), []).append(where)
    return edges


def test_the_stage_table_names_every_stage_once_and_has_no_loop():
    table = stage_table()
    assert set(table) == {stage_of(name) for name in MODULES}
    for stage, allowed in table.items():
        assert allowed <= set(table), f"{stage} may import unknown stages: {sorted(allowed - set(table))}"
    cycle = find_cycle(table)
    assert cycle is None, "the stage table has a loop: " + " → ".join(cycle)


def test_every_import_between_stages_is_one_the_table_allows():
    table = stage_table()
    forbidden = [
        f"{importer} → {imported}: {where}"
        for (importer, imported), places in sorted(stage_edges().items())
        if imported not in table[importer]
        for where in places
    ]
    assert forbidden == []


def test_each_subpackage_states_the_rule_of_the_table():
    """Each stage's __init__ ends its docstring with `May import: …`, the table's row for it (without the `/`)."""
    table = stage_table()
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        stated = docstring.rsplit("May import:", 1)[1] if "May import:" in docstring else None
        assert stated is not None, f"{init}: no 'May import:' line"
        names = {name.strip().strip("`").rstrip(".") for name in stated.replace("\n", " ").split(",")}
        assert names == {stage.rstrip("/") for stage in table[f"{init.parent.name}/"]}, init


def loads_one_of(libraries: set[str], module: str, seen: set[str] | None = None) -> bool:
    """Whether importing `module` imports one of `libraries` (top-level names), through its module-level imports."""
    if module.split(".")[0] in libraries:
        return True
    seen = set() if seen is None else seen
    seen.add(module)
    for imported, _, in_function in imports_of(MODULES[module]):
        if in_function:
            continue
        if imported.split(".")[0] in libraries:
            return True
        if imported in MODULES and imported not in seen and loads_one_of(libraries, imported, seen):
            return True
    return False


def heavy_when_loaded(module: str) -> bool:
    """Whether importing `module` imports a HEAVY library, through its module-level imports."""
    return loads_one_of(HEAVY, module)


def test_function_level_imports_only_defer_heavy_libraries():
    light = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {imported}"
        for path in MODULES.values()
        for imported, line, in_function in imports_of(path)
        if in_function and imported.split(".")[0] not in HEAVY
        and not (imported in MODULES and heavy_when_loaded(imported))
    ]
    assert light == []


def loaded_at_import(module: str, seen: set[str] | None = None) -> set[str]:
    """Every seqkeras module and outside library (by its top name) that importing `module` loads."""
    seen = set() if seen is None else seen
    for imported, _, in_function in imports_of(MODULES[module]):
        if in_function:
            continue
        if imported in MODULES:
            if imported not in seen:
                seen.add(imported)
                loaded_at_import(imported, seen)
        else:
            seen.add(imported.split(".")[0])
    return seen


def test_a_function_level_import_defers_something():
    """Importing inside a function what the module's own top-level imports already load defers nothing."""
    needless = []
    for name, path in MODULES.items():
        at_import = loaded_at_import(name)
        for imported, line, in_function in imports_of(path):
            key = imported if imported in MODULES else imported.split(".")[0]
            if in_function and key in at_import:
                needless.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {imported}")
    assert needless == []


def test_the_top_level_keeps_only_the_entry_points():
    assert {path.name for path in PACKAGE.glob("*.py")} <= TOP_LEVEL


def test_every_subpackage_says_what_it_owns():
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent == PACKAGE:
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "import" in docstring and len(docstring.split()) >= 25, f"{init}: say what it owns and may import"


def catalog_references():
    """(where, reference) for every function the catalog's registries name: builders, evaluators, size
    estimates, abilities functions, probes' metric names and metrics' functions, direct or `Lazy`."""
    from seqkeras import catalog
    from seqkeras.registry import Abilities, NoSizeEstimate, Registry

    for registry_name, registry in vars(catalog).items():
        if isinstance(registry, Registry):
            for component in registry:
                roles = {role: getattr(component, role, None)
                         for role in ("builder", "evaluator", "size", "abilities", "metric_names")}
                roles.update({f"computes.{problem}": function
                              for problem, function in getattr(component, "computes", {}).items()})
                for role, reference in roles.items():
                    if reference is not None and not isinstance(reference, (Abilities, NoSizeEstimate)):
                        yield f"{registry_name}.{component.name}.{role}", reference


@pytest.mark.parametrize("reference", [pytest.param(reference, id=where) for where, reference in catalog_references()])
def test_every_catalog_reference_loads(reference):
    from seqkeras.registry import loaded

    assert callable(loaded(reference))
