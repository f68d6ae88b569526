"""The training stage: compile, fit and predict a Keras model for a run (`trainer`),
with the suite's loss and accuracy (`losses`).

It owns checkpoints for resuming, early stopping and the choice between
Keras's fit and the torch backend's lean loop. `settings` is the schema of the
`train:` section, `predictions` what a trained model predicted, the input of
every metric, and `progress` what a run says while it trains. Never the spec, evaluation, execution or reporting.

May import: errors, problems, registry, backends, tasks, results.
"""
