"""The command's compilation cache folder (backends.compile_cache): where it is made, when there is none, that it
goes with the command, and how the executors hand it to the processes that train. JAX's side (`use`, the
cache read by a second run) is tests/jax_backend/test_compile_cache_jax.py's."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from seqkeras.backends import compile_cache
from seqkeras.execution import executors
from seqkeras.execution.executors import ProcessExecutor, SerialExecutor, make_executor


@pytest.fixture(autouse=True)
def no_cache_settings(monkeypatch):
    monkeypatch.delenv(compile_cache.VARIABLE, raising=False)
    monkeypatch.delenv(compile_cache.JAX_OWN_VARIABLE, raising=False)


@pytest.fixture
def private_tmp_path(tmp_path):
    """tmp_path, where the command may make its cache: no other user can write above it (compile_cache.only_ours).
    A machine whose temporary folder others may write to gets no cache there, by design: these cases skip."""
    if not compile_cache.only_ours(tmp_path):
        pytest.skip(f"another user may write to a folder above {tmp_path}: the command makes no cache there")
    return tmp_path


def caches_in(root: Path) -> list[Path]:
    return sorted(root.glob(compile_cache.PREFIX + "*"))


def test_a_jax_command_gets_a_fresh_private_folder_in_the_results_root_removed_after_it(private_tmp_path):
    root = private_tmp_path / "results"  # not made yet: the command makes it
    with compile_cache.for_command(root, "jax") as folder:
        assert folder is not None and folder.parent == root and folder.name.startswith(compile_cache.PREFIX)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # this user's only
        assert list(folder.iterdir()) == []  # nothing in it that this command did not write
        (folder / "entry").write_bytes(b"compiled")
        with compile_cache.for_command(root, "jax") as other:
            assert other != folder  # two commands sharing a results root never share a cache
    assert caches_in(root) == [] and root.is_dir()


def test_a_relative_results_root_gives_an_absolute_folder(private_tmp_path, monkeypatch):
    monkeypatch.chdir(private_tmp_path)
    with compile_cache.for_command(Path("results"), "jax") as folder:
        assert folder.is_absolute() and folder.parent == private_tmp_path / "results"
    assert caches_in(private_tmp_path / "results") == []


def test_no_folder_where_another_user_could_swap_it_for_theirs(private_tmp_path):
    shared = private_tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # a folder anyone may write to: they could rename the cache folder and put theirs there
    with compile_cache.for_command(shared / "results", "jax") as folder:
        assert folder is None  # its results root is safe, but a folder above it is not
    with compile_cache.for_command(shared, "jax") as folder:
        assert folder is None
    shared.chmod(0o1777)  # sticky, as /tmp is: only an entry's owner may rename it
    with compile_cache.for_command(shared / "results", "jax") as folder:
        assert folder is not None
    (shared / "results").chmod(0o775)  # writable by its group
    with compile_cache.for_command(shared / "results", "jax") as folder:
        assert folder is None
    assert compile_cache.only_ours(private_tmp_path)


def test_the_folder_is_removed_when_the_command_fails(private_tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with compile_cache.for_command(private_tmp_path, "jax") as folder:
            (folder / "entry").write_bytes(b"compiled")
            raise KeyboardInterrupt
    assert caches_in(private_tmp_path) == []


@pytest.mark.parametrize("backend, executor", [("torch", "local"), ("tensorflow", "local"), ("jax", "ray")])
def test_no_folder_where_nothing_would_read_it(tmp_path, backend, executor):
    with compile_cache.for_command(tmp_path, backend, executor) as folder:
        assert folder is None
    assert list(tmp_path.iterdir()) == []


def test_a_users_own_jax_cache_or_off_means_none(tmp_path, monkeypatch):
    monkeypatch.setenv(compile_cache.JAX_OWN_VARIABLE, str(tmp_path / "mine"))
    with compile_cache.for_command(tmp_path, "jax") as folder:
        assert folder is None
    monkeypatch.delenv(compile_cache.JAX_OWN_VARIABLE)
    for off in ("off", " OFF "):
        monkeypatch.setenv(compile_cache.VARIABLE, off)
        with compile_cache.for_command(tmp_path, "jax") as folder:
            assert folder is None
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_setting_warns_and_keeps_the_cache(private_tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(compile_cache.VARIABLE, "nope")
    with compile_cache.for_command(private_tmp_path, "jax") as folder:
        assert folder is not None
    assert "$SEQKERAS_COMPILE_CACHE='nope' is neither 'on' nor 'off'" in capsys.readouterr().err


def test_a_root_that_cannot_hold_a_folder_means_none(tmp_path):
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("x", encoding="utf-8")
    with compile_cache.for_command(not_a_folder, "jax") as folder:
        assert folder is None
    assert not_a_folder.read_text(encoding="utf-8") == "x"


def test_executors_hand_the_folder_to_the_processes_that_train(tmp_path, monkeypatch):
    serial = make_executor("local", "jax", 4, jobs=1, compile_cache=tmp_path)
    pool = make_executor("local", "jax", 4, jobs=2, compile_cache=tmp_path)
    assert isinstance(serial, SerialExecutor) and serial.compile_cache == tmp_path
    assert isinstance(pool, ProcessExecutor) and pool.compile_cache == tmp_path
    assert make_executor("local", "torch", 4, jobs=2).compile_cache is None


def test_the_serial_executor_caches_only_once_a_run_trains_and_stops_at_its_close(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(executors.compile_cache, "use", lambda folder: calls.append(("use", folder)) or True)
    monkeypatch.setattr(executors.compile_cache, "stop_using", lambda: calls.append(("stop",)))
    monkeypatch.setattr(executors, "execute_once", lambda *arguments: {"status": "ok"})
    serial = SerialExecutor(compile_cache=tmp_path)
    serial.start()
    assert calls == []  # nothing trains yet: JAX is not imported for a command that fails before its runs
    jobs = [executors.Job(index, None, tmp_path / str(index)) for index in range(3)]
    assert [record for _, record in serial.map(jobs, force=False)] == [{"status": "ok"}] * 3
    assert calls == [("use", tmp_path)]  # once for every run of the command
    serial.close()
    serial.close()
    assert calls == [("use", tmp_path), ("stop",)]
    calls.clear()
    monkeypatch.setattr(executors.compile_cache, "use", lambda folder: calls.append(("use", folder)) and False)
    mine = SerialExecutor(compile_cache=tmp_path)  # a process with a JAX cache of its own: asked once, not stopped
    list(mine.map(jobs, force=False))
    mine.close()
    assert calls == [("use", tmp_path)]


def test_a_run_off_jax_leaves_no_folder_in_the_results_root(tiny_spec, tmp_path, capsys):
    from tests.helpers import run_cli

    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "run", tiny_spec, "--out", out, "--jobs", "1", "--only", "model.cell=lstm",
                           "--only", "seed=0")
    assert code == 0, err
    assert sorted(path.name for path in out.iterdir()) == ["tiny"]


def test_a_results_root_that_is_a_link_gets_its_cache_in_the_resolved_folder(private_tmp_path):
    real = private_tmp_path / "real"
    real.mkdir()
    link = private_tmp_path / "link"
    link.symlink_to(real)
    with compile_cache.for_command(link, "jax") as folder:
        # Re-pointing the link now moves nothing: the path handed over holds no link.
        link.unlink()
        link.symlink_to(private_tmp_path)
        assert folder is not None and folder.parent == real.resolve() and folder.is_dir()
        assert compile_cache.still_ours(folder)
    assert caches_in(real) == []


def test_the_process_that_compiles_checks_the_folder_again(private_tmp_path, capsys):
    with compile_cache.for_command(private_tmp_path / "results", "jax") as folder:
        through_link = private_tmp_path / "alias"
        through_link.symlink_to(folder.parent)
        assert not compile_cache.still_ours(through_link / folder.name)
        assert "its path holds a link" in capsys.readouterr().err
        folder.chmod(0o777)  # anyone could now write machine code into it
        assert not compile_cache.still_ours(folder)
        assert "another user owns it or may write to it" in capsys.readouterr().err
        assert not compile_cache.use(folder)  # so JAX is never pointed at it
        folder.chmod(0o700)
    file = private_tmp_path / "file"
    file.write_text("")
    assert not compile_cache.still_ours(file)
    assert "not a folder" in capsys.readouterr().err
