"""Keras's GRU (reset_after) on a CPU as one autograd function with its backward pass written out.

PyTorch has a fused CPU kernel for the LSTM (oneDNN's, through `torch._VF.lstm`)
but not for the GRU: `torch._VF.gru` steps about a dozen ATen ops a time step,
and autograd records each, so the backward pass replays them one by one. On the
lag-100 slice of cells_long_range (batch 32, 32 units) that made a GRU's
training step about 4× the LSTM's. Here each forward step is five in-place ops
and each backward step two (three where every step's output has a gradient),
the factors the backward pass needs are computed for all steps at once before
its loop, and the weights' gradients are one matrix product each after it. The
buffers, and their views of each step, are made once per shape and reused
(`Workspaces`): making them was about a tenth of a small GRU's training step.

The arithmetic, in Keras's gate order (z, r, h; kernel (in, 3·units),
recurrent kernel (units, 3·units), bias (2, 3·units): input and recurrent):

    z, r = sigmoid(x·W_zr + b_zr + h·U_zr + c_zr)
    n    = tanh(x·W_h + b_h + r ⊙ (h·U_h + c_h))
    h'   = n + z ⊙ (h − n)                       (torch.lerp(n, h, z))

Right padding: a padded step of a row sets its z to 1, so h' = h exactly (lerp
returns its end at weight 1) and every gate's gradient there is 0, as Keras's
masked loop keeps the state and PyTorch's packed sequences do.

This module imports torch: import it only on the torch backend.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import torch


@dataclass
class Forward:
    """What the forward pass works in, besides its output: every step's gates ([z; r; U_h·h + c_h], 3·units rows)
    and candidates n, each (rows, time, batch), and their views of each step."""

    gates: torch.Tensor
    candidates: torch.Tensor

    def __post_init__(self):
        units = self.candidates.shape[0]
        # Views per step, made once: indexing a list is cheaper than slicing a tensor in the loop (an unbind
        # of the time axis costs about 0.5 µs a view, six of them a call).
        self.step_gates, self.z_r = self.gates.unbind(1), self.gates[:2 * units].unbind(1)
        self.z, self.r, self.recurrent_h = (part.unbind(1) for part in self.gates.split(units))
        self.n = self.candidates.unbind(1)

    @classmethod
    def make(cls, units, steps, batch, like):
        return cls(like.new_empty(3 * units, steps, batch), like.new_empty(units, steps, batch))


@dataclass
class Backward:
    """What the backward pass works in: each step's five factors of dh and their products with it,
    (5, units, time, batch) each, and their views of each step."""

    factors: torch.Tensor
    grads: torch.Tensor

    def __post_init__(self):
        units, steps, batch = self.factors.shape[1:]
        self.step_factors, self.step_grads = self.factors.unbind(2), self.grads.unbind(2)
        self.direct = self.grads[0].unbind(1)
        self.through_gates = self.grads[1:4].view(3 * units, steps, batch).unbind(1)

    @classmethod
    def make(cls, units, steps, batch, like):
        return cls(like.new_empty(5, units, steps, batch), like.new_empty(5, units, steps, batch))


class Workspaces:
    """Free workspaces by shape: `take` one (made if none is free), `give` it back when nothing will read it.

    A forward workspace holds what autograd saved for the call's backward pass: it comes back when autograd frees
    the call's node (after its backward pass; at once without gradients; never while a retained graph may still
    run backward), through a finalizer of the call's context. A backward workspace comes back when the backward
    pass returns. At most `KEPT` free ones are kept, the least recently used dropped first (batches by length
    have a few widths)."""

    KEPT = 8

    def __init__(self, kind):
        self.kind, self.free, self.lock = kind, OrderedDict(), threading.Lock()

    def take(self, units, steps, batch, like):
        key = (units, steps, batch, like.dtype, like.device)
        with self.lock:
            free = self.free.get(key)
            if free:
                workspace = free.pop()
                if free:
                    self.free.move_to_end(key)
                else:  # no empty list is kept: `give` drops the oldest workspace of the first shape listed
                    del self.free[key]
                return key, workspace
        return key, self.kind.make(units, steps, batch, like)

    def give(self, key, workspace):
        with self.lock:
            self.free.setdefault(key, []).append(workspace)
            self.free.move_to_end(key)
            while sum(len(kept) for kept in self.free.values()) > self.KEPT:
                oldest = next(iter(self.free))
                self.free[oldest].pop(0)
                if not self.free[oldest]:
                    del self.free[oldest]


FORWARD, BACKWARD = Workspaces(Forward), Workspaces(Backward)


# A step's product, (3·units × units) by (units × batch), reads each step's columns with a stride. Up to about a
# million multiply-adds a second thread slows it (at 32 units and batch 32: 8.5 µs on 2 threads, 3.3 µs on one;
# at 64 units and batch 64: 20.0 and 17.1 µs); from 128 units and batch 32 (1.6 million) it pays (25.3 and 39.4).
ONE_THREAD_UP_TO = 1_000_000


@contextlib.contextmanager
def step_threads(units: int, batch: int):
    """The intra-op threads of the step loops: one where a step's product is small (`ONE_THREAD_UP_TO`), else the
    process's. The products over all steps at once, outside the loops, keep the process's threads. Setting the
    count costs about 0.1 µs; it is the process's setting, so another Python thread's torch ops run on one
    meanwhile."""
    threads = torch.get_num_threads()
    fewer = threads > 1 and 3 * units * units * batch <= ONE_THREAD_UP_TO
    if fewer:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if fewer:
            torch.set_num_threads(threads)


class KerasGRU(torch.autograd.Function):
    """Time-major rows of inputs (time·batch, features) → every step's h as (units, time, batch), and the last h
    (units, batch).

    Every tensor is laid out (rows, time, batch): a step is a (rows, batch) slice, whose rows the matrix
    products read with a stride, and all steps of one row block are one (rows, time·batch) matrix, so the
    input projection and each weight's gradient are a single product, with no copy.
    """

    @staticmethod
    def forward(ctx, inputs, h0, kernel, recurrent_kernel, bias, padding):
        ctx.set_materialize_grads(False)  # an output nobody used (the sequence, often) has no gradient to replay
        units, batch = recurrent_kernel.shape[0], h0.shape[0]
        steps = inputs.shape[0] // batch
        key, work = FORWARD.take(units, steps, batch, inputs)
        weakref.finalize(ctx, FORWARD.give, key, work)
        # Per step: [z; r; U_h·h + c_h] once the step has run; before, what the step adds U·h to. The candidates
        # start as W_h·x + b_h (outside r ⊙ (...)), to which each step adds r ⊙ (U_h·h + c_h) before its tanh.
        both = torch.cat([bias[0, :2 * units] + bias[1, :2 * units], bias[0, 2 * units:]])
        torch.addmm(both[:, None], kernel.T, inputs.T, out=work.gates.view(3 * units, steps * batch))
        work.candidates.copy_(work.gates[2 * units:])
        work.gates[2 * units:] = bias[1, 2 * units:, None, None]
        # h0, then each step's h, as (units, (time + 1)·batch): its first time·batch columns are the previous h's.
        # Not a workspace's: every step's h is the output, which may outlive the call.
        hidden = inputs.new_empty(units, (steps + 1) * batch)
        hidden[:, :batch] = h0.T
        h_out = hidden[:, batch:].view(units, steps, batch).unbind(1)
        recurrent_t = recurrent_kernel.T
        step_gates, z_r, z, r, recurrent_h, n = work.step_gates, work.z_r, work.z, work.r, work.recurrent_h, work.n
        padded = padding.unbind(0) if padding is not None else None
        h = hidden[:, :batch]
        with step_threads(units, batch):
            for t in range(steps):
                step_gates[t].addmm_(recurrent_t, h)
                z_r[t].sigmoid_()
                if padded is not None:
                    torch.maximum(z[t], padded[t], out=z[t])
                n[t].addcmul_(r[t], recurrent_h[t]).tanh_()
                h = torch.lerp(n[t], h, z[t], out=h_out[t])
        ctx.save_for_backward(inputs, kernel, recurrent_kernel, work.gates, work.candidates, hidden)
        return hidden[:, batch:].view(units, steps, batch), h

    @staticmethod
    @torch.autograd.function.once_differentiable  # a second derivative is not written out: an error, not a wrong 0
    def backward(ctx, d_hidden, d_last):
        inputs, kernel, recurrent_kernel, gates, n, hidden = ctx.saved_tensors
        units, steps, batch = n.shape
        key, work = BACKWARD.take(units, steps, batch, inputs)
        try:
            return _backward(work, d_hidden, d_last, inputs, kernel, recurrent_kernel, gates, n, hidden)
        finally:
            BACKWARD.give(key, work)


def _backward(work, d_hidden, d_last, inputs, kernel, recurrent_kernel, gates, n, hidden):
    units, steps, batch = n.shape
    z, r, recurrent_h = gates.split(units)
    previous = hidden[:, :steps * batch]
    # dL/d(pre-activation) at step t is dh_t times a factor, for all steps at once. Five blocks:
    # z (dh_{t-1}'s direct path), then the candidate's recurrent side (r ⊙ ...), z, r and the
    # candidate's input side. Blocks 1–3 are the recurrent kernel's gradient (in the order h, z, r)
    # and 2–4 the kernel's (z, r, h): each a slice of the same rows.
    factors = work.factors
    through_n, z_complement = factors[4], 1 - z
    torch.mul(z_complement, torch.addcmul(torch.ones((), dtype=n.dtype), n, n, value=-1), out=through_n)
    factors[0] = z
    torch.mul(through_n, r, out=factors[1])
    torch.mul((previous.view(units, steps, batch) - n) * z, z_complement, out=factors[2])
    torch.mul(factors[1] * recurrent_h, 1 - r, out=factors[3])
    # dh_{t-1} = block 0 + back @ blocks 1–3 of step t's gradients (each gate's U).
    u_z, u_r, u_h = recurrent_kernel.split(units, dim=1)
    back = torch.cat([u_h, u_z, u_r], 1)
    step_factors, step_grads = work.step_factors, work.step_grads
    direct, through_gates = work.direct, work.through_gates
    from_outputs = d_hidden.unbind(1) if d_hidden is not None else None
    dh = d_last if d_last is not None else inputs.new_zeros(units, batch)
    if from_outputs is not None:
        dh = dh + from_outputs[steps - 1]
    with step_threads(units, batch):
        for t in range(steps - 1, -1, -1):
            torch.mul(step_factors[t], dh, out=step_grads[t])
            dh = torch.addmm(direct[t], back, through_gates[t])
            if from_outputs is not None and t > 0:
                dh += from_outputs[t - 1]
    rows = work.grads.view(5 * units, steps * batch)
    recurrent_side, input_side = rows[units:4 * units], rows[2 * units:]  # (h, z, r) and (z, r, h)
    d_inputs = input_side.T @ kernel.T
    d_kernel = (input_side @ inputs).T
    d_h, d_z, d_r = (recurrent_side @ previous.T).split(units)
    d_recurrent = torch.cat([d_z, d_r, d_h]).T
    input_bias = input_side.sum(1)
    d_bias = torch.stack([input_bias, torch.cat([input_bias[:2 * units], recurrent_side[:units].sum(1)])])
    return d_inputs, dh.T, d_kernel, d_recurrent, d_bias, None


def gru(inputs, h0, kernel, recurrent_kernel, bias, padding=None):
    """Batch-first inputs (batch, time, features) → (outputs (batch, time, units), last h (batch, units)).

    `padding`: (batch, time) 1.0 at padded steps, 0.0 at real ones (right padding), or None.
    At a padded step the output repeats the row's last real h.
    """
    batch, steps, features = inputs.shape
    rows = inputs.transpose(0, 1).reshape(steps * batch, features)  # time-major: (t, b) rows
    if padding is not None:
        padding = padding.T.to(inputs.dtype)[:, None, :].contiguous()  # (time, 1, batch)
    hidden, last = KerasGRU.apply(rows, h0, kernel, recurrent_kernel, bias, padding)
    return hidden.permute(2, 1, 0), last.T
