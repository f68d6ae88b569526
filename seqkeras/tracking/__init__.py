"""Where a run's numbers go besides its folder: TensorBoard event files (`tensorboard`, written by the
training loop into the run's folder) and an MLflow tracking store (`mlflow_tracking`, fed each finished
record by the experiment runner; `mlflow_store` checks and locks the store, `mlflow_records` turns a record
into MLflow's params and metrics; `export` for results that exist). TensorBoard and MLflow themselves are
imported only when used; the trainer is handed its event writer, it does not import this stage.

May import: errors, results, spec.
"""
