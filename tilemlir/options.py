"""The compile options of each target, typed and checked before anything compiles.

`tilemlir.compile(fn, target, **options)` (and `@tilemlir.jit(**options)`)
turn their keyword options into one of these frozen records with
`options_for(target, options)`, which names the option at fault (an
unknown one, a value of the wrong type or out of range) before the frontend
runs. The driver takes the record; equal records are the same compile.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from tilemlir.diagnostics import CompileError
from tilemlir.hardware import sm_count

TARGETS = ("cuda", "cpu")
CPU_LEVELS = ("tile", "thread")


@dataclass(frozen=True)
class CudaOptions:
    """`target="cuda"`."""

    fast_math: bool = False  # fast-math intrinsics and NVRTC's -use_fast_math
    fmad: bool | None = None  # NVRTC's --fmad; None: the emitter's choice
    arch: str | None = None  # e.g. "sm_90a"; None: the current device's
    use_cache: bool = True  # the disk caches (source level and NVRTC)
    # 32 or 64-bit index math; None: 32 where proven exact (emit_cuda/index_width.py).
    index_bits: int | None = None
    # True: wgmma on sm_90a where select-mma can place the gemm, else mma.sync; "mma_sync" / "wgmma": that
    # instruction; False: every T.gemm on CUDA cores (select-mma selects none)
    tensor_cores: bool | str = True
    # T.Pipelined ring copies TMA can run become TMA boxes on mbarriers (sm_90a); opt-in until a GPU run validates it
    tma: bool = False
    # with tma=True: one producer warpgroup (thread ids >= threads) issues the TMA boxes, the user's threads
    # consume (wait full[s], wgmma, arrive empty[s]); passes/warp_specialize.py
    warp_specialize: bool = False
    # with warp_specialize=True: a grid of at most this many blocks (True: the arch's SM count), each walking
    # the tiles in a loop whose producer fills the next tile's stages during the epilogue
    persistent: bool | int = False


@dataclass(frozen=True)
class CpuOptions:
    """`target="cpu"`: the exact reference, no GPU."""

    level: str = "tile"  # "tile": the frontend IR; "thread": the `final` stage IR, simulated
    fast_math: bool = False  # accepted so a kernel's options work on both targets; no effect
    index_bits: int | None = None  # the CPU backend computes index math in 64 bits: 64 or None
    # as for CUDA; True is mma.sync (no arch here), "wgmma" makes the thread level simulate the sm_90a lowering
    tensor_cores: bool | str = True
    tma: bool = False  # as for CUDA: the thread level simulates the TMA pipeline
    warp_specialize: bool = False  # as for CUDA (needs tma=True)
    persistent: bool | int = False  # as for CUDA (True: sm_90a's SM count)


TargetOptions = CudaOptions | CpuOptions
_RECORDS = {"cuda": CudaOptions, "cpu": CpuOptions}
_BOOLS = ("fast_math", "use_cache", "tma", "warp_specialize")
TENSOR_CORE_INSTRUCTIONS = ("mma_sync", "wgmma")
WGMMA_ARCHS = ("sm_90a",)
TMA_ARCHS = ("sm_90a",)
_INDEX_BITS = {"cuda": (32, 64), "cpu": (64,)}


def known_options() -> list[str]:
    """Every option some target takes."""
    return sorted({f.name for record in _RECORDS.values() for f in dataclasses.fields(record)})


def options_for(target: str, options: Mapping[str, Any]) -> TargetOptions:
    """The options record of `target` from keyword options; a CompileError names a bad one."""
    if target not in _RECORDS:
        raise CompileError(f"unknown target '{target}' (known targets: {', '.join(TARGETS)})")
    record = _RECORDS[target]
    allowed = [f.name for f in dataclasses.fields(record)]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise CompileError(
            f"unknown option(s) for target '{target}': {', '.join(unknown)} (known: {', '.join(allowed)})"
        )
    for name, value in options.items():
        _check(target, name, value)
    return record(**options)


def _check(target: str, name: str, value: Any) -> None:
    if name in _BOOLS or (name == "fmad" and value is not None):
        if not isinstance(value, bool):
            raise CompileError(f"option {name} for target '{target}' must be True or False, got {value!r}")
    elif name == "tensor_cores" and not isinstance(value, bool) and value not in TENSOR_CORE_INSTRUCTIONS:
        raise CompileError(f"option tensor_cores for target '{target}' must be True, False, 'mma_sync' or 'wgmma', "
                           f"got {value!r}")
    elif name == "arch" and value is not None and not isinstance(value, str):
        raise CompileError(f"option arch for target '{target}' must be a string such as 'sm_90a', or None "
                           f"for the current device's, got {value!r}")
    elif name == "index_bits":
        _check_index_bits(target, value)
    elif name == "persistent" and not isinstance(value, bool) and (type(value) is not int or value < 1):
        raise CompileError(f"option persistent for target '{target}' must be True, False or a positive number of "
                           f"blocks, got {value!r}")
    elif name == "level" and value not in CPU_LEVELS:
        raise CompileError(f"CPU option level must be one of {', '.join(CPU_LEVELS)}, got {value!r}")


def tensor_core_instruction(tensor_cores: bool | str, arch: str | None) -> str | None:
    """The instruction select-mma tries first ("wgmma" or "mma_sync"), None for none, for the option
    `tensor_cores` on `arch` (None: the CPU target, which simulates either). True takes the best the arch
    has: wgmma on sm_90a (where select-mma cannot place a gemm on wgmma it says why and keeps mma.sync),
    mma.sync elsewhere and on the CPU target."""
    if tensor_cores is False:
        return None
    if tensor_cores is True:
        return "wgmma" if arch in WGMMA_ARCHS else "mma_sync"
    if tensor_cores == "wgmma" and arch is not None and arch not in WGMMA_ARCHS:
        raise CompileError(f"option tensor_cores='wgmma' needs arch {' or '.join(WGMMA_ARCHS)} (Hopper's wgmma), "
                           f"not {arch}")
    return tensor_cores


def use_tma(tma: bool, arch: str | None) -> bool:
    """Whether plan-pipeline makes ring copies TMA for the option `tma` on `arch` (None: the CPU target)."""
    if tma and arch is not None and arch not in TMA_ARCHS:
        raise CompileError(f"option tma=True needs arch {' or '.join(TMA_ARCHS)} (Hopper's TMA), not {arch}")
    return tma


def use_warp_specialization(warp_specialize: bool, tma: bool) -> bool:
    """Whether warp-specialize splits TMA pipelines into producer and consumer warpgroups (the option
    `warp_specialize`); it needs the TMA ring copies of `tma=True` (which itself checks the arch)."""
    if warp_specialize and not tma:
        raise CompileError("option warp_specialize=True needs tma=True (sm_90a): the producer warpgroup issues "
                           "the TMA ring copies")
    return warp_specialize


def persistent_blocks(persistent: bool | int, warp_specialize: bool, arch: str | None) -> int:
    """The persistent grid's most blocks for the option `persistent` (0: not persistent); True is the SM count
    of `arch` (None: the CPU target, which simulates sm_90a's). It needs the warp-specialized schedule."""
    if persistent is False:
        return 0
    if not warp_specialize:
        raise CompileError("option persistent needs warp_specialize=True: the producer warpgroup fills the next "
                           "tile's stages while the consumers store the last one")
    if persistent is not True:
        return persistent
    count = sm_count(arch or "sm_90a")
    if count is None:
        raise CompileError(f"option persistent=True: no SM count is known for {arch}; give the number of blocks "
                           f"(persistent=N)")
    return count


def _check_index_bits(target: str, value: Any) -> None:
    allowed = _INDEX_BITS[target]
    if value is None or (type(value) is int and value in allowed):
        return
    choices = " or ".join(str(a) for a in allowed)
    why = "; the CPU backend (the reference) computes index math in 64 bits" if target == "cpu" and value == 32 else ""
    raise CompileError(f"option index_bits for target '{target}' must be {choices}, or None to let the compiler "
                       f"choose, got {value!r}{why}")
