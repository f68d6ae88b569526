"""Model kind `transformer_seq2seq`: a Transformer encoder-decoder (Vaswani et al. 2017), from keras-hub's layers.

    source ids → embedding (+ positions) → `layers` × TransformerEncoder ─────────────┐ memory
    target ids → embedding (+ positions) → `layers` × TransformerDecoder (causal self-attention,
                                            cross-attention over the memory) → Dense → next-token softmax

as the Keras examples' English-Spanish Transformer builds it: keras-hub's `TokenAndPositionEmbedding` (or
an `Embedding` plus `SinePositionEncoding`, or no positions), `TransformerEncoder` and `TransformerDecoder`
blocks, post-LN as in the paper or pre-LN with a final LayerNorm on each side (`normalize_first`).

Training reads the true previous tokens, all positions at once (teacher forcing: the decoder's causal mask
keeps position t from seeing later ones). Decoding runs one position at a time with keras-hub's caches, as its
own seq2seq models (BART) decode: each decoder block keeps the keys and values of the tokens written so far
(`self_attention_cache`, written at the step's index) and of the source (`cross_attention_cache`, computed once
when the sources are encoded). So a step costs one position's work plus attention over the cache, and gives the
log-probabilities the full teacher-forced call gives at that position (tests/test_transformer_seq2seq.py).

The step model is the recurrent kind's (`seq2seq.Seq2SeqStepModel`): `encode` gives the state, with every
per-row tensor under the batch axis (the position being written is a row vector too, the same in every row),
and `next_token_log_probs` advances it; beams gather rows of it.

Attention maps (the run's attention.csv, `predict --attention`): the last decoder block's cross-attention,
averaged over its heads.

`seqkeras export-model` writes the same encoder and step as two graphs whose caches are named tensors
(models/transformer_seq2seq_graphs.py).
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from seqkeras.backends.compiled import compiled_method
from seqkeras.backends.serializable import keras_serializable
from seqkeras.models.seq2seq import Seq2SeqStepModel, blocked_logits, built, never_written
from seqkeras.models.transformer import keras_hub, token_embedding
from seqkeras.models.pretrained_embedding import frozen
from seqkeras.models.seq2seq_params import TransformerSeq2SeqParams, output_limit
from seqkeras.models.transformer_seq2seq_graphs import TransformerEncoderGraph, TransformerStepGraph
from seqkeras.registry import ModelShape
from seqkeras.tasks.seq2seq_data import Seq2SeqData


@keras_serializable
class TransformerSeq2SeqModel(keras.Model):
    """Encoder-decoder of Transformer blocks. `call({"source", "decoder_input"})` → next-token probabilities
    [B, T, V] (teacher forcing), as `seq2seq.Seq2SeqModel`'s."""

    # The evaluator writes attention.csv, and `predict --attention` draws maps, for a model that attends.
    attends = True

    def __init__(self, source_vocabulary_size: int, target_vocabulary_size: int, source_positions: int,
                 target_positions: int, blocked_ids: tuple[int, ...] = (0,), frozen_embeddings: bool = False,
                 **kwargs):
        settings = TransformerSeq2SeqParams.architecture_of(kwargs)  # sizes, positions, ...: its Params' (build)
        settings["normalize_first"] = bool(settings["normalize_first"])
        super().__init__(**kwargs)
        self.config = dict(source_vocabulary_size=source_vocabulary_size,
                           target_vocabulary_size=target_vocabulary_size, source_positions=source_positions,
                           target_positions=target_positions, blocked_ids=tuple(blocked_ids),
                           frozen_embeddings=bool(frozen_embeddings), **settings)
        embedding_dim, num_heads, intermediate_dim = settings["embedding_dim"], settings["num_heads"], \
            settings["intermediate_dim"]
        layers, dropout, positions, normalize_first = settings["layers"], settings["dropout"], \
            settings["positions"], settings["normalize_first"]
        self.head_width = embedding_dim // num_heads
        self.blocked_logits = blocked_logits(target_vocabulary_size, blocked_ids)
        hub = keras_hub().layers
        self.source_embedding = self._embedding(source_vocabulary_size, source_positions, "source")
        self.target_embedding = self._embedding(target_vocabulary_size, target_positions, "target")
        if frozen_embeddings:  # the token tables started from a file of word vectors, kept as it has them
            token_embedding(self.source_embedding).trainable = token_embedding(self.target_embedding).trainable = False
        self.sine_positions = hub.SinePositionEncoding(name="sine_positions") if positions == "sine" else None
        self.embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
        self.encoder_blocks = [
            hub.TransformerEncoder(intermediate_dim, num_heads, dropout=dropout, normalize_first=normalize_first,
                                   name=f"encoder_{index}")
            for index in range(layers)
        ]
        self.decoder_blocks = [
            hub.TransformerDecoder(intermediate_dim, num_heads, dropout=dropout, normalize_first=normalize_first,
                                   name=f"decoder_{index}")
            for index in range(layers)
        ]
        # Pre-LN blocks leave their residual streams unnormalized: each side is normalized once at its end.
        self.encoder_norm = self.decoder_norm = None
        if normalize_first:
            self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="encoder_final_normalization")
            self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="decoder_final_normalization")
        self.output_layer = keras.layers.Dense(target_vocabulary_size, name="next_token")

    def _embedding(self, vocabulary: int, positions: int, side: str):
        """Token ids → vectors with position information (`positions`: learned, sine or none); no Keras mask: the
        padding masks are handed to the blocks explicitly (keras-hub's inner layers would drop a carried one)."""
        kind, width = self.config["positions"], self.config["embedding_dim"]
        if kind == "learned":
            return keras_hub().layers.TokenAndPositionEmbedding(vocabulary, positions, width,
                                                                name=f"{side}_embedding")
        return keras.layers.Embedding(vocabulary, width, name=f"{side}_embedding")

    def get_config(self):
        return {**super().get_config(), **self.config}

    def embedded(self, layer, ids, start_index=0, training: bool = False):
        """ids [B, T] → [B, T, d], the positions counted from `start_index`."""
        kind = self.config["positions"]
        if kind == "learned":
            x = layer(ids, start_index=start_index)
        else:
            x = layer(ids)
            if kind == "sine":
                x = x + self.sine_positions(x, start_index=start_index)
        return self.embedding_dropout(x, training=training)

    # ----------------------------------------------------------------- encoder

    def encode(self, source, training: bool = False) -> dict:
        """Source ids [B, S] → the decoder's starting state: the memory, its mask, each block's cross-attention
        cache (the source's keys and values), empty self-attention caches and the position to write, 0."""
        encoded = self.encode_memory(source, training=training)
        x, mask = encoded["memory"], encoded["mask"]
        batch = ops.shape(source)[0]
        heads, width = self.config["num_heads"], self.head_width
        self_caches, cross_caches = [], []
        for block in self.decoder_blocks:
            # keras-hub's way to fill a cross-attention cache (its BART does the same): one call with the cache's
            # update index 0. The decoder input is a placeholder: the source's keys and values do not depend on it.
            _, self_cache, cross_cache = block(
                ops.zeros((batch, 1, self.config["embedding_dim"]), dtype=x.dtype),
                encoder_sequence=x, encoder_padding_mask=mask,
                self_attention_cache=ops.zeros((batch, 2, 1, heads, width), dtype=x.dtype),
                self_attention_cache_update_index=0,
                cross_attention_cache=ops.zeros((batch, 2, ops.shape(x)[1], heads, width), dtype=x.dtype),
                cross_attention_cache_update_index=0,
            )
            cross_caches.append(cross_cache)
            self_caches.append(ops.zeros((batch, 2, self.config["target_positions"], heads, width), dtype=x.dtype))
        carry = {"self_caches": self_caches, "index": ops.zeros((batch,), dtype="int32")}
        return {**encoded, "cross_caches": cross_caches, "carry": carry}

    # ----------------------------------------------------------------- decoder

    def decoded(self, decoder_input, encoded: dict, training: bool = False):
        """The decoder's features [B, T, d] reading the true previous tokens (teacher forcing)."""
        y = self.embedded(self.target_embedding, decoder_input, training=training)
        real = ops.not_equal(decoder_input, 0)
        for block in self.decoder_blocks:
            y = block(y, encoder_sequence=encoded["memory"], decoder_padding_mask=real,
                      encoder_padding_mask=encoded["mask"], training=training)
        return y if self.decoder_norm is None else self.decoder_norm(y)

    def next_token_log_probs(self, tokens, state: dict):
        """Decoding's step: the previous tokens [B] and the state → (log-probabilities [B, V], new carry)."""
        carry = state["carry"]
        index = carry["index"][0]  # every row writes the same position
        y = self.embedded(self.target_embedding, ops.expand_dims(tokens, 1), start_index=index)
        self_caches = []
        for block, self_cache, cross_cache in zip(self.decoder_blocks, carry["self_caches"], state["cross_caches"]):
            y, self_cache, _ = block(y, encoder_sequence=state["memory"], encoder_padding_mask=state["mask"],
                                     self_attention_cache=self_cache, self_attention_cache_update_index=index,
                                     cross_attention_cache=cross_cache, cross_attention_cache_update_index=None)
            self_caches.append(self_cache)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        log_probs = ops.log_softmax(self.logits(y[:, 0, :]), axis=-1)
        return log_probs, {"self_caches": self_caches, "index": carry["index"] + 1}

    def logits(self, features):
        """Decoder features [..., d] → next-token logits [..., V] (padding and start blocked)."""
        blocked = ops.convert_to_tensor(self.blocked_logits, dtype=features.dtype)
        return self.output_layer(features) + blocked

    def teacher_forced(self, source, decoder_input, training: bool = False):
        """Logits [B, T, V] reading the true previous tokens."""
        return self.logits(self.decoded(decoder_input, self.encode_memory(source, training), training=training))

    def encode_memory(self, source, training: bool = False) -> dict:
        """The memory and its mask alone (what training reads of the encoder)."""
        mask = ops.not_equal(source, 0)
        x = self.embedded(self.source_embedding, source, training=training)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=mask, training=training)
        return {"memory": x if self.encoder_norm is None else self.encoder_norm(x), "mask": mask}

    def call(self, inputs, training: bool = False):
        return ops.softmax(self.teacher_forced(inputs["source"], inputs["decoder_input"], training=training), axis=-1)

    # ----------------------------------------------------------------- inspection

    def cross_attention(self, source, decoder_input):
        """The last decoder block's cross-attention weights [B, T, S], averaged over its heads (teacher forcing).

        keras-hub's TransformerDecoder returns no attention scores, so its steps up to the cross-attention are
        taken here with its own sublayers (the self-attention block, then the cross-attention layer asked for its
        scores): the same computation as its `call` (keras-hub 0.32), checked against it by the tests.
        """
        encoded = self.encode_memory(source)
        y = self.embedded(self.target_embedding, decoder_input)
        real = ops.not_equal(decoder_input, 0)
        *earlier, last = self.decoder_blocks
        for block in earlier:
            y = block(y, encoder_sequence=encoded["memory"], decoder_padding_mask=real,
                      encoder_padding_mask=encoded["mask"])
        _, scores = cross_attention_of(last, y, real, encoded["memory"], encoded["mask"])
        return ops.mean(scores, axis=1)

    def attention_weights(self, source, decoder_input) -> np.ndarray:
        """Teacher-forced attention weights [B, T, S] of the last decoder block over the source, for inspection."""
        weights = compiled_method(self, "cross_attention")(ops.convert_to_tensor(source),
                                                           ops.convert_to_tensor(decoder_input))
        return ops.convert_to_numpy(weights)

    def model_shape(self) -> ModelShape:
        """The source ids it reads (at most its source position table, when learned) and the target tokens it writes,
        one per step, at most its target positions (its caches have as many, whatever its positions:
        `check_decoding_steps`)."""
        learned = self.config["positions"] == "learned"
        return ModelShape(int(self.config["source_vocabulary_size"]), int(self.config["target_vocabulary_size"]),
                          per_token=True, positions=int(self.config["source_positions"]) if learned else None,
                          output_positions=int(self.config["target_positions"]))

    def check_decoding_steps(self, steps: int) -> None:
        """A ValueError when decoding `steps` steps would write past the caches' last position (JAX would write the
        last position again, silently; TensorFlow fails inside its kernel)."""
        capacity = int(self.config["target_positions"])
        if steps > capacity:
            raise ValueError(f"this model writes at most {capacity} positions (its target position table and "
                             "caches: the start token and max_output_length tokens)")

    def step_model(self, source: np.ndarray, start_id: int, end_id: int) -> "CachedStepModel":
        return CachedStepModel(self, source, start_id, end_id)

    def export_graphs(self) -> dict:
        """Its encoder and one decoder step carrying the key/value caches (models.transformer_seq2seq_graphs)."""
        return {"encoder": TransformerEncoderGraph(self), "decoder_step": TransformerStepGraph(self)}


class CachedStepModel(Seq2SeqStepModel):
    """The encoder-decoders' step model, counting the positions written: a step past the caches' last position is
    a ValueError (`check_decoding_steps`)."""

    def start(self, batch_size: int) -> dict:
        self.written = 0
        return super().start(batch_size)

    def step(self, tokens: np.ndarray, state: dict) -> tuple[np.ndarray, dict]:
        self.written += 1
        self.model.check_decoding_steps(self.written)
        return super().step(tokens, state)


def cross_attention_of(block, decoder_sequence, decoder_padding_mask, memory, memory_mask):
    """A keras-hub TransformerDecoder's self-attention sublayer on `decoder_sequence`, then its cross-attention
    over `memory`: (the cross-attention's output [B, T, d], its scores [B, heads, T, S])."""
    from keras_hub.src.layers.modeling.transformer_layer_utils import merge_padding_and_attention_mask

    self_mask = block._compute_self_attention_mask(
        decoder_sequence=decoder_sequence, decoder_padding_mask=decoder_padding_mask, decoder_attention_mask=None,
        use_causal_mask=True, self_attention_cache=None, self_attention_cache_update_index=None)
    x = decoder_sequence
    residual = x
    if block.normalize_first:
        x = block._self_attention_layer_norm(x)
    x = block._self_attention_layer(query=x, value=x, attention_mask=self_mask) + residual
    # Post-LN normalizes the self-attention block's output; pre-LN normalizes the cross-attention's input.
    x = block._cross_attention_layer_norm(x) if block.normalize_first else block._self_attention_layer_norm(x)
    return block._cross_attention_layer(
        query=x, value=memory, attention_mask=merge_padding_and_attention_mask(memory, memory_mask, None),
        return_attention_scores=True)


def model_shape(model) -> ModelShape:
    """What a `transformer_seq2seq` model reads and writes (the kind's `model_shape`); a ValueError for another."""
    if not isinstance(model, TransformerSeq2SeqModel):
        raise ValueError(f"a {type(model).__name__}, not a Transformer encoder-decoder (TransformerSeq2SeqModel)")
    return model.model_shape()


def output_positions(params: TransformerSeq2SeqParams, data: Seq2SeqData) -> int:
    """Positions the decoder writes at most: the start token, then as many as a decoder may generate (the
    evaluator's limit, `evaluation.seq2seq.output_limit`), and the longest training target with its end token."""
    longest = max(data.x_train["decoder_input"].shape[1], data.x_test["decoder_input"].shape[1])
    return 1 + max(output_limit(params, data), longest)


def build(params: TransformerSeq2SeqParams, data: Seq2SeqData) -> TransformerSeq2SeqModel:
    source_positions = params.max_length or max(data.x_train["source"].shape[1], data.x_test["source"].shape[1])
    model = TransformerSeq2SeqModel(len(data.vocabulary), len(data.target_vocabulary), source_positions,
                                    output_positions(params, data), never_written(data), frozen(params.embedding),
                                    **params.architecture(), name="transformer_seq2seq")
    return built(model, params, data, token_embedding(model.source_embedding), token_embedding(model.target_embedding))
