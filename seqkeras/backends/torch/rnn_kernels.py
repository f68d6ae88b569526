"""Keras recurrent layers' arithmetic on PyTorch's fused RNN kernels (torch backend only).

Keras's LSTM, GRU and SimpleRNN step a generic loop on the CPU: one small
matmul and a dozen elementwise ops per time step, each dispatched from Python.
PyTorch's `torch._VF.lstm / gru / rnn_tanh` (what `nn.LSTM` etc. call) run the
whole sequence in one ATen call (cuDNN on a GPU). This module maps Keras's
weights and Keras's masking semantics onto those kernels; `fused_rnn.py` holds
the Keras layers that decide when to use it. A GRU on a CPU takes
`cpu_gru.py` instead: PyTorch's CPU GRU is not fused (that module says why).

Keras's semantics reproduced here, for a right-padded mask (lengths L per row):
- states stop changing after a row's last real step (PyTorch's packed sequences
  do exactly this; on a CPU, where the packed kernels are unfused, the kernel
  runs over the padding instead and a row's final h is its output at step L − 1:
  an LSTM asked for its final c, which is no output, is packed);
- outputs at padded steps repeat the last real output, or are zeros when the
  layer has `zero_output_for_mask` (as Bidirectional sets);
- `go_backwards` reverses the whole padded time axis, so a row reads its
  padding first (states stay initial, outputs zero) and then its real steps
  from last to first; outputs come back in that processing order;
- a fully masked row (L = 0) keeps its initial state and outputs zeros.

This module imports torch: import it only on the torch backend.
"""

from __future__ import annotations

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from seqkeras.backends.torch import cpu_gru

KERNELS = {"simple_rnn": torch._VF.rnn_tanh, "lstm": torch._VF.lstm, "gru": torch._VF.gru}


def torch_weights(kind: str, kernel, recurrent_kernel, bias) -> list[torch.Tensor]:
    """Keras (in, gates·units) weights → PyTorch's [weight_ih, weight_hh, bias_ih, bias_hh].

    Built from the variables on every call, so gradients flow back to Keras's own
    weights. Gate orders: Keras LSTM i,f,c,o = PyTorch i,f,g,o (no reordering);
    Keras GRU z,r,h → PyTorch r,z,n. Keras's SimpleRNN and LSTM have one bias
    (PyTorch's second is zeros); a reset_after GRU has two, (input, recurrent),
    which are exactly PyTorch's b_i* and b_h* (the recurrent bias sits inside r·(…)).
    """
    if kind == "gru":
        kernel, recurrent_kernel = (_gru_gate_order(w, dim=1) for w in (kernel, recurrent_kernel))
        bias_ih, bias_hh = _gru_gate_order(bias[0], dim=0), _gru_gate_order(bias[1], dim=0)
    else:
        bias_ih, bias_hh = bias, torch.zeros_like(bias)
    weight_ih, weight_hh = kernel.T, recurrent_kernel.T
    if kind == "lstm" and kernel.device.type == "cpu":
        # The CPU LSTM kernel (oneDNN) wants row-major (gates·units, in) matrices and copies a
        # transposed view, in the forward pass and again in the backward pass. Copied here,
        # the copy is what autograd keeps for the backward pass: one copy a step instead of
        # two (about 0.8 ms of an 89 ms step at the benchmark's 256 units). The GRU and
        # SimpleRNN kernels multiply transposed views as they are; cuDNN copies the weights
        # into one buffer of its own in any case.
        weight_ih, weight_hh = weight_ih.contiguous(), weight_hh.contiguous()
    return [weight_ih, weight_hh, bias_ih, bias_hh]


def _gru_gate_order(weight, dim: int):
    z, r, h = torch.chunk(weight, 3, dim=dim)
    return torch.cat([r, z, h], dim=dim)


def right_padded_lengths(mask) -> tuple[torch.Tensor | None, str | None]:
    """(lengths, None) for a mask of real steps followed only by padding; (None, reason) otherwise.

    lengths is None too when no step is masked: the unpacked kernel is then exact and cheaper.
    """
    if mask is None:
        return None, None
    mask = mask.to(torch.bool)
    lengths = mask.sum(dim=1)
    steps = mask.shape[1]
    if int(lengths.min()) == steps:  # nothing masked (the usual batch): one read of a number, no more
        return None, None
    prefix = torch.arange(steps, device=mask.device)[None, :] < lengths[:, None]
    if not bool(torch.equal(mask, prefix)):
        return None, "with a mask that is not right padding (a masked step before a real one)"
    return lengths, None


def fused_rnn(
    kind: str,
    inputs: torch.Tensor,
    initial_states: list[torch.Tensor],
    keras_weights: list[torch.Tensor],
    lengths: torch.Tensor | None,
    *,
    go_backwards: bool,
    zero_output_for_mask: bool,
    final_states: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor | None]]:
    """One recurrent layer over (batch, time, features): returns Keras's (last_output, outputs, states).

    `keras_weights`: the cell's (kernel, recurrent_kernel, bias) tensors, as Keras holds them.
    `lengths` (int, per row) comes from `right_padded_lengths`; None means no padding.
    `final_states` False: the caller reads no final state, and an LSTM's final c over padding is None.
    """
    cpu_gru_kernel = kind == "gru" and inputs.device.type == "cpu"  # PyTorch's CPU GRU is not fused
    if lengths is None:
        if go_backwards:
            inputs = torch.flip(inputs, dims=[1])
        if cpu_gru_kernel:
            outputs, last = cpu_gru.gru(inputs, initial_states[0], *keras_weights)
            return last, outputs, [last]  # the last h itself: the sequence, often unused, then has no gradient
        outputs, *final = _kernel(kind, inputs, initial_states, keras_weights)
        return outputs[:, -1], outputs, [state[0] for state in final]

    steps = inputs.shape[1]
    positions = torch.arange(steps, device=inputs.device)[None, :]
    real = positions < lengths[:, None]
    if go_backwards:
        inputs = _real_steps_reversed(inputs, positions, lengths)
    if cpu_gru_kernel:
        outputs, last = cpu_gru.gru(inputs, initial_states[0], *keras_weights, padding=~real)
        states = [last]
    elif inputs.device.type == "cpu" and (kind == "simple_rnn" or not final_states):
        outputs, states = _over_padding(kind, inputs, initial_states, keras_weights, lengths)
    else:
        outputs, states = _packed(kind, inputs, initial_states, keras_weights, lengths)
    # Rows with no real step keep their initial state.
    empty = (lengths == 0)[:, None]
    states = [state if state is None else torch.where(empty, initial, state)
              for initial, state in zip(initial_states, states)]
    outputs = _keras_masked_outputs(outputs, states[0], real, empty, go_backwards=go_backwards,
                                    zero_output_for_mask=zero_output_for_mask)
    if go_backwards:
        outputs = _padding_first(outputs, positions, lengths)
    return outputs[:, -1], outputs, states


def _kernel(kind, inputs, initial_states, keras_weights, batch_sizes=None):
    """PyTorch's fused kernel on a batch-first padded tensor, or on packed data with its `batch_sizes`."""
    train = torch.is_grad_enabled()  # cuDNN keeps what backward needs only in training mode
    weights, hx = torch_weights(kind, *keras_weights), _torch_state(kind, initial_states)
    if batch_sizes is None:
        return KERNELS[kind](inputs, hx, weights, True, 1, 0.0, train, False, True)
    return KERNELS[kind](inputs, batch_sizes, hx, weights, True, 1, 0.0, train, False)


def _over_padding(kind, inputs, initial_states, keras_weights, lengths):
    """The kernel over the padding, unpacked: (outputs, final states), each row's final h its output at its last
    real step; an LSTM's final c is not an output (None).

    On a CPU the packed kernels are PyTorch's unfused ones (an LSTM's fwd + bwd 2.4× its oneDNN kernel's over the
    same padded batch). A step's output depends on the steps before it only, so the real steps' outputs are the
    same; the padded steps' outputs are replaced (`_keras_masked_outputs`)."""
    outputs, *_ = _kernel(kind, inputs, initial_states, keras_weights)
    last = outputs.gather(1, (lengths - 1).clamp(min=0)[:, None, None].expand(-1, 1, outputs.shape[2]))[:, 0]
    return outputs, [last] + ([None] if kind == "lstm" else [])


def _packed(kind, inputs, initial_states, keras_weights, lengths):
    """The kernel on packed sequences: (outputs, zeros after each row's real steps; final states)."""
    # Packing needs every length ≥ 1; rows with no real step get their initial state back (fused_rnn).
    packed = pack_padded_sequence(inputs, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
    order, restore = packed.sorted_indices, packed.unsorted_indices
    sorted_states = [state.index_select(0, order) for state in initial_states]
    out_data, *final = _kernel(kind, packed.data, sorted_states, keras_weights, batch_sizes=packed.batch_sizes)
    outputs = PackedSequence(out_data, packed.batch_sizes, order, restore)
    outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=inputs.shape[1])
    return outputs, [state[0].index_select(0, restore) for state in final]


def _keras_masked_outputs(outputs, last, real, empty, *, go_backwards: bool, zero_output_for_mask: bool):
    """Each row's outputs after its last real step as Keras's masked loop gives them: the last real output
    (`last`, its final h) repeated, or zeros with zero_output_for_mask or go_backwards (whose padding comes
    first, `_padding_first`); zeros everywhere in a row with no real step (Keras's first "previous output")."""
    if go_backwards or zero_output_for_mask:
        return torch.where(real[:, :, None], outputs, torch.zeros_like(outputs))
    return torch.where(real[:, :, None], outputs, torch.where(empty, torch.zeros_like(last), last)[:, None, :])


def _real_steps_reversed(inputs, positions, lengths):
    """Each row's real steps in reverse, at the front (padding stays behind them): go_backwards of a padded row."""
    reverse = torch.where(positions < lengths[:, None], lengths[:, None] - 1 - positions, positions)
    return torch.gather(inputs, 1, reverse[:, :, None].expand_as(inputs))


def _padding_first(outputs, positions, lengths):
    """Shift each row right by its padding: padding first (zeros there), then the reversed real steps."""
    steps = outputs.shape[1]
    source = (positions - (steps - lengths[:, None])) % steps
    return torch.gather(outputs, 1, source[:, :, None].expand_as(outputs))


def _torch_state(kind: str, states: list[torch.Tensor]):
    """Keras's [h] or [h, c], each (batch, units) → PyTorch's h0 or (h0, c0), each (1, batch, units)."""
    if kind == "lstm":
        return (states[0][None], states[1][None])
    return states[0][None]
