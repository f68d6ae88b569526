"""What differs between the two sides' experiment.yaml, as dotted keys (`train.epochs: 5 → 10`), for the top of
a comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seqkeras.reporting.saved_spec import read_saved_experiment
from seqkeras.results.folder import print_warning
from seqkeras.spec.runs import flat_keys
from seqkeras.spec.sections import ExperimentSpec


def spec_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two experiment.yaml, as resolved dotted keys: `train.epochs: 5 → 10`.

    Both are read through today's schema first, so that a key a newer seqkeras writes with
    its default (a reference recorded before it existed) is no change.
    """
    flat_a, flat_b = flat_keys(_as_today(a)), flat_keys(_as_today(b))
    changes = []
    for key in [*flat_a, *(k for k in flat_b if k not in flat_a)]:
        if key not in flat_b:
            changes.append(f"{key}: {_spec_value(flat_a[key])} → (absent)")
        elif key not in flat_a:
            changes.append(f"{key}: (absent) → {_spec_value(flat_b[key])}")
        elif flat_a[key] != flat_b[key]:
            changes.append(f"{key}: {_spec_value(flat_a[key])} → {_spec_value(flat_b[key])}")
    return changes


def _as_today(spec: dict[str, Any]) -> dict[str, Any]:
    try:
        return ExperimentSpec.model_validate(spec).model_dump(mode="json", exclude_none=True)
    except ValueError:  # written by another version, or edited: compared as it is
        return spec


def _spec_value(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (list, dict)) else str(value)
    text = " ".join(text.split())  # a multi-line description on one line
    return text if len(text) <= limit else text[:limit - 1] + "…"


def spec_changes_between(a: Path, b: Path) -> list[str] | None:
    """The spec changes between two results folders' experiment.yaml; None when either has none (or a damaged
    one, named in a warning)."""
    spec_a, spec_b = read_saved_experiment(a, warn=print_warning), read_saved_experiment(b, warn=print_warning)
    return spec_changes(spec_a, spec_b) if spec_a and spec_b else None
