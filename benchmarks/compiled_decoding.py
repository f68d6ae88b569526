"""Compiled decoding (issue 49, goal 2): sentences per second of greedy and beam search as one compiled loop
(`seqkeras.decoding.compiled_search`, what evaluation and `predict` use) against the decoders that drive a step
model from Python (`GreedyDecoder`, `BeamDecoder`: the suite's path before) and keras-hub's own samplers
(`GreedySampler`, `BeamSampler`) driving the same model's step, on each installed backend.

Each backend runs in its own process (Keras picks its backend once per process): it trains the small LSTM
encoder-decoder with Bahdanau attention of benchmarks/decoding_cost.py on the reversed-words task (a target
vocabulary of about 1,000) for two epochs, then decodes the same 256 test sources with each decoder in turns
(each round starting with the next one), the first round dropped (compiling), the median of the rest kept.

- compiled: `compiled_search.search`: one XLA program on JAX, one tf.function on TensorFlow, eager tensor
  operations under no_grad on torch; the same outputs as the step-model decoders (tests/test_compiled_search.py).
- step model: `decoder.decode(model.step_model(...), all_hypotheses=False)`, as evaluation ran before.
- language models: a character LSTM LM and a character Transformer LM (char_lm's generated sentences in windows
  of 32, two epochs) continue six prompts one at a time by 16 characters, as generation does, through
  `compiled_search.continue_prompt` and through the step-model decoder on the kind's step model (the LSTM's
  state, the Transformer's key/value cache), in prompts per second.
- keras-hub: its sampler's loop (`Sampler.__call__`, `ops.while_loop` over a prompt tensor) with the model's
  step as its `next`, compiled as the compiled search is. Not the same search: its greedy writes every row until
  all rows have ended, its beam has no length penalty and keeps extending finished beams; a speed reference.

The figure is the compiled search's sentences per second, the baseline the step-model decoder's; the ratio
compiled over step model. Goal on JAX and TensorFlow, where evaluation decodes through the compiled loop: ≥ 1
(decoding is no slower than before). On torch evaluation keeps the step-model decoders, and the row checks that
they are the faster there (ratio < 1). The text gives keras-hub's sentences per second.

    .venv/bin/python benchmarks/compiled_decoding.py [--tiny]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from seqkeras.decoding.compiled_search import COMPILED_ON  # noqa: E402  (imports no backend)

BACKENDS = ("jax", "torch", "tensorflow")
WIDTH = 5
GOAL = 1.0  # compiled sentences per second / the step-model decoder's
FULL = {"words": 1000, "n_train": 4000, "epochs": 2, "sources": 256, "rounds": 5, "prompts": 6, "length": 16}
TINY = {"words": 50, "n_train": 64, "epochs": 1, "sources": 8, "rounds": 1, "prompts": 2, "length": 5}


def keras_hub_search(model, sources, sampler, start_id: int, end_id: int, max_length: int):
    """keras-hub's sampler loop over the model's step: the cache is the model's whole state (the sampler repeats
    it for its beams), the prompt the start token then max_length slots."""
    from keras import ops

    state = model.encode(sources)
    rows = ops.shape(sources)[0]
    prompt = ops.concatenate([ops.full((rows, 1), start_id, dtype="int32"),
                              ops.zeros((rows, max_length), dtype="int32")], axis=1)

    def next_tokens(prompt, cache, index):
        tokens = ops.take(prompt, index - 1, axis=1)
        log_probs, carry = model.next_token_log_probs(tokens, cache)
        return log_probs, None, {**cache, "carry": carry}

    return sampler(next_tokens, prompt, cache=state, index=1, stop_token_ids=[end_id])


def child(size: dict) -> list[dict]:
    """In a process of one backend: the median seconds of each decoder, greedy and beam."""
    import keras_hub
    from decoding_cost import Setting, trained_model

    from seqkeras.decoding.decoders import BeamChoice, GreedyChoice

    setting = Setting("reversed words", size["words"], n_train=size["n_train"], epochs=size["epochs"],
                      test_batch=size["sources"], repeats=size["rounds"])
    model, data = trained_model(setting)
    greedy = (GreedyChoice(), keras_hub.samplers.GreedySampler())
    beam = (BeamChoice(width=WIDTH), keras_hub.samplers.BeamSampler(num_beams=WIDTH))
    results = [timed(model, data, choice, sampler, setting.repeats) for choice, sampler in (greedy, beam)]
    models, prompts = trained_language_models(size)
    return results + [timed_continuations(name, model, prompts, choice, size["length"], setting.repeats)
                      for name, model in models.items() for choice in (greedy[0], beam[0])]


def trained_language_models(size: dict):
    """A character LSTM LM and a character Transformer LM (char_lm's generated sentences, windows of 32) trained
    briefly, and the prompts they continue."""
    from seqkeras.models import recurrent, transformer
    from seqkeras.tasks import char_lm
    from seqkeras.training.settings import TrainSpec
    from seqkeras.training.trainer import fit

    data = char_lm.build(char_lm.Params(n_train=size["n_train"], n_test=64, seq_length=32), seed=0)
    models = {
        "LSTM": recurrent.build_lm(recurrent.LanguageModelParams(cell="lstm", units=128, embedding_dim=32), data),
        "Transformer": transformer.build_lm(transformer.TransformerParams(embedding_dim=64, num_heads=4,
                                                                          intermediate_dim=128, layers=2), data),
    }
    for model in models.values():
        fit(model, data, TrainSpec(epochs=size["epochs"], batch_size=64, verbose=0,
                                   optimizer={"name": "adam", "learning_rate": 0.003}))
    prompts = [data.vocabulary.encode(list(text)) for text in
               ("the cat", "the dogs near", "a bird", "the sun by the", "the cats", "the dog under")][:size["prompts"]]
    return models, prompts


def timed_continuations(name: str, model, prompts, choice, length: int, rounds: int) -> dict:
    """The median seconds of continuing every prompt (one at a time, as generation does) by `length` tokens, through
    the compiled loop and through the step-model decoder, taking turns."""
    import keras

    from seqkeras.decoding import compiled_search
    from seqkeras.decoding.cached_step_models import cached_step_model
    from seqkeras.decoding.decoders import build_decoder
    from seqkeras.evaluation.generation import NEVER, log_probabilities

    decoder = build_decoder(choice.name, choice)

    def step_model(prompt):
        return cached_step_model(model, prompt[-1], 0, context=prompt[:-1], scores=log_probabilities)

    def compiled():
        return [compiled_search.continue_prompt(step_model(prompt), choice, length, NEVER)[0] for prompt in prompts]

    def stepped():
        return [decoder.decode(step_model(prompt), 1, length).tokens[0] for prompt in prompts]

    seconds = turns({"compiled": compiled, "step model": stepped}, rounds)
    return {"decoder": choice.name, "backend": keras.backend.backend(), "sources": len(prompts), "lm": name,
            "vocabulary": model.output_shape[-1], "same outputs": compiled() == stepped(), **seconds,
            "output tokens": length * len(prompts)}


def turns(decoders: dict, rounds: int) -> dict[str, float]:
    """The median seconds of each of `decoders` (functions), called in turns, each round starting with the next one;
    the first round (compiling) dropped."""
    seconds: dict[str, list[float]] = {name: [] for name in decoders}
    names = list(decoders)
    for round_ in range(rounds + 1):
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            started = time.perf_counter()
            decoders[name]()
            seconds[name].append(time.perf_counter() - started)
    return {name: statistics.median(times[1:]) for name, times in seconds.items()}


def timed(model, data, choice, sampler, rounds: int) -> dict:
    """The median seconds of the three ways to decode the test sources with `choice`, taking turns."""
    import keras
    import numpy as np
    from keras import ops

    from seqkeras.backends.compiled import compiled_model_function
    from seqkeras.decoding import compiled_search
    from seqkeras.decoding.decoders import build_decoder

    sources = data.x_test["source"]
    max_length = int(1.5 * data.longest_train_target) + 2  # as seq2seq evaluation does
    start, end = data.start_id, data.end_id
    hub = compiled_model_function(model, ("keras-hub", choice.name), lambda source:
                                  keras_hub_search(model, source, sampler, start, end, max_length))
    decoder = build_decoder(choice.name, choice)
    decoders = {
        "compiled": lambda: compiled_search.search(model, sources, choice, start, end, max_length),
        "step model": lambda: decoder.decode(model.step_model(sources, start, end), len(sources), max_length,
                                             all_hypotheses=False),
        "keras-hub": lambda: ops.convert_to_numpy(hub(ops.convert_to_tensor(sources.astype("int32")))),
    }
    seconds = turns(decoders, rounds)
    compiled_tokens = compiled_search.search(model, sources, choice, start, end, max_length)[0]
    stepped = decoders["step model"]().tokens
    return {"decoder": choice.name, "backend": keras.backend.backend(), "sources": len(sources),
            "vocabulary": len(data.target_vocabulary), "same outputs": compiled_tokens == stepped,
            **seconds, "output tokens": int(np.sum([len(row) for row in compiled_tokens]))}


def measure(tiny: bool = False) -> list[dict]:
    size = TINY if tiny else FULL
    rows = []
    for backend in [name for name in BACKENDS if importlib.util.find_spec(name)]:
        environment = {**os.environ, "KERAS_BACKEND": backend}
        completed = subprocess.run([sys.executable, str(Path(__file__)), "--child", json.dumps(size)],
                                   env=environment, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"the {backend} process failed: {completed.stderr.strip().splitlines()[-1:]}")
        for result in json.loads(completed.stdout.strip().splitlines()[-1]):
            per_second = {name: result["sources"] / result[name] for name in ("compiled", "step model", "keras-hub")
                          if name in result}
            ratio = per_second["compiled"] / per_second["step model"]
            label = "greedy" if result["decoder"] == "greedy" else f"beam (width {WIDTH})"
            if result.get("lm"):
                workload = (f"a character {result['lm']} LM continuing {result['sources']} prompts one at a time by "
                            f"{result['output tokens'] // result['sources']} characters (vocabulary "
                            f"{result['vocabulary']}): compiled loop vs the step-model decoder, prompts/s")
            else:
                workload = (f"reversed words (vocabulary {result['vocabulary']}, {result['sources']} sources, "
                            f"{result['output tokens']} output tokens): compiled loop vs the step-model decoder, "
                            f"sentences/s; keras-hub's sampler loop {per_second['keras-hub']:.0f}/s")
            # Where evaluation keeps the step-model decoders (torch), the row checks that they are the faster.
            used = result["backend"] in COMPILED_ON
            goal, met = (f"ratio >= {GOAL}", ratio >= GOAL) if used else \
                ("ratio < 1.0 (evaluation keeps the step model here)", ratio < 1.0)
            rows.append({
                "benchmark": "compiled decoding",
                "figure": f"{label} on {result['backend']}, {workload}; same outputs: {result['same outputs']}",
                "value": round(per_second["compiled"], 1),
                "unit": "prompts/s" if result.get("lm") else "sentences/s",
                "baseline": round(per_second["step model"], 1),
                "ratio": round(ratio, 2),
                "goal": goal,
                "met": bool(met and result["same outputs"]),
            })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="smallest sizes: checks the benchmark runs, not speed")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the sizes, as JSON: run in this backend's process
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    for row in measure(args.tiny):
        print(row)


if __name__ == "__main__":
    main()
