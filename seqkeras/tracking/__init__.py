"""Where a run's numbers go besides its folder: TensorBoard event files (`tensorboard`, written by the
training loop into the run's folder) and an MLflow tracking store. A run is logged to MLflow while it
trains, by the process that trains it (`mlflow_live`: the run opened as it starts; `mlflow_epochs`, the
Keras callback of its epochs; `mlflow_models`, its kept model as an MLflow logged model); the experiment
runner then hands each finished record to `mlflow_tracking`, which logs what is not in the store yet
(reused runs; `results_logging` for results that exist: `seqkeras track`). `mlflow_store` checks and locks
the store, `mlflow_records` turns a record into MLflow's params and metrics. TensorBoard and MLflow
themselves are imported only when used; the trainer is handed its event writer and callbacks, it does not
import this stage.

May import: errors, results, spec.
"""
