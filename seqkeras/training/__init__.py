"""The training stage: compile, fit and predict a Keras model for a run (`trainer`),
with the suite's loss and accuracy (`losses`).

It owns checkpoints for resuming, early stopping and the choice between
Keras's fit and the torch backend's lean loop. It may import spec.sections,
tasks.base, evaluation.metrics (the `Predictions` it returns), results.folder
(atomic writes) and backends; never execution or reporting.
"""
