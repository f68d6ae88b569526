"""A kept model.keras names Keras's own classes wherever one computes the same function.

A model trains with the suite's faster stand-ins on some backends: fused layers on torch, the softmax loss
and accuracy computed from the logits on torch and JAX, and on torch Keras's own optimizer is an instance of
the backend's subclass (`keras.src.backend.torch.optimizers.torch_adam.Adam`). Saved as they are, the file
would name them, and any Keras reading it would need the suite (`seqkeras>FusedLSTM`) or import torch (the
optimizer's module), whatever its backend. So, while a model is written (`written_as_plain_keras`):

- each fused layer is the Keras layer it subclasses (`backends.layer_classes.keras_classes`): same weights,
  under Keras's own paths in the weights file;
- the compile config names the optimizer by its public class (`keras.optimizers.Adam`, the same optimizer
  on every backend) and the suite's loss and accuracy by the Keras functions they compute
  (`backends.losses.KERAS_EQUIVALENTS`: what the suite compiles with on TensorFlow).

What has no Keras equivalent (a CRF, attention, an encoder-decoder, an initializer) stays the suite's,
registered under `seqkeras>` (`backends.serializable`): `import seqkeras` is all a process needs to load it.
On torch, `kept.saving` gives a model read back its fused layers again (`layer_classes.fused`).
"""

from __future__ import annotations

import contextlib
from typing import Any

import keras

from seqkeras.backends import layer_classes
from seqkeras.backends.losses import KERAS_EQUIVALENTS

PUBLIC_OPTIMIZERS = "keras.optimizers"
BACKEND_MODULES = "keras.src.backend."  # where each backend's subclasses of Keras's optimizers live


@contextlib.contextmanager
def written_as_plain_keras(model):
    """Within the block, `model` serializes as Keras's own classes (module docstring); afterwards it is as it was."""
    with layer_classes.keras_classes(model), _plain_compile_config(model):
        yield model


@contextlib.contextmanager
def _plain_compile_config(model):
    if not getattr(model, "compiled", False):
        yield
        return
    config = plain_compile_config(model.get_compile_config())
    # An instance attribute over Keras's method (which saving calls), set and removed with object's own
    # __setattr__: Keras's and torch.nn.Module's would track it.
    object.__setattr__(model, "get_compile_config", lambda: config)
    try:
        yield
    finally:
        object.__delattr__(model, "get_compile_config")


def plain_compile_config(config: dict[str, Any]) -> dict[str, Any]:
    """A serialized compile config with Keras's public optimizer class and Keras's own loss and metrics."""
    plain = dict(config)
    plain["optimizer"] = public_optimizer(config.get("optimizer"))
    plain["loss"] = keras_equivalent(config.get("loss"))
    for key in ("metrics", "weighted_metrics"):
        if isinstance(config.get(key), list):
            plain[key] = [keras_equivalent(metric) for metric in config[key]]
    return plain


def public_optimizer(optimizer: Any) -> Any:
    """A serialized optimizer of a backend's subclass, as the public `keras.optimizers` class it specializes."""
    if not isinstance(optimizer, dict) or not str(optimizer.get("module", "")).startswith(BACKEND_MODULES):
        return optimizer
    name = optimizer.get("class_name")
    if not isinstance(getattr(keras.optimizers, str(name), None), type):
        return optimizer  # no public class of that name: left as it is
    return {**optimizer, "module": PUBLIC_OPTIMIZERS, "registered_name": None}


def keras_equivalent(item: Any) -> Any:
    """A serialized loss or metric of the suite, as the name of the Keras function it computes (else unchanged):
    the function itself, or a metric wrapping it (`MeanMetricWrapper(sparse_accuracy, name="accuracy")`)."""
    if not isinstance(item, dict):
        return item
    function = item
    if item.get("class_name") == "MeanMetricWrapper" and isinstance(item.get("config"), dict):
        name, function = item["config"].get("name"), item["config"].get("fn")
        if not isinstance(function, dict) or KERAS_EQUIVALENTS.get(function.get("config")) != name:
            return item  # a wrapper under another name than Keras's own metric would give it
    if function.get("class_name") == "function" and function.get("config") in KERAS_EQUIVALENTS:
        return KERAS_EQUIVALENTS[function["config"]]
    return item
