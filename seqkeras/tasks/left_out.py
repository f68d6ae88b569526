"""Pairs a length limit leaves out: counted per file or part, and refused above a share.

A sentence-pair task leaves out each pair whose source is longer than `max_source_length` or whose target is
longer than `max_target_length` (in tokens, or in pieces at a subword level). A limit chosen on a look at a few
lines may leave out a third of the data, and a model trained and scored on what is left answers another
question than the one asked. So each file (at level word and char, counted when the spec is validated) and each
part (train, validation, test: at a subword level, counted in pieces once they are learnt) is checked: when the
limits leave out more than `max_left_out` of its pairs (5% by default), the run is refused, in one line that
names the limits, how many they leave out, and the values that keep 99% of that file's or part's sources and
targets. What is left out within the share is counted in the run's record (metrics.json's `data`:
`pairs_too_long.<part>` of `pairs_read.<part>`), said on the terminal when the run starts, and in table.md and the
report (reporting.training_notes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import Field

from seqkeras.errors import SpecError

DEFAULT_MAX_LEFT_OUT = 0.05
KEPT_BY_SUGGESTION = 0.99  # the share of each side the suggested limits keep
LIMITS = ("max_source_length", "max_target_length")
# The record's counts, by file or part (results.left_out reads them for the terminal, table.md and the report).
TOO_LONG, READ = "pairs_too_long.", "pairs_read."


def max_left_out_field():
    return Field(DEFAULT_MAX_LEFT_OUT, ge=0, le=1,
                 description="The largest share of a file's (or, at a subword level, a part's) pairs that "
                             "max_source_length and max_target_length may leave out; above it the run is refused, "
                             "naming the limits that keep 99% of them.")


def too_long(params, source: Sequence[str], target: Sequence[str]) -> bool:
    """Over max_source_length or max_target_length (a task without them, de_en, limits its words before)."""
    longest_source, longest_target = (getattr(params, key, None) for key in LIMITS)
    return (longest_source is not None and len(source) > longest_source) or \
        (longest_target is not None and len(target) > longest_target)


def covering(lengths: Sequence[int]) -> int:
    """The smallest limit that keeps KEPT_BY_SUGGESTION of these lengths."""
    return int(np.quantile(np.asarray(lengths), KEPT_BY_SUGGESTION, method="higher"))


def check_share(params, what: str, source_lengths: Sequence[int], target_lengths: Sequence[int], left_out: int,
                unit: str) -> None:
    """Refuse limits that leave out more than `params.max_left_out` of `what`'s pairs (their sources' and targets'
    lengths in `unit`), naming the values that keep 99% of each side."""
    read = len(source_lengths)
    allowed = getattr(params, "max_left_out", DEFAULT_MAX_LEFT_OUT)
    if not read or left_out <= allowed * read:
        return
    set_limits = [key for key in LIMITS if getattr(params, key, None) is not None]
    said = " and ".join(f"{key} {getattr(params, key)}" for key in set_limits)
    keeping = {key: covering(lengths) for key, lengths in zip(LIMITS, (source_lengths, target_lengths))
               if key in set_limits}
    suggested = {key: value for key, value in keeping.items() if value > getattr(params, key)}
    if suggested:
        sides = " and ".join("the sources" if key == LIMITS[0] else "the targets" for key in suggested)
        remedy = (" and ".join(f"{key} {value}" for key, value in suggested.items())
                  + f" keep{'s' if len(suggested) == 1 else ''} {KEPT_BY_SUGGESTION:.0%} of {sides}")
    else:  # each limit already keeps 99% of its side: the share allowed is below what two sides' tails leave
        remedy = "each limit already keeps 99% of its side"
    raise SpecError(f"{what}: {said} ({unit}) leave out {left_out:,} of its {read:,} pairs ({left_out / read:.1%}), "
                    f"more than max_left_out ({allowed:g}) allows: {remedy}; or raise max_left_out to train on what "
                    "these limits leave", path=f"task.{next(iter(suggested), set_limits[0])}")
