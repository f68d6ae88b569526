"""A decoder as a user writes it: each parameter once, and a beam no wider than memory allows."""

from __future__ import annotations

import numpy as np
import pytest

from seqkeras.decoding.decoders import MAX_BEAM_WIDTH, BeamChoice, parse_decoder
from seqkeras.errors import SpecError
from seqkeras.evaluation.seq2seq import DECODE_ROWS, decode_sources


@pytest.mark.parametrize("written, said", [
    ("beam(width=2, width=3)", "width is given twice"),
    ("beam(width=2, name=greedy)", "name is given twice"),
    (f"beam(width={MAX_BEAM_WIDTH + 1})", f"less than or equal to {MAX_BEAM_WIDTH}"),
    ("beam(width=1000000000)", f"less than or equal to {MAX_BEAM_WIDTH}"),
])
def test_a_decoder_gives_each_parameter_once_and_a_beam_a_bounded_width(written, said):
    with pytest.raises(SpecError, match=said):
        parse_decoder(written)
    assert parse_decoder(f"beam(width={MAX_BEAM_WIDTH})").width == MAX_BEAM_WIDTH


class RecordingSeq2Seq:
    """A seq2seq model's decoding face: each source (its first id) picks its own bigram table; it records the
    rows of each step the decoder asks for."""

    def __init__(self, tables: np.ndarray):
        self.tables = tables  # [sources, V, V] log-probabilities
        self.step_rows: list[int] = []

    def step_model(self, sources, start_id, end_id):
        recorded = self.step_rows

        class Step:
            vocab_size = self.tables.shape[-1]

            def __init__(step):
                step.start_id, step.end_id = start_id, end_id

            def start(step, batch_size):
                return np.asarray(sources)[:, 0].copy()

            def step(step, tokens, state):
                recorded.append(len(tokens))
                return self.tables[state, tokens], state

            def select(step, state, indices):
                return state[indices]

        return Step()


def test_a_wide_beam_decodes_fewer_sources_at_a_time_with_the_same_outputs():
    rng = np.random.default_rng(0)
    tables = np.log(rng.dirichlet(np.full(6, 0.7), size=(40, 6)))
    sources = np.arange(40)[:, None]
    width = 300  # 256 sources × 300 hypotheses would be 76,800 rows a step
    model = RecordingSeq2Seq(tables)
    tokens, log_probs, _ = decode_sources(model, sources, 0, 5, BeamChoice(width=width), max_length=4)
    assert max(model.step_rows) <= DECODE_ROWS
    alone = [decode_sources(RecordingSeq2Seq(tables), sources[i : i + 1], 0, 5, BeamChoice(width=width), 4)
             for i in range(len(sources))]
    assert tokens == [output[0][0] for output in alone]
    np.testing.assert_allclose(log_probs, [output[1][0] for output in alone])
