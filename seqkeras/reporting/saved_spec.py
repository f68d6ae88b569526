"""A results folder's experiment.yaml read back for its tables and claims, saying what this version cannot read
as it was meant: a newer spec format version, or top-level sections it does not know (a newer seqkeras's, or a
hand edit). Read all the same, with a warning naming each: its tables and claims are then read as this version
reads them. (`run`, `validate` and `evaluate` refuse such a spec: they would run it.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from seqkeras.errors import shown
from seqkeras.results.folder import read_saved_spec
from seqkeras.spec.sections import ExperimentSpec


def read_saved_experiment(folder: Path, warn: Callable[[str], None]) -> dict[str, Any]:
    """`results.folder.read_saved_spec`, warning of what this version does not understand in it."""
    spec = read_saved_spec(folder, warn=warn)
    for line in newer_format(spec):
        warn(f"{folder / 'experiment.yaml'}: {line}")
    return spec


def newer_format(spec: dict[str, Any]) -> list[str]:
    """What of a saved experiment.yaml this seqkeras cannot read as it was meant; [] for one of its own."""
    if not spec:
        return []
    lines = []
    known = ExperimentSpec.model_fields["version"].annotation.__args__  # Literal[1]: the versions this one reads
    if spec.get("version") not in known:
        lines.append(f"spec format version {shown(spec.get('version'))}, this seqkeras reads version "
                     f"{', '.join(map(str, known))}: its tables and claims are read as that version's")
    unknown = [str(key) for key in spec if key not in ExperimentSpec.model_fields]
    if unknown:
        lines.append(f"section(s) this seqkeras does not know, ignored: {', '.join(map(shown, unknown))}")
    return lines
