"""The CPU backend: every kernel runs without a GPU (MLIR -> LLVM IR -> llvmlite JIT).

    from tilemlir.backends.cpu import build
    kernel = build(module, signature, level="tile")    # tile-level IR: the reference semantics
    kernel = build(module, signature, level="thread")  # thread-level IR: checks the GPU lowering
    y = kernel(x, w, 1e-6)                             # numpy arrays; ml_dtypes for bf16 / fp8

- `level="tile"` runs `lower-tile-to-loops` (tile IR -> upstream loops,
  every on-chip access bounds-checked and checked to read a written element).
- `level="thread"` runs `simulate-threads` (gpu.launch -> loops over
  blocks and threads, split at barriers and shuffles, with run-time race,
  bounds and never-written-read checks).
- A failed run-time check raises `SimulationError` (`backends/cpu/checks.py`).
- Then `tilemlir.backends.cpu.jit`: upstream conversion to LLVM,
  `translate_module_to_llvmir`, llvmlite O2 + MCJIT, and a call through
  memref descriptors (`tilemlir.backends.cpu.native`).
- Arguments are checked by the GPU runtime's `ArgumentBinder` (same
  `LaunchError`s); `out_idx` outputs are allocated and returned.

The names below load on first use, so the passes can import this package's
helper modules without importing the passes back.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "build": "tilemlir.backends.cpu.kernel",
    "CpuKernel": "tilemlir.backends.cpu.kernel",
    "SimulationError": "tilemlir.backends.cpu.kernel",
    "signature_from_ir": "tilemlir.backends.cpu.signature",
    "SimulateOptions": "tilemlir.passes.cpu_simulate_threads",
}


def __getattr__(name: str):
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tilemlir.backends.cpu' has no attribute '{name}'")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


__all__ = sorted(_EXPORTS)
