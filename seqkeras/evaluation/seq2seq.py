"""Evaluate a trained seq2seq model: one row of metrics per decoder, the model trained once.

For each decoder in `evaluate.decoders` (greedy when none is given) the test
sources are decoded in batches through the model's step model, timed, and
scored with the run's metrics. Besides the rows, the run folder gets:

    by_length.csv          every metric per decoder and source-length bucket
    outputs.csv            the first test pairs with each decoder's output
    attention.csv          the first test pair's attention weights (models with attention)
    target_vocabulary.json the decoder's vocabulary (vocabulary.json is the source's)

Every metric is computed from the decoder's `DecodedOutputs` through the metric
registry. The metric `by_length` adds each other requested metric per bucket to
the rows (`bleu_len_41_60`, ...), so `expect` entries can check the per-length claims.
A bucket's length is the source's tokens: pieces, for a task whose tokens are WordPiece
pieces. Such a task's outputs are scored, and shown in outputs.csv, as the words their
pieces spell (`Seq2SeqData.words`), against the reference's words. outputs.csv joins
tokens by spaces and shows a token that is a space (addition's padding, a word break
of a character-level task) as ␣.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from keras import ops

from seqkeras.backends.compiled import compiled_method
from seqkeras.decoding import compiled_search
from seqkeras.decoding.decoders import GreedyChoice, build_decoder, decoder_keys, decoder_label, seeded
from seqkeras.evaluation.metric_catalog import BY_LENGTH, METRICS, applying_to, compute
from seqkeras.evaluation.rows import EvaluationRow
from seqkeras.evaluation.seq2seq_metrics import DecodedOutputs, bucket_metric_name
from seqkeras.models import seq2seq_params
from seqkeras.models.seq2seq import Seq2SeqModel
from seqkeras.results.folder import write_atomic, write_csv
from seqkeras.tasks.base import SEQ2SEQ
from seqkeras.tasks.seq2seq_data import Seq2SeqData

# Sources decoded together: large enough to keep per-step overhead small, small
# enough that beam search (width × this many rows) stays light on memory. A beam
# wider than 16 decodes fewer sources at a time, so that a step never runs the
# model on more than DECODE_ROWS rows (decoding.decoders.MAX_BEAM_WIDTH).
DECODE_BATCH = 256
DECODE_ROWS = 16 * DECODE_BATCH
SHOWN_OUTPUTS = 50  # test pairs listed in outputs.csv
VISIBLE_SPACE = "\u2423"  # ␣, a space token as outputs.csv shows it


def evaluate(model: Seq2SeqModel, data: Seq2SeqData, run, folder: Path) -> list[EvaluationRow]:
    write_atomic(folder / "target_vocabulary.json", data.target_vocabulary.to_json())
    requested = [name for name in run.metrics if name != BY_LENGTH]
    # by_length.csv holds every seq2seq metric per bucket, whichever the run lists.
    every_metric = {m.name: m.function(SEQ2SEQ) for m in applying_to(SEQ2SEQ) if m.name != BY_LENGTH}
    length_buckets = METRICS.get(BY_LENGTH).function(SEQ2SEQ)
    max_length = output_limit(run, data)
    teacher_forced_hits = teacher_forced(model, data, run.train.batch_size)

    rows, length_rows, shown = [], [], []
    choices = run.decoders or [GreedyChoice()]
    for choice in choices:
        outputs = decode(model, data, seeded(choice, run.seed), max_length)  # each run seed samples its own
        outputs.teacher_forced_hits = teacher_forced_hits
        label = decoder_label(choice)
        metrics = compute(requested, SEQ2SEQ, outputs)
        buckets = length_buckets(outputs, every_metric, data.bucket_width)
        if BY_LENGTH in run.metrics:
            for bucket in buckets:
                metrics.update({bucket_metric_name(name, bucket): bucket[name] for name in requested})
        length_rows += [{"decoder": label, **bucket} for bucket in buckets]
        shown += shown_outputs(data, outputs, label)
        rows.append(EvaluationRow(metrics, keys=decoder_keys(choice) if run.decoders else {}))
    write_csv(folder / "by_length.csv", pd.DataFrame(length_rows))
    write_csv(folder / "outputs.csv", pd.DataFrame(shown))
    if model.attends:
        write_csv(folder / "attention.csv", attention_table(model, data, row=0))
    return rows


def output_words(data: Seq2SeqData, outputs: list[list[int]]) -> list[list[str]]:
    """Each decoded output's ids (its end token, where reached, dropped) as the text metrics read them: words,
    pieces joined into the words they spell (a no-op for words and characters)."""
    end = data.end_id
    return [data.words(data.target_vocabulary.decode(ids[:-1] if ids[-1:] == [end] else ids)) for ids in outputs]


def output_limit(run, data: Seq2SeqData) -> int:
    """The longest output a decoder may write: the model's max_output_length, else 1.5 × the longest training
    target (+ 2)."""
    return seq2seq_params.output_limit(run.model.params, data)


def validation_scorer(model: Seq2SeqModel, data: Seq2SeqData, run) -> Callable[[dict, np.ndarray], dict[str, float]]:
    """`score(validation inputs, validation targets)`: run.train.validation_metrics' metrics of the greedy
    outputs of the (first max_examples) validation pairs, for the trainer to watch (training.trainer.fit).

    The references are the validation targets as the target vocabulary spells them (a word outside it is <unk>,
    as the model sees it), read as words, as the test's are.
    """
    settings = run.train.validation_metrics
    max_length, end = output_limit(run, data), data.end_id

    def score(x: dict, y: np.ndarray) -> dict[str, float]:
        rows = slice(0, settings.max_examples)
        tokens, _, _ = decode_sources(model, x["source"][rows], data.start_id, end, GreedyChoice(), max_length)
        # A target row is its ids, its end token, then padding: the ids alone, read as an output is.
        references = output_words(data, [[i for i in row.tolist() if i not in (0, end)] for row in y[rows]])
        return compute(settings.metrics, SEQ2SEQ, DecodedOutputs(hypotheses=output_words(data, tokens),
                                                                 references=references))

    return score


def teacher_forced(model: Seq2SeqModel, data: Seq2SeqData, batch_size: int) -> np.ndarray:
    """Per test pair: reference positions where the most probable next token, reading the true prefix, is right."""
    hits = []
    call = compiled_method(model, "__call__")
    for start in range(0, len(data.y_test), batch_size):
        batch = {name: ops.convert_to_tensor(array[start : start + batch_size]) for name, array in data.x_test.items()}
        # The argmax in NumPy: on JAX an eager op compiles a program for each batch shape (0.5 s a run).
        predicted = ops.convert_to_numpy(call(batch)).argmax(axis=-1)
        targets = data.y_test[start : start + batch_size]
        hits.append(((predicted == targets) & (targets != 0)).sum(axis=1))
    return np.concatenate(hits)


def decode(model: Seq2SeqModel, data: Seq2SeqData, choice, max_length: int) -> DecodedOutputs:
    """Decode every test source with one decoder (timed)."""
    started = time.perf_counter()
    tokens, log_probs, lengths = decode_sources(model, data.x_test["source"], data.start_id, data.end_id, choice,
                                                max_length)
    seconds = time.perf_counter() - started

    hypotheses = output_words(data, tokens)
    references = data.references
    reference_ids = [row[row != 0].tolist() for row in data.y_test]  # target ids, end included
    outputs = DecodedOutputs(
        hypotheses=hypotheses,
        references=references,
        source_lengths=np.array([len(source) for source, _ in data.test_pairs]),
        log_probs=log_probs,
        output_lengths=lengths,
        # Ids, as teacher forcing compares them (an <unk> in the reference is matched by <unk>);
        # an output cut off at max_length has no end token, so it misses the reference's.
        free_running_hits=np.array([sum(a == b for a, b in zip(ids, ref)) for ids, ref in zip(tokens, reference_ids)]),
        reference_positions=np.array([len(ref) for ref in reference_ids]),
        seconds=seconds,
    )
    return outputs


def decode_sources(model: Seq2SeqModel, sources: np.ndarray, start_id: int, end_id: int, choice,
                   max_length: int) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Source ids [N, S] decoded with one decoder choice: each output's ids (the end token included when it
    was reached), their log-probabilities [N] and lengths [N]. The evaluator's and `seqkeras predict`'s path.

    Greedy and beam search run as one compiled loop where the model allows (`decoding.compiled_search`), every
    other decoder through the model's step model; both give the same outputs."""
    decoder = build_decoder(choice.name, choice)
    tokens: list[list[int]] = []
    log_probs, lengths = [], []
    inputs_per_call = max(1, min(DECODE_BATCH, DECODE_ROWS // decoder.hypotheses_per_input))
    compiled = compiled_search.searches_compiled(choice, inputs_per_call, max_length)
    for start in range(0, len(sources), inputs_per_call):
        batch = sources[start : start + inputs_per_call]
        if compiled:  # greedy and beam search as one compiled loop (decoding.compiled_search)
            batch_tokens, batch_log_probs, batch_lengths = compiled_search.search(model, batch, choice, start_id,
                                                                                  end_id, max_length)
        else:
            # Only each source's output is scored, so beam search may stop following
            # hypotheses that can no longer win (the outputs are the same).
            result = decoder.decode(model.step_model(batch, start_id, end_id), len(batch), max_length,
                                    all_hypotheses=False)
            batch_tokens, batch_log_probs, batch_lengths = result.tokens, result.log_probs, result.lengths
        tokens += batch_tokens
        log_probs.append(batch_log_probs)
        lengths.append(batch_lengths)
    if not tokens:
        return tokens, np.zeros(0), np.zeros(0, dtype="int64")
    return tokens, np.concatenate(log_probs), np.concatenate(lengths)


def shown_text(tokens: list[str]) -> str:
    """Tokens as outputs.csv shows them: joined by spaces, a space token (addition's pad_with_spaces, a word break
    at level char) as ␣, which the joining spaces, and HTML's collapsing of them in the report, would hide."""
    return " ".join(VISIBLE_SPACE if token == " " else token for token in tokens)


def shown_outputs(data: Seq2SeqData, outputs: DecodedOutputs, label: str) -> list[dict[str, object]]:
    return [
        {
            "decoder": label,
            "pair": index,
            "source": shown_text(data.words(data.test_pairs[index][0])),
            "reference": shown_text(outputs.references[index]),
            "output": shown_text(outputs.hypotheses[index]),
            "log_prob": float(outputs.log_probs[index]),
        }
        for index in range(min(SHOWN_OUTPUTS, len(outputs)))
    ]


def attention_table(model: Seq2SeqModel, data: Seq2SeqData, row: int) -> pd.DataFrame:
    """Long table of one test pair's teacher-forced attention: output step × source position → weight."""
    source, target = data.test_pairs[row]
    batch = {name: array[row : row + 1] for name, array in data.x_test.items()}
    weights = model.attention_weights(batch["source"], batch["decoder_input"])[0]
    outputs = list(target) + ["</s>"]
    return pd.DataFrame(
        [
            {"output_position": t, "output_token": outputs[t], "source_position": s, "source_token": source[s],
             "weight": float(weights[t, s])}
            for t in range(len(outputs))
            for s in range(len(source))
        ]
    )
