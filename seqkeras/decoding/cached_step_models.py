"""Step a trained language model one token at a time, carrying only what the next token needs.

`PrefixStepModel` carries the prefix and reruns the whole model on it at every
step: O(L) work per token for any model. The two step models here carry what
the model itself keeps between tokens, and run only the new position:

    RecurrentStepModel          the `lm` kind (Embedding → recurrent layers → softmax):
                                each layer's state (h, and c for an LSTM), advanced by
                                the layer's own cell. Its size is the same after 10
                                tokens as after 10,000.
    CachedTransformerStepModel  the `transformer` kind (keras-hub TransformerDecoder
                                blocks): each block's key/value cache, written at the
                                new position through keras-hub's cache API
                                (`self_attention_cache`, `self_attention_cache_update_index`)
                                as keras-hub's own causal LMs decode. Per token: every
                                block's work on one position, plus attention over the
                                cache, which grows with the context.

Both run the trained model's own layers (the same weights, no copies; the step
itself is `step_graphs`, compiled by Keras, on rows padded as `backends.compiled`
pads them on JAX) and give the log-probabilities
`PrefixStepModel` gives on the same model, to float rounding
(tests/test_cached_step_models.py: every step of 20 tokens, with beams
reordered).

Each is declared by its model kind (`ModelKind.step_model` in the catalog: `lm`
and `transformer`), and built as every kind's step model is,
`step_model(model, start_id, end_id, context=..., window=..., scores=...)`; a
model of another structure is refused (ValueError), never decoded another way.
A kind that declares none is decoded through `PrefixStepModel`.
`cached_step_model(model, ...)` is for a Keras model whose kind is not at hand
(a notebook, the tests): it recognizes the structures that
`models.recurrent.build_lm` and `models.transformer.build_lm` build and returns
None for any other model.

States are NumPy arrays, so `select` is a row gather and `state_size` their
nbytes. Padding (id 0) fed as a token behaves as in the model's own call: a
recurrent layer masked by its Embedding keeps its state at that step; attention
never attends to a padding position. Keras is imported only when a step model
is built, like everywhere in `seqkeras.decoding`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from seqkeras.backends.compiled import predicted_on_padded_rows
from seqkeras.decoding.step_model import State, log_softmax_rows

# The model's output at the new position [B, V] → the scores that are log-softmaxed.
Scores = Callable[[np.ndarray], np.ndarray]

# The fewest free positions a full key/value cache grows by.
GROWTH_MINIMUM = 16


def as_scores(outputs: np.ndarray) -> np.ndarray:
    """The model's outputs taken as they are: what PrefixStepModel log-softmaxes."""
    return outputs


def state_size(state: State) -> int:
    """Bytes held by the arrays of a step model's state (the sum of their nbytes)."""
    if state is None:
        return 0
    if isinstance(state, dict):
        return sum(state_size(value) for value in state.values())
    if isinstance(state, (list, tuple)):
        return sum(state_size(value) for value in state)
    return int(np.asarray(state).nbytes)


class CarriedStateStepModel:
    """What both step models share: the StepModel attributes, a context fed before the first step, the scores.

    context: tokens fed (to every row) before the first step, as a prompt's tokens before its last one.
    scores: turns the model's output at the new position [B, V] (the suite's LMs end in a
        softmax: probabilities) into the scores whose log-softmax is returned; by default the
        output itself, as PrefixStepModel treats a model's output.
    A subclass defines `start`, `select` and `advance(tokens, state) -> (outputs [B, V], state)`.
    """

    def __init__(self, model, graph, start_id: int, end_id: int, context: Sequence[int], scores: Scores | None):
        self.model = model
        self.graph = graph
        self.start_id = int(start_id)
        self.end_id = int(end_id)
        self.vocab_size = int(model.output_shape[-1])
        self.context = np.asarray(context, dtype="int32").reshape(-1)
        self.scores = scores or as_scores

    def step(self, tokens: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        outputs, state = self.advance(np.asarray(tokens, dtype="int32").reshape(-1), state)
        return log_softmax_rows(self.scores(np.asarray(outputs))), state


def graph_of(model, kind: str):
    from seqkeras.decoding import step_graphs

    graph = step_graphs.step_graph(model)
    expected = {"recurrent": step_graphs.RecurrentStepGraph, "transformer": step_graphs.TransformerStepGraph}[kind]
    if not isinstance(graph, expected):
        what = {"recurrent": "an Embedding → recurrent layers → Dense chain",
                "transformer": "a causal Transformer LM of TransformerDecoder blocks"}[kind]
        raise ValueError(f"model {getattr(model, 'name', model)!r} is not {what}")
    return graph


class RecurrentStepModel(CarriedStateStepModel):
    """StepModel of an `lm`-kind model: the state is each recurrent layer's state, [[h] or [h, c], ...] per layer.

    Each step embeds the new tokens and runs every layer's own cell once (the
    layer's `cell`, whose weights the layer trains): the work and the state are
    the same at every position. No window: the state summarizes everything fed so
    far, whatever its length (a prefix model's window only bounds its rerun).
    """

    def __init__(self, model, start_id: int, end_id: int, *, context: Sequence[int] = (), window: int | None = None,
                 scores: Scores | None = None):
        # window: the state needs none (taken, as every kind's step model takes it, and not used)
        super().__init__(model, graph_of(model, "recurrent"), start_id, end_id, context, scores)

    @property
    def cells(self) -> list:
        return [layer.cell for layer in self.graph.recurrent_layers]

    def start(self, batch_size: int) -> list[list[np.ndarray]]:
        state = self.graph.initial_states(batch_size)
        for token in self.context:
            _, state = self.advance(np.full(batch_size, token, dtype="int32"), state)
        return state

    def advance(self, tokens: np.ndarray, state: list[list[np.ndarray]]):
        result = predicted_on_padded_rows(self.graph, {"tokens": tokens, "states": state})
        return result["outputs"], [list(states) for states in result["states"]]

    def select(self, state: list[list[np.ndarray]], indices: np.ndarray) -> list[list[np.ndarray]]:
        indices = np.asarray(indices, dtype="int64")
        return [[array[indices] for array in states] for states in state]


class CachedTransformerStepModel(CarriedStateStepModel):
    """StepModel of a `transformer`-kind model: the state is every block's key/value cache.

    State: {"tokens": [B, S] int32, the S tokens seen (the padding mask of the
    cached positions, and the window when the cache is left behind), "caches":
    [B, blocks, 2, C, heads, head_dim]}, whose first S positions hold the keys
    and values of those tokens. The context is encoded in one pass that seeds
    the caches with exactly its S positions (C = S), as keras-hub's CausalLM
    seeds its cache. Each step embeds the new token at position S and lets
    keras-hub's blocks write its key and value at index S and attend over the
    cache (their causal mask hides the free positions). A full cache first
    grows (`grown`), so C stays below twice S plus GROWTH_MINIMUM.

    window (kept as `max_length`): the most positions the model sees at once; at
    most the learned position table (its default), and unlimited without one when
    not given.
    When a token would go past it, the model sees the last max_length tokens from
    position 0, as PromptStepModel's window has it: the model itself reruns on
    that window at every further step (the cached keys' positions would all
    shift) and the state keeps the window only (caches None); past max_length a
    step costs what PrefixStepModel's does.
    """

    def __init__(self, model, start_id: int, end_id: int, *, context: Sequence[int] = (),
                 window: int | None = None, scores: Scores | None = None):
        super().__init__(model, graph_of(model, "transformer"), start_id, end_id, context, scores)
        limits = [n for n in (window, self.graph.position_table) if n is not None]
        self.max_length = min(limits) if limits else None
        if self.max_length is not None and self.max_length < 1:
            raise ValueError(f"window must be at least 1, received {window}")

    def start(self, batch_size: int) -> dict:
        context = np.tile(self.context, (batch_size, 1))
        if self.max_length is not None:
            context = context[:, max(len(self.context) - self.max_length, 0):]
        empty = self.graph.empty_caches(batch_size, context.shape[1])
        if context.shape[1] == 0:
            return {"tokens": context, "caches": empty}
        return {"tokens": context, "caches": self.run(context, context, empty)[1]}

    def run(self, tokens: np.ndarray, history: np.ndarray, caches: np.ndarray):
        """The step graph on tokens [B, T], the last T of `history` (every token up to them); (outputs, caches)."""
        count, seen = tokens.shape[1], history.shape[1] - tokens.shape[1]
        # Token seen + i attends to every position up to its own except padding (the model's
        # decoder_padding_mask); the blocks' causal mask also hides the free positions after it.
        attend = np.zeros((len(tokens), count, caches.shape[3]), dtype=bool)
        attend[:, :, : seen + count] = (history != 0)[:, None, :]
        result = predicted_on_padded_rows(self.graph, {
            "tokens": tokens, "position": np.full(len(tokens), seen, dtype="int32"), "attend": attend, "caches": caches,
        })
        return result["outputs"], result["caches"]

    def advance(self, tokens: np.ndarray, state: dict):
        seen = state["tokens"].shape[1]
        history = np.concatenate([state["tokens"], tokens[:, None]], axis=1)
        if self.max_length is not None and seen + 1 > self.max_length:
            # Past the position table (or the window): PromptStepModel's computation, the last max_length tokens.
            window = history[:, seen + 1 - self.max_length:]
            return np.asarray(predicted_on_padded_rows(self.model, window))[:, -1, :], {"tokens": window,
                                                                                       "caches": None}
        caches = state["caches"]
        if seen + 1 > caches.shape[3]:
            caches = self.grown(caches)
        outputs, caches = self.run(tokens[:, None], history, caches)
        return outputs, {"tokens": history, "caches": caches}

    def grown(self, caches: np.ndarray) -> np.ndarray:
        """The caches with room for more positions: twice as many (at least GROWTH_MINIMUM more), up to max_length.

        Not one position at a time: TensorFlow compiles keras-hub's cache update (an XLA
        dynamic_update_slice) once per shape, so a cache that changed shape at every step
        would recompile at every step. Doubling gives a handful of shapes for any length.
        """
        capacity = caches.shape[3]
        target = max(2 * capacity, capacity + GROWTH_MINIMUM)
        if self.max_length is not None:
            target = min(target, self.max_length)
        room = self.graph.empty_caches(len(caches), target - capacity)
        return np.concatenate([caches, room], axis=3)

    def select(self, state: dict, indices: np.ndarray) -> dict:
        indices = np.asarray(indices, dtype="int64")
        caches = state["caches"]
        return {"tokens": state["tokens"][indices], "caches": None if caches is None else caches[indices]}


def cached_step_model(model, start_id: int, end_id: int, *, context: Sequence[int] = (), window: int | None = None,
                      scores: Scores | None = None) -> RecurrentStepModel | CachedTransformerStepModel | None:
    """The step model carrying `model`'s own state, or None when it has none that is recognized here.

    For a Keras model whose kind is not at hand; the suite asks the model kind (`ModelKind.step_model`).
    window: the most tokens the model may see at once (a prompt's generation window).
    A recurrent state needs none and ignores it; a Transformer's cache keeps at most
    this many positions (and at most its position table).
    """
    if not hasattr(model, "layers"):  # not a Keras model (n-gram counts): no Keras import for it
        return None
    from seqkeras.decoding import step_graphs

    graph = step_graphs.step_graph(model)
    if isinstance(graph, step_graphs.RecurrentStepGraph):
        return RecurrentStepModel(model, start_id, end_id, context=context, scores=scores)
    if isinstance(graph, step_graphs.TransformerStepGraph):
        return CachedTransformerStepModel(model, start_id, end_id, context=context, window=window, scores=scores)
    return None
