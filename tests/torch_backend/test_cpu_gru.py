"""The CPU GRU with its backward pass written out (seqkeras/backends/torch/cpu_gru.py).

In float64: its gradients against finite differences (torch.autograd.gradcheck), and its outputs and every
gradient against PyTorch's own GRU kernel, the one the suite called before, with and without right padding.
Against Keras's GRU layer (float32, masks, go_backwards, Bidirectional, dropout, a given state): the GRU cases
of test_fused_layers.py, which now run through this function on a CPU.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install -r requirements.txt)")

import torch

from seqkeras.backends.torch import cpu_gru, rnn_kernels
from tests.torch_backend.common import twins

BATCH, STEPS, FEATURES, UNITS = 4, 7, 3, 5
LENGTHS = [7, 4, 1, 0]  # a full row, two padded ones, and one of padding only


def tensors(seed: int = 0):
    """Inputs, h0 and Keras-layout weights (kernel, recurrent kernel, bias (2, 3·units)), float64, with gradients."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(BATCH, STEPS, FEATURES), (BATCH, UNITS), (FEATURES, 3 * UNITS), (UNITS, 3 * UNITS), (2, 3 * UNITS)]
    return [torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_() for shape in shapes]


def padding(lengths=LENGTHS) -> torch.Tensor:
    return (torch.arange(STEPS)[None, :] >= torch.tensor(lengths)[:, None]).to(torch.float64)


def test_gradients_match_finite_differences_for_the_sequence_and_the_last_state():
    inputs = tensors()
    assert torch.autograd.gradcheck(lambda *args: cpu_gru.gru(*args), inputs)
    assert torch.autograd.gradcheck(lambda *args: cpu_gru.gru(*args)[1], inputs)  # the sequence unused
    assert torch.autograd.gradcheck(lambda *args: cpu_gru.gru(*args)[0], inputs)  # the last state unused


def test_gradients_match_finite_differences_with_right_padding():
    assert torch.autograd.gradcheck(lambda *args: cpu_gru.gru(*args, padding=padding()), tensors(1))


def pytorch_gru(inputs, h0, kernel, recurrent_kernel, bias, lengths=None):
    """PyTorch's own kernel on the same weights: every step's output and the last h, through packing if padded."""
    weights = rnn_kernels.torch_weights("gru", kernel, recurrent_kernel, bias)
    if lengths is None:
        outputs, last = torch._VF.gru(inputs, h0[None], weights, True, 1, 0.0, True, False, True)
        return outputs, last[0]
    from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

    packed = pack_padded_sequence(inputs, torch.tensor(lengths).clamp(min=1), batch_first=True, enforce_sorted=False)
    data, last = torch._VF.gru(packed.data, packed.batch_sizes, h0[None].index_select(1, packed.sorted_indices),
                               weights, True, 1, 0.0, True, False)
    unpacked = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    outputs, _ = pad_packed_sequence(unpacked, batch_first=True, total_length=STEPS)
    return outputs, last[0].index_select(0, packed.unsorted_indices)


def outputs_and_gradients(outputs, last, inputs):
    generator = torch.Generator().manual_seed(2)
    loss = (outputs * torch.randn(outputs.shape, generator=generator, dtype=outputs.dtype)).sum() + (
        last * torch.randn(last.shape, generator=generator, dtype=last.dtype)).sum()
    return [outputs, last, *torch.autograd.grad(loss, inputs)]


@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "right padding"])
def test_outputs_and_every_gradient_match_pytorchs_gru_kernel(padded):
    inputs = tensors(3)
    outputs, last = cpu_gru.gru(*inputs, padding=padding() if padded else None)
    reference_outputs, reference_last = pytorch_gru(*inputs, lengths=LENGTHS if padded else None)
    if padded:
        # Packing gives zeros after a row's real steps, this function the row's last h (Keras's masked
        # output): compare the real steps. Packing cannot take a row with no real step (test below).
        real = (torch.arange(STEPS)[None, :] < torch.tensor(LENGTHS)[:, None])[:, :, None]
        rows = [index for index, length in enumerate(LENGTHS) if length > 0]
        outputs, last = torch.where(real, outputs, 0.0), last[rows]
        reference_outputs, reference_last = torch.where(real, reference_outputs, 0.0), reference_last[rows]
    ours = outputs_and_gradients(outputs, last, inputs)
    theirs = outputs_and_gradients(reference_outputs, reference_last, inputs)
    for mine, reference in zip(ours, theirs):
        assert torch.allclose(mine, reference, rtol=1e-10, atol=1e-12)


def test_a_row_of_padding_only_keeps_its_initial_state_exactly():
    inputs = tensors(4)
    outputs, last = cpu_gru.gru(*inputs, padding=padding())
    empty = LENGTHS.index(0)
    assert torch.equal(last[empty], inputs[1][empty])
    assert torch.equal(outputs[empty], inputs[1][empty].expand(STEPS, UNITS))  # the layer zeroes these (Keras)


def test_a_keras_gru_on_the_cpu_runs_through_it():
    calls = []
    original = cpu_gru.gru
    cpu_gru.gru = lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs)
    try:
        _, fused = twins("gru", return_sequences=True)
        fused(torch.zeros(BATCH, 6, 3))
    finally:
        cpu_gru.gru = original
    assert calls == [1]


def test_calls_of_one_shape_alive_together_keep_their_own_buffers():
    """Workspaces are reused between calls: two graphs alive at once (stacked layers, both directions), a
    graph whose backward pass runs twice (retain_graph), outputs kept from a call without gradients."""
    first, second = tensors(5), tensors(6)
    expected = [outputs_and_gradients(*cpu_gru.gru(*inputs), inputs) for inputs in (first, second)]
    alive = [cpu_gru.gru(*inputs) for inputs in (first, second)]  # both forward passes before either backward
    for (outputs, last), inputs, wanted in zip(alive, (first, second), expected):
        found = outputs_and_gradients(outputs, last, inputs)
        assert all(torch.equal(a, b) for a, b in zip(found, wanted))

    outputs, last = cpu_gru.gru(*first)
    loss = outputs.sum() + last.sum()
    once = torch.autograd.grad(loss, first, retain_graph=True)
    cpu_gru.gru(*second)[1].sum().backward()  # another call of the shape in between
    assert all(torch.equal(a, b) for a, b in zip(once, torch.autograd.grad(loss, first)))

    with torch.no_grad():
        kept, _ = cpu_gru.gru(*first)
        copy = kept.clone()
        cpu_gru.gru(*second)
    assert torch.equal(kept, copy)


def test_the_free_workspaces_stay_few_whatever_shape_was_taken_last():
    """A shape whose last free workspace was taken leaves no empty entry behind, for the oldest to be dropped from
    once more than KEPT are free (it was: IndexError in the finalizer that gives a workspace back, printed as
    "Exception ignored in" on stderr, the workspace never returned)."""
    pool = cpu_gru.Workspaces(cpu_gru.Backward)
    like = torch.zeros(1)
    key, workspace = pool.take(3, 2, 1, like)
    pool.give(key, workspace)
    assert pool.take(3, 2, 1, like)[1] is workspace  # reused
    for batch in range(2, 2 + pool.KEPT + 2):  # more free ones than are kept, each of another shape
        pool.give(*pool.take(3, 2, batch, like))
    assert sum(len(kept) for kept in pool.free.values()) == pool.KEPT
    assert all(pool.free.values())
    assert list(pool.free)[-1][:3] == (3, 2, 1 + pool.KEPT + 2)  # the newest kept, the oldest dropped


@pytest.mark.parametrize("units", [5, 256], ids=["a small step: one thread", "a large step: the process's"])
def test_the_process_keeps_its_threads(units):
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        generator = torch.Generator().manual_seed(0)
        inputs = [torch.randn(*shape, generator=generator).requires_grad_()
                  for shape in [(2, 3, 4), (2, units), (4, 3 * units), (units, 3 * units), (2, 3 * units)]]
        outputs, last = cpu_gru.gru(*inputs)
        assert torch.get_num_threads() == 2
        (outputs.sum() + last.sum()).backward()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
