"""What an experiment's page says of how its runs trained (training.convergence's rules) and on what: the runs still
improving when they ended, the runs early stopping stopped on a score at noise level, and the runs whose length
limits left pairs out of their data (results.left_out). table.md, the report and the terminal say the same lines
(`notes`); each names its runs, so that a reader knows which cells of a table rank how far a run got, or what
part of the data it saw, rather than what its model can do."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from seqkeras.results import left_out
from seqkeras.results.folder import OK, one_row_per_run, still_improving_said
from seqkeras.results.record import read_record

NAMED = 6  # run ids a note lists before it says how many more


def named(run_ids: list[str]) -> str:
    shown = ", ".join(run_ids[:NAMED])
    return shown + (f" and {len(run_ids) - NAMED} more" if len(run_ids) > NAMED else "")


def still_improving_note(runs: pd.DataFrame) -> str:
    """A line when some finished runs were still improving as they ended (runs.csv's still_improving): their tables
    rank how far each got, not what each can do. "" otherwise."""
    if "still_improving" not in runs.columns:
        return ""
    finished = one_row_per_run(runs[runs["status"] == OK])
    improving = finished[still_improving_said(finished) == "true"]
    if improving.empty:
        return ""
    return (f"Still improving when they ended: {len(improving)} of {len(finished)} finished runs (their best epoch "
            "was their last, or their validation loss was still falling; `still_improving` in runs.csv): "
            f"{named(list(improving['run_id'].astype(str)))}. More epochs, or early stopping on val_loss, before "
            "comparing them.")


def finished_records(folder: Path, runs: pd.DataFrame) -> list[tuple[str, dict]]:
    """(run id, record) of each finished run whose metrics.json reads as a record."""
    if "run_id" not in runs.columns:
        return []
    found = []
    for run_id in one_row_per_run(runs[runs["status"] == OK])["run_id"].astype(str):
        record = read_record(folder / run_id / "metrics.json").record
        if isinstance(record, dict):
            found.append((run_id, record))
    return found


def noise_stop_note(records: list[tuple[str, dict]]) -> str:
    """A line when early stopping stopped some finished runs on a score that never rose above its own noise (their
    records' training.stopped_at_noise): the weights they kept are a noise peak's. "" otherwise."""
    stopped = []
    for run_id, record in records:
        training = record.get("training")
        if isinstance(training, dict) and training.get("stopped_at_noise") is True:
            best = training.get("best")
            shown = f"{best:.4g}" if isinstance(best, (int, float)) else "?"
            stopped.append(f"{run_id} ({training.get('monitor')} best {shown} at epoch {training.get('best_epoch')})")
    if not stopped:
        return ""
    return (f"Stopped early at noise level: {len(stopped)} run(s), whose early stopping watched a score that never "
            "rose above its own noise (a BLEU or chrF below 5, or a best within twice its change between two "
            f"evaluations), and kept that noise peak's weights: {named(stopped)}. Watch val_loss, or train longer "
            "before the score means something.")


def left_out_note(records: list[tuple[str, dict]]) -> str:
    """A line when the length limits left pairs out of some finished runs' data (within their task's
    max_left_out): each run, and what it left out of each file or part. "" otherwise."""
    left = [f"{run_id}: {left_out.said(record.get('data'))}" for run_id, record in records
            if left_out.counts(record.get("data"))]
    if not left:
        return ""
    more = f"; and {len(left) - NAMED} more" if len(left) > NAMED else ""
    return (f"Pairs left out as longer than max_source_length or max_target_length: {len(left)} run(s), trained "
            f"and scored without them: {'; '.join(left[:NAMED])}{more}.")


def notes(folder: Path, runs: pd.DataFrame) -> list[str]:
    """Every note of the page, in order, those that apply."""
    records = finished_records(folder, runs)
    return [note for note in (still_improving_note(runs), noise_stop_note(records), left_out_note(records)) if note]
