"""Decoding cost: beam search (width 5) against greedy, in milliseconds per output token.

Issue 9, goal 3: on a trained seq2seq model, decoding a batch of test sources,
beam search with width 5 costs at most 2× greedy per output token.

Two small models are trained briefly on synthetic tasks (no download, no
system package), then the same test batch (256 sources, as seq2seq evaluation
decodes them) is decoded by greedy and by beam search in turns, each round
starting with the next decoder, so that all see the same machine load; each
figure is the median over the rounds. Per output token: each decoder's time
divided by the tokens of the outputs it returns (the end token included), so a
beam that finds shorter outputs is not flattered by them.

- reverse: letters reversed (`reverse`, 10 symbols): a 14-token target
  vocabulary, so the step model's fixed costs dominate.
- reversed words: sequences of words drawn from a few thousand, reversed: a
  target vocabulary of about 3,000, like a small translation model, where
  beam's work over width × vocabulary candidates shows.

Beam search runs as seq2seq evaluation runs it (`all_hypotheses=False`: it stops
following hypotheses that can no longer win). Two more decoders are timed in
the same rounds, for the figure's text: beam search keeping every hypothesis
(as the lesson's probe runs it), and a bare greedy loop that takes numpy's
argmax of the log-probabilities instead of going through keras-hub's
`GreedySampler` (the suite's greedy), to show what the sampler costs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np

from seqkeras.decoding import BeamDecoder, GreedyDecoder  # no TensorFlow until a model is built

GOAL = 2.0  # beam (width 5) / greedy, per output token
WIDTH = 5


@dataclass(frozen=True)
class Setting:
    name: str
    words: int  # 0: the letter task `reverse`; else reversed sequences over this many words
    n_train: int
    epochs: int
    test_batch: int
    repeats: int


FULL = (
    Setting("reverse", 0, n_train=3000, epochs=4, test_batch=256, repeats=8),
    Setting("reversed words", 3000, n_train=6000, epochs=4, test_batch=256, repeats=8),
)
TINY = (
    Setting("reverse", 0, n_train=64, epochs=1, test_batch=8, repeats=1),
    Setting("reversed words", 200, n_train=64, epochs=1, test_batch=8, repeats=1),
)


def word_task(words: int, n_train: int, n_test: int, seed: int = 0):
    """Sequences of 3–10 words out of `words` (w0, w1, ...), reversed; vocabularies from the training pairs."""
    from seqkeras.tasks.seq2seq_data import seq2seq_data

    rng = np.random.default_rng(seed)
    vocabulary = [f"w{index}" for index in range(words)]

    def pairs(count: int):
        lengths = rng.integers(3, 11, size=count)
        sources = [list(rng.choice(vocabulary, size=length)) for length in lengths]
        return [(source, source[::-1]) for source in sources]

    return seq2seq_data(pairs(n_train), pairs(n_test), bucket_width=4)


def trained_model(setting: Setting):
    """A small LSTM encoder-decoder with Bahdanau attention, trained for a few epochs."""
    from seqkeras.models.seq2seq import Seq2SeqParams, build
    from seqkeras.training.settings import TrainSpec
    from seqkeras.tasks import seq2seq_synthetic as synthetic
    from seqkeras.training.trainer import fit

    if setting.words:
        data = word_task(setting.words, setting.n_train, setting.test_batch)
    else:
        params = synthetic.SymbolParams(n_train=setting.n_train, n_test=setting.test_batch,
                                        min_length=3, max_length=10, symbols=10)
        data = synthetic.build_reverse(params, seed=0)
    model = build(Seq2SeqParams(cell="lstm", units=64, embedding_dim=32, attention="bahdanau"), data)
    train = TrainSpec(epochs=setting.epochs, batch_size=64, verbose=0,
                      optimizer={"name": "adam", "learning_rate": 0.01, "clipnorm": 1.0})
    fit(model, data, train)
    return model, data


class BareGreedyDecoder(GreedyDecoder):
    """Greedy decoding without keras-hub: numpy's argmax of the step model's log-probabilities."""

    def token_chooser(self, vocab_size: int):
        return lambda log_probs: np.argmax(log_probs, axis=1)


def time_decoders(model, data, decoders: dict, repeats: int, max_length: int) -> dict[str, dict]:
    """Decode the test batch with each decoder in turn, `repeats` rounds; median seconds and output tokens.

    `decoders` maps a name to (decoder, keyword arguments of its `decode()` call).
    """
    source = data.x_test["source"]
    seconds = {name: [] for name in decoders}
    tokens = {}
    names = list(decoders)
    for round_ in range(repeats + 1):  # the first round warms up (tf.function tracing, caches) and is dropped
        # Each round starts with the next decoder, so that none always runs first (or last).
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            decoder, options = decoders[name]
            step_model = model.step_model(source, data.start_id, data.end_id)
            started = time.perf_counter()
            result = decoder.decode(step_model, len(source), max_length, **options)
            seconds[name].append(time.perf_counter() - started)
            tokens[name] = int(result.lengths.sum())
    return {name: {"seconds": statistics.median(seconds[name][1:]), "tokens": tokens[name]} for name in decoders}


def measure(tiny: bool = False) -> list[dict]:
    rows = []
    for setting in TINY if tiny else FULL:
        model, data = trained_model(setting)
        vocab = len(data.target_vocabulary)
        max_length = int(1.5 * data.longest_train_target) + 2  # as seq2seq evaluation does
        decoders = {
            "greedy": (GreedyDecoder(), {}),
            "beam": (BeamDecoder(width=WIDTH), {"all_hypotheses": False}),
            "beam, every hypothesis": (BeamDecoder(width=WIDTH), {}),
            "bare greedy": (BareGreedyDecoder(), {}),
        }
        timed = time_decoders(model, data, decoders, setting.repeats, max_length)
        per_token = {name: 1000 * t["seconds"] / max(t["tokens"], 1) for name, t in timed.items()}
        ratio = per_token["beam"] / per_token["greedy"]
        rows.append({
            "benchmark": "decoding cost",
            "figure": f"beam (width {WIDTH}) vs greedy per output token, {setting.name} "
                      f"(vocab {vocab}, {setting.test_batch} sources at once); "
                      f"keeping every hypothesis: {per_token['beam, every hypothesis'] / per_token['greedy']:.2f}×; "
                      f"vs a bare-argmax greedy: {per_token['beam'] / per_token['bare greedy']:.2f}×",
            "value": round(per_token["beam"], 4),
            "unit": "ms/token",
            "baseline": round(per_token["greedy"], 4),
            "ratio": round(ratio, 2),
            "goal": f"ratio <= {GOAL}",
            "met": bool(ratio <= GOAL),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="smallest sizes: checks the benchmark runs, not speed")
    args = parser.parse_args()
    for row in measure(args.tiny):
        print(row)


if __name__ == "__main__":
    main()
