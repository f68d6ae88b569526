"""Scores for BIO sequence tagging, over lists of tag-name sequences.

Every function takes sequences with the padding already removed (one list of
tag names per sentence); `ids_to_tags` turns padded id arrays plus a mask into
that form.

Entity scores come from `seqeval`, the Python port of the CoNLL `conlleval`
script, in its *default* mode, not `mode="strict"`. That is the scoring NER
papers report: an entity is a maximal run that conlleval's chunking rules read
as one chunk, and an ill-formed `I-X` (after `O` or after another type) starts a
new entity instead of being discarded. Strict mode would instead only count
well-formed IOB2 chunks, penalising invalid transitions twice: once here and
once in `invalid_transitions`, which counts them separately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

TagSequences = Sequence[Sequence[str]]


def _check_aligned(true: TagSequences, pred: TagSequences) -> None:
    if len(true) != len(pred):
        raise ValueError(f"{len(true)} true sequences but {len(pred)} predicted ones")
    for index, (t, p) in enumerate(zip(true, pred)):
        if len(t) != len(p):
            raise ValueError(
                f"sequence {index}: {len(t)} true tags but {len(p)} predicted ones"
            )


# What seqeval's default mode reads as a tag of the IOB/IOBES schemes; anything else it warns about
# ("<pad> seems not to be NE tag") and then misreads, e.g. as the start of an entity of type "pad>".
CHUNK_TAGS = ("O", "B", "I", "E", "S")
CHUNK_PREFIXES = ("B-", "I-", "E-", "S-")


def entity_tag(tag: str) -> str:
    """The tag as entity scoring reads it: an IOB/IOBES tag as it is, any other outside an entity (O).

    The padding tag `<pad>` is one of a tagger's outputs, so a model can predict it at a real
    token; such a token belongs to no entity (as in `invalid_transitions`), and seqeval never sees it.
    """
    return tag if tag in CHUNK_TAGS or tag.startswith(CHUNK_PREFIXES) else "O"


def entity_scores(true: TagSequences, pred: TagSequences) -> dict[str, float]:
    """Micro-averaged entity precision, recall and F1 (seqeval default/conlleval mode).

    An entity counts as correct only if its type and both boundaries match.
    With no predicted (or no true) entities the undefined ratio is 0. A tag outside the IOB/IOBES
    schemes (`<pad>` predicted at a real token) counts as O (`entity_tag`).
    """
    from seqeval.metrics import f1_score, precision_score, recall_score

    _check_aligned(true, pred)
    true = [[entity_tag(tag) for tag in seq] for seq in true]
    pred = [[entity_tag(tag) for tag in seq] for seq in pred]
    return {
        "entity_precision": float(precision_score(true, pred, zero_division=0)),
        "entity_recall": float(recall_score(true, pred, zero_division=0)),
        "entity_f1": float(f1_score(true, pred, zero_division=0)),
    }


def token_accuracy(true: TagSequences, pred: TagSequences) -> float:
    """Fraction of tokens whose predicted tag equals the true tag (0.0 for no tokens)."""
    _check_aligned(true, pred)
    total = sum(len(seq) for seq in true)
    if total == 0:
        return 0.0
    correct = sum(t == p for ts, ps in zip(true, pred) for t, p in zip(ts, ps))
    return correct / total


def _inside_type(tag: str) -> str | None:
    return tag[2:] if tag.startswith("I-") else None


def invalid_transitions(pred: TagSequences) -> int:
    """How many `I-X` tags break BIO: at a sentence start, after `O`, or after `B-Y`/`I-Y` with Y != X.

    Any tag that is not `B-X` or `I-X` counts as outside (like `O`).
    """
    count = 0
    for sequence in pred:
        previous = "O"
        for tag in sequence:
            entity_type = _inside_type(tag)
            if entity_type is not None and previous not in (f"B-{entity_type}", f"I-{entity_type}"):
                count += 1
            previous = tag
    return count


def ids_to_tags(
    ids,
    mask,
    vocabulary: Sequence[str] | Mapping[int, str],
) -> list[list[str]]:
    """Padded tag ids [N, T] and a mask [N, T] (True/1 for real tokens) to lists of tag names.

    `vocabulary[i]` is the name of tag id i (a list, or a dict from id to name).
    Positions where the mask is False are dropped, wherever they are.
    """
    ids = np.asarray(ids)
    mask = np.asarray(mask).astype(bool)
    if ids.shape != mask.shape or ids.ndim != 2:
        raise ValueError(f"ids {ids.shape} and mask {mask.shape} must both be [N, T]")
    return [[vocabulary[int(i)] for i in row[keep]] for row, keep in zip(ids, mask)]


def tagging_scores(true: TagSequences, pred: TagSequences) -> dict[str, float | int]:
    """All of the above in one dict: entity P/R/F1, token_accuracy and invalid_transitions (of `pred`)."""
    return {
        **entity_scores(true, pred),
        "token_accuracy": token_accuracy(true, pred),
        "invalid_transitions": invalid_transitions(pred),
    }
