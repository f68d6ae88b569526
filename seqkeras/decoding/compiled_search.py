"""Greedy and beam search as one loop of tensor operations, compiled with the model's own step.

`decoders.Decoder.decode` drives any `StepModel` from Python: at every step the
model's log-probabilities come back to NumPy, the decoder ranks them there and
hands the model the rows to keep. That serves every model, but each step pays
a round trip between the backend and NumPy and a dozen small NumPy operations.
Here the whole search (encoding the sources, then every step until each output
has ended or `max_length` is reached) is one function of tensors, written in
`keras.ops` with `ops.while_loop`, for a model whose step is itself a function
of tensors: an encoder-decoder's

    encode(source [B, S]) → state (tensors whose first axis is the row, "carry" among them)
    next_token_log_probs(tokens [B], state) → (log-probabilities [B, V], the new carry)

(`models.seq2seq.Seq2SeqModel` and `models.transformer_seq2seq`), and for a
language model continuing a prompt from the state its step model reached after
the prompt's context (`continue_prompt`): a recurrent LM's layers' state
(`RecurrentLanguageModelSteps`), or a Transformer LM's key/value caches, held as
long as its window so that every prompt gives the same shapes
(`TransformerLanguageModelSteps`; a continuation past the window keeps the step
model, which reruns the model on a sliding window there). The function is
compiled once per model and setting (`backends.compiled.compiled_model_function`):
one XLA program on JAX, one tf.function graph on TensorFlow. Evaluation,
`predict` and generation decode through it there (`searches_compiled`). On torch the same
function runs its operations one by one (under no_grad), and the step-model
decoders, which drop the rows that have ended, are faster: evaluation keeps them.

The searches are the decoders', step for step:

- greedy: keras-hub's GreedySampler picks each row's token, as `GreedyDecoder`
  does; a row that has written the end token writes nothing more.
- beam: `BeamDecoder` with `all_hypotheses=False` (what evaluation and `predict`
  ask for): every live hypothesis is extended by its `width` best tokens, each
  input's candidates are ranked by score, then beam, then token; the best
  `width` are kept, those ending with the end token compete as finished (at the
  last step every kept candidate competes), the rest stay live in rank order;
  the best score log P / ((5 + |y|) / 6) ** alpha wins, the first found on a
  tie; a live hypothesis that can no longer beat its input's best is dropped.
  The beams have a fixed shape [B, width] (a dropped or finished hypothesis's
  slot is empty), so the model runs on B × width rows at every step.

Scores are added up in float64 where the backend computes in float64 (torch,
TensorFlow), exactly as `BeamDecoder` adds them; on JAX, whose default is
32-bit, in float32, so that two candidates within float32 rounding of each other
may be ranked the other way. Each output's log-probability is the float64 sum
of its tokens' log-probabilities, in NumPy, as the decoders compute it. Two
tokens with exactly equal log-probabilities at a hypothesis's cut: the lower token
first, as `BeamDecoder` ranks them (on torch, in whatever order `torch.topk` gives).

tests/test_compiled_search.py checks the outputs against `GreedyDecoder` and
`BeamDecoder` on each attention kind, the Transformer encoder-decoder and a
recurrent LM, on each backend.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seqkeras.backends.compiled import compiled_model_function, padded
from seqkeras.decoding.cached_step_models import CachedTransformerStepModel, RecurrentStepModel
from seqkeras.decoding.decoders import IMPOSSIBLE_LOG_PROB, build_decoder

# The widest beam searched here: candidates are ranked by comparing each input's width² candidates pairwise
# (no sort, so the order is the same on every backend), [inputs, width², width²] numbers a step: 256 inputs at
# width 16 are 16.8M, a few tens of MB. Wider beams go through `BeamDecoder`.
MAX_COMPILED_WIDTH = 16

# The loop keeps every hypothesis's tokens and their log-probabilities for `max_length` steps from the start,
# [inputs, width, max_length] of each (the step-model decoders only as far as the outputs go): at most this many
# token slots, 128 MB of them. A longer search (a max_output_length of thousands) goes through the decoders.
MAX_HISTORY = 1 << 24
# The backends on which evaluation decodes through this loop (`searches_compiled`).
COMPILED_ON = ("jax", "tensorflow")


@dataclass(frozen=True)
class Search:
    """One search's setting: the compiled function is made once per model and setting."""

    width: int  # 0: greedy (keras-hub's GreedySampler); else beam search of this width
    length_penalty: float
    start_id: int
    end_id: int
    max_length: int


def searches_compiled(choice, rows: int, max_length: int) -> bool:
    """Whether `choice` (a spec's decoder choice) is searched here for `rows` inputs and outputs of up to
    `max_length` tokens, on this process's backend: a decoder that has a compiled search (greedy, or a beam of at
    most MAX_COMPILED_WIDTH: `Decoder.compiled_search`), on a backend of COMPILED_ON, with at most MAX_HISTORY
    token slots. On torch, where the loop's operations run one by one, the step-model decoders are faster
    (`make bench`'s compiled_decoding: they drop finished rows, the loop computes every row to the end)."""
    import keras

    if keras.backend.backend() not in COMPILED_ON:
        return False
    setting = build_decoder(choice.name, choice).compiled_search()  # None: the decoder searches otherwise
    if setting is None or setting[0] > MAX_COMPILED_WIDTH:
        return False
    width = max(1, setting[0])
    return 1 <= max_length and rows * width * max_length <= MAX_HISTORY


def search(model, sources: np.ndarray, choice, start_id: int, end_id: int,
           max_length: int) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Decode an encoder-decoder's source ids [N, S] with a greedy or beam choice: each output's ids (the end token
    included when it was written), their log-probabilities [N] (float64; -inf for a beam that finished nothing)
    and lengths [N]."""
    if int(max_length) < 1:
        raise ValueError(f"max_length must be at least 1, received {max_length}")
    model.check_decoding_steps(int(max_length))  # a Transformer's caches hold so many positions
    return _searched(model, EncoderDecoderSteps(model), np.asarray(sources, "int32"), choice, start_id, end_id,
                     max_length)


def continues_compiled(step_model, choice, length: int) -> bool:
    """Whether generation continues a prompt of `step_model` with `choice` by `length` tokens here
    (`searches_compiled`): a `RecurrentStepModel`, or a `CachedTransformerStepModel` whose window holds the prompt's
    context and the continuation (past it, the step model reruns the model on a sliding window instead)."""
    if isinstance(step_model, CachedTransformerStepModel):
        window = step_model.max_length
        if window is None or min(len(step_model.context), window) + length > window:
            return False
    elif not isinstance(step_model, RecurrentStepModel):
        return False
    return searches_compiled(choice, 1, length)


def continue_prompt(step_model, choice, length: int, floor: float) -> tuple[list[int], float]:
    """Continue a language model's prompt (`continues_compiled`; one row: its context fed, its start token next) by
    `length` tokens with a greedy or beam choice, as `decoder.decode(step_model, 1, length)` does: (the tokens,
    their log-probability). The steps read the model's softmax as generation does (`floor`: see
    LanguageModelSteps)."""
    graph = step_model.graph
    state = step_model.start(1)
    if isinstance(step_model, RecurrentStepModel):
        steps: LanguageModelSteps = RecurrentLanguageModelSteps(graph, step_model.vocab_size, floor)
        inputs = state
    else:
        steps = TransformerLanguageModelSteps(graph, step_model.vocab_size, floor)
        inputs = TransformerLanguageModelSteps.inputs(graph, state, step_model.max_length)
    tokens, log_probs, _ = _searched(graph, steps, inputs, choice, step_model.start_id, step_model.end_id, length)
    return tokens[0], float(log_probs[0])


def _searched(owner, steps, inputs, choice, start_id: int, end_id: int, max_length: int):
    """`steps` searched from `inputs` (arrays whose first axis is the row, nested), compiled once per `owner` (the
    Keras model whose variables the steps read) and setting; what `search` returns."""
    import keras
    from keras import ops

    width, penalty = build_decoder(choice.name, choice).compiled_search()
    setting = Search(int(width), float(penalty), int(start_id), int(end_id), int(max_length))
    function = compiled_model_function(owner, ("search", type(steps).__name__, setting),
                                       lambda inputs: _search(steps, setting, inputs))
    rows = len(keras.tree.flatten(inputs)[0])
    inputs = keras.tree.map_structure(lambda array: ops.convert_to_tensor(padded(np.asarray(array))), inputs)
    tokens, step_log_probs, lengths = (ops.convert_to_numpy(tensor)[:rows] for tensor in function(inputs))
    outputs = [row[:length].astype("int64").tolist() for row, length in zip(tokens, lengths)]
    log_probs = np.array([row[:length].astype("float64").sum() for row, length in zip(step_log_probs, lengths)])
    if setting.width:
        log_probs[lengths == 0] = -np.inf  # no finished hypothesis: BeamDecoder's empty output
    return outputs, log_probs, lengths.astype("int64")


class EncoderDecoderSteps:
    """An encoder-decoder's steps: its state is what `encode` gives for the sources."""

    def __init__(self, model):
        self.model = model
        self.vocab_size = int(model.config["target_vocabulary_size"])

    def start(self, sources) -> dict:
        return self.model.encode(sources)

    def next_token_log_probs(self, tokens, state: dict):
        return self.model.next_token_log_probs(tokens, state)


class LanguageModelSteps:
    """A language model's steps: a step's log-probabilities are those generation's step models give, the log of the
    model's softmax with padding (id 0) at `floor` and nothing below it (`evaluation.generation.log_probabilities`),
    log-softmaxed. The state starts after the prompt's context (the step model's own `start`)."""

    def __init__(self, graph, vocab_size: int, floor: float):
        self.graph = graph
        self.vocab_size = int(vocab_size)
        self.floor = float(floor)

    def start(self, carry) -> dict:
        return {"carry": carry}

    def log_probs(self, probabilities):
        from keras import ops

        # The log in float64 where the backend computes it, as the NumPy path takes it (float32 on JAX).
        log_probs = ops.maximum(ops.log(ops.cast(probabilities, score_dtype())), self.floor)
        log_probs = ops.where(ops.arange(self.vocab_size) == 0, self.floor, log_probs)
        return ops.log_softmax(ops.cast(log_probs, "float32"), axis=-1)


class RecurrentLanguageModelSteps(LanguageModelSteps):
    """A recurrent LM's steps (`step_graphs.RecurrentStepGraph`): the carry is each layer's state."""

    def next_token_log_probs(self, tokens, state: dict):
        result = self.graph({"tokens": tokens, "states": state["carry"]})
        return self.log_probs(result["outputs"]), [list(states) for states in result["states"]]


class TransformerLanguageModelSteps(LanguageModelSteps):
    """A Transformer LM's steps (`step_graphs.TransformerStepGraph`): the carry is every block's key/value cache as
    long as the window, the tokens written at its positions and the next position, `seen`. Each step writes the
    new token's key and value at `seen` and attends to the real tokens up to it, as `CachedTransformerStepModel`
    does with a cache that grows: the free positions after it are hidden from attention either way."""

    @staticmethod
    def inputs(graph, state: dict, window: int) -> dict:
        """The carry after a `CachedTransformerStepModel`'s start: its caches and tokens, padded to `window`."""
        tokens, caches = state["tokens"], state["caches"]
        seen = tokens.shape[1]
        room = graph.empty_caches(len(tokens), window - caches.shape[3])
        return {"history": np.pad(tokens, ((0, 0), (0, window - seen))),
                "caches": np.concatenate([caches, room], axis=3), "seen": np.full(len(tokens), seen, "int32")}

    def next_token_log_probs(self, tokens, state: dict):
        from keras import ops

        carry = state["carry"]
        seen = carry["seen"]
        positions = ops.arange(ops.shape(carry["history"])[1], dtype="int32")[None, :]
        history = ops.where(positions == seen[:, None], tokens[:, None], carry["history"])
        attend = ops.logical_and(ops.not_equal(history, 0), positions <= seen[:, None])
        result = self.graph({"tokens": tokens[:, None], "position": seen, "attend": ops.expand_dims(attend, 1),
                             "caches": carry["caches"]})
        return self.log_probs(result["outputs"]), {"history": history, "caches": result["caches"], "seen": seen + 1}


def _search(steps, setting: Search, inputs):
    import keras
    from keras import ops

    state = steps.start(inputs)
    rows = ops.shape(keras.tree.flatten(inputs)[0])[0]
    if setting.width == 0:
        return _greedy(steps, setting, state, rows)
    return _beam(steps, setting, state, rows)


def _greedy(steps, setting: Search, state: dict, rows):
    """Tokens [B, T], their log-probabilities [B, T] and each row's length [B]."""
    import keras_hub
    from keras import ops

    sampler = keras_hub.samplers.GreedySampler()
    length = setting.max_length
    positions = ops.arange(length, dtype="int32")

    def going_on(step, tokens, carry, alive, written, log_probs, lengths):
        return ops.logical_and(step < length, ops.any(alive))

    def one_step(step, tokens, carry, alive, written, log_probs, lengths):
        step_log_probs, carry = steps.next_token_log_probs(tokens, {**state, "carry": carry})
        chosen = ops.cast(sampler.get_next_token(sampler.compute_probabilities(step_log_probs)), "int32")
        here = ops.logical_and(ops.expand_dims(ops.equal(positions, step), 0), ops.expand_dims(alive, 1))
        written = ops.where(here, ops.expand_dims(chosen, 1), written)
        chosen_log_prob = ops.take_along_axis(step_log_probs, ops.expand_dims(chosen, 1), axis=1)
        log_probs = ops.where(here, ops.cast(chosen_log_prob, "float32"), log_probs)
        lengths = lengths + ops.cast(alive, "int32")
        alive = ops.logical_and(alive, ops.not_equal(chosen, setting.end_id))
        return step + 1, chosen, carry, alive, written, log_probs, lengths

    start = (ops.convert_to_tensor(0, "int32"), ops.full((rows,), setting.start_id, dtype="int32"), state["carry"],
             ops.ones((rows,), dtype="bool"), ops.zeros((rows, length), dtype="int32"),
             ops.zeros((rows, length), dtype="float32"), ops.zeros((rows,), dtype="int32"))
    _, _, _, _, written, log_probs, lengths = ops.while_loop(going_on, one_step, start)
    return written, log_probs, lengths


def score_dtype() -> str:
    """float64 where the backend computes it by default (BeamDecoder's arithmetic); float32 on JAX."""
    import keras

    return "float32" if keras.backend.backend() == "jax" else "float64"


def _beam(model_steps, setting: Search, state: dict, inputs):
    """The best hypothesis of each input: tokens [B, T], their log-probabilities [B, T], its length [B] (0: none)."""
    import keras
    from keras import ops

    width, steps, end = setting.width, setting.max_length, setting.end_id
    vocab = model_steps.vocab_size
    slots = min(width, vocab)  # the candidates of one hypothesis (decoders._best_extensions)
    candidates = width * slots
    dtype = score_dtype()
    positions = ops.arange(steps, dtype="int32")
    ranks = ops.arange(width, dtype="int32")
    negative_infinity = ops.convert_to_tensor(-np.inf, dtype)
    # Each input's hypotheses are `width` consecutive rows of the model's state.
    state = keras.tree.map_structure(lambda tensor: ops.repeat(tensor, width, axis=0), state)
    first_row = ops.expand_dims(ops.arange(inputs, dtype="int32") * width, 1)  # [B, 1]
    candidate_beam = ops.repeat(ops.arange(width, dtype="int32"), slots)  # [candidates]
    longest_penalty = _penalty(steps, setting.length_penalty)

    def going_on(step, *loop):
        return ops.logical_and(step < steps, ops.any(loop[2]))

    def one_step(step, tokens, carry, live, beam_log_prob, history, history_log_probs, best_score, best_tokens,
                 best_log_probs, best_length, prune):
        step_log_probs, carry = model_steps.next_token_log_probs(tokens, {**state, "carry": carry})
        step_log_probs = ops.reshape(ops.cast(step_log_probs, "float32"), (inputs, width, vocab))
        # NaN and underflowing log-probabilities are impossible tokens (-inf), as in BeamDecoder.
        step_log_probs = ops.where(step_log_probs >= IMPOSSIBLE_LOG_PROB, step_log_probs, -np.inf)
        top_log_probs, top_tokens = _top_k(step_log_probs, slots)  # [B, W, slots]
        possible = ops.logical_and(ops.expand_dims(live, 2), top_log_probs > -np.inf)
        score = ops.where(possible, ops.expand_dims(beam_log_prob, 2) + ops.cast(top_log_probs, dtype),
                          negative_infinity)
        score = ops.reshape(score, (inputs, candidates))
        token = ops.reshape(ops.cast(top_tokens, "int32"), (inputs, candidates))
        token_log_prob = ops.reshape(top_log_probs, (inputs, candidates))
        # The rank of each candidate: how many come before it (score, then beam, then token).
        a_score, b_score = ops.expand_dims(score, 2), ops.expand_dims(score, 1)
        a_beam, b_beam = candidate_beam[:, None], candidate_beam[None, :]
        a_token, b_token = ops.expand_dims(token, 2), ops.expand_dims(token, 1)
        after = ops.logical_or(a_beam < b_beam, ops.logical_and(a_beam == b_beam, a_token < b_token))
        before = ops.logical_or(a_score > b_score, ops.logical_and(a_score == b_score, after))
        rank = ops.sum(ops.cast(before, "int32"), axis=1)  # [B, candidates], a permutation of 0..candidates-1
        order = _holding(rank, ranks)  # [B, W]: the candidates ranked 0..W-1
        kept_score = ops.take_along_axis(score, order, axis=1)
        kept_token = ops.take_along_axis(token, order, axis=1)
        kept_log_prob = ops.take_along_axis(token_log_prob, order, axis=1)
        kept_beam = ops.take(candidate_beam, order)
        kept = kept_score > negative_infinity
        ends = ops.logical_and(kept, kept_token == end)

        # The finished (every kept one at the last step) compete: the best of this step, the first on a tie,
        # replaces the input's best only when it scores higher (the best found earlier wins a tie).
        competing = ops.where(step == steps - 1, kept, ends)
        length = step + 1
        finished_score = ops.where(competing, kept_score / _penalty(length, setting.length_penalty),
                                   negative_infinity)
        winner = ops.argmax(finished_score, axis=1)  # [B]
        winner_score = ops.max(finished_score, axis=1)
        better = winner_score > best_score
        winner_beam = ops.take_along_axis(kept_beam, ops.expand_dims(winner, 1), axis=1)  # [B, 1]
        winner_tokens, winner_log_probs = _extended(
            history, history_log_probs, winner_beam, ops.take_along_axis(kept_token, ops.expand_dims(winner, 1), 1),
            ops.take_along_axis(kept_log_prob, ops.expand_dims(winner, 1), 1), positions, step)
        best_tokens = ops.where(ops.expand_dims(better, 1), winner_tokens[:, 0], best_tokens)
        best_log_probs = ops.where(ops.expand_dims(better, 1), winner_log_probs[:, 0], best_log_probs)
        best_length = ops.where(better, length, best_length)
        best_score = ops.where(better, winner_score, best_score)

        # The rest go on, in rank order, unless they can no longer beat their input's best (their log-probability
        # only falls, their penalty is at most max_length's). That needs log-probabilities <= 0: a model whose
        # step breaks it is searched in full from then on, as BeamDecoder does.
        going = ops.logical_and(kept, ops.logical_not(ends))
        prune = ops.logical_and(prune, ops.logical_not(ops.any(ops.logical_and(live, top_log_probs[:, :, 0] > 0))))
        hopeful = kept_score / longest_penalty > ops.expand_dims(best_score, 1)
        going = ops.logical_and(going, ops.logical_or(ops.logical_not(prune), hopeful))
        slot = ops.where(going, ops.cumsum(ops.cast(going, "int32"), axis=1) - 1, -1)  # -1: not going on
        source_rank = _holding(slot, ranks)  # [B, W]: the kept candidate each slot takes
        live = ranks[None, :] < ops.sum(ops.cast(going, "int32"), axis=1, keepdims=True)
        beam = ops.take_along_axis(kept_beam, source_rank, axis=1)
        new_token = ops.take_along_axis(kept_token, source_rank, axis=1)
        beam_log_prob = ops.where(live, ops.take_along_axis(kept_score, source_rank, axis=1), negative_infinity)
        history, history_log_probs = _extended(history, history_log_probs, beam, new_token,
                                               ops.take_along_axis(kept_log_prob, source_rank, axis=1),
                                               positions, step)
        carry = keras.tree.map_structure(
            lambda tensor: ops.take(tensor, ops.reshape(first_row + beam, (-1,)), axis=0), carry)
        return (step + 1, ops.reshape(new_token, (-1,)), carry, live, beam_log_prob, history, history_log_probs,
                best_score, best_tokens, best_log_probs, best_length, prune)

    start = (
        ops.convert_to_tensor(0, "int32"),
        ops.full((inputs * width,), setting.start_id, dtype="int32"),
        state["carry"],
        ops.tile(ranks[None, :] == 0, (inputs, 1)),  # one live hypothesis per input: the empty one
        ops.zeros((inputs, width), dtype=dtype),
        ops.zeros((inputs, width, steps), dtype="int32"),
        ops.zeros((inputs, width, steps), dtype="float32"),
        ops.full((inputs,), -np.inf, dtype=dtype),
        ops.zeros((inputs, steps), dtype="int32"),
        ops.zeros((inputs, steps), dtype="float32"),
        ops.zeros((inputs,), dtype="int32"),
        ops.convert_to_tensor(True),
    )
    loop = ops.while_loop(going_on, one_step, start)
    return loop[8], loop[9], loop[10]


def _holding(keys, wanted):
    """For each row of keys [B, N] and each value of wanted [W]: the first position holding it, [B, W] (0 where none
    does). A gather index computed without a sort, so the same on every backend."""
    from keras import ops

    return ops.argmax(ops.cast(ops.expand_dims(keys, 1) == wanted[None, :, None], "int32"), axis=-1)


def _top_k(x, k: int):
    """The `k` largest values of x's last axis and their indices, largest first.

    On JAX, inside the search's while loop, XLA lowers `top_k` to a full stable sort of the last axis (180 ms a
    step for 1,280 rows of 1,004 tokens on 2 cores, against 7 ms for the rest of the step): there, k passes, each
    taking the maximum and the first position holding it (the lower token, as `BeamDecoder` ranks equal ones)."""
    import keras
    from keras import ops

    if keras.backend.backend() != "jax":
        return ops.top_k(x, k)
    width = ops.shape(x)[-1]
    positions = ops.arange(width, dtype="int32")
    values, indices = [], []
    for _ in range(k):
        # The maximum, then the first position holding it: two plain reductions (XLA's argmax, a reduction of
        # pairs, is 3 ms here, slower than both).
        value = ops.max(x, axis=-1, keepdims=True)
        best = ops.min(ops.where(x == value, positions, width), axis=-1, keepdims=True)
        values.append(value[..., 0])
        indices.append(best[..., 0])
        x = ops.where(positions == best, -np.inf, x)
    return ops.stack(values, axis=-1), ops.stack(indices, axis=-1)


def _extended(history, history_log_probs, beam, token, token_log_prob, positions, step):
    """The hypotheses [B, K, T] continuing beams `beam` [B, K] of `history` [B, W, T] with `token` [B, K] at
    `step`, and their tokens' log-probabilities likewise."""
    from keras import ops

    index = ops.expand_dims(beam, 2)
    here = ops.reshape(ops.equal(positions, step), (1, 1, -1))
    tokens = ops.where(here, ops.expand_dims(token, 2), ops.take_along_axis(history, index, axis=1))
    log_probs = ops.where(here, ops.expand_dims(token_log_prob, 2),
                          ops.take_along_axis(history_log_probs, index, axis=1))
    return tokens, log_probs


def _penalty(length, alpha: float):
    """decoders.length_penalty in the score's dtype, for a length that may be a tensor."""
    from keras import ops

    return ((5.0 + ops.cast(length, score_dtype())) / 6.0) ** alpha
