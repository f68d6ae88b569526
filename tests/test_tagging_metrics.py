"""Tests of seqkeras.evaluation.tagging."""

from __future__ import annotations

import numpy as np
import pytest

from seqkeras.evaluation.tagging import entity_scores, ids_to_tags, invalid_transitions, tagging_scores, token_accuracy

TRUE = [
    ["B-PER", "I-PER", "O", "B-LOC"],
    ["O", "B-ORG", "I-ORG", "I-ORG", "O", "B-PER"],
]
PRED = [
    ["B-PER", "I-PER", "O", "I-LOC"],
    ["O", "B-ORG", "I-ORG", "O", "B-MISC", "B-LOC"],
]


def test_entity_scores_by_hand():
    # True entities (4): PER[0:2], LOC[3] in sentence 1; ORG[1:4], PER[5] in sentence 2.
    # Predicted entities (5): PER[0:2] (correct); LOC[3] from "O I-LOC", which the
    # default (conlleval) mode reads as an entity starting at 3 (correct);
    # ORG[1:3] (wrong end); MISC[4] (spurious); LOC[5] (wrong type).
    # precision = 2/5 = 0.4, recall = 2/4 = 0.5,
    # F1 = 2 * 0.4 * 0.5 / (0.4 + 0.5) = 0.4 / 0.9 = 0.4444...
    scores = entity_scores(TRUE, PRED)
    assert scores["entity_precision"] == pytest.approx(0.4)
    assert scores["entity_recall"] == pytest.approx(0.5)
    assert scores["entity_f1"] == pytest.approx(4 / 9)


def test_entity_scores_edge_cases():
    assert entity_scores(TRUE, TRUE)["entity_f1"] == 1.0
    no_entities = [["O"] * len(seq) for seq in TRUE]
    assert entity_scores(TRUE, no_entities) == {
        "entity_precision": 0.0,
        "entity_recall": 0.0,
        "entity_f1": 0.0,
    }
    with pytest.raises(ValueError):
        entity_scores(TRUE, PRED[:1])
    with pytest.raises(ValueError):
        entity_scores(TRUE, [PRED[0], PRED[1][:-1]])


def test_token_accuracy_by_hand():
    # Sentence 1: 3 of 4 tags equal (B-LOC vs I-LOC differs); sentence 2: 3 of 6
    # (positions 3, 4, 5 differ). (3 + 3) / (4 + 6) = 0.6.
    assert token_accuracy(TRUE, PRED) == pytest.approx(0.6)
    assert token_accuracy([], []) == 0.0


def test_invalid_transitions():
    assert invalid_transitions([["I-PER"]]) == 1  # I- at the sentence start
    assert invalid_transitions([["B-PER", "I-PER", "I-PER"]]) == 0
    assert invalid_transitions([["B-PER", "I-LOC"]]) == 1  # after B- of another type
    assert invalid_transitions([["B-LOC", "I-LOC", "I-PER"]]) == 1  # after I- of another type
    assert invalid_transitions([["O", "I-PER", "I-PER"]]) == 1  # only the first I- after O
    assert invalid_transitions([["B-PER", "O", "B-LOC"], []]) == 0
    assert invalid_transitions(PRED) == 1
    # 1 + 0 + 1 + 1 + 1 summed over a list of sentences.
    assert invalid_transitions(
        [["I-PER"], ["B-PER", "I-PER"], ["B-PER", "I-LOC"], ["B-LOC", "I-LOC", "I-PER"], ["O", "I-PER"]]
    ) == 4


def test_ids_to_tags_drops_masked_positions():
    vocabulary = ["O", "B-PER", "I-PER", "B-LOC"]
    ids = np.array([[1, 2, 0, 0], [3, 0, 0, 0], [0, 0, 1, 0]])
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    assert ids_to_tags(ids, mask, vocabulary) == [["B-PER", "I-PER", "O"], ["B-LOC"], []]
    assert ids_to_tags(ids, mask, dict(enumerate(vocabulary)))[0] == ["B-PER", "I-PER", "O"]
    with pytest.raises(ValueError):
        ids_to_tags(ids, mask[:, :2], vocabulary)


def test_tagging_scores_combines_everything():
    scores = tagging_scores(TRUE, PRED)
    assert scores["entity_f1"] == pytest.approx(4 / 9)
    assert scores["token_accuracy"] == pytest.approx(0.6)
    assert scores["invalid_transitions"] == 1
