"""Training-free experiments that reproduce the lesson's printed numbers: gradient flow, memory, unrolling, n-gram counts, decoding, recurrence vs attention.

A probe is `run(params, seed) -> ProbeResult` (metrics and curves). Probes may
import models, layers, decoding, tasks, evaluation.metrics and, for the one
probe that trains (recurrence vs attention), training; never execution or
reporting.
"""
