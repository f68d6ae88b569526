"""Training-free experiments that reproduce the lesson's printed numbers: gradient
flow, memory, unrolling, n-gram counts, decoding, recurrence vs attention.

A probe is `run(params, seed) -> ProbeResult` (metrics and curves). Probes
compute with Keras ops on whichever backend Keras runs, never with a backend's
library directly: gradients come from backends.autodiff, float64 from
backends.precision (keras-hub comes without TensorFlow off TensorFlow: runtime's import
hook). The one probe that trains (recurrence vs attention) uses training and
fills in training's own settings schema; never the spec, execution or reporting.

May import: errors, registry, backends, layers, tasks, models, decoding, training, evaluation.
"""
