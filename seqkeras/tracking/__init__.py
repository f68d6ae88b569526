"""Where a run's numbers go besides its folder: TensorBoard event files (`tensorboard`, written by the
training loop into the run's folder) and an MLflow tracking store (`mlflow_tracking`, fed each finished
record by the experiment runner; `export` for results that exist). It may import the results stage and
the foundations (errors); TensorBoard and MLflow themselves are imported only when used."""
