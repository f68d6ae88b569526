"""Decoding: turn a model's next-token distributions into output sequences.

One implementation serves the lesson's toy next-word table and trained models
(language models, seq2seq encoder-decoders): a model is seen through the small
`StepModel` protocol, and every strategy (greedy, sampling, beam search) works
on that protocol alone. Nothing here imports TensorFlow until a model is built
or a decoder runs. `DECODERS` is the one list of decoders that the spec's
union, the catalog and `seqkeras list` derive from, and `parse_decoder` the one
reader of a decoder as a user writes it (a mapping, a name, a table label),
through that union. `PrefixStepModel` serves any causal model by rerunning it
on the prefix; `cached_step_models` steps the suite's recurrent and Transformer
LMs carrying their recurrent state or key/value cache, through `step_graphs`
(the one module here that imports Keras when it loads, imported only to build
one). `compiled_search` runs greedy and beam search as one compiled loop, with
the decoders' outputs, for an encoder-decoder (a model whose step is a function
of tensors) and for a recurrent or Transformer LM's continuation of a prompt;
evaluation, `predict` and generation decode through it where they can.

May import: errors, registry, yaml_reader, backends.
"""

from seqkeras.decoding.cached_step_models import (
    CachedTransformerStepModel,
    RecurrentStepModel,
    cached_step_model,
)
from seqkeras.decoding.decoders import (
    DECODERS,
    BeamDecoder,
    BeamParams,
    Decoder,
    DecodeResult,
    GreedyDecoder,
    GreedyParams,
    Hypothesis,
    SampleDecoder,
    SampleParams,
    build_decoder,
    length_penalty,
    score_sequences,
)
from seqkeras.decoding.step_model import PrefixStepModel, StepModel
from seqkeras.decoding.table_model import LESSON_TABLE, TableLanguageModel, check_table

__all__ = [
    "DECODERS",
    "BeamDecoder",
    "BeamParams",
    "CachedTransformerStepModel",
    "DecodeResult",
    "Decoder",
    "GreedyDecoder",
    "GreedyParams",
    "Hypothesis",
    "LESSON_TABLE",
    "PrefixStepModel",
    "RecurrentStepModel",
    "SampleDecoder",
    "SampleParams",
    "StepModel",
    "TableLanguageModel",
    "build_decoder",
    "cached_step_model",
    "check_table",
    "length_penalty",
    "score_sequences",
]
