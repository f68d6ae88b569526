"""The recurrent cells a model may use, with their textbook parameter counts.

For input width d and u units:
  simple_rnn  u·(d+u) + u            h = tanh(W x + U h + b)
  lstm        4·(u·(d+u) + u)        four gates: input, forget, candidate, output
  gru         3·(u·(d+u) + 2u)       two gates + candidate; Keras's reset_after=True
                                     keeps two bias vectors per gate
"""

from __future__ import annotations

from typing import Literal

from seqkeras.registry import Component, Lazy, Params, Registry


class NoParams(Params):
    """This component takes no parameters."""


CELLS = Registry(
    "cell",
    [
        Component("simple_rnn", "Elman RNN: h = tanh(W x + U h + b); params u(d+u)+u.",
                  NoParams, Lazy("keras.layers", "SimpleRNN")),
        Component("lstm", "Long short-term memory: forget/input/output gates and a cell state; params 4(u(d+u)+u).",
                  NoParams, Lazy("keras.layers", "LSTM")),
        Component("gru", "Gated recurrent unit: update and reset gates, no cell state; params 3(u(d+u)+2u).",
                  NoParams, Lazy("keras.layers", "GRU")),
    ],
)

CellName = Literal["simple_rnn", "lstm", "gru"]
assert set(CellName.__args__) == set(CELLS.names())  # one list of names, checked at import


def textbook_parameter_count(cell: str, input_dim: int, units: int) -> int:
    per_gate = units * (input_dim + units) + units
    if cell == "simple_rnn":
        return per_gate
    if cell == "lstm":
        return 4 * per_gate
    if cell == "gru":
        return 3 * (per_gate + units)
    raise ValueError(cell)
