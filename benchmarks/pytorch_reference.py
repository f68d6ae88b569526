"""The plain PyTorch script that the suite's recurrent training is measured against.

The same language model as the suite's `kind: lm` (Embedding → one recurrent
layer over the whole sequence → Dense over the vocabulary), written the way a
PyTorch user would: nn.Embedding → nn.LSTM / nn.GRU / nn.RNN(tanh), batch_first
→ nn.Linear, Adam, cross-entropy, one optimizer step per batch. It uses
PyTorch's fused recurrent kernels (cuDNN on a GPU, ATen's on the CPU).

    .venv/bin/python benchmarks/pytorch_reference.py --cell lstm --batch 32 --units 256

recurrent_throughput.py runs it as a process of its own (`--serve`), as a user
runs a script: PyTorch and glibc with their defaults, no Keras imported. `serve`
is also how the suite's side of that benchmark answers, in its own process.

Of the benchmarks, only this file, recurrent_throughput.py and the plain scripts
(plain_scripts/pytorch_*.py, plain_scripts.py to ask for CUDA) import torch
themselves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class LMConfig:
    """One point of the benchmark: the issue's configuration by default."""

    cell: str = "lstm"  # simple_rnn, lstm or gru (the suite's names)
    batch: int = 32
    units: int = 256
    embedding: int = 128
    vocabulary: int = 2000
    length: int = 64

    @property
    def tokens_per_step(self) -> int:
        return self.batch * self.length


def random_batches(config: LMConfig, count: int, seed: int = 0):
    """Token ids in 1..vocabulary-1 (0 is the suite's padding id, so no token is masked)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.integers(1, config.vocabulary, size=(count, config.batch, config.length + 1), dtype=np.int64)


class ReferenceLM:
    """Model, optimizer and one training step; `step` trains on one batch of token ids."""

    RECURRENT = {"simple_rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}

    def __init__(self, config: LMConfig, device: str = "cpu"):
        import torch
        from torch import nn

        self.torch, self.device = torch, device
        torch.manual_seed(0)
        recurrent = getattr(nn, self.RECURRENT[config.cell])
        self.embedding = nn.Embedding(config.vocabulary, config.embedding).to(device)
        self.rnn = recurrent(config.embedding, config.units, batch_first=True).to(device)
        self.output = nn.Linear(config.units, config.vocabulary).to(device)
        parameters = [*self.embedding.parameters(), *self.rnn.parameters(), *self.output.parameters()]
        self.optimizer = torch.optim.Adam(parameters, lr=1e-3)
        self.loss = nn.CrossEntropyLoss()
        self.vocabulary = config.vocabulary

    def step(self, batch) -> float:
        tokens = self.torch.as_tensor(batch, device=self.device)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        self.optimizer.zero_grad(set_to_none=True)
        features, _ = self.rnn(self.embedding(inputs))
        loss = self.loss(self.output(features).reshape(-1, self.vocabulary), targets.reshape(-1))
        loss.backward()
        self.optimizer.step()
        return loss.item()  # .item() waits for the step to finish (matters on a GPU)


def tokens_per_second(config: LMConfig, steps: int, device: str = "cpu") -> float:
    """Training throughput of the plain PyTorch script: tokens per second over `steps` steps, after as many to
    warm up."""
    train = reference_trainer(config, steps, device)
    train()
    started = time.perf_counter()
    train()
    return steps * config.tokens_per_step / (time.perf_counter() - started)


TIMERS = {"wall": time.perf_counter, "cpu": time.process_time}


def serve(make_trainer) -> None:
    """Answer requests read from stdin, a JSON line each, with a line "REPLY <json>" on stdout.

    {"config": {...LMConfig}, "steps": N, "device": "cpu"}: `make_trainer(config, steps, device)`
    builds a model and N batches and returns a function that trains on them; it is run once
    (the warm-up). Reply: the thread count, whether CUDA is there.
    {"run": "wall" or "cpu"}: train on the N batches; reply the seconds by that clock.
    """
    import torch

    train = None
    for line in sys.stdin:
        request = json.loads(line)
        if "config" in request:
            train = make_trainer(LMConfig(**request["config"]), request["steps"], request["device"])
            train()
            reply = {"threads": torch.get_num_threads(), "cuda_available": torch.cuda.is_available()}
        else:
            clock = TIMERS[request["run"]]
            started = clock()
            train()
            reply = {"seconds": clock() - started}
        print("REPLY " + json.dumps(reply), flush=True)


def reference_trainer(config: LMConfig, steps: int, device: str):
    """The plain script's training on `steps` batches (the same batches every call)."""
    model = ReferenceLM(config, device)
    batches = random_batches(config, steps)

    def train() -> None:
        for batch in batches:
            model.step(batch)

    return train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cell", choices=sorted(ReferenceLM.RECURRENT), default="lstm")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--embedding", type=int, default=128)
    parser.add_argument("--vocabulary", type=int, default=2000)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's own)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # recurrent_throughput.py's worker
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.serve:
        serve(reference_trainer)
        return
    config = LMConfig(args.cell, args.batch, args.units, args.embedding, args.vocabulary, args.length)
    rate = tokens_per_second(config, args.steps, device=args.device)
    print(f"{config}: {rate:,.0f} tokens/s ({torch.get_num_threads()} threads, {args.device})")


if __name__ == "__main__":
    main()
