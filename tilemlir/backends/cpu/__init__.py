"""The CPU backend: every kernel runs without a GPU (MLIR -> LLVM IR -> llvmlite JIT).

    from tilemlir.backends.cpu.kernel import build
    kernel = build(module, signature, level="tile")    # tile-level IR: the reference semantics
    kernel = build(module, signature, level="thread")  # thread-level IR: checks the GPU lowering
    y = kernel(x, w, 1e-6)                             # numpy arrays; ml_dtypes for bf16 / fp8

- `level="tile"` runs `lower-tile-to-loops` (`lower_tile_to_loops.py`: tile
  IR -> upstream loops, every on-chip access bounds-checked and checked to
  read a written element).
- `level="thread"` runs `simulate-threads` (`simulate_threads.py`:
  gpu.launch -> loops over blocks and threads, split at barriers and
  shuffles, with run-time race, bounds and never-written-read checks).
- A failed run-time check raises `SimulationError` (`kernel.py`).
- Then `jit.py`: `fuse-fma`, `expand-narrow-floats` and the upstream
  conversions to LLVM, `translate_module_to_llvmir`, llvmlite + MCJIT (O2 at tile level, O0 at
  thread level: `kernel.LLVM_OPT_LEVELS`),
  and a call through memref descriptors (`native.py`).
- Arguments are checked by the GPU runtime's `ArgumentBinder` (same
  `LaunchError`s); `out_idx` outputs are allocated and returned.

The package itself imports nothing: `simulate/ptx_isa.py` (numpy only)
loads without MLIR on a GPU machine that has none.
"""
