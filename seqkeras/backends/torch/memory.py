"""Memory the torch backend's CPU training steps reuse instead of returning to the operating system."""

from __future__ import annotations

import ctypes

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


KEEP_BYTES = 1 << 30


MMAP_THRESHOLD_MAX = 32 << 20  # the most older glibc versions accept


def reuse_freed_memory() -> None:
    """Let freed tensor memory serve the next allocation instead of going back to the OS (glibc only).

    glibc serves an allocation above its mmap threshold (128 KB at start, raised
    by use to at most 32 MB) with fresh pages from the OS, and gives them back
    when it is freed, as it gives back the top of the heap beyond the trim
    threshold. A training step on the CPU frees and allocates the same
    (batch, length, vocabulary) tensors every step, and every fresh page costs a
    fault when first written: on the torch backend, 0 to 3,500 faults a step on
    the benchmark's small language model, up to a quarter of its time (issue 9).
    With both thresholds at 1 GiB, freed blocks stay in the heap and are reused.
    The process then keeps its peak memory until it ends, as PyTorch's GPU
    allocator and TensorFlow's BFC allocator do. Elsewhere (no mallopt) nothing changes.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return
    if not mallopt(M_MMAP_THRESHOLD, KEEP_BYTES):
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)  # older glibc versions refuse more
    mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
