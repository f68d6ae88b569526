"""One decoding step of a trained language model, as a Keras model made of that model's own layers.

`cached_step_models` runs a step through `predict_on_batch`, which compiles it
once on each backend (a tf.function on TensorFlow), for the reason that
`evaluation.generation` calls the trained model's `predict_on_batch`: called
eagerly, the few hundred small operations of one step cost TensorFlow about
15 ms a Transformer block, ten times the compiled step. The graphs hold no
weights of their own, the trained model's layers are theirs, so they are never
saved and need no config; `step_graph(model)` builds one per trained model and
keeps it while the model lives.

    RecurrentStepGraph    {"tokens": [B], "states": [[h] or [h, c] per layer]}
                          → {"outputs": [B, V], "states": ...}: one token through
                          the Embedding, each recurrent layer's cell and the output layer.
    TransformerStepGraph  {"tokens": [B, T], "position": [B] (all equal), "attend":
                          [B, T, C] bool, "caches": [B, blocks, 2, C, heads, head_dim]}
                          → {"outputs": [B, V] at the last token, "caches"}: T tokens at
                          positions position … position + T − 1 through every block,
                          whose key/value cache (keras-hub's `self_attention_cache` API)
                          receives their keys and values there, then the output layer.
                          T = 1 is a decoding step; a whole context at position 0 with
                          empty caches seeds them in one pass, as keras-hub's CausalLM does.

Also here: recognizing the two structures (`recurrent_lm_layers`,
`transformer_lm_layers`), which any other model fails.
"""

from __future__ import annotations

import weakref

import keras
import keras_hub
import numpy as np
from keras import ops


def recurrent_lm_layers(model):
    """(embedding, recurrent layers, output layer) of an `lm`-kind model, or None for any other structure.

    The structure is `models.recurrent.build_lm`'s chain: token ids → Embedding →
    unidirectional recurrent layers, each returning its whole sequence → Dense.
    """
    layers = list(getattr(model, "layers", []))
    if len(layers) < 4 or not isinstance(layers[0], keras.layers.InputLayer):
        return None
    embedding, recurrent, head = layers[1], layers[2:-1], layers[-1]
    if not isinstance(embedding, keras.layers.Embedding) or not isinstance(head, keras.layers.Dense):
        return None
    if not all(isinstance(layer, keras.layers.RNN) and layer.return_sequences and not layer.go_backwards
               and not layer.stateful for layer in recurrent):
        return None
    return embedding, recurrent, head


class TransformerParts:
    """The layers of a `transformer`-kind model, in the order its call runs them."""

    def __init__(self, token_embedding, positions, add_positions, blocks, final_normalization, output_layer):
        self.token_embedding = token_embedding  # TokenAndPositionEmbedding (learned positions) or Embedding
        self.positions = positions  # beside an Embedding: SinePositionEncoding, PositionEmbedding, or None
        self.add_positions = add_positions  # the Add of those positions, or None
        self.blocks = blocks
        self.final_normalization = final_normalization  # pre-LN models' last LayerNormalization, or None
        self.output_layer = output_layer

    @property
    def position_table(self) -> int | None:
        """How many positions the learned position table holds (None: sinusoids or no positions)."""
        table = self.positions
        if isinstance(self.token_embedding, keras_hub.layers.TokenAndPositionEmbedding):
            table = self.token_embedding.position_embedding
        return int(table.sequence_length) if isinstance(table, keras_hub.layers.PositionEmbedding) else None


def transformer_lm_layers(model) -> TransformerParts | None:
    """The layers of a `transformer`-kind model, or None for any other structure.

    The structure is `models.transformer.build_lm`'s: token ids → TokenAndPositionEmbedding,
    or Embedding (→ SinePositionEncoding or PositionEmbedding, Add) → TransformerDecoder
    blocks without cross-attention → (LayerNormalization) → Dense.
    """
    layers = list(getattr(model, "layers", []))
    if not layers or not isinstance(layers[0], keras.layers.InputLayer):
        return None
    rest = layers[1:]
    positions = add = None
    if rest and isinstance(rest[0], keras_hub.layers.TokenAndPositionEmbedding):
        embedding, rest = rest[0], rest[1:]
    elif rest and isinstance(rest[0], keras.layers.Embedding):
        embedding, rest = rest[0], rest[1:]
        position_layers = (keras_hub.layers.SinePositionEncoding, keras_hub.layers.PositionEmbedding)
        if len(rest) >= 2 and isinstance(rest[0], position_layers) and isinstance(rest[1], keras.layers.Add):
            (positions, add), rest = rest[:2], rest[2:]
    else:
        return None
    blocks = []
    while rest and isinstance(rest[0], keras_hub.layers.TransformerDecoder):
        blocks.append(rest.pop(0))
    normalization = rest.pop(0) if rest and isinstance(rest[0], keras.layers.LayerNormalization) else None
    if not blocks or len(rest) != 1 or not isinstance(rest[0], keras.layers.Dense):
        return None
    if any(block._cross_attention_layer is not None for block in blocks):
        return None
    return TransformerParts(embedding, positions, add, blocks, normalization, rest[0])


class RecurrentStepGraph(keras.Model):
    """One token through an `lm`-kind model's layers, each recurrent layer advanced by its own cell."""

    def __init__(self, embedding, recurrent_layers, output_layer):
        super().__init__(name="recurrent_step")
        self.embedding = embedding
        self.recurrent_layers = list(recurrent_layers)
        self.output_layer = output_layer

    def initial_states(self, batch_size: int) -> list[list[np.ndarray]]:
        return [[ops.convert_to_numpy(s) for s in layer.cell.get_initial_state(batch_size)]
                for layer in self.recurrent_layers]

    def call(self, inputs):
        tokens = inputs["tokens"]
        # The Embedding's own lookup, without the mask its __call__ attaches (a cell takes none):
        # a masking Embedding hides padding from every layer, so a masked step keeps the state and
        # repeats the layer's previous output (h), or outputs zeros (zero_output_for_mask), as RNN does.
        x = self.embedding.call(tokens)
        keep = ops.expand_dims(ops.not_equal(tokens, 0), -1) if self.embedding.mask_zero else None
        new_states = []
        for layer, states in zip(self.recurrent_layers, inputs["states"]):
            output, states_out = layer.cell(x, list(states), training=False)
            states_out = list(states_out) if isinstance(states_out, (list, tuple)) else [states_out]
            if keep is not None:
                previous = ops.zeros_like(output) if layer.zero_output_for_mask else states[0]
                output = ops.where(keep, output, previous)
                states_out = [ops.where(keep, new, old) for new, old in zip(states_out, states)]
            new_states.append(states_out)
            x = output
        return {"outputs": self.output_layer(x), "states": new_states}


class TransformerStepGraph(keras.Model):
    """One token through a `transformer`-kind model's blocks, each with its key/value cache."""

    def __init__(self, parts: TransformerParts):
        super().__init__(name="transformer_step")
        self.token_embedding = parts.token_embedding
        self.positions = parts.positions
        self.add_positions = parts.add_positions
        self.blocks = list(parts.blocks)
        self.final_normalization = parts.final_normalization
        self.output_layer = parts.output_layer
        self.position_table = parts.position_table
        width = int(parts.output_layer.kernel.shape[0])
        # The cache's layout, as keras-hub's decoder sizes its attention (GPT-2's _build_cache does the same).
        self.heads = int(self.blocks[0].num_heads)
        self.head_dim = width // self.heads
        if any(int(block.num_heads) != self.heads for block in self.blocks):
            raise ValueError("the blocks have different numbers of heads: their caches cannot be stacked")

    def empty_caches(self, batch_size: int, length: int) -> np.ndarray:
        dtype = self.blocks[0].compute_dtype
        return np.zeros((batch_size, len(self.blocks), 2, length, self.heads, self.head_dim), dtype=dtype)

    def embed(self, tokens, start_index):
        if isinstance(self.token_embedding, keras_hub.layers.TokenAndPositionEmbedding):
            return self.token_embedding(tokens, start_index=start_index)
        x = self.token_embedding(tokens)
        if self.positions is not None:
            x = self.add_positions([x, self.positions(x, start_index=start_index)])
        return x

    def head(self, x):
        if self.final_normalization is not None:
            x = self.final_normalization(x)
        return self.output_layer(x)

    def call(self, inputs):
        position = inputs["position"][0]
        x = self.embed(inputs["tokens"], position)
        caches = []
        for index, block in enumerate(self.blocks):
            x, cache = block(x, decoder_attention_mask=inputs["attend"],
                             self_attention_cache=inputs["caches"][:, index],
                             self_attention_cache_update_index=position, training=False)
            caches.append(cache)
        return {"outputs": self.head(x[:, -1, :]), "caches": ops.stack(caches, axis=1)}


_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def step_graph(model) -> RecurrentStepGraph | TransformerStepGraph | None:
    """The step graph of `model` (one per model, so its compiled step is reused), or None for another structure."""
    if model not in _GRAPHS:
        layers = recurrent_lm_layers(model)
        parts = None if layers is not None else transformer_lm_layers(model)
        if layers is not None:
            _GRAPHS[model] = RecurrentStepGraph(*layers)
        elif parts is not None:
            _GRAPHS[model] = TransformerStepGraph(parts)
        else:
            _GRAPHS[model] = None
    return _GRAPHS[model]
