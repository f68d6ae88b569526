"""Kept models: each training run's trained model, saved beside its record, and read back for use.

It owns the files that make a run folder's model usable without the suite's
training code: `model.keras` (Keras's native format; `model.ngram.json` for the
count-based n-gram model, which is not a Keras model) and `preprocessing.json`
(how a text becomes the ids the model reads, and its outputs names), written by
`saving.keep` at the end of training and read by `saving.load_model`, which
gives a `KeptModel` once `consistency` finds the model fits its preprocessing (its sizes as its model kind
reads them: `ModelKind.model_shape`); `plain_keras` makes the file name Keras's own classes wherever
one computes the same function (a fused layer as Keras's, Keras's loss and optimizer), so plain
`keras.saving.load_model` reads it on any backend; `export` writes a kept model for serving
(ONNX, SavedModel) with its preprocessing as JSON; `predict` turns new inputs into a table of its outputs
(`seqkeras predict`), through the evaluators' decoding and generation;
`reevaluation` evaluates a kept run again with more decoders or metrics
(`seqkeras evaluate`), adding to its record and files; `selection` says which
runs of an experiment's results folder a user means (matrix values, a seed, the
best by a metric), for `predict`, `evaluate` and `load_model`.
`preprocessing` is plain Python (no Keras). (What makes the suite's Keras
classes findable by `keras.saving.load_model` is `backends.serializable`.) It reads a
results folder through results' safe readers and rebuilds a run through the spec
and the catalog: the stages below execution.

May import: errors, problems, user_files, registry, yaml_reader, backends, tasks, models, decoding, evaluation, results,
catalog, spec.
"""
