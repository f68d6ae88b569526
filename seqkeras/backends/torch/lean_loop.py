"""One epoch of training (and validation) for the suite's softmax models on the torch backend, without Keras's fit loop.

Keras's `fit` on the torch backend spends milliseconds per step around the
arithmetic: the data adapter's torch DataLoader and callbacks (dispatched to a
thread pool), the compiled loss and metric containers (trees of tracker objects,
with dtype checks and conversions per call), and an Adam update of ten passes
over the weights inside `optimizer.apply`'s checks. On the benchmark's small
language model (LSTM, batch 16, 32 units; issue 9) Keras's fit took about 15.5 ms
a step where the plain PyTorch script takes 12: about 1 ms in the fit loop,
0.3-1.3 ms in the loss and metric containers, 1.1-1.7 ms in the optimizer.

`LeanLoop` runs the same step with less around it:
- the batches are slices of the epoch's arrays as torch tensors (no DataLoader);
- the forward pass is the Keras model's layers' own calls (masks, dropout as in fit), chained
  without `Layer.__call__`'s bookkeeping where that gives the same result (`layer_chain.py`);
- the loss is the compiled `softmax_crossentropy` (training/losses.py) reduced exactly as Keras's
  `reduce_weighted_values` does ("sum_over_batch_size": sample weights times the
  output mask scaled by total/valid, summed, divided by the token count), its
  gradient written over the softmax's output, which the step reads no more;
- the update is Keras's Adam formula, fused (`adam.py`), or the
  optimizer's own `apply` for any other optimizer or option;
- loss and accuracy are accumulated on the device, as Keras's Mean trackers
  accumulate them (the loss weighted by batch size, the accuracy by the weights
  its metric sees on torch, see `_loss_and_accuracy`), and read once per epoch.

It applies only to what the suite compiles with `training.loss_and_metrics()`
on torch: one output (from one input, or a dict of them), that loss and that accuracy, Keras's own
`train_step`, `test_step` and `compute_loss` (regularization and `add_loss`
losses are added as `compute_loss` adds them). `unsupported(model)` says why
not otherwise, and `training.fit` then uses Keras's fit. This module imports
torch: import it only on the torch backend.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import torch
from keras.src.models.functional import Functional

from seqkeras.backends.losses import SUITE_ACCURACY, SUITE_LOSS, suite_function
from seqkeras.backends.torch import adam, layer_chain


def unsupported(model: keras.Model) -> str | None:
    """Why the lean loop cannot train `model` as Keras's fit would (None when it can). Checked in order."""
    checks = [
        # The loop takes the weights it updates when it is made: an unbuilt model (a Sequential without an
        # Input) has none yet, and Keras's fit builds it from the first batch.
        (lambda: not model.built, "the model is not built yet"),
        (lambda: not model.trainable_weights, "the model has no trainable weights"),
        (lambda: any(getattr(type(model), name) is not getattr(keras.Model, name)
                     for name in ("train_step", "test_step", "compute_loss", "compute_metrics")),
         "the model has its own training step, loss or metrics"),  # a CRF tagger's likelihood (Abilities.own_loss)
        (lambda: isinstance(model, Functional) and len(model.outputs) != 1, "the model has not one output"),
        (lambda: model.loss is None or model.loss is not suite_function(SUITE_LOSS),
         "the model is not compiled with the suite's loss"),
        (lambda: not _is_suite_accuracy(model._compile_metrics), "the model is not compiled with the suite's accuracy"),
        (lambda: model.steps_per_execution != 1 or model.jit_compile, "steps_per_execution or jit_compile is set"),
    ]
    return next((reason for failed, reason in checks if failed()), None)


def _is_suite_accuracy(compiled) -> bool:
    """Compiled with weighted_metrics=[the suite's accuracy] and nothing else (training.loss_and_metrics)."""
    if compiled is None or compiled._user_metrics:
        return False
    metrics = compiled._user_weighted_metrics
    return (isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], keras.metrics.MeanMetricWrapper)
            and metrics[0]._fn is suite_function(SUITE_ACCURACY) and not metrics[0]._fn_kwargs)


class LeanLoop:
    """Trains and evaluates one compiled model, an epoch per call; returns Keras's history values.

    Make it after the weights and optimizer state are loaded (a resumed run):
    the fused update holds the optimizer's slot tensors, which loading fills in place.
    """

    def __init__(self, model: keras.Model):
        self.model = model
        # The model's forward pass: its layers' own calls in a chain where that is exact (the
        # suite's recurrent models), else the model's call.
        self.forward = model if layer_chain.unsupported(model) else layer_chain.LayerChain(model)
        self.weights = model.trainable_weights[:]
        self.parameters = [variable.value for variable in self.weights]  # their tensors, filled in place by loading
        # A chain of layers adds no loss in its call (layer_chain.py), so only weight regularizers can add any.
        self.adds_losses = self.forward is model or any(w.regularizer is not None for w in self.weights)
        # The suite's loss and accuracy, which `unsupported` found the model compiled with.
        self.functions = suite_function(SUITE_LOSS), suite_function(SUITE_ACCURACY)
        # The loss's gradient may then overwrite the softmax's output (training/losses.py): no
        # loss a layer adds in its call can reach it, and the accuracy is taken before `backward`.
        self.reuse_probabilities = self.forward is not model
        # None: the optimizer's own apply (also taken for a step where some weight got no gradient).
        self.update = adam.fused_update(model.optimizer, self.weights)

    def train_epoch(self, x, y, sample_weight, batch_size: int,
                    on_step: Callable[[], None] | None = None) -> dict[str, float]:
        """One pass over (x, y, sample_weight) in order, batch by batch: {"loss", "accuracy"}. on_step: called
        after each step (a progress bar's); it reads no value, so it waits for no kernel."""
        x, y, sample_weight = _tensor(x), _targets(y), _tensor(sample_weight)
        return self.train_batches(((_rows(x, rows), y[rows], sample_weight[rows] if sample_weight is not None else None)
                                   for rows in _batches(len(y), batch_size)), on_step)

    def train_batches(self, batches, on_step: Callable[[], None] | None = None) -> dict[str, float]:
        """One pass over `batches`, each (x, y, sample_weight or None) of arrays or tensors (views of the epoch's,
        from `train_epoch`; batches of their own width, `train.batches: by_length`): {"loss", "accuracy"}."""
        model = self.model
        totals = _Totals()
        model.train()  # torch's module mode, as Keras's fit sets it
        for x, y, batch_weight in batches:
            x, y, batch_weight = _tensor(x), _targets(y), _tensor(batch_weight)  # tensors already: as they are
            y_pred = self.forward(x, training=True)
            loss, accuracy, weight = _loss_and_accuracy(self.functions, y, y_pred, batch_weight,
                                                        self.reuse_probabilities)
            loss = self._with_added_losses(loss)
            for parameter in self.parameters:
                parameter.grad = None
            model.optimizer.scale_loss(loss).backward()  # scaled only with a loss_scale_factor, as in Keras
            gradients = [parameter.grad for parameter in self.parameters]
            with torch.no_grad():
                if self.update is not None and all(gradient is not None for gradient in gradients):
                    self.update(gradients)
                else:
                    model.optimizer.apply(gradients, self.weights)
                totals.add(loss, len(y), accuracy, weight)
            # Free this step's (batch, length, vocabulary) tensors (the softmax, its logits, their
            # gradient) before the next forward allocates its own: fewer fresh pages from the OS.
            del y_pred, loss, accuracy, weight, gradients
            if on_step is not None:
                on_step()
        model.eval()
        return totals.result()

    @torch.no_grad()
    def evaluate(self, x, y, sample_weight, batch_size: int) -> dict[str, float]:
        """Keras's evaluate on (x, y, sample_weight): {"loss", "accuracy"}."""
        x, y, sample_weight = _tensor(x), _targets(y), _tensor(sample_weight)
        totals = _Totals()
        for rows in _batches(len(y), batch_size):
            y_pred = self.forward(_rows(x, rows), training=False)
            batch_weight = sample_weight[rows] if sample_weight is not None else None
            loss, accuracy, weight = _loss_and_accuracy(self.functions, y[rows], y_pred, batch_weight)
            totals.add(self._with_added_losses(loss), rows.stop - rows.start, accuracy, weight)
        return totals.result()

    def _with_added_losses(self, loss):
        """The loss plus the model's regularization and `add_loss` losses, summed as Keras's `compute_loss` sums
        them."""
        added = self.model.losses if self.adds_losses else None
        if not added:
            return loss
        return keras.ops.sum([loss, *(self.model._aggregate_additional_loss(value) for value in added)])


def _tensor(array):
    """The epoch's array (or each of a dict of them: an encoder-decoder's source and decoder input) as one tensor on
    Keras's device (its batches are then views of it)."""
    return None if array is None else keras.tree.map_structure(keras.ops.convert_to_tensor, array)


def _rows(x, rows: slice):
    """A batch of the inputs: a view of the tensor, or of each of a dict of them."""
    return x[rows] if isinstance(x, torch.Tensor) else keras.tree.map_structure(lambda tensor: tensor[rows], x)


def _targets(array):
    """The epoch's integer targets as int64 once, which the loss and accuracy would otherwise convert every batch."""
    return _tensor(array).long()


def _batches(rows: int, batch_size: int):
    return (slice(start, min(start + batch_size, rows)) for start in range(0, rows, batch_size))


def _loss_and_accuracy(functions, y_true, y_pred, sample_weight, reuse_probabilities: bool = False):
    """Keras's compiled loss for the batch, and the accuracy values and weights its Mean tracker would add.

    functions: the compiled (loss, accuracy), the suite's (`unsupported` checks it).

    The same operations in the same order as Keras's `reduce_weighted_values` and
    `apply_mask`, so that the loss (and its gradient) match Keras's to the last bit.
    reuse_probabilities: the loss's backward pass may overwrite y_pred (the accuracy is computed here, before).
    """
    loss_function, accuracy_function = functions
    values = loss_function(y_true, y_pred, reuse_probabilities=reuse_probabilities)
    mask = getattr(y_pred, "_keras_mask", None)
    # None stands for Keras's weights of ones: multiplying by one changes no bit, so it is skipped.
    weight = None if sample_weight is None else sample_weight.to(values.dtype)
    metric_weight = weight
    if mask is not None:
        mask = mask.to(values.dtype)
        total = torch.tensor(float(mask.numel()), dtype=values.dtype, device=values.device)
        valid = mask.sum()
        # Keras's loss: weight × (total / valid) where unmasked, so that the sum over total is a mean over valid.
        scale = torch.where(mask.bool(), torch.where(valid == 0, 0.0, total / valid), 0.0)
        weight = scale if weight is None else weight * scale
        # Keras's metrics weigh by sample weight × mask. But on the torch backend `apply_mask`
        # scales given sample weights *in place* (`sample_weight *= float_mask`) while computing
        # the loss, so its accuracy then sees the loss's weights: each batch's accuracy over its
        # real tokens, counted once per row. The history reproduces that number, as fit gives it.
        metric_weight = weight if sample_weight is not None else mask
    loss = (values if weight is None else values * weight).sum() / values.numel()
    accuracy = accuracy_function(y_true, y_pred)
    return loss, accuracy, metric_weight


class _Totals:
    """Keras's loss tracker (a Mean of the batch losses weighted by batch size) and accuracy Mean, on the device."""

    def __init__(self):
        self.loss = self.rows = self.hits = self.weight = 0.0

    def add(self, loss, rows: int, accuracy, weight) -> None:
        """weight None: each accuracy value counts once (as weights of ones count, in float32 as they do)."""
        self.loss = self.loss + loss.detach() * rows
        self.rows += rows
        if weight is None:
            self.hits = self.hits + accuracy.sum()
            self.weight = self.weight + accuracy.new_tensor(float(accuracy.numel()))
        else:
            self.hits = self.hits + (accuracy * weight).sum()
            self.weight = self.weight + weight.sum()

    def result(self) -> dict[str, float]:
        loss = float(self.loss) / self.rows if self.rows else 0.0
        weight = float(self.weight)
        return {"accuracy": float(self.hits) / weight if weight else 0.0, "loss": loss}  # Keras's key order
