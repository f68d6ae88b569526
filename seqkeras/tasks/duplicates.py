"""Exact duplicates in a pool of examples, collapsed before a train/test split, and test examples seen in training.

A text that appears twice in a pool can fall on both sides of a seeded split:
the model is then tested on a sentence it was trained on, and the test score
says more about memory than about generalization. So a pool is collapsed before
it is split (`collapse`), and a separate test file loses the examples whose
input is also in the training file (`drop_seen`).

An example is a pair (input, output): (text, class), (tokens, tags) or (source
tokens, target tokens). Two examples are duplicates when their inputs are
exactly equal (the raw text as read, before any lowercasing or vocabulary).
When the copies of an input disagree on the output, the output most copies
have is kept (once); when no output has a strict majority (one copy says
"fresh", one "rotten"), every copy is dropped: which one is right cannot be
told, and keeping either teaches an arbitrary answer.

What was removed is counted in `notes`, which a task puts in its
`SequenceData.notes` (a run's metrics.json "data", and its data card).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# The counts `collapse` and `drop_seen` give, by key (each a number of examples, or of distinct inputs).
REMOVED = "duplicates_removed"  # examples removed from the pool before the split, for any reason below
DUPLICATED = "duplicated_inputs"  # distinct inputs that appeared more than once in the pool
CONFLICTING = "conflicting_inputs"  # of those, inputs whose copies disagreed on the output
CONFLICTING_DROPPED = "conflicting_inputs_dropped"  # of those, inputs dropped with every copy (no majority)
TEST_SEEN = "test_examples_in_train_removed"  # examples of a separate test file whose input is in training


def _hashable(value: Any) -> Hashable:
    """A text as it is; a token list as a tuple (so it can be a dictionary key)."""
    return tuple(value) if isinstance(value, list) else value


@dataclass
class Split:
    """A train/test split and what was removed before it; unpacks as `train, test` (as a tuple of two did)."""

    train: list
    test: list
    notes: dict[str, int] = field(default_factory=dict)

    def __iter__(self) -> Iterator[list]:
        return iter((self.train, self.test))


def collapse(examples: Sequence) -> tuple[list, dict[str, int]]:
    """Each input once, in the order of its first appearance (a pool without duplicates is returned unchanged, so
    its seeded split is the one it had), with the majority output; and the counts of what was removed."""
    outputs: dict[Hashable, Counter] = {}
    first: dict[Hashable, dict[Hashable, Any]] = {}  # input → output → the first example with both
    for example in examples:
        key, output = _hashable(example[0]), _hashable(example[1])
        outputs.setdefault(key, Counter())[output] += 1
        first.setdefault(key, {}).setdefault(output, example)
    kept: list = []
    duplicated = conflicting = dropped = 0
    for key, counts in outputs.items():
        if sum(counts.values()) > 1:
            duplicated += 1
        if len(counts) == 1:
            kept.append(next(iter(first[key].values())))
            continue
        conflicting += 1
        (top, top_count), (_, second_count) = counts.most_common(2)
        if top_count == second_count:
            dropped += 1
            continue
        kept.append(first[key][top])
    notes = {REMOVED: len(examples) - len(kept), DUPLICATED: duplicated, CONFLICTING: conflicting,
             CONFLICTING_DROPPED: dropped}
    return kept, notes


def drop_seen(train: Sequence, test: Sequence) -> tuple[list, dict[str, int]]:
    """The test examples whose input is not in `train` (a separate test file), and how many were removed."""
    seen = {_hashable(example[0]) for example in train}
    kept = [example for example in test if _hashable(example[0]) not in seen]
    return kept, {TEST_SEEN: len(test) - len(kept)}
