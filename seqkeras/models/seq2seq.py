"""Model kind `seq2seq`: a recurrent encoder-decoder, with or without attention.

The encoder (an embedding and a stack of recurrent layers, optionally
bidirectional) reads the source. Decoder layer i starts from encoder layer i's
final state (both directions concatenated), so the decoder is as wide as the
encoder's outputs. What the decoder sees of the source depends on `attention`:

- none:     only that initial state — the whole source squeezed into one vector
            per layer (the bottleneck of the basic encoder-decoder);
- bahdanau: at each step, additive attention with the previous decoder state
            as the query; the context is fed into the first decoder layer and,
            with the new state, into the output layer (Bahdanau et al., 2014);
- luong:    at each step, the new top decoder state attends (dot or general
            score), and tanh(W [context; state]) feeds the output layer
            (Luong et al., 2015, without input feeding). `luong_layer_norm`
            layer-normalizes W [context; state] before the tanh: on real
            sentences with Adam the unnormalized pre-activations grow past
            the tanh's range in the first epoch and the model learns far more
            slowly (docs/guides/seq2seq.md measures it).

With `decoder_reads: encoder_vector` (attention none) the decoder reads the
encoder's final output at every step instead of the previous token, from a
zero state: Keras's addition_rnn example (Encoder → RepeatVector → Decoder),
whose outputs do not depend on each other, so teacher forcing and free running
compute the same thing.

One function, `decoder_step`, computes a decoder step. Training runs it over
the whole target with teacher forcing (the decoder reads the true previous
token) inside `keras.ops.scan`; decoding calls it one step at a time, with a
state cache: inside one compiled loop for greedy and beam search
(`decoding.compiled_search`), or through `Seq2SeqStepModel`, which the shared
decoders (greedy, beam, sampling) drive. So decoding uses exactly the trained
computation.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from seqkeras.backends import layer_classes
from seqkeras.backends.compiled import compiled_function, compiled_method, pad_rows, padded
from seqkeras.backends.serializable import keras_serializable
from seqkeras.layers.attention import BahdanauAttention, LuongAttention
from seqkeras.layers.one_hot import token_inputs
from seqkeras.models.pretrained_embedding import frozen, start_from_file
from seqkeras.models.seq2seq_graphs import DecoderStepGraph, EncoderGraph
from seqkeras.tasks import word_vectors
from seqkeras.models.seq2seq_params import Seq2SeqParams
from seqkeras.registry import ModelShape
from seqkeras.tasks.base import PAD
from seqkeras.tasks.seq2seq_data import START, Seq2SeqData

CELL_CLASSES = {"simple_rnn": keras.layers.SimpleRNNCell, "lstm": keras.layers.LSTMCell, "gru": keras.layers.GRUCell}
LAYER_CLASSES = {"simple_rnn": keras.layers.SimpleRNN, "lstm": keras.layers.LSTM, "gru": keras.layers.GRU}

# Added to the logits of tokens the decoder must never emit (padding, the start
# token): exp underflows to exactly 0, so no decoder can choose them.
BLOCKED_LOGIT = -1.0e9

# keras.ops.scan's `unroll`: TensorFlow lets this many loop iterations overlap
# (their independent parts, e.g. the backward pass's weight gradients), about
# 30% faster on 2 CPU cores than Keras's default of 1; JAX unrolls this many steps.
SCAN_UNROLL = 16


@keras_serializable
class Seq2SeqModel(keras.Model):
    """Encoder-decoder. `call({"source", "decoder_input"})` → next-token probabilities [B, T, V] (teacher forcing)."""

    def __init__(self, source_vocabulary_size: int, target_vocabulary_size: int, blocked_ids: tuple[int, ...] = (0,),
                 frozen_embeddings: bool = False, **kwargs):
        settings = Seq2SeqParams.architecture_of(kwargs)  # cell, units, attention, ...: its Params' (build)
        settings["luong_layer_norm"] = bool(settings["luong_layer_norm"])
        super().__init__(**kwargs)
        self.config = dict(source_vocabulary_size=source_vocabulary_size,
                           target_vocabulary_size=target_vocabulary_size, blocked_ids=tuple(blocked_ids),
                           frozen_embeddings=bool(frozen_embeddings), **settings)
        cell, decoder_cell, units, layers = settings["cell"], settings["decoder_cell"], settings["units"], \
            settings["layers"]
        bidirectional, embedding_dim, attention = settings["bidirectional"], settings["embedding_dim"], \
            settings["attention"]
        input_encoding, dropout = settings["input_encoding"], settings["dropout"]
        decoder_reads = settings["decoder_reads"]
        self.reads_vector = decoder_reads == "encoder_vector"
        self.encoder_cell = cell
        self.decoder_cell_name = decoder_cell or cell
        self.attention_kind = attention
        self.width = units * (2 if bidirectional else 1)
        self.blocked_logits = blocked_logits(target_vocabulary_size, blocked_ids)

        self.source_embedding = token_inputs(source_vocabulary_size, embedding_dim, input_encoding,
                                             name="source_embedding")
        self.encoder_layers = []
        for index in range(layers):
            layer = LAYER_CLASSES[cell](units, return_sequences=True, return_state=True, name=f"encoder_{cell}_{index}")
            if bidirectional:
                layer = keras.layers.Bidirectional(layer, merge_mode="concat", name=f"encoder_bidirectional_{index}")
            self.encoder_layers.append(layer)
        self.target_embedding = token_inputs(target_vocabulary_size, embedding_dim, input_encoding,
                                             name="target_embedding", mask_zero=False)
        if frozen_embeddings:  # started from a file of word vectors and kept as it has them (model.embedding)
            self.source_embedding.trainable = self.target_embedding.trainable = False
        self.decoder_cells = [
            CELL_CLASSES[self.decoder_cell_name](self.width, name=f"decoder_{self.decoder_cell_name}_{index}")
            for index in range(layers)
        ]
        self.attention = None
        self.attentional = None
        self.attentional_norm = None
        if attention == "bahdanau":
            self.attention = BahdanauAttention(settings["attention_units"] or self.width, name="bahdanau_attention")
        elif attention == "luong":
            self.attention = LuongAttention(settings["luong_score"] or "general", units=self.width,
                                            name="luong_attention")
            if settings["luong_layer_norm"]:
                self.attentional = keras.layers.Dense(self.width, name="attentional_state")
                self.attentional_norm = keras.layers.LayerNormalization(name="attentional_state_norm")
            else:
                self.attentional = keras.layers.Dense(self.width, activation="tanh", name="attentional_state")
        self.dropout = keras.layers.Dropout(dropout, name="dropout")
        self.output_layer = keras.layers.Dense(target_vocabulary_size, name="next_token")

    def get_config(self):
        return {**super().get_config(), **self.config}

    # ----------------------------------------------------------------- encoder

    def encode(self, source, training: bool = False) -> dict:
        """Source ids [B, S] → the decoder's starting state: memory, keys, mask and the carry."""
        mask = ops.not_equal(source, 0)
        x = self.dropout(self.source_embedding(source), training=training)
        initial_states = []
        for layer in self.encoder_layers:
            x, *states = layer(x, mask=mask, training=training)
            initial_states.append(self._decoder_state(self._merge_directions(states)))
        encoded = {"memory": x, "mask": mask}
        if self.reads_vector:
            # The top layer's final output (both directions), read at every step; the decoder starts from zeros.
            encoded["vector"] = initial_states[-1][0]
            initial_states = [[ops.zeros_like(state) for state in states] for states in initial_states]
        if self.attention is not None:
            encoded["keys"] = self.attention.keys(x)
        batch = ops.shape(source)[0]
        carry = {
            "states": initial_states,
            "features": ops.zeros((batch, self._feature_width()), dtype=x.dtype),
        }
        if self.attention is not None:
            carry["weights"] = ops.zeros((batch, ops.shape(source)[1]), dtype=x.dtype)
        encoded["carry"] = carry
        return encoded

    def _merge_directions(self, states: list) -> list:
        """Bidirectional layers return forward then backward states; concatenate them pairwise."""
        if not self.config["bidirectional"]:
            return list(states)
        half = len(states) // 2
        return [ops.concatenate([forward, backward], axis=-1)
                for forward, backward in zip(states[:half], states[half:])]

    def _decoder_state(self, encoder_states: list) -> list:
        hidden = encoder_states[0]
        if self.decoder_cell_name != "lstm":
            return [hidden]
        cell_state = encoder_states[1] if self.encoder_cell == "lstm" else ops.zeros_like(hidden)
        return [hidden, cell_state]

    def _feature_width(self) -> int:
        return 2 * self.width if self.attention_kind == "bahdanau" else self.width

    # ----------------------------------------------------------------- decoder

    def decoder_step(self, embedded, carry: dict, encoded: dict, training: bool = False) -> dict:
        """One decoder step: the embedded previous token [B, E] and the carry → the new carry."""
        states = carry["states"]
        x = encoded["vector"] if self.reads_vector else embedded
        new = {}
        if self.attention_kind == "bahdanau":
            query = states[-1][0]  # the previous top-layer state
            context, new["weights"] = self.attention(query, encoded["memory"], keys=encoded["keys"],
                                                     source_mask=encoded["mask"])
            x = ops.concatenate([x, context], axis=-1)
        new_states = []
        for cell, state in zip(self.decoder_cells, states):
            x, state = cell(x, list(state), training=training)
            new_states.append(list(state))
        new["states"] = new_states
        if self.attention_kind == "bahdanau":
            new["features"] = ops.concatenate([x, context], axis=-1)
        elif self.attention_kind == "luong":
            context, new["weights"] = self.attention(x, encoded["memory"], keys=encoded["keys"],
                                                     source_mask=encoded["mask"])
            new["features"] = self.attentional_state(ops.concatenate([context, x], axis=-1))
        else:
            new["features"] = x
        return new

    def next_token_log_probs(self, tokens, state: dict):
        """Decoding's step: the previous tokens [B] and a step model's state → (log-probabilities [B, V], new carry)."""
        carry = self.decoder_step(self.target_embedding(tokens), state["carry"], state)
        return ops.log_softmax(self.logits(carry["features"]), axis=-1), carry

    def attentional_state(self, context_and_state):
        """Luong's h̃_t = tanh(W_c [c_t; h_t]), with W_c [c_t; h_t] layer-normalized when asked."""
        if self.attentional_norm is None:
            return self.attentional(context_and_state)
        return ops.tanh(self.attentional_norm(self.attentional(context_and_state)))

    def logits(self, features, training: bool = False):
        """Decoder features [..., F] → next-token logits [..., V] (padding and start blocked)."""
        # A tensor, not the numpy array: the torch backend does not add numpy arrays to its tensors.
        blocked = keras.ops.convert_to_tensor(self.blocked_logits, dtype=features.dtype)
        return self.output_layer(self.dropout(features, training=training)) + blocked

    def teacher_forced(self, source, decoder_input, training: bool = False):
        """Logits [B, T, V] and, with attention, the attention weights [B, T, S], reading the true previous tokens."""
        encoded = self.encode(source, training=training)
        embedded = self.dropout(self.target_embedding(decoder_input), training=training)
        whole = self.decoded_in_one_pass(embedded, encoded, training=training)
        if whole is not None:
            return whole

        def step(carry, token_embedding):
            new = self.decoder_step(token_embedding, carry, encoded, training=training)
            return new, new  # keras.ops.scan stacks outputs shaped like the carry

        _, stacked = ops.scan(step, encoded["carry"], ops.transpose(embedded, (1, 0, 2)), unroll=SCAN_UNROLL)
        features = ops.transpose(stacked["features"], (1, 0, 2))
        weights = ops.transpose(stacked["weights"], (1, 0, 2)) if "weights" in stacked else None
        return self.logits(features, training=training), weights

    def decoded_in_one_pass(self, embedded, encoded: dict, training: bool = False):
        """Teacher forcing's (logits, attention weights) with each decoder layer run over the whole target in one
        fused kernel call (layer_classes.cell_over_sequence: on torch), instead of the step loop; None where
        that cannot be: Bahdanau attention (each step's query is the previous step's state, its context the
        first layer's input), or no such kernel for the cells. The same numbers as the loop: without Bahdanau's
        attention a decoder layer's step reads only its input and its own state, and Luong's attention reads the
        top layer's outputs, all steps at once."""
        runs = [layer_classes.cell_over_sequence(cell, embedded) for cell in self.decoder_cells]
        if self.attention_kind == "bahdanau" or None in runs:  # decided before any op (a symbolic build's too)
            return None
        x = embedded
        if self.reads_vector:
            x = ops.repeat(ops.expand_dims(encoded["vector"], 1), ops.shape(embedded)[1], axis=1)
        for run, state in zip(runs, encoded["carry"]["states"]):
            x, _ = run(x, state)
        weights = None
        if self.attention_kind == "luong":
            context, weights = self.attention(x, encoded["memory"], keys=encoded["keys"], source_mask=encoded["mask"])
            x = self.attentional_state(ops.concatenate([context, x], axis=-1))
        return self.logits(x, training=training), weights

    def call(self, inputs, training: bool = False):
        logits, _ = self.teacher_forced(inputs["source"], inputs["decoder_input"], training=training)
        return ops.softmax(logits, axis=-1)

    def attention_weights(self, source, decoder_input) -> np.ndarray | None:
        """Teacher-forced attention weights [B, T, S] (None without attention), for inspection."""
        _, weights = compiled_method(self, "teacher_forced")(ops.convert_to_tensor(source),
                                                             ops.convert_to_tensor(decoder_input))
        return None if weights is None else ops.convert_to_numpy(weights)

    @property
    def attends(self) -> bool:
        """Whether it has attention maps (the evaluator's attention.csv, `predict --attention`)."""
        return self.attention is not None

    def model_shape(self) -> ModelShape:
        """The source ids its encoder's embedding takes and the target tokens its decoder writes, one per step."""
        return ModelShape(int(self.config["source_vocabulary_size"]), int(self.config["target_vocabulary_size"]),
                          per_token=True)

    def step_model(self, source: np.ndarray, start_id: int, end_id: int) -> "Seq2SeqStepModel":
        return Seq2SeqStepModel(self, source, start_id, end_id)

    def check_decoding_steps(self, steps: int) -> None:
        """Any number: a recurrent state holds no positions (decoding.protocol.EncoderDecoder)."""

    def export_graphs(self) -> dict:
        """Its encoder and one decoder step, with named tensors (models.seq2seq_graphs)."""
        return {"encoder": EncoderGraph(self), "decoder_step": DecoderStepGraph(self)}


class Seq2SeqStepModel:
    """`StepModel` for a trained encoder-decoder and a batch of sources [B, S]: a `Seq2SeqModel`, or any model
    with the same two methods (the `transformer_seq2seq` kind's):

        encode(source [B, S]) → the state: tensors whose first axis is the row, "mask" [B, S] (the source's
                                real tokens) and "carry" (what each step changes) among them
        next_token_log_probs(tokens [B], state) → (log-probabilities [B, V], the new carry)

    The state is computed once in `start()`; `select()` gathers rows of all of it,
    so beams of one source share nothing but what they copied. Encoding, the step
    and the gather are each one compiled function on JAX (`backends.compiled`), on
    rows padded to a power of two there: the state may hold more rows than the
    decoder gave, and only the decoder's rows are returned.
    """

    def __init__(self, model, source: np.ndarray, start_id: int, end_id: int):
        self.model = model
        self.source = np.asarray(source, dtype="int32")
        self.start_id, self.end_id = int(start_id), int(end_id)
        self.vocab_size = int(model.config["target_vocabulary_size"])
        self._encode = compiled_method(model, "encode")
        self._next = compiled_method(model, "next_token_log_probs")
        self._rows = compiled_function(rows_of)

    def start(self, batch_size: int) -> dict:
        if batch_size != len(self.source):
            raise ValueError(f"this step model holds {len(self.source)} sources, received batch_size {batch_size}")
        return self._encode(ops.convert_to_tensor(padded(self.source)))

    def step(self, tokens: np.ndarray, state: dict) -> tuple[np.ndarray, dict]:
        # The state may hold more rows than there are tokens (`padded`): as many tokens are fed, then dropped.
        tokens = np.asarray(tokens, dtype="int32").reshape(-1)
        rows = len(tokens)
        log_probs, carry = self._next(ops.convert_to_tensor(pad_rows(tokens, len(state["mask"]))), state)
        # float32 as computed: decoders convert the few values they add up (a float64
        # copy of [rows, vocabulary] would cost beam search a full pass per step).
        return ops.convert_to_numpy(log_probs)[:rows], {**state, "carry": carry}

    def select(self, state: dict, indices: np.ndarray) -> dict:
        return self._rows(state, ops.convert_to_tensor(padded(np.asarray(indices, dtype="int32").reshape(-1))))


def blocked_logits(vocabulary_size: int, blocked_ids) -> np.ndarray:
    """What an encoder-decoder adds to its next-token logits: BLOCKED_LOGIT at `blocked_ids` (padding, the start
    token), 0 elsewhere."""
    blocked = np.zeros(vocabulary_size, dtype="float32")
    blocked[list(blocked_ids)] = BLOCKED_LOGIT
    return blocked


def never_written(data: Seq2SeqData) -> tuple[int, int]:
    """The target tokens a decoder never writes: padding and the start token (the `blocked_ids`)."""
    return data.target_vocabulary.index[PAD], data.target_vocabulary.index[START]


def built(model, params, data: Seq2SeqData, source_embedding, target_embedding):
    """An encoder-decoder with every weight built (count_params is read before training) and its embeddings
    started from the spec's word vectors (model.embedding), if any.

    Built by a symbolic call on two rows' shapes: nothing is computed (an eager call compiles the whole scan on JAX,
    about 3 s), and the weights are those an eager call gives."""
    model({name: keras.KerasTensor((2, *array.shape[1:]), dtype=array.dtype) for name, array in data.x_train.items()})
    if params.embedding is not None:  # one read of the file for both vocabularies (word_vectors.read_vectors)
        word_vectors.read_vectors(params.embedding.path, data.vocabulary.tokens + data.target_vocabulary.tokens)
    start_from_file(source_embedding, params.embedding, data.vocabulary.tokens)
    start_from_file(target_embedding, params.embedding, data.target_vocabulary.tokens)
    return model


def rows_of(state: dict, indices) -> dict:
    """Rows `indices` of every tensor of a step model's state (a gather: rows may repeat or disappear)."""
    return keras.tree.map_structure(lambda tensor: ops.take(tensor, indices, axis=0), state)


def model_shape(model) -> ModelShape:
    """What a `seq2seq` model reads and writes (the kind's `model_shape`); a ValueError for another model."""
    if not isinstance(model, Seq2SeqModel):
        raise ValueError(f"a {type(model).__name__}, not an encoder-decoder (Seq2SeqModel)")
    return model.model_shape()


def build(params: Seq2SeqParams, data: Seq2SeqData) -> Seq2SeqModel:
    model = Seq2SeqModel(len(data.vocabulary), len(data.target_vocabulary), never_written(data),
                         frozen(params.embedding), **params.architecture(), name="seq2seq")
    # Keras's own recurrent layers, made the torch backend's fused ones once built, as a kept model is when loaded
    # (layer_classes.fused): a subclassed model's weights file names each layer of a list by its class, so the
    # model must be made with the classes it is saved and loaded with.
    return layer_classes.fused(built(model, params, data, model.source_embedding, model.target_embedding))
