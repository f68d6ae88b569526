"""The evaluation stage: a trained model and the test set become rows of metrics.

`rows` is the default evaluator (classifier, tagger: the run's metrics on the
test predictions); `language_model` and `seq2seq` evaluate their model kinds
(with generation and decoders); `metrics`, `tagging` and `seq2seq_metrics`
compute the numbers from predictions in numpy; `gradient_flow` measures the
model itself (the `gradient_flow` diagnostic, before and after training). It
may import tasks, models, decoding, training (for `predict`), backends (for
`autodiff`), spec.sections/runs and the catalog's metric registry; never
execution or reporting.
"""
