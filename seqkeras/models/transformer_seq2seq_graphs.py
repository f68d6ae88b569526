"""A `transformer_seq2seq` model's two exported graphs (kept/export.py; `TransformerSeq2SeqModel.export_graphs`):
its encoder, and one decoder step that carries every decoder block's key/value caches as named tensors.

    encoder        source [batch, source_length] int32 →
                     mask [batch, source_length] bool                    the source's real tokens
                     layer<n>_cross_cache [batch, 2, source_length, heads, head_dim]
                                                                         block n's keys and values of the source
                     layer<n>_self_cache [batch, 2, positions, heads, head_dim]   zeros: nothing written yet
                     index [batch] int32                                 zeros: the position the first step writes
    decoder_step   token [batch] int32, and all of the above (the encoder's outputs, then each step's next_<name>) →
                     log_probabilities [batch, target vocabulary]
                     next_layer<n>_self_cache, next_index                the same caches with the token's keys and
                                                                         values written at `index`; index + 1

As the model's own decoding (`TransformerSeq2SeqModel.encode`, `next_token_log_probs`): the source's keys and
values are computed once by the encoder (keras-hub's TransformerDecoder takes a cross-attention cache whenever it
takes a self-attention cache, so the step reads them rather than the memory itself), and each step writes one
position of the self-attention caches, whose length is the model's target position table (`positions`, static:
the loop takes at most that many steps). The index is a row vector, the same in every row, as the model's carry
holds it: every tensor the loop carries has the row on axis 0, so a beam search gathers rows of all of them.

The one difference from the model's own step is how a cache position is written. keras-hub writes it with
`ops.slice_update`, which is XLA's DynamicUpdateSlice on TensorFlow, an op tf2onnx cannot convert; here the
block's own key and value projections of the new position are written with a `where` over the cache's positions
(ops that ONNX has), and the block is then called on that cache as it is (update index None) with the causal mask its
cached call would make (positions up to `index`): the same values, the same attention
(tests/test_export_model.py checks the graphs against the model's step model).
"""

from __future__ import annotations

import keras
from keras import ops

from seqkeras.decoding.protocol import NEXT

SELF_CACHE, CROSS_CACHE = "_self_cache", "_cross_cache"  # layer<n>_self_cache, layer<n>_cross_cache
INDEX = "index"


class _TransformerGraph(keras.Model):
    """A graph of a trained `TransformerSeq2SeqModel` (its layers, not copies) with flat, named tensors in and
    out, and the interface both graphs share: the specs of what the encoder gives and the step reads."""

    def __init__(self, transformer, **kwargs):
        import tensorflow as tf

        super().__init__(**kwargs)
        self.transformer = transformer
        config = transformer.config
        self.positions = int(config["target_positions"])
        self.cache_shape = (2, self.positions, int(config["num_heads"]), int(transformer.head_width))
        self.layer_count = len(transformer.decoder_blocks)
        dtype = transformer.compute_dtype
        cache = [None, 2, None, *self.cache_shape[2:]]
        cross = {f"layer{n}{CROSS_CACHE}": tf.TensorSpec(cache, dtype=dtype, name=f"layer{n}{CROSS_CACHE}")
                 for n in range(self.layer_count)}
        own = {f"layer{n}{SELF_CACHE}": tf.TensorSpec([None, *self.cache_shape], dtype=dtype,
                                                       name=f"layer{n}{SELF_CACHE}")
               for n in range(self.layer_count)}
        # What every step reads unchanged (memory), and what each step replaces (states: next_<name>).
        memory = {"mask": tf.TensorSpec([None, None], dtype="bool", name="mask")} | cross
        states = own | {INDEX: tf.TensorSpec([None], dtype="int32", name=INDEX)}
        self.memory_names, self.state_names = list(memory), list(states)
        self.specs = memory | states
        self.built = True  # its layers are the trained model's, built: Keras's export asks


class TransformerEncoderGraph(_TransformerGraph):
    """source ids [batch, source length] → the mask, each block's cross-attention cache and the first states."""

    def call(self, inputs):
        model = self.transformer
        encoded = model.encode_memory(inputs["source"])
        memory, batch = encoded["memory"], ops.shape(inputs["source"])[0]
        outputs = {"mask": encoded["mask"]}
        for n, block in enumerate(model.decoder_blocks):
            # What keras-hub's cross-attention writes into its cache from the source (encode's call with update
            # index 0): its key and value projections of the memory, [batch, source length, heads, head_dim].
            attention = block._cross_attention_layer
            outputs[f"layer{n}{CROSS_CACHE}"] = ops.stack([attention._key_dense(memory),
                                                           attention._value_dense(memory)], axis=1)
        for n in range(self.layer_count):
            outputs[f"layer{n}{SELF_CACHE}"] = ops.zeros((batch, *self.cache_shape), dtype=memory.dtype)
        outputs[INDEX] = ops.zeros((batch,), dtype="int32")
        return outputs

    def signature(self) -> list:
        import tensorflow as tf

        return [{"source": tf.TensorSpec([None, None], dtype="int32", name="source")}]


class TransformerStepGraph(_TransformerGraph):
    """The previous token [batch], the mask, the cross-attention caches, the self-attention caches and the index →
    log_probabilities [batch, target vocabulary], the caches with the token written at the index, and the index + 1.
    """

    def call(self, inputs):
        model = self.transformer
        tokens, index = inputs["token"], inputs[INDEX]
        position = index[0]  # every row writes the same position (the model's carry)
        batch = ops.shape(tokens)[0]
        y = model.embedded(model.target_embedding, ops.expand_dims(tokens, 1), start_index=position)
        written = ops.equal(ops.arange(self.positions, dtype="int32"), position)  # [positions]: the one written now
        at_position = ops.reshape(written, (1, 1, self.positions, 1, 1))
        # The causal mask of keras-hub's cached call at this index: the query sees the positions up to its own.
        attend = ops.broadcast_to(ops.reshape(ops.less_equal(ops.arange(self.positions, dtype="int32"), position),
                                              (1, 1, self.positions)), (batch, 1, self.positions))
        outputs = {}
        for n, block in enumerate(model.decoder_blocks):
            attention = block._self_attention_layer
            x = block._self_attention_layer_norm(y) if block.normalize_first else y  # what the attention reads
            update = ops.stack([attention._key_dense(x), attention._value_dense(x)], axis=1)  # [batch, 2, 1, h, d]
            cache = ops.where(at_position, update, inputs[f"layer{n}{SELF_CACHE}"])
            cross = inputs[f"layer{n}{CROSS_CACHE}"]
            # With its caches and no update index, the block attends over them as they are; its cross-attention
            # reads the source's keys and values from its cache, and `encoder_sequence` only says it has one.
            y, cache, _ = block(y, encoder_sequence=cross[:, 0], encoder_padding_mask=inputs["mask"],
                                decoder_attention_mask=attend, use_causal_mask=False,
                                self_attention_cache=cache, self_attention_cache_update_index=None,
                                cross_attention_cache=cross, cross_attention_cache_update_index=None,
                                training=False)
            outputs[f"{NEXT}layer{n}{SELF_CACHE}"] = cache
        if model.decoder_norm is not None:
            y = model.decoder_norm(y)
        log_probabilities = ops.log_softmax(model.logits(y[:, 0, :]), axis=-1)
        return {"log_probabilities": log_probabilities} | outputs | {f"{NEXT}{INDEX}": index + 1}

    def signature(self) -> list:
        import tensorflow as tf

        return [{"token": tf.TensorSpec([None], dtype="int32", name="token")} | self.specs]
