"""Training-free experiments that reproduce the lesson's printed numbers: gradient
flow, memory, unrolling, n-gram counts, decoding, recurrence vs attention.

A probe is `run(params, seed) -> ProbeResult` (metrics and curves). Probes
compute with Keras ops on whichever backend Keras runs, never with a backend's
library directly: gradients come from backends.autodiff, float64 from
`precision` (keras-hub comes without TensorFlow off TensorFlow: runtime's import
hook). Probes may import models, layers, decoding, tasks, evaluation.metrics,
backends.autodiff and, for the one probe that trains
(recurrence vs attention), training; never execution or reporting.
"""
