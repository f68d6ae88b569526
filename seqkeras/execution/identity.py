"""What makes a finished run's record the result of this run: a record is reused only when all of it matches.

The run id already covers the resolved spec (its digest). Besides the spec, a
run's numbers change with the code (its results version: seqkeras.version, bumped
only by a change that alters numbers), the Keras backend and the versions of Keras
and of the backend's package, and with the contents of every file the run reads
(a user's train, test or text file, a packaged corpus: each task lists its own).
All of these go into the record as its `identity`; a record whose identity
differs from the run's is run again, and the sweep says why (naming the file, or
the results version's change). The code version (`versions.seqkeras` of the
record: the package version plus a hash of its source) is kept for provenance,
not compared: a comment or a refactoring keeps every recorded run.

Light on purpose: the parent of `--jobs N` checks identities before its workers
have imported anything, so nothing here imports Keras or a backend.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqkeras.version import RESULTS_CHANGES, RESULTS_VERSION, __version__
from seqkeras.backends.runtime import BACKEND_PACKAGES, current_backend
from seqkeras.errors import SpecError
from seqkeras.user_files import open_regular_file

if TYPE_CHECKING:
    from seqkeras.spec.runs import RunSpec

PACKAGE = Path(__file__).resolve().parents[1]  # the whole package's source goes into the code version
RESULTS = "results"  # the identity's key of the results version
# Records made before results versions existed name the code version instead; they are results version 1.
BEFORE_RESULTS_VERSIONS = "1"


@functools.cache
def code_version() -> str:
    """The package version plus a hash of its source: which code made a record (its provenance)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:10]}"


@functools.cache
def _installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def run_identity(run: RunSpec) -> dict[str, str]:
    """Everything besides the resolved spec that decides a run's numbers."""
    return _identity(run, input_files(run))


def _identity(run: RunSpec, files: dict[str, Path]) -> dict[str, str]:
    backend = current_backend()
    identity = {
        RESULTS: str(RESULTS_VERSION),
        "backend": backend,
        "keras": _installed("keras"),
        backend: _installed(BACKEND_PACKAGES.get(backend, backend)),
    }
    # A run that reads no file keeps exactly the fields above, so its identity is what it was.
    identity.update((key, file_digest(path)) for key, path in files.items())
    return identity


def input_files(run: RunSpec) -> dict[str, Path]:
    """Every file the run reads, by its key in the spec ("task.test_path"): what its task, model (or probe) lists.

    Each component that reads files says which in its Params' `input_files()`
    (tasks.base.named_files), so a new file-valued key is declared where it is read.
    """
    files: dict[str, Path] = {}
    for section, component in (("task", run.task), ("model", run.model), ("probe", run.probe)):
        listed = getattr(component.params, "input_files", None) if component else None
        if listed is not None:
            files.update((f"{section}.{key}", Path(path)) for key, path in listed().items())
    return files


# Digests are streamed, so no memory bound is needed here; each reader applies its own size limit.
DIGEST_LIMIT = 1 << 62


def file_digest(path: Path) -> str:
    """sha256 of a data file's contents (cached while its size and time stamps stay the same).

    "unreadable" for a file that is missing, not a regular file or cannot be
    opened: opened like any user's file (user_files), so a FIFO cannot block the sweep.
    """
    try:
        status = path.stat()
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return "unreadable"
    return _digest(str(path.resolve()), status.st_size, status.st_mtime_ns, status.st_ctime_ns)


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int, ctime_ns: int) -> str:
    digest = hashlib.sha256()
    try:
        with open_regular_file(path, limit=DIGEST_LIMIT) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (SpecError, OSError):
        return "unreadable"
    return f"sha256:{digest.hexdigest()[:16]} ({size:,} bytes)"


def identity_changes(recorded: dict[str, Any], run: RunSpec) -> list[str]:
    """What differs between a record's identity and this run's: "backend: tensorflow → torch", or
    for a file the run reads, "task.test_path file (data/test.csv changed)"."""
    before = recorded.get("identity")
    if not isinstance(before, dict):
        return ["the record predates run identities"]
    files = input_files(run)
    changes = []
    for key, value in _identity(run, files).items():
        old = before.get(key)
        if key == RESULTS and old is None and "seqkeras" in before:
            old = BEFORE_RESULTS_VERSIONS
        if old == value:
            continue
        if key == RESULTS:
            why = RESULTS_CHANGES.get(RESULTS_VERSION, "")
            changes.append(f"results version {'none' if old is None else old} → {value}" + (f" ({why})" if why else ""))
        elif key in files:  # name the file: a digest says nothing to the reader
            how = ("cannot be read" if value == "unreadable"
                   else "has no digest in the record" if old is None else "changed")
            changes.append(f"{key} file ({files[key]} {how})")
        else:
            changes.append(f"{key}: {'none' if old is None else old} → {value}")
    return changes


def reused_under() -> str:
    """What reused records were made with, for the line that says they are reused."""
    backend = current_backend()
    return (f"seqkeras {__version__} (results version {RESULTS_VERSION}), "
            f"{backend} {_installed(BACKEND_PACKAGES.get(backend, backend))}")
