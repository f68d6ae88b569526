"""The command's compilation cache on JAX (backends.compile_cache): a process given the folder compiles into it, a
second model that builds the same program reads it, and the process's own settings come back after.

    KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend/test_compile_cache_jax.py

This tier keeps its own persistent cache (conftest.py sets $JAX_COMPILATION_CACHE_DIR): each test here puts it
aside and back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental.compilation_cache import compilation_cache  # noqa: E402

from seqkeras.backends import compile_cache  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tiers_cache_aside():
    """The tier's own cache folder put aside while the test runs, then back, as JAX opens it (at the next
    compile)."""
    own = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", None)
    compilation_cache.reset_cache()
    yield
    compile_cache.stop_using()
    jax.config.update("jax_compilation_cache_dir", own)
    compilation_cache.reset_cache()


def cache_hits():
    """A list that counts JAX's persistent cache hits while the test runs."""
    hits = []

    def listen(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)

    jax.monitoring.register_event_listener(listen)
    return hits, listen


def a_model_predicts(seed: int) -> np.ndarray:
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((7,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(3)])
    return model.predict(np.ones((4, 7), "float32"), verbose=0)


def test_a_second_model_reads_the_program_the_first_compiled(tiers_cache_aside, tmp_path):
    settings = {name: getattr(jax.config, name) for name in compile_cache.SETTINGS}
    hits, listen = cache_hits()
    try:
        assert compile_cache.use(tmp_path)
        assert jax.config.jax_compilation_cache_dir == os.fspath(tmp_path)
        first = a_model_predicts(0)
        assert any(tmp_path.iterdir())  # the first model's programs, written as they compiled
        before = len(hits)
        second = a_model_predicts(1)  # a new model: Keras traces its predict function again
        assert len(hits) > before
        assert not np.allclose(first, second)  # its own weights, read at each call, not the first model's
    finally:
        jax.monitoring.unregister_event_listener(listen)
    compile_cache.stop_using()
    assert jax.config.jax_compilation_cache_dir is None
    assert {name: getattr(jax.config, name) for name in compile_cache.SETTINGS} == settings


def test_a_process_with_its_own_cache_keeps_it(tiers_cache_aside, tmp_path):
    mine = tmp_path / "mine"
    jax.config.update("jax_compilation_cache_dir", os.fspath(mine))
    assert not compile_cache.use(tmp_path / "the-commands")
    assert jax.config.jax_compilation_cache_dir == os.fspath(mine)
    compile_cache.stop_using()  # nothing to put back: it set nothing
    assert jax.config.jax_compilation_cache_dir == os.fspath(mine)
    assert compile_cache.use(None) is False


SPEC = """
    version: 1
    name: cached
    task: {name: delayed_recall, lag: 3, n_train: 40, n_test: 16}
    model: {kind: classifier, cell: gru, units: 4, embedding_dim: 4}
    train: {epochs: 1, batch_size: 16, verbose: 0}
    seeds: [0, 1]
"""


def command(spec: Path, out: Path, **environment: str) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if not name.startswith("JAX_COMPILATION_CACHE")}
    env.update(JAX_LOG_COMPILES="1", **environment)  # JAX says each cache hit on stderr
    return subprocess.run([sys.executable, "-m", "seqkeras", "run", str(spec), "--out", str(out), "--backend", "jax",
                           "--jobs", "1"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_a_commands_second_seed_reads_the_first_seeds_programs_with_the_same_results(tmp_path):
    spec = tmp_path / "cached.yaml"
    spec.write_text(textwrap.dedent(SPEC), encoding="utf-8")
    cached = command(spec, tmp_path / "cached")
    assert cached.returncode == 0, cached.stderr[-3000:]
    if compile_cache.only_ours(tmp_path):
        assert "Persistent compilation cache hit for 'jit_train_step'" in cached.stderr
    else:  # a temporary folder that other users may write to: the command makes no cache there, by design
        assert "Persistent compilation cache hit" not in cached.stderr
    assert sorted(path.name for path in (tmp_path / "cached").iterdir()) == ["cached"]  # the folder went with it
    uncached = command(spec, tmp_path / "uncached", SEQKERAS_COMPILE_CACHE="off")
    assert uncached.returncode == 0, uncached.stderr[-3000:]
    assert "Persistent compilation cache hit" not in uncached.stderr

    def numbers(out: Path) -> list[str]:
        lines = (out / "cached" / "runs.csv").read_text(encoding="utf-8").splitlines()
        header = lines[0].split(",")
        kept = [i for i, name in enumerate(header) if name not in ("train_seconds",)]
        return [",".join(line.split(",")[i] for i in kept) for line in lines]

    assert numbers(tmp_path / "cached") == numbers(tmp_path / "uncached")
