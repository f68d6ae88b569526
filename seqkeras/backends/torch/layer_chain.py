"""A model's forward pass as a chain of its layers' own `call`s, without Keras's per-call bookkeeping.

Calling a Keras layer (`Layer.__call__`) wraps its `call` in bookkeeping that an
eager training step pays for every time: input conversion and dtype checks, an
input-spec check, a build check, the training flag and mask resolved from the
call signature and a global call context, name and autocast scopes, the output
mask set, activity regularization recorded. A Functional model adds a walk over
its graph of nodes. On the torch backend, which runs every step eagerly, that is
about 1 ms a step on the benchmark's small language model (batch 16, units 32;
issue 9), a tenth of the step.

The suite's softmax models are chains: token ids → Embedding → recurrent layers
→ Dense. For such a model, `LayerChain` computes the same forward pass by
calling each layer's `call` with the training flag and mask that `__call__`
would have given it, and computing each output's mask with the layer's own
`compute_mask`, as `__call__` does. The layers' arithmetic (and so the numbers,
dropout draws included) is theirs, unchanged.

It applies only where nothing of the bookkeeping changes the result:
`unsupported(model)` says why not otherwise, and the caller then calls the model.
The layer types are those whose `call` passes the training flag on explicitly
to anything it calls (so no global call context is needed) and adds no loss.
"""

from __future__ import annotations

import keras
from keras.src.models.functional import Functional

# Layer types whose `call` needs nothing of `Layer.__call__` beyond the training flag and the mask.
CHAINABLE = (
    keras.layers.Embedding,
    keras.layers.Dense,
    keras.layers.RNN,  # SimpleRNN, LSTM, GRU and the suite's fused subclasses (their cells get training explicitly)
    keras.layers.Bidirectional,
    keras.layers.Dropout,
    keras.layers.Conv1D,
)


def unsupported(model: keras.Model) -> str | None:
    """Why `LayerChain` cannot compute `model(x)` exactly (None when it can). Checked in order."""
    if not isinstance(model, Functional) or type(model).call is not Functional.call:
        return "the model is not a plain Functional model"
    layers = model.layers
    if len(model.inputs) != 1 or len(model.outputs) != 1 or not isinstance(layers[0], keras.layers.InputLayer):
        return "the model has not one input and one output"
    previous = model.inputs[0]
    for layer in layers[1:]:
        if not isinstance(layer, CHAINABLE):
            return f"layer {layer.name!r} is a {type(layer).__name__}"
        if len(layer._inbound_nodes) != 1:
            return f"layer {layer.name!r} is called more than once"
        node = layer._inbound_nodes[0]
        args, options, outputs = node.arguments.args, node.arguments.kwargs, node.output_tensors
        # Its one argument the previous output, and a mask only as __call__ fills it in (that output's own);
        # the training flag recorded at build time gives way to the model call's, here as in Keras.
        mask = options.get("mask")
        if (len(args) != 1 or args[0] is not previous or set(options) - {"mask", "training"} or len(outputs) != 1
                or (mask is not None and mask is not getattr(previous, "_keras_mask", None))):
            return f"layer {layer.name!r} does not take the previous layer's output alone"
        if layer.activity_regularizer is not None:
            return f"layer {layer.name!r} has an activity regularizer"
        if layer.compute_dtype != layer.variable_dtype:
            return f"layer {layer.name!r} computes in {layer.compute_dtype} (mixed precision)"
        previous = outputs[0]
    if previous is not model.outputs[0]:
        return "the model's output is not its last layer's"
    return None


class LayerChain:
    """`model(x, training=...)` for a model that `unsupported` accepts, by calling its layers' `call` in turn."""

    def __init__(self, model: keras.Model):
        self.input_dtype = model.inputs[0].dtype
        self.layers = [(layer, layer._call_has_training_arg, layer._call_has_mask_arg) for layer in model.layers[1:]]

    def __call__(self, x, training: bool = False):
        # As Functional.call: the input as a tensor of the Input's dtype, with no mask.
        x = keras.ops.convert_to_tensor(x, dtype=self.input_dtype)
        mask = None
        for layer, takes_training, takes_mask in self.layers:
            options = {}
            if takes_training:
                options["training"] = training
            if takes_mask:
                options["mask"] = mask
            outputs = layer.call(x, **options)
            # As Layer.__call__: a layer that supports masking gives its output the mask its
            # call set, or else the one its compute_mask gives; any other layer drops the mask.
            if not layer.supports_masking:
                mask = None
            elif getattr(outputs, "_keras_mask", None) is not None:
                mask = outputs._keras_mask
            else:
                mask = layer.compute_mask(x, mask)
            x = outputs
        if mask is not None:
            x._keras_mask = mask
        return x
