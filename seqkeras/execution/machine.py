"""Which machine computed a run: its CPU, the widest vector instructions it offers, its cores and threads.

A trained model's numbers depend on the CPU's kernels: oneDNN (under TensorFlow) and
PyTorch pick their code paths by instruction set, and the number of threads changes
the order in which sums are added. A run's record holds this beside the versions, so
that a result that moved can be traced to the machine that wrote it. Light: reads
/proc/cpuinfo and the environment, imports no backend.
"""

from __future__ import annotations

import functools
import os
import platform

# Instruction-set flags that change which kernels a library runs, widest last within each family.
X86_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16")
ARM_FLAGS = ("asimd", "sve", "sve2", "sme")
# The names the libraries give an instruction-set family, the widest first.
FAMILIES = (("amx_tile", "AMX"), ("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"),
            ("sme", "SME"), ("sve2", "SVE2"), ("sve", "SVE"), ("asimd", "NEON"))
# Variables that cap or switch off the CPU kernels a library picks (how another machine is imitated on this one).
KERNEL_VARIABLES = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "TF_ENABLE_ONEDNN_OPTS", "ATEN_CPU_CAPABILITY",
                    "XLA_FLAGS")


@functools.cache
def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (Linux); empty elsewhere."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break  # the first processor's block ends here
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_model() -> str:
    info = _cpuinfo()
    return info.get("model name") or info.get("Model") or platform.processor() or platform.machine() or "unknown"


def instruction_sets() -> list[str]:
    """The kernel-relevant flags this CPU has (x86: sse4_2 … amx; Arm: asimd, sve …)."""
    flags = set((_cpuinfo().get("flags") or _cpuinfo().get("Features") or "").split())
    return [flag for flag in (*X86_FLAGS, *ARM_FLAGS) if flag in flags]


def widest_instruction_set() -> str:
    have = set(instruction_sets())
    return next((name for flag, name in FAMILIES if flag in have), "unknown")


def describe(threads: int | None = None) -> dict[str, object]:
    """What a run's record says of its machine. threads: the run's intra-op threads, when known."""
    found: dict[str, object] = {
        "cpu": cpu_model(),
        "architecture": platform.machine(),
        "instruction_set": widest_instruction_set(),
        "flags": " ".join(instruction_sets()),
        "cores": os.cpu_count() or 1,
    }
    if threads is not None:
        found["threads"] = threads
    found.update({name: os.environ[name] for name in KERNEL_VARIABLES if os.environ.get(name)})
    return found
