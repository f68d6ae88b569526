"""Backend-specific code, one backend-neutral module per concern that the other
stages call:

- `runtime`: which Keras backend (chosen, current, running) and its package's
  version, a quiet TensorFlow start, seeds;
- `autodiff`: gradients with respect to chosen tensors;
- `precision`: float64 computation off TensorFlow;
- `losses`: the suite's softmax loss and accuracy as the backend computes them cheapest;
- `fitting`: TensorFlow's distribution strategy and build before tracing, torch's lean loop;
- `layer_classes`: Keras's layer or the torch backend's fused subclass of it;
- `compiled`: a model's method or a pure function compiled where eager operations are slow (JAX);
- `threads`: each process's and each run's intra-op threads;
- `compile_cache`: the folder in which one command's JAX runs share what they compiled;
- `serializable`: `@keras_serializable`, with which each Keras class or function a saved
  model may name is defined, and what makes them findable once `seqkeras` is imported;

and, in `backends/torch/`, every module that imports torch at its top. The
modules above import TensorFlow, torch, JAX or a torch-importing module inside
the function that needs it, only on that backend.

The rest of the package is backend-neutral Keras 3: a stage that needs a
backend's own behaviour asks this stage. `runtime` must stay importable without
Keras, because the backend has to be chosen before Keras is imported.

May import: errors.
"""
