"""level wordpiece on torch, where keras-hub is loaded without TensorFlow (backends.runtime): the vocabulary is
learnt all the same, is the one TensorFlow's process learns (tests/test_subwords.py checks it there), and a kept
model's preprocessing splits the training texts into the ids the task made."""

from __future__ import annotations

import numpy as np

from seqkeras.kept.preprocessing import Preprocessing
from seqkeras.tasks import files
from tests.test_subwords import TEST, TRAIN, WORDPIECE_VOCABULARY_64, write_csv


def test_wordpiece_learns_the_same_vocabulary_and_ids_on_torch(tmp_path):
    params = files.TextClassificationParams(path=write_csv(tmp_path / "train.csv", TRAIN),
                                            test_path=write_csv(tmp_path / "test.csv", TEST),
                                            level="wordpiece", vocabulary_size=64)
    data = files.build_text_classification(params, seed=0)
    assert data.vocabulary.tokens == WORDPIECE_VOCABULARY_64
    preprocessing = Preprocessing.of_run("text_classification_file", params, data, "classifier", backend="torch")
    ids = preprocessing.encode([text for text, _ in TRAIN]).ids
    np.testing.assert_array_equal(ids, data.x_train[:, : ids.shape[1]])
