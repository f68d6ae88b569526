"""Process set-up (seqkeras/runtime.py): freed memory kept for reuse on the torch backend."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from tests.conftest import REPO

# In a process of its own: the setting is for the life of the process, and pytest's should keep glibc's defaults.
PAGE_FAULTS = """
import resource
import numpy as np
from seqkeras import runtime

def page_faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        np.ones(8 << 20).sum()  # 64 MB allocated, written, freed: as a training step's big tensors
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

default = page_faults()
runtime.reuse_freed_memory()
page_faults()  # the heap grows to hold the block once
print(default, page_faults())
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="not glibc: no mallopt")
def test_freed_memory_is_reused_instead_of_faulted_in_again():
    result = subprocess.run([sys.executable, "-c", PAGE_FAULTS], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    default, kept = map(int, result.stdout.split())
    # glibc's default maps 64 MB fresh from the OS every time: at least one fault per 2 MB page, 20 × 32.
    assert default >= 500
    assert kept <= default / 20
