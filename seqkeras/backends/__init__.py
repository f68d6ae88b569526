"""Backend-specific code: process set-up (`runtime`: which Keras backend, a quiet
TensorFlow start, seeds), gradients on any backend (`autodiff`, which imports the
running backend's library inside its one function) and, in `backends/torch/`,
every module that imports torch at its top.

The rest of the package is backend-neutral Keras 3. It may import errors and
its own modules; `runtime` must stay importable without Keras, because the
backend has to be chosen before Keras is imported.
"""
