"""One tiny spec per model kind (and per output or decoding path worth its own run), shared by every backend's process.

    tests/jax_backend/test_model_kinds_jax.py      KERAS_BACKEND=jax .venv/bin/python -m pytest -q tests/jax_backend
    tests/torch_backend/test_model_kinds_torch.py  KERAS_BACKEND=torch .venv/bin/python -m pytest -q tests/torch_backend

Each case trains for one epoch on a few dozen sequences through `seqkeras.run`, as a user's spec would.
`uncovered_kinds()` names the kinds of `catalog.MODELS` without a case: a new kind fails the tests
until it has one here. A case is `slow` on a backend where it takes more than a few seconds there: on JAX, the
cases that decode (each new shape of a step's operations is compiled once; seq2seq's step is one compiled
function, on padded batch sizes) and seq2seq (each target length of its `keras.ops.scan` is compiled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from seqkeras import catalog

CLASSIFICATION = {"name": "delayed_recall", "lag": 3, "n_train": 48, "n_test": 16}
CHARACTERS = {"name": "char_lm", "seq_length": 12, "n_train": 32, "n_test": 8}
TAGGING = {"name": "bio_toy", "ambiguity": 0.5, "n_train": 48, "n_test": 16}
SEQ2SEQ = {"name": "reverse", "n_train": 48, "n_test": 8, "min_length": 2, "max_length": 5, "symbols": 4,
           "bucket_width": 2}
# A few decoders exercise the step models (cached recurrent states and key/value caches, seq2seq's encoder state).
DECODERS = [{"name": "greedy"}, {"name": "beam", "width": 2}, {"name": "sample", "temperature": 1.0, "top_k": 3}]
GENERATE = {"prompts": ["the "], "length": 4}


@dataclass(frozen=True)
class KindCase:
    id: str
    kind: str
    task: dict[str, Any]
    model: dict[str, Any]
    metrics: list[str]
    evaluate: dict[str, Any] = field(default_factory=dict)  # besides the metrics
    slow: frozenset[str] = frozenset()  # the backends on which the case takes more than a few seconds

    def spec(self) -> dict[str, Any]:
        """The spec `seqkeras.run` takes: one run (seed 0), one epoch."""
        return {
            "version": 1,
            "name": f"kind-{self.id}",
            "description": f"a tiny run of model kind {self.kind}",
            "task": dict(self.task),
            "model": {"kind": self.kind, **self.model},
            "train": {"epochs": 1, "batch_size": 16, "verbose": 0},
            "evaluate": {"metrics": list(self.metrics), **self.evaluate},
            "seeds": [0],
        }


CASES = [
    KindCase("classifier", "classifier", CLASSIFICATION, {"cell": "gru", "units": 4, "embedding_dim": 4},
             ["accuracy", "cross_entropy"]),
    KindCase("regressor", "regressor", {"name": "adding", "length": 8, "n_train": 48, "n_test": 16},
             {"cell": "lstm", "units": 4}, ["mse", "baseline_mse"]),
    KindCase("tagger", "tagger", TAGGING, {"cell": "lstm", "units": 4, "embedding_dim": 4, "bidirectional": True},
             ["entity_f1", "token_accuracy", "invalid_transitions", "cross_entropy"]),
    KindCase("tagger-crf", "tagger", TAGGING,
             {"cell": "gru", "units": 4, "embedding_dim": 4, "output": "crf", "constrain_transitions": True},
             ["entity_f1", "token_accuracy", "invalid_transitions", "cross_entropy"]),
    KindCase("lm", "lm", CHARACTERS, {"cell": "gru", "units": 8, "embedding_dim": 4},
             ["perplexity", "token_accuracy", "cross_entropy"], {"generate": GENERATE, "decoders": DECODERS},
             slow=frozenset({"jax"})),
    KindCase("ngram", "ngram", CHARACTERS, {"order": 2}, ["perplexity", "token_accuracy"],
             {"generate": GENERATE, "decoders": [{"name": "greedy"}]}),
    KindCase("nplm", "nplm", CHARACTERS, {"order": 3, "embedding_dim": 4, "units": 8},
             ["perplexity", "token_accuracy", "cross_entropy"]),
    KindCase("transformer", "transformer", CHARACTERS,
             {"embedding_dim": 8, "num_heads": 2, "intermediate_dim": 8, "layers": 1},
             ["perplexity", "token_accuracy", "cross_entropy"], {"generate": GENERATE, "decoders": DECODERS},
             slow=frozenset({"jax"})),
    KindCase("transformer_classifier", "transformer_classifier", CLASSIFICATION,
             {"embedding_dim": 8, "num_heads": 2, "intermediate_dim": 8, "layers": 1}, ["accuracy", "cross_entropy"]),
    KindCase("seq2seq", "seq2seq", SEQ2SEQ, {"cell": "gru", "units": 8, "embedding_dim": 4, "attention": "bahdanau"},
             ["bleu", "exact_match", "teacher_forced_token_accuracy", "free_running_token_accuracy", "mean_log_prob",
              "by_length"],
             {"decoders": DECODERS}, slow=frozenset({"jax"})),
    KindCase("seq2seq-luong", "seq2seq", SEQ2SEQ,
             {"cell": "lstm", "units": 8, "embedding_dim": 4, "attention": "luong", "luong_layer_norm": True,
              "bidirectional": True},
             ["bleu", "exact_match", "free_running_token_accuracy"], slow=frozenset({"jax"})),
    KindCase("transformer_seq2seq", "transformer_seq2seq", SEQ2SEQ,
             {"embedding_dim": 8, "num_heads": 2, "intermediate_dim": 8, "layers": 1},
             ["bleu", "exact_match", "teacher_forced_token_accuracy", "free_running_token_accuracy", "mean_log_prob"],
             {"decoders": DECODERS}, slow=frozenset({"jax"})),
    # The Keras addition example's model: one-hot characters, a decoder reading the encoder's vector at every step.
    KindCase("seq2seq-repeat-vector", "seq2seq", SEQ2SEQ,
             {"cell": "lstm", "units": 8, "attention": "none", "decoder_reads": "encoder_vector",
              "input_encoding": "one_hot"},
             ["exact_match", "position_accuracy", "free_running_token_accuracy"], slow=frozenset({"jax"})),
]


def uncovered_kinds() -> set[str]:
    """The model kinds the catalog registers that no case runs."""
    return {component.name for component in catalog.MODELS} - {case.kind for case in CASES}


def params(backend: str):
    """CASES as pytest parameters for one backend's process: ids, and the `slow` mark where it applies."""
    import pytest

    return [pytest.param(case, id=case.id, marks=[pytest.mark.slow] if backend in case.slow else [])
            for case in CASES]


def check_results(case: KindCase, results) -> None:
    """Every run (one per decoder, where decoders are given) finished, and its metrics are finite numbers."""
    runs = results.runs
    assert len(runs) == max(1, len(case.evaluate.get("decoders", []))), runs
    failed = runs[runs["status"] != "ok"]
    assert failed.empty, failed.get("error", failed).tolist()
    reported = [name for name in case.metrics if name != "by_length"]
    if "by_length" in case.metrics:  # each metric again per source-length bucket
        reported += [column for column in runs.columns if "_len_" in column]
        assert len(reported) > len(case.metrics) - 1, list(runs.columns)
    for name in reported:
        assert name in runs.columns, f"{name} missing from runs.csv: {list(runs.columns)}"
        values = runs[name].tolist()
        assert all(isinstance(value, (int, float)) and math.isfinite(value) for value in values), (name, values)
