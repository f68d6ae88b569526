"""One kept run evaluated again with more decoders or metrics (`seqkeras evaluate`, execution.reevaluation).

For a run folder that kept its model (`kept.saving`), the run's own test set is
rebuilt from its spec.yaml and seed and the run's evaluator runs again with the
decoders and metrics the run did not have:

- a new decoder adds a row to the run's record (its keys: `decoder`, ...);
- a new metric adds a column to every row (the run's own decoders are run again for it);
- what the record holds is never changed: a row or metric it has keeps its value, and
  the record lists each re-evaluation under `evaluations` (what it added, on which
  backend and code, when);
- the evaluator's files gain the new decoders' rows (outputs.csv, by_length.csv,
  samples.csv: those with a `decoder` column); a file the run did not have is added.

A run that had no decoder key (a spec naming no decoder: greedy) gets the keys of
greedy when rows of other decoders join it. The evaluator writes into a fresh
temporary folder inside the run folder first, and the record is rewritten
atomically, so a run interrupted here keeps what it had.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from seqkeras.decoding.decoders import GreedyChoice, decoder_keys, decoder_label, parse_decoder
from seqkeras.errors import SpecError, shown, unknown_choice
from seqkeras.evaluation.metric_catalog import METRICS, applying_to
from seqkeras.kept.preprocessing import FILE as PREPROCESSING_FILE
from seqkeras.results import files
from seqkeras.results.folder import OK, write_atomic, write_json
from seqkeras.results.record import read_record
from seqkeras.results.removal import remove_tree
from seqkeras.yaml_reader import parse_yaml

RECORD = "metrics.json"
DECODER = "decoder"


@dataclass
class Additions:
    """What a command asks to add: decoder choices (pydantic models of the catalog's decoders) and metric names."""

    decoders: list[Any]
    metrics: list[str]

    def __bool__(self) -> bool:
        return bool(self.decoders or self.metrics)


def additions(decoders: Any, metrics: Any, names: tuple[str, str] = ("--decoders", "--metrics")) -> Additions:
    """What to add, from the command's or the API's lists: each decoder as `predict --decoder` reads it (a name, a
    label, a mapping), each metric one of the catalog's. A SpecError names the option (`names`) and the value."""
    for given, name in zip((decoders, metrics), names):
        if isinstance(given, (str, dict)) or not isinstance(given, (list, tuple)):
            raise SpecError(f"{name} takes a list, not {shown(given)}")
    known = METRICS.names()
    for metric in metrics:
        if not isinstance(metric, str) or metric not in known:
            raise SpecError(f"{names[1]} {shown(metric)}: {unknown_choice('metric', str(metric), known)}")
    wanted = Additions([parse_decoder(decoder, names[0]) for decoder in decoders], list(dict.fromkeys(metrics)))
    if not wanted:
        raise SpecError(f"nothing to add: give {names[0]} and/or {names[1]}")
    return wanted


def reevaluate_run(run_folder: Path, additions: Additions, stamp: dict[str, Any]) -> tuple[str, str]:
    """One run folder: ("added" | "unchanged" | "without_model" | "failed", what); `stamp` (the backend and code
    that evaluate) goes into the record's `evaluations` entry. A SpecError or other error raised is a failure too."""
    record, problem = read_record(run_folder / RECORD)
    if record is None:
        return "failed", f"{run_folder / RECORD}: {problem}"
    if record["status"] != OK:
        return "without_model", "the run failed"
    if not files.present(run_folder, PREPROCESSING_FILE):
        return "without_model", no_model_reason(_saved_spec(run_folder))
    from seqkeras.kept.saving import load_model  # imports Keras, once the command has chosen its backend

    kept = load_model(run_folder)
    plan = evaluation_plan(kept, record, additions)
    if not plan.new_decoders and not plan.new_metrics:
        return "unchanged", plan.why_nothing or "it has every decoder and metric asked for"
    overrides = [f"evaluate.metrics={json.dumps(plan.metrics)}"]
    if plan.decoders:
        decoders = [choice.model_dump(mode="json") for choice in plan.decoders]
        overrides.append(f"evaluate.decoders={json.dumps(decoders)}")
    run = kept.run_spec(overrides)
    scratch = Path(tempfile.mkdtemp(prefix=".evaluate-", dir=run_folder))  # ours alone, inside the results folder
    try:
        rows = kept.evaluate(scratch, run)
        merged = merge_rows(record, rows, plan)
        merge_files(run_folder, scratch)
    finally:
        remove_tree(scratch, inside=run_folder)
    record.update(merged)
    if merged["rows"] is None:
        del record["rows"]
    record.setdefault("evaluations", []).append({
        "added_decoders": plan.new_decoder_labels,
        "added_metrics": plan.new_metrics,
        **stamp,
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    })
    write_json(run_folder / RECORD, record)
    return "added", plan.describe()


def no_model_reason(spec: dict[str, Any]) -> str:
    if "probe" in spec:
        return "a probe, which trains no model"
    if isinstance(spec.get("train"), dict) and spec["train"].get("keep_model") is False:
        return "trained with train.keep_model: false"
    return "trained before models were kept, or its preprocessing.json was removed"


def _saved_spec(run_folder: Path) -> dict[str, Any]:
    try:
        spec = parse_yaml(files.read_text(run_folder, "spec.yaml"), file=str(run_folder / "spec.yaml"))
    except SpecError:
        return {}
    return spec if isinstance(spec, dict) else {}


@dataclass
class Plan:
    """What one run is evaluated with: `decoders` (None: the evaluator's own default) and `metrics`, and which
    of them are new to its record."""

    decoders: list[Any]
    metrics: list[str]
    new_decoders: list[Any]
    new_metrics: list[str]
    implicit_greedy: bool  # the record's one row had no decoder key: it was greedy's
    why_nothing: str = ""

    @property
    def new_decoder_labels(self) -> list[str]:
        return [decoder_label(choice) for choice in self.new_decoders]

    def describe(self) -> str:
        parts = [f"decoder {label}" for label in self.new_decoder_labels]
        parts += [f"metric {name}" for name in self.new_metrics]
        return ", ".join(parts)


def evaluation_plan(kept, record: dict[str, Any], additions: Additions) -> Plan:
    """Which decoders and metrics a kept run is evaluated with, so that it gains exactly `additions`."""
    evaluate = kept.spec.get("evaluate") if isinstance(kept.spec.get("evaluate"), dict) else {}
    recorded_metrics = [name for name in evaluate.get("metrics") or [] if isinstance(name, str)]
    own = [parse_decoder(mapping, f"{kept.folder / 'spec.yaml'}: evaluate.decoders")
           for mapping in evaluate.get("decoders") or []]
    rows = record.get("rows") or []
    implicit_greedy = not rows and not own
    applicable = {metric.name for metric in applying_to(kept.problem)}
    had = [name for name in additions.metrics if name in recorded_metrics
           or all(name in row["metrics"] for row in rows or [{"metrics": record.get("metrics") or {}}])]
    new_metrics = [name for name in additions.metrics if name in applicable and name not in had]
    why = []
    foreign = [name for name in additions.metrics if name not in applicable]
    if foreign:
        why.append(f"metric{'s' if len(foreign) > 1 else ''} {', '.join(foreign)} "
                   f"{'do' if len(foreign) > 1 else 'does'} not apply to {kept.problem}")
    problem = kept.poses
    generates = not problem.continues_prompts or own or evaluate.get("generate") is not None
    new_decoders = []
    if additions.decoders and not problem.decodes:
        why.append(f"decoders do not apply to {kept.problem}")
    elif additions.decoders and not generates:
        why.append("decoders continue prompts, and this run's spec has no evaluate.generate (no prompts recorded)")
    elif additions.decoders:
        recorded = {row["keys"].get(DECODER) for row in rows} | {decoder_label(choice) for choice in own}
        if implicit_greedy and problem.decodes and generates:
            recorded.add(decoder_label(GreedyChoice()))
        new_decoders = [choice for choice in additions.decoders if decoder_label(choice) not in recorded]
    # A new metric is computed for each decoder the record has; a new decoder gets every metric. No decoder
    # named: the evaluator's own (greedy, its row unkeyed as the record's is).
    decoders = ((own or [GreedyChoice()]) if new_metrics else []) + new_decoders if new_decoders else own
    metrics = list(dict.fromkeys(recorded_metrics + new_metrics))
    return Plan(decoders, metrics, new_decoders, new_metrics, implicit_greedy and problem.decodes,
                "; ".join(why))


def merge_rows(record: dict[str, Any], rows: list, plan: Plan) -> dict[str, Any]:
    """The record's `metrics` and `rows` with the evaluation's rows added: a row it has gains the new metrics only,
    a row it lacks is added whole."""
    old = [dict(row) for row in record.get("rows") or []]
    old = old or [{"keys": {}, "metrics": dict(record.get("metrics") or {})}]
    keyed_now = any(row.keys for row in rows)
    if keyed_now and plan.implicit_greedy:  # its one row was greedy's: labelled so the new rows can join it
        old[0]["keys"] = decoder_keys(GreedyChoice())
    for row in rows:
        keys = row.keys if keyed_now else {}
        match = next((existing for existing in old if existing["keys"] == keys), None)
        if match is None:
            old.append({"keys": keys, "metrics": dict(row.metrics)})
        else:
            match["metrics"] = {**match["metrics"],
                                **{name: value for name, value in row.metrics.items() if name not in match["metrics"]}}
    if len(old) == 1 and not old[0]["keys"]:
        return {"metrics": old[0]["metrics"], "rows": None}
    return {"metrics": {}, "rows": old}


def merge_files(run_folder: Path, scratch: Path) -> None:
    """The evaluator's files from `scratch` into the run folder: a file it lacks is moved in; a CSV with a
    `decoder` column gains the rows of decoders it does not list; any other file it has is kept."""
    for path in sorted(scratch.iterdir()):
        name = path.name
        if not files.present(run_folder, name):
            os.replace(path, run_folder / name)
            continue
        if not name.endswith(".csv"):
            continue
        new = pd.read_csv(path)
        try:
            old = pd.read_csv(io.StringIO(files.read_text(run_folder, name)))
        except (SpecError, ValueError, pd.errors.ParserError):
            continue  # someone else's or a damaged file: kept as it is, not overwritten
        if DECODER not in new.columns or DECODER not in old.columns:
            continue
        added = new[~new[DECODER].isin(old[DECODER])]
        if len(added):
            write_atomic(run_folder / name, pd.concat([old, added], ignore_index=True).to_csv(index=False))
