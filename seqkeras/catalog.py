"""Every component the suite knows, in one place, filled explicitly.

`seqkeras list`, spec validation and the JSON schema all read these
registries, so what is documented is exactly what is accepted.
"""

from __future__ import annotations

from seqkeras.cells import CELLS, NoParams
from seqkeras.models import recurrent
from seqkeras.probes import decoding, gradient_flow, memory, ngram_counts, unroll
from seqkeras.registry import Component, Registry
from seqkeras.tasks import agreement, bio_toy, char_lm, delayed_recall
from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, TAGGING
from seqkeras.decoding import decoders

TASKS = Registry(
    "task",
    [
        Component("delayed_recall", "Classify the signal token seen `lag` steps earlier, across distractors.",
                  delayed_recall.Params, "seqkeras.tasks.delayed_recall:build", problem=CLASSIFICATION),
        Component("agreement", "Subject–verb number across `distance` tokens with attractor nouns.",
                  agreement.Params, "seqkeras.tasks.agreement:build", problem=CLASSIFICATION),
        Component("bio_toy", "BIO person/location tagging; `ambiguity` adds right-context-dependent words.",
                  bio_toy.Params, "seqkeras.tasks.bio_toy:build", problem=TAGGING),
        Component("char_lm", "Next-character prediction over generated sentences or a text file (`path`).",
                  char_lm.Params, "seqkeras.tasks.char_lm:build", problem=LANGUAGE_MODELING),
    ],
)

MODELS = Registry(
    "model kind",
    [
        Component("classifier", "Embedding → recurrent stack → softmax over classes (sequence → label).",
                  recurrent.ClassifierParams, "seqkeras.models.recurrent:build_classifier", problem=CLASSIFICATION),
        Component("tagger", "Embedding → recurrent stack → per-token softmax or CRF (one label per token).",
                  recurrent.TaggerParams, "seqkeras.models.recurrent:build_tagger", problem=TAGGING),
        Component("lm", "Embedding → recurrent stack → next-token softmax; reports perplexity.",
                  recurrent.LanguageModelParams, "seqkeras.models.recurrent:build_lm", problem=LANGUAGE_MODELING),
    ],
)

METRICS = Registry(
    "metric",
    [
        Component("accuracy", "Share of test sequences whose label is predicted correctly.",
                  NoParams, "seqkeras.metrics:accuracy", problems=(CLASSIFICATION,)),
        Component("token_accuracy", "Share of real (non-padding) tokens predicted correctly.",
                  NoParams, "seqkeras.metrics:token_accuracy", problems=(TAGGING, LANGUAGE_MODELING)),
        Component("cross_entropy", "Mean negative log-likelihood per target, in nats.",
                  NoParams, "seqkeras.metrics:cross_entropy", problems=(CLASSIFICATION, TAGGING, LANGUAGE_MODELING)),
        Component("perplexity", "exp(cross-entropy) per token; a uniform model scores the vocabulary size.",
                  NoParams, "seqkeras.metrics:perplexity", problems=(LANGUAGE_MODELING,)),
    ],
)

DEFAULT_METRICS = {
    CLASSIFICATION: ["accuracy"],
    TAGGING: ["token_accuracy"],
    LANGUAGE_MODELING: ["perplexity", "token_accuracy"],
}

PROBES = Registry(
    "probe",
    [
        Component("gradient_flow", "‖∂L/∂h_{T−k}‖ through a Keras SimpleRNN with a set spectral radius (vanishing/exploding gradients).",
                  gradient_flow.Params, "seqkeras.probes.gradient_flow:run"),
        Component("memory", "How long a one-unit SimpleRNN or LSTM (set forget bias) keeps a single signal.",
                  memory.Params, "seqkeras.probes.memory:run"),
        Component("decoding", "Greedy, beam and sampling decoders on a table language model given in the spec.",
                  decoding.Params, "seqkeras.probes.decoding:run"),
        Component("ngram_counts", "Bigram probabilities from counts, and the share of unseen test bigrams.",
                  ngram_counts.Params, "seqkeras.probes.ngram_counts:run"),
        Component("unroll", "A 4-unit SimpleRNN's state step by step and the fading influence of the first token.",
                  unroll.Params, "seqkeras.probes.unroll:run"),
    ],
)

DECODERS = Registry(
    "decoder",
    [
        Component("greedy", "The most probable token at each step.", decoders.GreedyParams,
                  "seqkeras.decoding.decoders:build_decoder"),
        Component("beam", "Keep the `width` most probable partial outputs; optional GNMT length penalty.",
                  decoders.BeamParams, "seqkeras.decoding.decoders:build_decoder"),
        Component("sample", "Draw from the distribution with temperature, top-k and/or top-p (nucleus).",
                  decoders.SampleParams, "seqkeras.decoding.decoders:build_decoder"),
    ],
)

REGISTRY_OF_SECTION = {"task": TASKS, "model": MODELS, "probe": PROBES}

ALL = {"task": TASKS, "model kind": MODELS, "cell": CELLS, "probe": PROBES, "metric": METRICS, "decoder": DECODERS}
