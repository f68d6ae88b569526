"""Runs: what one expanded matrix point and seed resolve to, and the run id that names its folder."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from seqkeras.decoding.decoders import GreedyChoice, decoder_label
from seqkeras.registry import Component
from seqkeras.spec.sections import EvaluateSpec, ExperimentSpec
from seqkeras.training.settings import TrainSpec


@dataclass(frozen=True)
class ResolvedComponent:
    component: Component
    params: BaseModel

    @property
    def name(self) -> str:
        return self.component.name


@dataclass
class RunSpec:
    """One run: a matrix point and a seed, fully validated."""

    experiment: str
    run_id: str
    seed: int
    matrix_values: dict[str, Any]  # dotted key → value, for runs.csv
    resolved: dict[str, Any]  # the whole resolved spec, written as spec.yaml
    task: ResolvedComponent | None = None
    model: ResolvedComponent | None = None
    probe: ResolvedComponent | None = None
    train: TrainSpec | None = None
    metrics: list[str] = field(default_factory=list)
    decoders: list[Any] = field(default_factory=list)  # DecoderChoice objects
    point: dict[str, Any] = field(default_factory=dict)  # matrix axis → value: the point this run is of
    trial: Any = None  # a tuning trial (tuning.pruning.TrialLink): trained on validation data only, not evaluated
    tuned: dict[str, Any] = field(default_factory=dict)  # searched key → the value tuning chose for this point
    # `resolved` as the run id's digest reads it (spec.loader.hashed_spec): the same, but for the metrics of a
    # run that names none, hashed as the defaults were when run ids began.
    hashed: dict[str, Any] = field(default_factory=dict)
    # Why the command runs on its backend (execution.sweep.choose_backend), for the run's record; not its identity.
    backend_choice: str = ""

    @property
    def is_probe(self) -> bool:
        return self.probe is not None

    @property
    def diagnostics(self) -> list[str]:
        """The `evaluate.diagnostics` this run measures (e.g. gradient_flow)."""
        return list((self.resolved.get("evaluate") or {}).get("diagnostics", []))


@dataclass
class Experiment:
    spec: ExperimentSpec
    source: str  # the file it came from, for messages
    runs: list[RunSpec]
    matrix_columns: list[str]  # leaf keys that vary, in order
    # With --only: the matrix's other runs (their finished records still count in tables) and what was left out.
    unselected: list[RunSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The spec's mapping after --set, less matrix, seeds, tables and claims: what each matrix point is set on
    # (spec.loader.configured_run).
    base: dict[str, Any] = field(default_factory=dict)


# A run id names a folder: well under the 255 bytes file systems allow, whatever the matrix.
# The digest of the resolved spec keeps ids apart when the readable part is cut.
MAX_READABLE_ID = 150


def spec_digest(hashed: dict[str, Any]) -> str:
    """The run id's digest of a run's spec as hashed (spec.loader.hashed_spec, the seed included)."""
    return hashlib.sha256(json.dumps(hashed, sort_keys=True, default=str).encode()).hexdigest()[:8]


def make_run_id(point: dict[str, Any], seed: int, digest: str) -> str:
    """Readable and stable: `cell=lstm_lag=50_seed=0_1a2b3c4d`; only [A-Za-z0-9_.+=-], never a path."""
    readable = point_label(point)
    return "_".join(([readable] if readable else []) + [f"seed={seed}", digest])


def point_label(point: dict[str, Any]) -> str:
    """A matrix point as the readable start of its runs' ids: `cell=lstm_lag=50` ("" without a matrix)."""
    parts = []
    for key, value in point.items():
        if isinstance(value, dict):
            parts.extend(f"{_slug(k)}={_slug(v)}" for k, v in value.items())
        else:
            parts.append(f"{_slug(key.split('.')[-1])}={_slug(value)}")
    return "_".join(parts)[:MAX_READABLE_ID].rstrip("_=-.")


def _slug(value: Any) -> str:
    """A value as a file-name piece: no separators, no `..`, at most 40 characters."""
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    text = re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).replace("..", "-").strip("-.")
    return text[:40] or "none"


def decoder_columns(spec: ExperimentSpec) -> list[str]:
    """`decoder` (a label such as 'beam(width=5)') and `decoder.<parameter>` for each decoder given."""
    decoders = spec.evaluate.decoders if spec.evaluate else []
    if not decoders:
        return []
    columns = ["decoder"]
    for choice in decoders:
        columns += [f"decoder.{key}" for key in choice.model_dump() if f"decoder.{key}" not in columns]
    return columns


def own_decoder_labels(spec: ExperimentSpec) -> list[str]:
    """The labels of the decoders a spec's runs evaluate with (greedy when it names none): the rows its tables and
    claims are about, when `seqkeras evaluate` has added rows of other decoders."""
    return _labels(spec.evaluate.decoders if spec.evaluate else [])


def saved_decoder_labels(saved: dict[str, Any]) -> list[str] | None:
    """`own_decoder_labels` of a results folder's experiment.yaml as read (a mapping); None when its evaluate section
    does not read as one (an older or edited file: the tables and claims then read every row)."""
    try:
        evaluate = EvaluateSpec.model_validate(saved.get("evaluate") or {} if isinstance(saved, dict) else None)
    except ValidationError:
        return None
    return _labels(evaluate.decoders)


def _labels(decoders: list[BaseModel]) -> list[str]:
    return [decoder_label(choice) for choice in decoders] or [decoder_label(GreedyChoice())]


def flat_keys(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested spec mapping by dotted key path: {"model": {"units": 32}} → {"model.units": 32}.

    Lists (matrix axes, seeds) and empty mappings are one value each.
    """
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            flat.update(flat_keys(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
