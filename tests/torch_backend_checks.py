"""The torch backend's fast paths versus Keras's own; prints one JSON document.

    .venv/bin/python tests/torch_backend_checks.py

tests/test_fast_rnn.py runs this in a subprocess (pytest's process already has
Keras on TensorFlow) and asserts on the JSON. It checks the fused recurrent
layers (seqkeras/layers/fused_rnn.py) against Keras's layers with the same
weights (outputs, final states, gradients with respect to the inputs and every
weight: the largest difference, relative to each tensor's scale where that
exceeds 1), when they fall back and what they say, and the loss and accuracy of
seqkeras/losses.py against Keras's own, and the lean training loop
(seqkeras/lean_loop.py, with adam.py) against Keras's fit: history
and weights after the same epochs, and the models it leaves to Keras's fit.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "torch"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from seqkeras.backends import runtime  # noqa: E402
from seqkeras.backends.torch import (
    fused_dense,
    fused_rnn,  # noqa: E402
)

KERAS = {"simple_rnn": keras.layers.SimpleRNN, "lstm": keras.layers.LSTM, "gru": keras.layers.GRU}
BATCH, STEPS, FEATURES, UNITS = 4, 6, 3, 5
# Right padding, with one full row and one row of padding only.
LENGTHS = [6, 3, 1, 0]


def padded_mask(lengths=LENGTHS) -> torch.Tensor:
    return torch.arange(STEPS)[None, :] < torch.tensor(lengths)[:, None]


def twins(kind: str, wrap=None, **options):
    """Keras's layer and the fused one, built, with the same weights."""
    keras.utils.set_random_seed(0)
    generic = KERAS[kind](UNITS, **options)
    fused = fused_rnn.FUSED[KERAS[kind]](UNITS, **options)
    if wrap:
        generic, fused = wrap(generic), wrap(fused)
    for layer in (generic, fused):
        layer.build((BATCH, STEPS, FEATURES))
    fused.set_weights(generic.get_weights())
    return generic, fused


def outputs_and_gradients(layer, x: np.ndarray, mask, training=False, initial_state=None):
    """Every output (sequence and states) and the gradients of a fixed random projection of them."""
    inputs = torch.tensor(x, requires_grad=True)
    outputs = layer(inputs, mask=mask, training=training, initial_state=initial_state)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    generator = torch.Generator().manual_seed(1)
    loss = sum((out * torch.randn(out.shape, generator=generator)).sum() for out in outputs)
    weights = [w.value for w in layer.trainable_weights]
    gradients = torch.autograd.grad(loss, [inputs, *weights])
    return [t.detach().numpy() for t in (*outputs, *gradients)]


def largest_difference(generic, fused, mask=None, training=False, initial_state=None) -> float:
    x = np.random.default_rng(0).normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    a = outputs_and_gradients(generic, x, mask, training, initial_state)
    b = outputs_and_gradients(fused, x, mask, training, initial_state)
    return scaled_difference(a, b)


def scaled_difference(expected: list[np.ndarray], found: list[np.ndarray], floor: float = 1.0) -> float:
    """The largest |difference| over all tensors, each relative to its own scale when that is above `floor`.

    Gradients sum over batch and time, so a weight's gradient can be ~10 where float32
    rounding differs in the 7th digit: an absolute 1e-5 would test the sum's size.
    """
    assert [t.shape for t in expected] == [t.shape for t in found]
    return max(float(np.max(np.abs(e - f)) / max(floor, float(np.max(np.abs(e))))) for e, f in zip(expected, found))


def said(call) -> tuple[object, str]:
    """What `call()` returns, and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = call()
    return result, printed.getvalue()


def uses_fused_kernel(layer, mask) -> bool:
    """Whether the layer's call reaches PyTorch's kernel (the generic loop never calls fused_rnn)."""
    from seqkeras.backends.torch import rnn_kernels

    calls = []
    original = rnn_kernels.fused_rnn
    rnn_kernels.fused_rnn = lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs)
    try:
        layer(torch.zeros(BATCH, STEPS, FEATURES), mask=mask)
    finally:
        rnn_kernels.fused_rnn = original
    return bool(calls)


def equivalence() -> dict[str, float]:
    results = {}
    for kind in KERAS:
        for masked in (False, True):
            for backwards in (False, True):
                name = f"{kind} {'masked' if masked else 'unmasked'} {'backwards' if backwards else 'forwards'}"
                pair = twins(kind, return_sequences=True, return_state=True, go_backwards=backwards)
                results[name] = largest_difference(*pair, mask=padded_mask() if masked else None)
        pair = twins(kind, return_sequences=True, zero_output_for_mask=True)
        results[f"{kind} masked zero_output_for_mask"] = largest_difference(*pair, mask=padded_mask())
        for sequences in (True, False):
            pair = twins(kind, wrap=keras.layers.Bidirectional, return_sequences=sequences)
            name = f"{kind} bidirectional masked return_sequences={sequences}"
            results[name] = largest_difference(*pair, mask=padded_mask())
        pair = twins(kind, return_sequences=True, dropout=0.5)
        results[f"{kind} dropout, inference"] = largest_difference(*pair, mask=padded_mask())
        # Seeded layers draw the same dropout mask: the fused layer draws it as Keras's RNN.call does.
        pair = twins(kind, return_sequences=True, dropout=0.5, seed=3)
        results[f"{kind} dropout, training"] = largest_difference(*pair, mask=padded_mask(), training=True)
        # A given initial state: the layer takes Keras's RNN.call, then the fused kernel from that state.
        pair = twins(kind, return_sequences=True, return_state=True)
        states = [torch.tensor(np.random.default_rng(2).normal(size=(BATCH, UNITS)).astype("float32"))
                  for _ in range(2 if kind == "lstm" else 1)]
        results[f"{kind} masked, initial state given"] = largest_difference(
            *pair, mask=padded_mask(), initial_state=states)
    return results


def suite_models() -> dict[str, float]:
    """The suite's builders, 2 stacked layers, right-padded token ids: fast versus Keras's layers (RNNs, Dense)."""
    from seqkeras.models.recurrent import ClassifierParams, LanguageModelParams, build_classifier, build_lm
    from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary

    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 20, size=(BATCH, STEPS)).astype("int32")
    tokens[padded_mask().numpy() == 0] = 0
    data = SequenceData(LANGUAGE_MODELING, tokens, tokens, tokens, tokens, Vocabulary([f"w{i}" for i in range(20)]))
    results = {}
    for kind in KERAS:
        for label, build, params in [
            ("lm", build_lm, LanguageModelParams(cell=kind, units=UNITS, layers=2, embedding_dim=FEATURES)),
            ("bidirectional classifier", build_classifier,
             ClassifierParams(cell=kind, units=UNITS, layers=2, embedding_dim=FEATURES, bidirectional=True)),
        ]:
            keras.utils.set_random_seed(0)
            fused = build(params, data)
            generic = keras_layers_only(build, params, data)
            generic.set_weights(fused.get_weights())
            fast = (fused_rnn.FusedRNNMixin, fused_dense.FusedDense)
            assert sum(isinstance(layer, fast) for layer in _all_layers(fused)) >= 3
            assert not any(isinstance(layer, fast) for layer in _all_layers(generic))
            results[f"{kind} {label}"] = _model_difference(generic, fused, tokens)
    return results


def keras_layers_only(build, params, data):
    """The same model built on Keras's own recurrent and Dense layers."""
    originals = fused_rnn.layer_class, fused_dense.layer_class
    fused_rnn.layer_class = lambda cell_class: cell_class
    fused_dense.layer_class = lambda: keras.layers.Dense
    try:
        return build(params, data)
    finally:
        fused_rnn.layer_class, fused_dense.layer_class = originals


def _all_layers(model):
    for layer in model.layers:
        yield layer
        yield from (getattr(layer, name) for name in ("forward_layer", "backward_layer") if hasattr(layer, name))


def _model_difference(generic, fused, tokens) -> float:
    found = []
    for model in (generic, fused):
        probabilities = model(torch.tensor(tokens))
        loss = -torch.log(probabilities).mean()
        gradients = torch.autograd.grad(loss, [w.value for w in model.trainable_weights])
        found.append([probabilities.detach().numpy(), *(g.numpy() for g in gradients)])
    # Probabilities ~1/20 and gradients ~1e-3: relative to each tensor's own scale, however small.
    return scaled_difference(*found, floor=1e-12)


def fallbacks() -> dict[str, object]:
    """Where the fused path cannot apply, the layer takes Keras's loop (same numbers) and says why, once."""
    runtime.NOTED.clear()
    results = {}
    _, fused = twins("lstm", return_sequences=True, recurrent_dropout=0.3)
    results["recurrent_dropout reason"] = fused.fused_blocker()
    results["recurrent_dropout uses fused kernel"], results["recurrent_dropout note"] = said(
        lambda: uses_fused_kernel(fused, padded_mask()))
    _, results["recurrent_dropout note again"] = said(lambda: uses_fused_kernel(fused, padded_mask()))
    generic, fused = twins("gru", return_sequences=True)
    holes = torch.tensor([[True, False, True, True, False, False]] * BATCH)  # a masked step between real ones
    results["mask with holes uses fused kernel"], results["mask with holes note"] = said(
        lambda: uses_fused_kernel(fused, holes))
    results["mask with holes difference"] = largest_difference(generic, fused, mask=holes)
    results["right padding uses fused kernel"] = uses_fused_kernel(fused, padded_mask())
    return results


def training_mode() -> dict[str, object]:
    """Dropout in training mode changes the fused layer's output (the draws are compared in `equivalence`)."""
    _, fused = twins("lstm", return_sequences=True, dropout=0.5, seed=3)
    x = np.random.default_rng(0).normal(size=(BATCH, STEPS, FEATURES)).astype("float32")
    inference, training = (outputs_and_gradients(fused, x, padded_mask(), mode) for mode in (False, True))
    return {"dropout, training, changes the output": scaled_difference(inference, training) > 0.01}


def softmax_loss_and_accuracy() -> dict[str, object]:
    """softmax_training's loss and accuracy against Keras's, on probabilities that carry their logits."""
    from seqkeras.training import losses
    from seqkeras.training.trainer import loss_and_metrics

    results = {}
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 7, generator=generator) * 3
    logits[0, 0, 2] = -200.0  # its probability underflows to 0: the loss must come from the logits
    target = torch.randint(0, 7, (3, 4), generator=generator)
    target[0, 0] = 2
    found = []
    for loss_of in (lambda z: losses.softmax_crossentropy(target, keras.activations.softmax(z)),
                    lambda z: keras.losses.sparse_categorical_crossentropy(target, z, from_logits=True)):
        z = logits.clone().requires_grad_(True)
        loss = loss_of(z)
        (gradient,) = torch.autograd.grad((loss * torch.arange(12.0).reshape(3, 4)).sum(), [z])
        found.append([loss.detach().numpy(), gradient.numpy()])
    results["loss and gradient"] = scaled_difference(found[1], found[0])
    results["underflowed loss"] = float(found[0][0][0, 0])

    # The lean loop's variant: the same loss and gradient, the gradient written over the probabilities.
    z = logits.clone().requires_grad_(True)
    probabilities = keras.activations.softmax(z)
    loss = losses.softmax_crossentropy(target, probabilities, reuse_probabilities=True)
    (gradient,) = torch.autograd.grad((loss * torch.arange(12.0).reshape(3, 4)).sum(), [z])
    results["reused probabilities: loss and gradient"] = scaled_difference(
        found[0], [loss.detach().numpy(), gradient.numpy()])
    results["reused probabilities hold the gradient"] = bool(torch.equal(probabilities.detach(), gradient))

    probabilities = torch.tensor([[0.2, 0.4, 0.4], [0.4, 0.4, 0.2], [0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])
    labels = torch.tensor([2, 0, 1, 0])  # a tie lost to an earlier index, a tie won, a miss, a hit
    ours = losses.sparse_accuracy(labels, probabilities).numpy().tolist()
    keras_own = keras.metrics.sparse_categorical_accuracy(labels, probabilities).numpy().tolist()
    results["accuracy"], results["keras accuracy"] = ours, keras_own

    # One training step of an LM with padding: Keras's loss and metric vs the suite's, same weights.
    from seqkeras.models.recurrent import LanguageModelParams, build_lm
    from seqkeras.tasks.base import LANGUAGE_MODELING, SequenceData, Vocabulary
    from seqkeras.training.trainer import token_weights

    tokens = np.random.default_rng(1).integers(1, 20, size=(BATCH, STEPS)).astype("int32")
    tokens[padded_mask().numpy() == 0] = 0
    data = SequenceData(LANGUAGE_MODELING, tokens, tokens, tokens, tokens, Vocabulary([f"w{i}" for i in range(20)]))
    models, initial = [], None
    for compiled in ({"loss": "sparse_categorical_crossentropy", "weighted_metrics": ["accuracy"]}, loss_and_metrics()):
        model = build_lm(LanguageModelParams(cell="gru", units=UNITS, embedding_dim=FEATURES), data)
        model.compile(optimizer=keras.optimizers.Adam(1e-2), **compiled)
        initial = initial or model.get_weights()
        model.set_weights(initial)
        weights = token_weights(tokens, LANGUAGE_MODELING)
        logs = model.train_on_batch(tokens, np.roll(tokens, -1, axis=1), sample_weight=weights, return_dict=True)
        models.append((model, logs))
    (keras_model, keras_logs), (suite_model, suite_logs) = models
    results["train step loss"] = [keras_logs["loss"], suite_logs["loss"]]
    results["train step accuracy"] = [keras_logs["accuracy"], suite_logs["accuracy"]]
    results["train step weights"] = scaled_difference(keras_model.get_weights(), suite_model.get_weights())
    return results


def serialization() -> dict[str, object]:
    results = {}
    for layer in (fused_rnn.FusedGRU(UNITS, return_sequences=True, go_backwards=True, name="g"),
                  fused_dense.FusedDense(UNITS, activation="softmax", name="d")):
        copy = keras.layers.deserialize(keras.layers.serialize(layer))
        results[type(layer).__name__] = type(copy) is type(layer) and copy.get_config() == layer.get_config()
    return results


def _token_data(problem: str, rows: int = 11, classes: int = 20):
    """Right-padded token ids of every length 0..STEPS and their targets (next token, tags or a class)."""
    from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, SequenceData, Vocabulary

    rng = np.random.default_rng(2)
    tokens = rng.integers(1, 20, size=(rows, STEPS)).astype("int32")
    tokens[np.arange(STEPS)[None, :] >= (np.arange(rows) % (STEPS + 1))[:, None]] = 0
    if problem == LANGUAGE_MODELING:
        targets, labels = np.concatenate([tokens[:, 1:], np.zeros((rows, 1), "int32")], axis=1), None
    elif problem == CLASSIFICATION:
        targets, labels = rng.integers(0, 3, size=rows).astype("int32"), Vocabulary(["a", "b", "c"])
    else:  # tagging: tags 1..3 on real tokens, 0 on padding
        targets, labels = np.where(tokens > 0, tokens % 3 + 1, 0).astype("int32"), Vocabulary(["<pad>", "a", "b", "c"])
    vocabulary = Vocabulary([f"w{i}" for i in range(classes)])
    return SequenceData(problem, tokens, targets, tokens[:2], targets[:2], vocabulary, labels)


def _fit_both_ways(build, params, data, train) -> dict[str, object]:
    """trainer.fit through Keras's fit and through the lean loop, from the same initial weights."""
    from seqkeras.backends.torch import lean_loop
    from seqkeras.training import trainer

    runs = {}
    for path in ("keras", "lean"):
        keras.utils.set_random_seed(0)
        model = build(params, data)
        epochs = []
        original_loop, original_epoch = trainer.lean_loop, lean_loop.LeanLoop.train_epoch
        if path == "keras":
            trainer.lean_loop = lambda model: None
        lean_loop.LeanLoop.train_epoch = lambda self, *a, **k: epochs.append(1) or original_epoch(self, *a, **k)
        try:
            history, _ = trainer.fit(model, data, train, seed=3)
        finally:
            trainer.lean_loop, lean_loop.LeanLoop.train_epoch = original_loop, original_epoch
        runs[path] = (history, model, len(epochs))
    (keras_history, keras_model, _), (lean_history, lean_model, lean_epochs) = runs.values()
    return {
        "columns": [list(keras_history.columns), list(lean_history.columns)],
        "lean epochs": lean_epochs,
        "history": scaled_difference([keras_history.to_numpy()], [lean_history.to_numpy()]),
        "weights": scaled_difference(keras_model.get_weights(), lean_model.get_weights()),
        "optimizer": scaled_difference([np.asarray(v) for v in keras_model.optimizer.variables],
                                       [np.asarray(v) for v in lean_model.optimizer.variables]),
    }


def lean_training() -> dict[str, object]:
    """The lean loop versus Keras's fit (same weights and batches), resuming, fused Adam, and where it steps aside."""
    import tempfile

    from seqkeras.backends.torch import adam, lean_loop
    from seqkeras.models.recurrent import (
        ClassifierParams,
        LanguageModelParams,
        TaggerParams,
        build_classifier,
        build_lm,
        build_tagger,
    )
    from seqkeras.spec.sections import EarlyStoppingSpec, OptimizerSpec, TrainSpec
    from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, TAGGING
    from seqkeras.training import trainer

    results = {}
    lm_data = _token_data(LANGUAGE_MODELING)
    lm_params = LanguageModelParams(cell="lstm", units=UNITS, embedding_dim=FEATURES)
    # 11 rows: 2 held out for validation, 9 trained in batches of 4, 4 and 1.
    lm_train = TrainSpec(epochs=3, batch_size=4, validation_split=0.2, verbose=0,
                         optimizer=OptimizerSpec(learning_rate=0.05),
                         early_stopping=EarlyStoppingSpec(monitor="val_loss", patience=1))
    results["lm, padding weights, validation, early stopping (fused adam)"] = _fit_both_ways(
        build_lm, lm_params, lm_data, lm_train)

    def regularized_lm(params, data):
        model = build_lm(params, data)
        model.layers[-1].kernel.regularizer = keras.regularizers.L2(0.1)  # a loss the layer chain's calls don't add
        return model

    results["lm, l2 on the output kernel (fused adam)"] = _fit_both_ways(
        regularized_lm, lm_params, lm_data, lm_train.model_copy(update={"early_stopping": None}))
    results["tagger, adam with clipnorm (keras's apply)"] = _fit_both_ways(
        build_tagger, TaggerParams(cell="gru", units=UNITS, embedding_dim=FEATURES), _token_data(TAGGING),
        TrainSpec(epochs=2, batch_size=4, verbose=0, optimizer=OptimizerSpec(learning_rate=0.05, clipnorm=0.1)))
    results["classifier, sgd with momentum"] = _fit_both_ways(
        build_classifier, ClassifierParams(cell="simple_rnn", units=UNITS, embedding_dim=FEATURES),
        _token_data(CLASSIFICATION),
        TrainSpec(epochs=2, batch_size=4, verbose=0,
                  optimizer=OptimizerSpec(name="sgd", learning_rate=0.1, momentum=0.9)))

    # Interrupted after epoch 1 (the checkpoint kept), resumed for epoch 2: the weights of an uninterrupted run.
    two_epochs = lm_train.model_copy(update={"epochs": 2, "early_stopping": None})
    final = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, epochs in [("uninterrupted", [2]), ("resumed", [1, 2])]:
            keras.utils.set_random_seed(0)
            model = build_lm(lm_params, lm_data)
            clear = trainer.Checkpoint.clear
            trainer.Checkpoint.clear = lambda self: None  # as if the process had been killed after the epoch
            try:
                for count in epochs:
                    if count == 2 and name == "resumed":
                        keras.utils.set_random_seed(0)
                        model = build_lm(lm_params, lm_data)  # a new process: fresh model, state from the checkpoint
                    spec = two_epochs.model_copy(update={"epochs": count})
                    _, printed = said(lambda: trainer.fit(model, lm_data, spec, seed=3,
                                                           checkpoint_dir=Path(folder) / name))
            finally:
                trainer.Checkpoint.clear = clear
            final[name] = (model.get_weights(), printed)
    results["resume"] = {"weights": scaled_difference(final["uninterrupted"][0], final["resumed"][0]),
                         "said": final["resumed"][1].strip()}

    # Keras's epsilon placement, where it matters: gradients far below epsilon.
    gradients = [torch.full((3, 2), 1e-9), torch.full((2,), -1e-10)]
    found = []
    for kind in ("keras", "fused", "pytorch"):
        variables = [keras.Variable(np.zeros((3, 2), "float32")), keras.Variable(np.zeros(2, "float32"))]
        optimizer = keras.optimizers.Adam(0.1)
        optimizer.build(variables)
        update = adam.fused_update(optimizer, variables)
        torch_optimizer = torch.optim.Adam([v.value for v in variables], lr=0.1, eps=optimizer.epsilon)
        for _ in range(3):
            with torch.no_grad():
                if kind == "keras":
                    optimizer.apply([g.clone() for g in gradients], variables)
                elif kind == "fused":
                    update([g.clone() for g in gradients])
            if kind == "pytorch":
                for variable, gradient in zip(variables, gradients):
                    variable.value.grad = gradient.clone()
                torch_optimizer.step()
        found.append([np.asarray(v) for v in variables])
    results["adam steps, tiny gradients"] = {"fused vs keras": scaled_difference(found[0], found[1], floor=1e-12),
                                             "pytorch's epsilon vs keras": scaled_difference(found[0], found[2],
                                                                                             floor=1e-12)}
    reasons = {}
    for name, optimizer in [("adamw", keras.optimizers.AdamW()), ("clipnorm", keras.optimizers.Adam(clipnorm=1.0)),
                            ("amsgrad", keras.optimizers.Adam(amsgrad=True)), ("adam", keras.optimizers.Adam())]:
        reasons[name] = adam.unsupported(optimizer, [])
    results["fused adam unsupported"] = reasons

    # Models the lean loop leaves to Keras's fit, and what it says (once).
    runtime.NOTED.clear()
    tagging = _token_data(TAGGING)
    crf = build_tagger(TaggerParams(cell="gru", units=UNITS, embedding_dim=FEATURES, output="crf"), tagging)
    crf.compile(optimizer="adam")
    tokens = keras.Input((None,), dtype="int32")
    two_inputs = keras.Model([tokens, keras.Input((None,), dtype="int32")],
                             keras.layers.Dense(3, activation="softmax")(keras.layers.Embedding(20, 4)(tokens)))
    two_inputs.compile(optimizer="adam", **trainer.loss_and_metrics())
    keras_loss = build_lm(lm_params, lm_data)
    keras_loss.compile(optimizer="adam", loss="sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
    suite_lm = build_lm(lm_params, lm_data)
    suite_lm.compile(optimizer="adam", **trainer.loss_and_metrics())
    fallbacks = {}
    for name, model in [("crf", crf), ("two inputs", two_inputs), ("keras's loss", keras_loss), ("suite lm", suite_lm)]:
        fallbacks[f"{name} reason"] = lean_loop.unsupported(model)
        loop, fallbacks[f"{name} note"] = said(lambda: trainer.lean_loop(model))
        fallbacks[f"{name} lean"] = loop is not None
    _, fallbacks["crf note again"] = said(lambda: trainer.lean_loop(crf))
    results["fallbacks"] = fallbacks
    return results


def layer_chain() -> dict[str, object]:
    """LayerChain (layer calls without Layer.__call__) versus the model's own call, and the models it leaves alone."""
    from seqkeras.backends.torch import layer_chain as chain_module
    from seqkeras.models import nplm, transformer
    from seqkeras.models.recurrent import (
        ClassifierParams,
        LanguageModelParams,
        TaggerParams,
        build_classifier,
        build_lm,
        build_tagger,
    )
    from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, TAGGING

    data = _token_data(LANGUAGE_MODELING)
    tokens = data.x_train.astype("int64")  # the models' Input is int32: both paths convert
    models = {
        "tagger, 2 bidirectional gru layers with dropout": build_tagger(TaggerParams(
            cell="gru", units=UNITS, layers=2, embedding_dim=FEATURES, bidirectional=True, dropout=0.4),
            _token_data(TAGGING)),
        "lm, 2 lstm layers with dropout": build_lm(LanguageModelParams(
            cell="lstm", units=UNITS, layers=2, embedding_dim=FEATURES, dropout=0.4), data),
        "classifier, simple_rnn": build_classifier(ClassifierParams(
            cell="simple_rnn", units=UNITS, embedding_dim=FEATURES, dropout=0.4), _token_data(CLASSIFICATION)),
        "nplm (conv1d, dropout layer)": nplm.build(nplm.NplmParams(order=3, embedding_dim=4, units=6, dropout=0.4), data),
    }
    results = {}
    for name, model in models.items():
        reason = chain_module.unsupported(model)
        results[f"{name} reason"] = reason
        chain = chain_module.LayerChain(model)
        for training in (False, True):
            found = []
            for forward in (model, chain):
                # The same dropout draws: layers without a seed draw from torch's global generator.
                generator = torch.get_rng_state()
                outputs = forward(torch.tensor(tokens), training=training)
                torch.set_rng_state(generator)
                mask = getattr(outputs, "_keras_mask", None)
                loss = -torch.log(outputs).mean()
                gradients = torch.autograd.grad(loss, [w.value for w in model.trainable_weights])
                found.append([outputs.detach().numpy(), *(g.numpy() for g in gradients)]
                             + ([] if mask is None else [mask.numpy().astype("float32")]))
            results[f"{name}, training={training}"] = {
                "difference": scaled_difference(*found, floor=1e-12),
                "tensors": [len(found[0]), len(found[1])],
            }
        results[f"{name} dropout changes the output"] = bool(
            not torch.equal(chain(torch.tensor(tokens), training=True), chain(torch.tensor(tokens), training=False)))

    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(20, 4)(inputs)
    shared = keras.layers.Dense(4, name="shared")
    regularized = keras.layers.Dense(4, activity_regularizer="l2", name="regularized")
    leave_alone = {
        "transformer": transformer.build_lm(transformer.TransformerParams(
            layers=1, num_heads=1, embedding_dim=8, intermediate_dim=8), data),
        "shared layer": keras.Model(inputs, shared(shared(embedded))),
        "activity regularizer": keras.Model(inputs, regularized(embedded)),
        "sequential": keras.Sequential([keras.Input((None,), dtype="int32"), keras.layers.Embedding(20, 4)]),
    }
    results["left alone"] = {name: chain_module.unsupported(model) for name, model in leave_alone.items()}
    return results


def seeding() -> dict[str, bool]:
    """runtime.set_random_seed draws what keras.utils.set_random_seed draws (without seeding TensorFlow)."""
    import random

    draws = []
    for seed_with in (keras.utils.set_random_seed, runtime.set_random_seed):
        seed_with(7)
        draws.append([random.random(), float(np.random.rand()), float(torch.rand(1)),
                      float(keras.random.normal(()))])  # Keras's global seed generator, recreated from the seed
    return {"same draws": draws[0] == draws[1], "draws differ from each other": len(set(draws[0])) == 4}


if __name__ == "__main__":
    torch.set_num_threads(1)  # small tensors: threads only add noise (and the CPU is shared)
    report = {"equivalence": equivalence(), "suite models": suite_models(), "fallbacks": fallbacks(),
              "training": training_mode(), "serialization": serialization(), "softmax": softmax_loss_and_accuracy(),
              "lean training": lean_training(), "layer chain": layer_chain(),
              "seeding": seeding()}
    print(json.dumps(report))
