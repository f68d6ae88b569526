"""The data card of a run's data: what a reader needs before setting the run's numbers beside anyone else's.

`describe(data)` reads any task's `SequenceData` (generators' too: it costs a
pass over the arrays) and gives, as plain JSON-able data:

- per split (train, validation when the task has its own, test): the examples,
  their tokens, the length distribution in tokens per example (min, median,
  90th percentile, max), the classes (classification) or tags (tagging) with
  their counts and shares, the share of tokens that are `<unk>`, and the exact
  duplicates inside the split;
- the vocabulary size and the test's out-of-vocabulary rate (test tokens that
  are `<unk>`);
- duplicates across splits: the test (and validation) examples whose input is
  also a training input;
- what the task removed before splitting (its `notes`: tasks.duplicates);
- at a subword level (tasks.subwords), `tokenizers`: for each learnt model and
  side (a classifier's or language model's input; a seq2seq source and target,
  one model for both with a shared vocabulary), its level, its vocabulary, and on
  the test split the words, the pieces they became, the pieces per word and the
  share of pieces that are `<unk>`;
- for a language model of subword pieces (lm_corpus at a subword level),
  `pieces_per_word`: its test units' pieces per word (its notes' `test_pieces` /
  `test_words`), the power that turns perplexity per piece into perplexity per word.

Duplicates are counted on the inputs as the model sees them (token ids, after
lowercasing and punctuation stripping, a rare word as `<unk>`), so two texts
that differ only in case count as one: a leak the model can use. Those removed
before the split were exact duplicates of the raw text. A seq2seq example's
input is its source; a regression example's its feature rows.

The card describes one seed's data: a task's split (and a generator's draw)
depends on the seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seqkeras.problems import problem_named
from seqkeras.tasks.base import UNK, SequenceData

FORMAT = 1
# Counting duplicates holds every input row once in a set; above this many array cells it is skipped (None).
MAX_DUPLICATE_CELLS = 50_000_000


def describe(data: SequenceData) -> dict[str, Any]:
    """The card's numbers for `data` (see the module docstring); JSON-able."""
    splits = [("train", data.x_train, data.y_train)]
    if getattr(data, "has_validation", False):
        splits.append(("validation", data.x_validation, data.y_validation))
    splits.append(("test", data.x_test, data.y_test))
    inputs = {name: _inputs(x) for name, x, _ in splits}
    reads_tokens = problem_named(data.problem).reads_tokens
    unknown = data.vocabulary.index.get(UNK) if reads_tokens else None
    card: dict[str, Any] = {
        "format": FORMAT,
        "problem": data.problem,
        "splits": [_split(name, inputs[name], y, data, unknown) for name, _, y in splits],
        "vocabulary": len(data.vocabulary) if reads_tokens else None,
        "test_oov_rate": _unknown_rate(inputs["test"], unknown),
        "across": {f"{other}/train": _seen_in(inputs["train"], inputs[other]) for other in inputs if other != "train"},
        "removed_before_split": dict(data.notes),
    }
    if "validation" in inputs:
        card["across"]["test/validation"] = _seen_in(inputs["validation"], inputs["test"])
    if data.subwords is not None:
        card["tokenizers"] = [counts.card() for counts in data.subwords.counts]
    if data.notes.get("test_words"):
        card["pieces_per_word"] = round(data.notes["test_pieces"] / data.notes["test_words"], 4)
    return card


def _inputs(x: Any) -> np.ndarray:
    """What an example's input is, one row per example: a seq2seq task's source, else x itself."""
    return np.asarray(x["source"] if isinstance(x, dict) else x)


def _lengths(x: np.ndarray) -> np.ndarray:
    """Tokens per example: the ids that are not padding (0); every step of real-valued features."""
    if x.ndim == 2 and np.issubdtype(x.dtype, np.integer):
        return (x != 0).sum(axis=1)
    return np.full(len(x), x.shape[1] if x.ndim > 1 else 1)


def _split(name: str, x: np.ndarray, y: np.ndarray, data: SequenceData, unknown: int | None) -> dict[str, Any]:
    lengths = _lengths(x)
    part: dict[str, Any] = {
        "name": name,
        "examples": int(len(x)),
        "tokens": int(lengths.sum()),
        "length": None if not len(lengths) else {
            "min": int(lengths.min()), "median": round(float(np.median(lengths)), 2),
            "p90": round(float(np.percentile(lengths, 90)), 2), "max": int(lengths.max()),
        },
        "unknown_rate": _unknown_rate(x, unknown),
        "duplicates": _duplicates(x),
    }
    if problem_named(data.problem).labelled and data.labels is not None:
        part["classes"] = _classes(np.asarray(y), data)
    return part


def _classes(y: np.ndarray, data: SequenceData) -> dict[str, dict[str, float]]:
    """Each class (or tag: over the tokens, padding left out) with its count and share, in label order."""
    problem = problem_named(data.problem)
    ids = problem.label_ids(y)
    counts = np.bincount(ids.astype(np.int64), minlength=len(data.labels))
    total = int(counts.sum()) or 1
    first = problem.first_label  # tag id 0 is padding
    return {data.labels.tokens[i]: {"count": int(counts[i]), "share": round(float(counts[i]) / total, 4)}
            for i in range(first, len(data.labels))}


def _unknown_rate(x: np.ndarray, unknown: int | None) -> float | None:
    """The share of the real (non-padding) tokens that are <unk>; None without a vocabulary."""
    if unknown is None or x.ndim != 2 or not np.issubdtype(x.dtype, np.integer):
        return None
    real = int((x != 0).sum())
    return round(float((x == unknown).sum()) / real, 4) if real else None


def _keys(x: np.ndarray) -> list[bytes] | None:
    """Each row as bytes, padding cut off (splits are padded to different widths); None when too large to hold."""
    if x.size > MAX_DUPLICATE_CELLS:
        return None
    if x.ndim == 2 and np.issubdtype(x.dtype, np.integer):
        lengths = _lengths(x)  # padding (0) only ever follows the tokens
        return [row[:n].tobytes() for row, n in zip(x, lengths)]
    return [row.tobytes() for row in x.reshape(len(x), -1)]


def _duplicates(x: np.ndarray) -> int | None:
    """Examples whose input an earlier example of the same split already has."""
    keys = _keys(x)
    return None if keys is None else len(keys) - len(set(keys))


def _seen_in(reference: np.ndarray, x: np.ndarray) -> int | None:
    """Examples of `x` whose input is also one of `reference`'s."""
    known, keys = _keys(reference), _keys(x)
    if known is None or keys is None:
        return None
    known_set = set(known)
    return sum(key in known_set for key in keys)
