"""Class weights: the per-label weights (balanced, or named), the training sample weights they make, and the specs
that cannot take them."""

from __future__ import annotations

import numpy as np
import pytest

from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment
from seqkeras.tasks.base import CLASSIFICATION, TAGGING, SequenceData, Vocabulary
from seqkeras.training.class_weights import per_class, sample_weights


def data(problem: str, labels: list[str], y: np.ndarray) -> SequenceData:
    return SequenceData(problem, np.zeros((len(y), 3), "int32"), y, np.zeros((1, 3), "int32"), y[:1],
                        Vocabulary(["<pad>", "<unk>", "a"]), Vocabulary(labels))


def test_balanced_weights_give_every_class_the_same_total_weight():
    y = np.array([0, 0, 0, 1, 2, 2])  # counts 3, 1, 2
    classification = data(CLASSIFICATION, ["neg", "pos", "mixed"], y)
    weights = per_class("balanced", classification, y)
    assert weights.tolist() == pytest.approx([6 / 9, 6 / 3, 6 / 6])
    totals = np.bincount(y, weights=sample_weights("balanced", classification, y, None))
    assert totals.tolist() == pytest.approx([2.0, 2.0, 2.0])


def test_tagging_weights_real_tokens_only_and_named_labels_leave_the_others_at_one():
    y = np.array([[1, 1, 2, 0], [1, 3, 0, 0]])  # 0: padding
    mask = (y != 0).astype("float32")
    tagging = data(TAGGING, ["<pad>", "O", "B-PER", "I-PER"], y)
    balanced = per_class("balanced", tagging, y)
    assert balanced[0] == 0 and balanced[1:].tolist() == pytest.approx([5 / 9, 5 / 3, 5 / 3])  # 5 real tags
    named = sample_weights({"B-PER": 5.0}, tagging, y, mask)
    assert named.tolist() == [[1, 1, 5, 0], [1, 1, 0, 0]]
    with pytest.raises(ValueError, match="names 'B-LOC', which is no label of the data .*O, B-PER, I-PER"):
        per_class({"B-LOC": 2.0}, tagging, y)
    assert sample_weights(None, tagging, y, mask) is mask


def spec(task: dict, model: dict, class_weights) -> dict:
    return {"version": 1, "name": "weighted", "task": task, "model": model,
            "train": {"epochs": 1, "class_weights": class_weights}, "seeds": [0]}


def test_specs_that_cannot_weigh_labels_are_refused_naming_the_key():
    lm = spec({"name": "char_lm", "n_train": 64, "n_test": 16}, {"kind": "lm", "units": 4}, "balanced")
    with pytest.raises(SpecError, match="train.class_weights.*language_modeling task has not"):
        build_experiment(lm, source="<dict>", overrides=[])
    crf = spec({"name": "bio_toy", "n_train": 64, "n_test": 16}, {"kind": "tagger", "output": "crf"}, "balanced")
    with pytest.raises(SpecError, match="train.class_weights.*a loss of its own"):
        build_experiment(crf, source="<dict>", overrides=[])
    with pytest.raises(SpecError, match="train.class_weights"):
        build_experiment(spec({"name": "bio_toy"}, {"kind": "tagger"}, {"O": 0}), source="<dict>", overrides=[])
    fine = build_experiment(spec({"name": "bio_toy"}, {"kind": "tagger"}, {"O": 0.5}), source="<dict>", overrides=[])
    assert fine.runs[0].resolved["train"]["class_weights"] == {"O": 0.5}


def test_a_weighted_run_trains_and_a_label_the_data_has_not_fails_it_in_one_line(tmp_path):
    import keras

    import seqkeras

    task = {"name": "delayed_recall", "lag": 2, "n_train": 48, "n_test": 16}
    model = {"kind": "classifier", "cell": "gru", "units": 4, "embedding_dim": 4}
    weighted = spec(task, model, "balanced")
    weighted["matrix"] = {"train.class_weights": ["balanced", {"no-such-label": 2.0}]}
    results = seqkeras.run(weighted, out=tmp_path, backend=keras.backend.backend())
    assert results.runs["status"].tolist() == ["ok", "failed"]
    assert "train.class_weights names 'no-such-label', which is no label of the data" in results.runs["error"].iloc[1]
