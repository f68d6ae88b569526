"""Keras's Adam update as PyTorch's fused Adam kernel: one pass over each weight instead of ten (torch backend only).

Keras's Adam on the torch backend updates the weights with ten `torch._foreach_*`
calls (m, v, their products and quotients, each a pass over every weight and a
new temporary), inside `optimizer.apply`'s checks for clipping, weight decay,
EMA, gradient accumulation and constraints. On the benchmark's small language
model that was 2 ms of a 16 ms step. `torch._fused_adam_` does the whole update
in one pass per tensor.

The two formulas differ only in where epsilon goes. Keras (as the Adam paper's
"epsilon hat"):

    m ← β1·m + (1−β1)·g;   v ← β2·v + (1−β2)·g²
    w ← w − lr·√(1−β2^t)/(1−β1^t) · m / (√v + ε)

PyTorch divides √v by √(1−β2^t) before adding its epsilon:

    w ← w − lr/(1−β1^t) · m / (√v/√(1−β2^t) + ε')

which is Keras's update exactly when ε' = ε/√(1−β2^t): the kernel gets that
epsilon at every step. Keras also computes its step size lr·√(1−β2^t)/(1−β1^t)
in float32, where 1−β2^t loses about five digits early on (1 − 0.999 in float32
is off by 1e-5); the kernel computes its bias corrections in double. So the
kernel gets the learning rate that makes its step size Keras's float32 one, and
the weights agree with Keras's to float32 rounding. t is the optimizer's
`iterations` + 1, advanced as Keras's `apply` advances it, so checkpoints and a
later Keras fit carry on from the same state.

`fused_update` returns None (use `optimizer.apply`) for anything but a plain
keras Adam: amsgrad, weight decay, clipping, EMA, loss scaling, gradient
accumulation, a learning-rate schedule, weight constraints, non-float32 weights,
or weights on a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import keras
import numpy as np
import torch


def unsupported(optimizer, weights) -> str | None:
    """Why the fused update cannot stand in for this optimizer's `apply` (None when it can). Checked in order."""
    checks = [
        (lambda: not _is_keras_adam(optimizer), "not keras's Adam"),
        (lambda: optimizer.amsgrad, "amsgrad"),
        (lambda: optimizer.weight_decay, "weight decay"),
        (lambda: optimizer.clipnorm or optimizer.clipvalue or optimizer.global_clipnorm, "gradient clipping"),
        (lambda: optimizer.use_ema, "EMA"),
        (lambda: optimizer.loss_scale_factor, "loss scaling"),
        (lambda: optimizer.gradient_accumulation_steps, "gradient accumulation"),
        (lambda: not isinstance(optimizer._learning_rate, keras.Variable), "a learning-rate schedule"),
        (lambda: any(w.constraint is not None for w in weights), "a weight constraint"),
        (lambda: any(w.dtype != "float32" or getattr(w, "overwrite_with_gradient", False) for w in weights),
         "a weight that is not plain float32"),
        # The learning rate and epsilon below are matched to the CPU kernel's bias corrections
        # (computed in double); the GPU kernel's were not checked, so a GPU keeps Keras's update.
        (lambda: any(w.value.device.type != "cpu" for w in weights), "weights not on the CPU"),
    ]
    return next((reason for failed, reason in checks if failed()), None)


def _is_keras_adam(optimizer) -> bool:
    """keras.optimizers.Adam itself (on torch, its backend subclass), not AdamW or a user's subclass."""
    kind = type(optimizer)
    return (isinstance(optimizer, keras.optimizers.Adam) and kind.__name__ == "Adam"
            and kind.__module__.startswith("keras."))


def fused_update(optimizer, weights: list) -> Callable[[list], None] | None:
    """A function that applies one Adam step to `weights` from their gradients, as `optimizer.apply` would; or None."""
    if unsupported(optimizer, weights) is not None:
        return None
    if not optimizer.built:
        optimizer.build(weights)
    parameters = [w.value for w in weights]
    slots = [optimizer._get_variable_index(w) for w in weights]
    momentums = [optimizer._momentums[i].value for i in slots]
    velocities = [optimizer._velocities[i].value for i in slots]
    beta_1, beta_2, epsilon = float(optimizer.beta_1), float(optimizer.beta_2), float(optimizer.epsilon)
    step = torch.zeros((), dtype=torch.float32, device=parameters[0].device)  # the kernel reads t from it
    iterations = optimizer.iterations.value  # the variable's own tensor, which loading a checkpoint fills in place

    def update(gradients: list) -> None:
        # t as Keras's Adam takes it: iterations + 1 (read on the CPU: one small copy per step on a GPU).
        t = int(iterations) + 1
        step.fill_(t)
        kernel_correction_1, kernel_correction_2 = 1.0 - beta_1**t, math.sqrt(1.0 - beta_2**t)  # as the kernel has them
        torch._fused_adam_(
            parameters, list(gradients), momentums, velocities, [], [step] * len(parameters),
            lr=_keras_step_size(optimizer, t) * kernel_correction_1 / kernel_correction_2,
            beta1=beta_1, beta2=beta_2, weight_decay=0.0,
            eps=epsilon / kernel_correction_2,  # Keras's epsilon, moved inside PyTorch's bias correction
            amsgrad=False, maximize=False,
        )
        iterations.add_(1)  # assign_add's result, in place (Keras's assign copies into the same tensor)

    return update


def _keras_step_size(optimizer, t: int) -> float:
    """lr·√(1−β2^t)/(1−β1^t) in float32, operation by operation as Keras's torch Adam computes it."""
    one = np.float32(1.0)
    learning_rate = np.float32(optimizer.learning_rate.value.detach())
    beta_1_power = np.power(np.float32(optimizer.beta_1), np.float32(t))
    beta_2_power = np.power(np.float32(optimizer.beta_2), np.float32(t))
    return float(learning_rate * np.sqrt(one - beta_2_power) / (one - beta_1_power))
