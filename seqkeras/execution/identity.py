"""What makes a finished run's record the result of this run: a record is reused only when all of it matches.

The run id already covers the resolved spec (its digest). Besides the spec, a
run's numbers change with the code, the Keras backend and the versions of Keras
and of the backend's package, and, for tasks that read a user's file, with that
file's contents. All of these go into the record as its `identity`; a record
whose identity differs from the run's is run again, and the sweep says why.

Light on purpose: the parent of `--jobs N` checks identities before its workers
have imported anything, so nothing here imports Keras or a backend.
"""

from __future__ import annotations

import functools
import hashlib
import os
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqkeras.version import __version__
from seqkeras.backends.runtime import BACKEND_PACKAGES

if TYPE_CHECKING:
    from seqkeras.spec.runs import RunSpec

PACKAGE = Path(__file__).resolve().parents[1]  # the whole package's source goes into the code version


@functools.cache
def code_version() -> str:
    """The package version plus a hash of its source: any code change means rerun, not reuse."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:10]}"


def current_backend() -> str:
    # select_backend() sets it in every process that runs or plans runs, before Keras is imported.
    return os.environ.get("KERAS_BACKEND", "tensorflow")


@functools.cache
def _installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def run_identity(run: RunSpec) -> dict[str, str]:
    """Everything besides the resolved spec that decides a run's numbers."""
    backend = current_backend()
    identity = {
        "seqkeras": code_version(),
        "backend": backend,
        "keras": _installed("keras"),
        backend: _installed(BACKEND_PACKAGES.get(backend, backend)),
    }
    for section, component in (("task", run.task), ("probe", run.probe)):
        path = getattr(component.params, "path", None) if component else None
        if isinstance(path, str):
            identity[f"{section}.path"] = file_digest(Path(path))
    return identity


def file_digest(path: Path) -> str:
    """sha256 of a data file's contents (cached while its size and time stamp stay the same)."""
    try:
        status = path.stat()
    except OSError:
        return "unreadable"
    return _digest(str(path.resolve()), status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return "unreadable"
    return f"sha256:{digest.hexdigest()[:16]} ({size:,} bytes)"


def identity_changes(recorded: dict[str, Any], run: RunSpec) -> list[str]:
    """What differs between a record's identity and this run's, as 'backend: tensorflow → torch'."""
    before = recorded.get("identity")
    if not isinstance(before, dict):
        return ["the record predates run identities"]
    now = run_identity(run)
    return [f"{key}: {before.get(key, 'none')} → {value}" for key, value in now.items() if before.get(key) != value]


def reused_under() -> str:
    """What reused records were made with, for the line that says they are reused."""
    backend = current_backend()
    return f"seqkeras {code_version()}, {backend} {_installed(BACKEND_PACKAGES.get(backend, backend))}"
