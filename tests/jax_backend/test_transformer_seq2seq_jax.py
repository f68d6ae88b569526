"""The Transformer encoder-decoder on JAX, where its step runs compiled on rows padded to a power of two
(backends.compiled) and keras-hub writes its caches at a traced index: each step gives the teacher-forced
log-probabilities all the same (tests/test_transformer_seq2seq.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

from tests.test_transformer_seq2seq import (  # noqa: E402,F401  (collected here: run on JAX)
    test_each_cached_step_gives_the_teacher_forced_log_probabilities_with_beams_reordered,
)
