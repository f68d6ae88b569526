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

- a learning-rate schedule is Keras's own where one computes the same rates (training.schedules.keras_schedule:
  every schedule without a warmup); one with a warmup, which Keras has not, is written as the rate it reached at
  the last step (the run's spec.yaml keeps the schedule): the kept optimizer is for going on from there.

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
SUITES = "seqkeras>"  # the package of the suite's registered classes (backends.serializable)
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
    original = model.get_compile_config()
    config = plain_compile_config(original, reached_rate(model.optimizer))
    written = _learning_rate(config)
    rate = written if isinstance(written, float) and isinstance(_learning_rate(original), dict) else None
    # An instance attribute over Keras's method (which saving calls), set and removed with object's own
    # __setattr__: Keras's and torch.nn.Module's would track it.
    object.__setattr__(model, "get_compile_config", lambda: config)
    try:
        with _rate_as_variable(model.optimizer, rate):
            yield
    finally:
        object.__delattr__(model, "get_compile_config")


def _learning_rate(config: dict[str, Any]) -> Any:
    """A serialized compile config's optimizer learning rate: a number, a serialized schedule, or None."""
    optimizer = config.get("optimizer")
    written = optimizer.get("config") if isinstance(optimizer, dict) else None
    return written.get("learning_rate") if isinstance(written, dict) else None


@contextlib.contextmanager
def _rate_as_variable(optimizer, rate: float | None):
    """While the model is written, an optimizer whose schedule the config writes as `rate` (None: it does not)
    holds that rate as Keras's optimizer built from the config will: a `learning_rate` variable right after
    `iterations` (Keras's BaseOptimizer tracks them in that order), so that the file's optimizer variables are the
    ones it loads, with no "Skipping variable loading" and the step count and moments kept."""
    variables = getattr(optimizer, "_variables", None)
    if rate is None or not isinstance(variables, list) or not variables or variables[0] is not optimizer.iterations:
        yield
        return
    variable = keras.Variable(rate, name="learning_rate", dtype=keras.backend.floatx(), trainable=False)
    variables.insert(1, variable)
    try:
        yield
    finally:  # by identity: a Keras variable's == compares values
        del variables[next(index for index, each in enumerate(variables) if each is variable)]


def reached_rate(optimizer) -> float | None:
    """The learning rate `optimizer` gives at its present step (Keras evaluates its schedule there)."""
    return None if optimizer is None else float(keras.ops.convert_to_numpy(optimizer.learning_rate))


def plain_compile_config(config: dict[str, Any], rate: float | None = None) -> dict[str, Any]:
    """A serialized compile config with Keras's public optimizer class and Keras's own loss and metrics; `rate`
    (the optimizer's present learning rate) in place of a schedule of the suite's."""
    plain = dict(config)
    plain["optimizer"] = public_optimizer(config.get("optimizer"))
    schedule = _learning_rate(plain)
    if rate is not None and isinstance(schedule, dict) and str(schedule.get("registered_name", "")).startswith(SUITES):
        optimizer = plain["optimizer"]
        plain["optimizer"] = {**optimizer, "config": {**optimizer["config"], "learning_rate": rate}}
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
