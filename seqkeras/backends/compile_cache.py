"""Compiled programs shared by one command's runs on JAX: a private cache folder, made fresh in the results root
and removed when the command ends.

JAX compiles each new model's programs again, though a sweep's seeds (and every run of one setting) build the
same ones: the train step (twice, the epoch's last batch being smaller), the evaluation's prediction and
decoding, even the initializers' small programs. XLA's persistent compilation cache files a compiled program
under a key made from the program itself (its HLO, the compiler's options and versions), so a later run that
builds the same program reads it instead of compiling it: on a 3-seed encoder-decoder sweep, the second and
third runs trained in 0.84 s instead of 3.70 s each (make bench's compile cache row), with the same numbers.

Private to the command, because a cache entry is machine code that JAX loads and runs: reading one that someone
else wrote would run their code, and a results folder may come from someone else. So the folder is made by
`tempfile.mkdtemp` (a new random name, readable by this user only), only this command's processes read it, and it
is removed at the end, even after an error or Ctrl-C: nothing is kept between commands, and nothing is written
outside the results root. Nor may anyone else swap the folder for theirs while the command runs: the results root
is resolved once (a link in it re-pointed mid-run changes nothing), the cache is made in the resolved folder and
handed to the workers as that absolute path, and each process checks it again before it compiles (`still_ours`);
it is made only
where no other user can rename or replace an entry of the results root or of a folder above it (`only_ours`:
each is this user's or the system's, and writable by no other user unless sticky, as /tmp is); a results root
that others may write to (a shared folder, a umask of 002) gets no cache. A command killed outright may leave
the folder behind (`.seqkeras-compile-cache-*`, never read again; safe to delete).

Left alone: a user who configured JAX's own cache (`$JAX_COMPILATION_CACHE_DIR`, or `jax_compilation_cache_dir`
in the process) keeps theirs; `$SEQKERAS_COMPILE_CACHE=off` turns the command's cache off. Other backends have no
such cache: TensorFlow traces each `tf.function` again, and torch's runs compile nothing.

Imports no backend: the command's parent process makes the folder, the process that trains (`use`) imports JAX.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

VARIABLE = "SEQKERAS_COMPILE_CACHE"
OFF = "off"
PREFIX = ".seqkeras-compile-cache-"
JAX_OWN_VARIABLE = "JAX_COMPILATION_CACHE_DIR"


@contextlib.contextmanager
def for_command(root: Path, backend: str, executor: str = "local") -> Iterator[Path | None]:
    """The command's cache folder inside `root` (made if missing) while the block runs, removed after it; None
    where there is none: another backend than JAX, Ray's executor (its tasks may run on other machines), the
    user's own JAX cache, $SEQKERAS_COMPILE_CACHE=off, or a root that cannot be written (the runs then compile as
    they would without; their own writes will say why)."""
    folder = None
    if backend == "jax" and executor == "local" and not _turned_off() and not os.environ.get(JAX_OWN_VARIABLE):
        try:
            root.mkdir(parents=True, exist_ok=True)
            real = root.resolve()  # resolved once: a link in `root` re-pointed later cannot move the cache
            if only_ours(real):
                folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=real))  # absolute: the same for every worker
        except OSError:
            folder = None
    try:
        yield folder
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def only_ours(root: Path) -> bool:
    """Whether no other user can rename or replace an entry of `root` or of a folder above it, as OpenSSH asks of
    the folders above a key: each is this user's or the system's (uid 0), and neither its group nor others may
    write to it, unless it is sticky (then only an entry's owner may move it). Where there are no such owners
    (Windows), True."""
    if not hasattr(os, "getuid"):
        return True
    me = os.getuid()
    folder = root.resolve()
    for each in (folder, *folder.parents):
        info = each.stat()
        if info.st_uid not in (me, 0):
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return False
    return True


def still_ours(folder: Path) -> bool:
    """Checked again by the process that compiles into `folder` (a worker may start long after the command made
    it): an absolute path with no link in it, a real folder of this user's that no one else may write to, below
    folders `only_ours` accepts. Else a warning, and the process compiles without a cache."""
    problem = ""
    try:
        info = os.lstat(folder)
        if not folder.is_absolute() or Path(os.path.realpath(folder)) != folder:
            problem = "its path holds a link"
        elif not stat.S_ISDIR(info.st_mode):
            problem = "it is not a folder"
        elif hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            problem = "another user owns it or may write to it"
        elif not only_ours(folder.parent):
            problem = "another user may replace a folder above it"
    except OSError as error:
        problem = error.strerror or str(error)
    if problem:
        print(f"warning: the compile cache {folder} is not used ({problem}); this run compiles without it",
              file=sys.stderr)
    return not problem


def _turned_off() -> bool:
    value = os.environ.get(VARIABLE, "").strip().lower()
    if value in ("", "on"):
        return False
    if value != OFF:
        print(f"warning: ${VARIABLE}={os.environ[VARIABLE]!r} is neither 'on' nor 'off'; the cache stays on",
              file=sys.stderr)
        return False
    return True


# JAX's settings of the cache as `use` sets them: every program, however quick to compile (a model's initializers
# and small evaluation programs are many), and eviction on, which makes JAX hold a file lock around each read and
# write, so that two workers never read an entry the other is writing (the limit is far above what a command
# writes: 0.2 MB for a small encoder-decoder's programs).
SETTINGS = {"jax_persistent_cache_min_compile_time_secs": 0.0, "jax_persistent_cache_min_entry_size_bytes": -1,
            "jax_compilation_cache_max_size": 4 * 2**30}
_replaced: dict[str, object] = {}  # the settings `use` replaced in this process, which `stop_using` puts back


def use(folder: Path | None) -> bool:
    """Compile into and read from `folder` in this process, whose backend is JAX (imported); whether it does: not
    when `folder` is None, nor when the process already has a cache folder of its own (a user's notebook)."""
    if folder is None or not still_ours(folder):
        return False
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    if jax.config.jax_compilation_cache_dir:
        return False
    settings = {"jax_compilation_cache_dir": os.fspath(folder), **SETTINGS}
    _replaced.update({name: getattr(jax.config, name) for name in settings})
    compilation_cache.reset_cache()  # JAX opens its cache folder once, at the first compile that looks for it
    for name, value in settings.items():
        jax.config.update(name, value)
    return True


def stop_using() -> None:
    """This process compiles as before `use` again (the command that gave it a cache folder has ended)."""
    if not _replaced:
        return
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    for name, value in _replaced.items():
        jax.config.update(name, value)
    _replaced.clear()
    compilation_cache.reset_cache()
