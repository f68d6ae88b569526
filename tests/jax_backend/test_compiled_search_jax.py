"""Greedy and beam search as one compiled loop on JAX (one XLA program, scores added up in float32) give the
decoders' outputs (tests/test_compiled_search.py; fewer decoder settings here, each case compiles its programs)."""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install -r requirements.txt)")

from tests.test_compiled_search import (  # noqa: E402,F401  (collected here: run on JAX)
    RECURRENT,
    check_the_same_outputs,
    test_a_beam_that_finishes_nothing_returns_nothing_as_the_decoder_does,
    test_a_language_model_continues_a_prompt_as_the_decoders_do,
    test_a_transformer_refuses_more_steps_than_its_caches_hold,
    test_evaluation_decodes_through_the_compiled_search_on_jax_and_tensorflow,
    test_outputs_cut_at_max_length_are_the_decoders_too,
)


@pytest.mark.parametrize("choice_name", ["greedy", "beam-6-penalty-1"])
@pytest.mark.parametrize("kind", [*RECURRENT, "transformer"])
def test_the_compiled_search_gives_the_decoders_outputs_on_jax(kind, choice_name):
    check_the_same_outputs(kind, choice_name)
