"""Hardware limits of the NVIDIA GPUs tilemlir compiles for.

The figures are those of the CUDA C++ Programming Guide (CUDA 13), "Technical
Specifications per Compute Capability": the same for every arch NVRTC 13
targets (sm_75 and later) except the shared memory one block may use, which
is per arch. Nothing here imports MLIR: the dialect's verifiers, the CUDA
emitter and the runtime read the same numbers.
"""

from __future__ import annotations

import re

KIB = 1024
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)  # blocks along x, y, z
MAX_REGISTERS_PER_THREAD = 255  # 32-bit registers
REGISTER_BYTES = 4
MAX_LOCAL_BYTES_PER_THREAD = 512 * KIB
# What one thread can hold at all: its registers, and local memory for what does not fit in them.
MAX_BYTES_PER_THREAD = MAX_REGISTERS_PER_THREAD * REGISTER_BYTES + MAX_LOCAL_BYTES_PER_THREAD
THREAD_CAPACITY = (f"{MAX_BYTES_PER_THREAD} bytes: {MAX_REGISTERS_PER_THREAD} 32-bit registers and "
                   f"{MAX_LOCAL_BYTES_PER_THREAD // 1024} KiB of local memory")
MAX_STATIC_SHARED_BYTES = 48 * KIB  # a block's shared memory without cudaFuncSetAttribute's opt-in

# Shared memory one block may use with the opt-in (the runtime opts in for the emitted kernels' one
# dynamic buffer), by compute capability: the multiprocessor's capacity less the 1 KiB the system keeps.
MAX_SHARED_BYTES_PER_BLOCK = {
    75: 64 * KIB,
    80: 163 * KIB, 86: 99 * KIB, 87: 163 * KIB, 89: 99 * KIB,
    90: 227 * KIB,
    100: 227 * KIB, 103: 227 * KIB, 110: 227 * KIB,
    120: 99 * KIB, 121: 99 * KIB,
}

# Multiprocessors of the data-center part of an arch (H100 SXM and H200: 132; H100 PCIe has 114), the
# default size of a persistent grid.
SM_COUNT = {80: 108, 90: 132, 100: 148}

_ARCH = re.compile(r"^(?:sm_|compute_)?(\d+)[a-z]?$")


def sm_count(arch: str) -> int | None:
    """The multiprocessors `SM_COUNT` gives `arch`, None when it gives none."""
    match = _ARCH.match(arch.strip())
    return SM_COUNT.get(int(match.group(1))) if match else None


def max_shared_bytes(arch: str) -> int | None:
    """The shared memory one block may use on `arch` ("sm_90a", "sm_86", ...); None when the table has no
    figure for it (the runtime then checks against the device's own limit when it loads the kernel)."""
    match = _ARCH.match(arch.strip())
    return MAX_SHARED_BYTES_PER_BLOCK.get(int(match.group(1))) if match else None


def format_bytes(count: int) -> str:
    """`count` bytes with a binary unit where that reads better: "4096 bytes (4 KiB)"."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", KIB)):
        if count >= size:
            shown = f"{count / size:.1f}".removesuffix(".0")
            return f"{count} bytes ({shown} {unit})"
    return f"{count} bytes"
