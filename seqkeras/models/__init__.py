"""The model stage: one builder per model kind, `build(params, data) -> keras.Model`, with its parameter schema.

It also owns the recurrent cells (`cells`, with their textbook parameter
counts) and the n-gram counts (`ngram_counts`) that the counted language model
and the lesson's probes share. Parameter classes import no Keras (spec
validation reads them); builders import Keras when called. Never training or
later stages.

May import: errors, registry, backends, layers, tasks, decoding.
"""
