"""A text task's data on torch: words, vocabulary and ids without TensorFlow (tasks.text is plain Python; Keras's
TextVectorization would start TensorFlow in a torch process, seconds of it, and fail where it is not installed).

    KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend/test_text_tasks_torch.py
"""

from __future__ import annotations


def test_a_text_task_builds_its_data_on_torch_without_importing_tensorflow():
    from tests.torch_backend.fresh_process import SENTENCES, fresh_torch_checks

    # In the tier's one fresh torch process (tests/torch_backend/fresh_process.py): the Rotten Tomatoes sentences
    # built at seed 0 (over 10,000 training sentences, over 5,000 words), then whether TensorFlow is imported.
    assert fresh_torch_checks().verdict(SENTENCES) == "tensorflow imported: False"
