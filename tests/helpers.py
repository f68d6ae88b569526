"""Helpers the test modules share: the command line in-process, a layer's config round trip, and a fake
terminal."""

from __future__ import annotations

import io
import json
from typing import NamedTuple


class CliRun(NamedTuple):
    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        """stdout then stderr, for checks that do not care which of the two a message went to."""
        return self.out + self.err


def process_backend() -> str:
    """The Keras backend of this test process (tests/conftest.py chose it): what the tests' own runs train on."""
    import keras

    return keras.backend.backend()


def run_cli(capsys, *args) -> CliRun:
    """`seqkeras ARGS...` in this process (paths and numbers as text): its exit code, stdout and stderr.

    Unpacks as `code, out, err = run_cli(capsys, "validate", path)`.
    """
    from seqkeras.cli import main

    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return CliRun(code, captured.out, captured.err)


def run_cli_within(deadline_s: float, capsys, *args) -> CliRun:
    """run_cli in a thread that must finish within `deadline_s`: a command that would block (a FIFO opened
    for reading) fails the test instead of hanging the suite. Re-raises what the command raised."""
    import threading

    outcome = {}

    def target():
        try:
            outcome["run"] = run_cli(capsys, *args)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(deadline_s)
    assert not thread.is_alive(), f"seqkeras {' '.join(map(str, args))[:200]} still running after {deadline_s} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["run"]


def assert_config_round_trip(instance, custom_objects=None):
    """get_config → from_config, and serialize → deserialize: both copies of the same class, with the same config.

    Modelled on Keras's own TestCase.run_class_serialization_test
    (keras/src/testing/test_case.py): the config must be plain JSON (a .keras
    file stores it so), the class's from_config must rebuild it, and the
    serialized form (through JSON, as in a file) must deserialize to the same
    class, which is registered. Unlike Keras's, it does not compare dir() of
    the copies: the instances here are often built, their copies not yet.
    Returns (from_config's copy, deserialize's copy) for checks of their own.
    """
    import keras

    cls = type(instance)
    config = instance.get_config()
    json.dumps(config)  # plain JSON
    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(instance)))
    with keras.saving.custom_object_scope(custom_objects or {}):
        clone = cls.from_config(config)
        restored = keras.saving.deserialize_keras_object(serialized)
    for copy, how in [(clone, "from_config"), (restored, "deserialize_keras_object")]:
        assert type(copy) is cls, f"{how} gave a {type(copy).__name__}, not a {cls.__name__}"
        assert copy.get_config() == config, f"{how}: {copy.get_config()} != {config}"
    return clone, restored


DIAGNOSED_SPEC = """
    version: 1
    name: {name}
    task: {{name: delayed_recall, lag: {lag}, n_train: {n_train}, n_test: 40}}
    model: {{kind: classifier, cell: {cell}, units: 4, embedding_dim: 4}}
    train: {{epochs: 1, batch_size: 16, verbose: 0}}
    {evaluate}
    table: {{rows: seed, value: accuracy}}
"""


def run_with_and_without_gradient_flow(write_spec, capsys, out, *, cell: str, lag: int, n_train: int, args=()):
    """The same tiny run, once plain and once with `evaluate.diagnostics: [gradient_flow]`: their two run folders."""
    specs = [
        write_spec(DIAGNOSED_SPEC.format(name=name, evaluate=evaluate, cell=cell, lag=lag, n_train=n_train),
                   name=f"{name}.yaml")
        for name, evaluate in (("plain", ""), ("diagnosed", "evaluate: {diagnostics: [gradient_flow]}"))
    ]
    code, output, _ = run_cli(capsys, "run", *specs, "--out", out, *args)
    assert code == 0, output
    (plain,) = (out / "plain").glob("seed=0_*")
    (diagnosed,) = (out / "diagnosed").glob("seed=0_*")
    return plain, diagnosed


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal, as stderr is in an interactive shell: what training draws there."""

    def isatty(self) -> bool:
        return True
