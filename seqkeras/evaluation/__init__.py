"""The evaluation stage: a trained model and the test set become rows of metrics.

`metric_catalog` owns the metric registry (`METRICS`, which the catalog
exposes) and the one input type of each problem kind's metrics. `rows` is the
default evaluator (classifier, tagger: the run's metrics on the test
predictions; a classifier's confusion.csv and per_class.csv, from
`classification`), `regression`, `language_model` and `seq2seq` evaluate their model
kinds (with generation and decoders); each makes its problem's input and
computes the run's metrics through the registry. `metrics`, `classification`
(per-class and macro scores), `tagging`, `language_model_metrics`,
`regression_metrics` and `seq2seq_metrics` compute the numbers in numpy;
`gradient_flow` measures the model itself (the `gradient_flow` diagnostic, before and after training);
`settings` is the schema of `evaluate.generate`. It reads a run's spec without
importing the spec stage.

May import: errors, problems, registry, backends, tasks, models, decoding, training, results.
"""
