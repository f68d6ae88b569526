"""A recurrent `seq2seq` model's two exported graphs (kept/export.py): its encoder, and one decoder step whose
recurrent states are named tensors (layer<n>_h, layer<n>_c), as `Seq2SeqModel.export_graphs` gives them.

    encoder        source [batch, source_length] int32 → the memory (memory, mask, keys; vector) and the
                   decoder's first states
    decoder_step   token [batch] int32, the memory and the states → log_probabilities [batch, target vocabulary],
                   next_<state> and, with attention, its weights over the source
"""

from __future__ import annotations

import keras
from keras import ops

from seqkeras.decoding.protocol import NEXT

# What the encoder gives the decoder's every step unchanged: its outputs per source token, the source's mask,
# the attention's keys, each with the source's length on axis 1 (`PER_SOURCE_TOKEN`); and the vector a decoder
# that reads the encoder's final output (decoder_reads: encoder_vector) reads at every step.
PER_SOURCE_TOKEN = ("memory", "mask", "keys")
MEMORY = (*PER_SOURCE_TOKEN, "vector")


STATE_PARTS = "hc"  # a recurrent layer's states in Keras's order: h, and c for an LSTM


def flat_states(carry: dict) -> dict:
    """The decoder's recurrent states as named tensors, layer<n>_h (and layer<n>_c for an LSTM): all of the carry
    that the next step reads (its features and attention weights are outputs only). No name ends in _<digit>,
    which tf2onnx would take for a tensor's output index."""
    return {f"layer{layer}_{STATE_PARTS[part]}": tensor for layer, states in enumerate(carry["states"])
            for part, tensor in enumerate(states)}


def nested_states(flat: dict, layers: int) -> list:
    """`flat_states`' inverse: per layer, its states."""
    return [[flat[f"layer{layer}_{part}"] for part in STATE_PARTS if f"layer{layer}_{part}" in flat]
            for layer in range(layers)]


class _Seq2SeqGraph(keras.Model):
    """A graph of a trained `Seq2SeqModel` (its layers, not copies) with flat, named tensors in and out: what an
    exported graph's interface carries (`model.export` of this model, with `signature()`).

    The names and shapes of the encoder's tensors are read once, here, from its output on a tiny source.
    """

    def __init__(self, seq2seq, **kwargs):
        import tensorflow as tf

        super().__init__(**kwargs)
        self.seq2seq = seq2seq
        encoded = seq2seq.encode(ops.convert_to_tensor([[3, 3]], dtype="int32"))
        # Without attention the decoder reads nothing of the source's tokens: its graph has no such input.
        memory = {name: encoded[name] for name in MEMORY
                  if name in encoded and (seq2seq.attention is not None or name not in PER_SOURCE_TOKEN)}
        states = flat_states(encoded["carry"])
        self.memory_names, self.state_names = list(memory), list(states)
        self.specs = {
            name: tf.TensorSpec([None] + [None if axis == 1 and name in PER_SOURCE_TOKEN else int(size)
                                          for axis, size in enumerate(tensor.shape[1:], 1)],
                                dtype=tensor.dtype, name=name)
            for name, tensor in (memory | states).items()
        }
        self.positions = None  # a recurrent state takes any number of steps
        self.built = True  # its layers are the trained model's, built: Keras's export asks


class EncoderGraph(_Seq2SeqGraph):
    """source ids [batch, source length] → the memory (memory, mask, keys) and the decoder's first states."""

    def call(self, inputs):
        encoded = self.seq2seq.encode(inputs["source"])
        return {name: encoded[name] for name in self.memory_names} | flat_states(encoded["carry"])

    def signature(self) -> list:
        import tensorflow as tf

        return [{"source": tf.TensorSpec([None, None], dtype="int32", name="source")}]


class DecoderStepGraph(_Seq2SeqGraph):
    """The previous token [batch], the memory and the states → log_probabilities [batch, target vocabulary], the
    next states (next_<name>) and, with attention, its weights over the source [batch, source length]."""

    def call(self, inputs):
        model = self.seq2seq
        encoded = {name: inputs[name] for name in self.memory_names}
        carry = {"states": nested_states({name: inputs[name] for name in self.state_names}, model.config["layers"])}
        new = model.decoder_step(model.target_embedding(inputs["token"]), carry, encoded)
        outputs = {"log_probabilities": ops.log_softmax(model.logits(new["features"]), axis=-1)}
        if "weights" in new:
            outputs["attention"] = new["weights"]
        # The next states under names of their own: an ONNX graph's output may not share its input's name.
        return outputs | {f"{NEXT}{name}": tensor for name, tensor in flat_states(new).items()}

    def signature(self) -> list:
        import tensorflow as tf

        return [{"token": tf.TensorSpec([None], dtype="int32", name="token")} | self.specs]
