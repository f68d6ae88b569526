"""Seeds trained together: what each way of stacking replicas gains over training them one after another (issue 20).

Runs that differ only in their seed could be trained as one computation, with
the replicas along a new axis. Whether that pays depends on the hardware, so
before the suite does it, this measures each candidate on the benchmark's
language model (`pytorch_reference.LMConfig`: Embedding → LSTM → Dense over
the vocabulary, Adam, cross-entropy, length 64), in plain PyTorch, at the two
sizes of the issue (batch 16 / 32 units, batch 32 / 256 units):

- **one after another** (the baseline): each replica's step alone, PyTorch's
  fused LSTM kernel, its own backward pass and Adam update, as the suite trains
  a run today;
- **lockstep**: the replicas' forward passes (a fused kernel each), one backward
  pass of the summed loss, one Adam update over every replica's weights:
  shares only the per-step overheads;
- **block-diagonal**: one fused kernel over N·units, the replicas' inputs side by
  side and the weights block-diagonal (each replica sees only its own units);
  exact only without padding, since one length per row serves every replica;
- **batched matmul**: the LSTM stepped in Python with `torch.bmm` over the replica
  axis (what `torch.func.vmap` makes of a step loop): one matmul per step for all
  replicas, no fused kernel.

Each figure is the seconds per training step of all N replicas one after another
over those of the strategy (median of `rounds` alternating rounds); the figure's
text also gives the largest difference of any final weight from the replicas
trained alone, so that a strategy that is fast but not exact shows it.
Goals (issue 20): 3 seeds ≥ 1.5× at the small size, ≥ 1.2× at the full size.
On a GPU (`--device cuda`, benchmarks/gpu_check.sh) also 8 and 64 seeds
(goal at 64: ≥ 20×).

    .venv/bin/python benchmarks/seeds_together.py [--tiny] [--device cuda] [--replicas 1 8 64]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pytorch_reference import LMConfig  # noqa: E402

SIZES = {"small": LMConfig(batch=16, units=32), "full": LMConfig(batch=32, units=256)}
GOALS = {("small", 3): 1.5, ("full", 3): 1.2, ("small", 64): 20.0, ("full", 64): 20.0}
STRATEGIES = ("lockstep", "block-diagonal", "batched matmul")


def replica_weights(torch, config: LMConfig, replicas: int, device: str) -> list[list]:
    """Each replica's [embedding, W_ih, W_hh, bias, W_out, b_out], drawn from its own seed."""
    weights = []
    for seed in range(replicas):
        generator = torch.Generator().manual_seed(seed)
        shapes = [(config.vocabulary, config.embedding), (4 * config.units, config.embedding),
                  (4 * config.units, config.units), (4 * config.units,), (config.units, config.vocabulary),
                  (config.vocabulary,)]
        weights.append([(torch.randn(shape, generator=generator) * 0.1).to(device).requires_grad_()
                        for shape in shapes])
    return weights


def replica_batches(torch, config: LMConfig, replicas: int, steps: int, device: str):
    """Each replica's own token ids and targets per step: (replicas, steps, batch, length)."""
    generator = torch.Generator().manual_seed(1234)
    shape = (replicas, steps, config.batch, config.length)
    return (torch.randint(0, config.vocabulary, shape, generator=generator).to(device),
            torch.randint(0, config.vocabulary, shape, generator=generator).to(device))


def loss_of(torch, weights, logits, targets):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def fused_forward(torch, weights, tokens):
    embedding, w_ih, w_hh, bias, w_out, b_out = weights
    batch, units = tokens.shape[0], w_hh.shape[1]
    state = (tokens.new_zeros((1, batch, units), dtype=torch.float32),) * 2
    outputs, *_ = torch._VF.lstm(embedding[tokens], state, [w_ih, w_hh, bias, torch.zeros_like(bias)],
                                 True, 1, 0.0, True, False, True)
    return outputs @ w_out + b_out


def block_diagonal_forward(torch, weights, tokens):
    """Every replica's LSTM in one fused kernel: gate g of replica r at rows g·N·H + r·H … (+H)."""
    replicas, units = len(weights), weights[0][2].shape[1]
    inputs = torch.cat([w[0][tokens[r]] for r, w in enumerate(weights)], dim=2)
    gates = range(4)
    w_ih = torch.cat([torch.block_diag(*[w[1][g * units:(g + 1) * units] for w in weights]) for g in gates])
    w_hh = torch.cat([torch.block_diag(*[w[2][g * units:(g + 1) * units] for w in weights]) for g in gates])
    bias = torch.cat([w[3][g * units:(g + 1) * units] for g in gates for w in weights])
    state = (inputs.new_zeros((1, inputs.shape[0], replicas * units)),) * 2
    outputs, *_ = torch._VF.lstm(inputs, state, [w_ih, w_hh, bias, torch.zeros_like(bias)],
                                 True, 1, 0.0, True, False, True)
    return [outputs[..., r * units:(r + 1) * units] @ w[4] + w[5] for r, w in enumerate(weights)]


def batched_matmul_forward(torch, weights, tokens):
    """The LSTM stepped with one bmm per step over the replica axis (Keras's gate order i, f, c, o)."""
    stack = [torch.stack([w[k] for w in weights]) for k in range(6)]
    embedding, w_ih, w_hh, bias, w_out, b_out = stack
    replicas, batch, length = tokens.shape
    inputs = torch.stack([embedding[r][tokens[r]] for r in range(replicas)])  # (N, batch, length, emb)
    projected = torch.matmul(inputs, w_ih.transpose(1, 2)[:, None]) + bias[:, None, None, :]
    h = c = inputs.new_zeros((replicas, batch, w_hh.shape[2]))
    outputs = []
    for step in range(length):
        z = projected[:, :, step] + torch.bmm(h, w_hh.transpose(1, 2))
        i, f, g, o = z.chunk(4, dim=2)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outputs.append(h)
    return torch.matmul(torch.stack(outputs, dim=2), w_out[:, None]) + b_out[:, None, None, :]


def train(torch, strategy: str, weights, tokens, targets) -> None:
    """`steps` Adam steps of every replica, as `strategy` computes them."""
    replicas, steps = tokens.shape[:2]
    if strategy == "one after another":
        optimizers = [torch.optim.Adam(w, lr=1e-3, foreach=True) for w in weights]
        for r in range(replicas):
            for step in range(steps):
                optimizers[r].zero_grad(set_to_none=True)
                loss_of(torch, weights[r], fused_forward(torch, weights[r], tokens[r, step]),
                        targets[r, step]).backward()
                optimizers[r].step()
        return
    optimizer = torch.optim.Adam([w for ws in weights for w in ws], lr=1e-3, foreach=True)
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        if strategy == "lockstep":
            logits = [fused_forward(torch, w, tokens[r, step]) for r, w in enumerate(weights)]
        elif strategy == "block-diagonal":
            logits = block_diagonal_forward(torch, weights, tokens[:, step])
        else:
            logits = batched_matmul_forward(torch, weights, tokens[:, step]).unbind(0)
        # Replica r's loss depends on its weights only: the sum's gradient is each one's own.
        sum(loss_of(torch, w, logit, targets[r, step]) for r, (w, logit) in enumerate(zip(weights, logits))).backward()
        optimizer.step()


def timed(torch, strategy, config, replicas, steps, device) -> tuple[float, list]:
    weights = replica_weights(torch, config, replicas, device)
    tokens, targets = replica_batches(torch, config, replicas, steps, device)
    synchronize = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    synchronize()
    started = time.perf_counter()
    train(torch, strategy, weights, tokens, targets)
    synchronize()
    return (time.perf_counter() - started) / steps, weights


def measure(tiny: bool = False, device: str = "cpu", replica_counts=(3,), rounds: int | None = None) -> list[dict]:
    import torch

    rounds = rounds or (1 if tiny else 3)
    steps = 2 if tiny else 6
    rows = []
    sizes = {"tiny": replace(SIZES["small"], vocabulary=50, length=8, embedding=8, units=8, batch=4)} if tiny else SIZES
    for size, config in sizes.items():
        for replicas in replica_counts:
            seconds = {name: [] for name in ("one after another", *STRATEGIES)}
            final = {}
            timed(torch, "one after another", config, replicas, 1, device)  # warm-up: allocator, kernels
            for _ in range(rounds):
                for name in seconds:
                    took, final[name] = timed(torch, name, config, replicas, steps, device)
                    seconds[name].append(took)
            baseline = statistics.median(seconds["one after another"])
            for name in STRATEGIES:
                value = statistics.median(seconds[name])
                drift = max(float((a - b).detach().abs().max())
                            for ws, alone in zip(final[name], final["one after another"])
                            for a, b in zip(ws, alone))
                goal = GOALS.get(("small" if size == "tiny" else size, replicas))
                rows.append({
                    "benchmark": "seeds together",
                    "figure": f"{replicas} seeds, {name} vs one after another, batch {config.batch}, units "
                              f"{config.units}, {device}; largest final-weight difference from alone {drift:.1e}",
                    "value": round(value * 1000, 2), "unit": "ms/step", "baseline": round(baseline * 1000, 2),
                    "ratio": round(baseline / value, 2),
                    "goal": None if goal is None else f"ratio >= {goal:g}",
                    "met": bool(goal is not None and baseline / value >= goal),
                })
    return rows


def measure_gpu(tiny: bool = False) -> list[dict]:
    """benchmarks/gpu_check.sh: 1, 8 and 64 seeds on the GPU; without CUDA, the same code on the CPU (tiny sizes)."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    return measure(tiny or device != "cuda", device, (1, 8, 64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="smallest sizes: checks the benchmark runs, not speed")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--replicas", type=int, nargs="+", default=[3], help="seeds trained together (default 3)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    for row in measure(args.tiny, args.device, args.replicas, args.rounds):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
