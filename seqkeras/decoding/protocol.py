"""`EncoderDecoder`: what an encoder-decoder model gives the decoders, the attention maps and export.

Every model kind of the seq2seq problem builds models that implement it, in their own module
(`models.seq2seq.Seq2SeqModel`, `models.transformer_seq2seq.TransformerSeq2SeqModel`); the decoders
(`compiled_search`, the step-model decoders), `seqkeras predict --attention` and `seqkeras export-model` call
these methods and never ask a model's type or probe it for one. A new encoder-decoder kind implements all of them
(a kind that cannot say so in `check_decoding_steps` or `export_graphs`, raising a ValueError with the reason).

Language models decode through their kind's `ModelKind.step_model` (decoding.step_model, cached_step_models),
and export as the one Keras graph they are.
"""

from __future__ import annotations

from typing import Any, Protocol

# An exported step's output state is named for the input it replaces at the next step: next_layer0_h → layer0_h
# (an ONNX graph's output may not share its input's name).
NEXT = "next_"


class EncoderDecoder(Protocol):
    """An encoder-decoder model (a Keras model whose `config` names its `target_vocabulary_size`)."""

    # Attends to the source: `attention_weights` gives each output token's weights over the source tokens.
    attends: bool
    config: dict

    def encode(self, sources: Any) -> dict:
        """source ids [B, S] → the decoding state: tensors whose first axis is the row, "carry" among them."""

    def next_token_log_probs(self, tokens: Any, state: dict) -> tuple[Any, Any]:
        """The previous tokens [B] and the state → (log-probabilities [B, V], the new carry): one step, a function
        of tensors, which `compiled_search` compiles into its loop."""

    def step_model(self, sources: Any, start_id: int, end_id: int) -> Any:
        """A `decoding.step_model.StepModel` over these sources, which every decoder can drive from Python."""

    def check_decoding_steps(self, steps: int) -> None:
        """A ValueError where decoding `steps` tokens is more than the model holds (a Transformer's key/value
        caches have as many positions as its target position table); nothing where it takes any number."""

    def attention_weights(self, sources: Any, decoder_inputs: Any) -> Any:
        """Teacher-forced on `decoder_inputs` [B, T]: each output position's attention over the source [B, T, S]
        (a model that `attends`)."""

    def export_graphs(self) -> dict:
        """The Keras graphs `seqkeras export-model` writes: {"encoder": ..., "decoder_step": ...}, each with its
        `signature()`, `memory_names`, `state_names` and `positions` (the most steps its state holds, or None)."""
