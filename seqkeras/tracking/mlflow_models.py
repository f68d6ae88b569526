"""A run's kept Keras model as an MLflow logged model (MLflow 3's models: `models:/<model id>`).

What `mlflow.keras.log_model` does, in two steps, so that the slow one holds no lock:
`save_keras_model` writes the MLflow model folder (MLmodel, the Keras flavor's `.keras`
file, its requirements) into a staging folder, outside the store's lock; `upload_model`
then creates the logged model from the run, uploads that folder, marks it READY and names
it among the run's outputs. Both go through an explicit `MlflowClient`: MLflow's fluent API
would set this process's tracking URI and active run, which a notebook calling
`seqkeras.run` owns.

The model is saved as `mlflow.keras.log_model` saves one, with its optimizer's state (which
model.keras leaves out, kept.saving): MLflow's loaders compile the model they read, and a
compiled model without that state loads with Keras's warning that it skipped the optimizer's
variables. It is read back by MLflow's own loaders, `mlflow.keras.load_model("models:/<id>")` and
`mlflow.pyfunc.load_model`, in a process that has imported `seqkeras` where the model holds
the suite's own layers; `mlflow.search_logged_models` finds it (its `source_run_id` is the
MLflow run, its tag `seqkeras.run_id` the seqkeras run).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MODEL_NAME = "model"  # MLflow refuses '.', '/' and ':' in a model's name, which run ids may hold


def save_keras_model(model, staging: Path, requirements: list[str]) -> Path:
    """The MLflow model folder of `model` under `staging`, with its input signature and pinned requirements
    (given, so that MLflow does not infer them by loading the model again in a subprocess)."""
    import mlflow.keras

    folder = staging / MODEL_NAME
    mlflow.keras.save_model(model, str(folder), signature=input_signature(model), pip_requirements=requirements)
    return folder


def input_signature(model):
    """MLflow's signature of the model's inputs (any batch size), or None for a model that has none yet."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import Schema, TensorSpec

    try:
        inputs = list(model.inputs)
    except (AttributeError, ValueError):  # a subclassed model that was never called symbolically
        return None
    if not inputs:
        return None
    specs = [TensorSpec(np.dtype(tensor.dtype), (-1, *[-1 if size is None else size for size in tensor.shape[1:]]),
                        getattr(tensor, "name", None) if len(inputs) > 1 else None) for tensor in inputs]
    return ModelSignature(inputs=Schema(specs))


def upload_model(client, experiment_id: str, run_id: str, folder: Path, *, name: str, step: int) -> str:
    """Create the logged model of MLflow run `run_id`, upload the saved `folder` into it, and mark it READY;
    its id. `name` is the seqkeras run's id (a tag); `step` the epoch it was kept at."""
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus
    from mlflow.models import Model

    logged = client.create_logged_model(experiment_id, name=MODEL_NAME, source_run_id=run_id,
                                        tags={"seqkeras.run_id": name}, model_type="keras")
    try:
        described = Model.load(str(folder / "MLmodel"))  # saved before the model had an id: now it has one
        described.model_id = described.model_uuid = logged.model_id
        described.run_id, described.artifact_path = run_id, logged.artifact_location
        described.save(str(folder / "MLmodel"))
        client.log_model_artifacts(logged.model_id, str(folder))
        client.finalize_logged_model(logged.model_id, LoggedModelStatus.READY)
        client.log_outputs(run_id, [LoggedModelOutput(logged.model_id, step=step)])
    except BaseException:
        client.finalize_logged_model(logged.model_id, LoggedModelStatus.FAILED)
        raise
    return logged.model_id
