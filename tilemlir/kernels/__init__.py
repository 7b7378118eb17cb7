"""Ready-made memory-bound kernels of LLM infrastructure, written in the public tilemlir DSL.

Each module holds `@tilemlir.jit` factories: call one with its compile-time
arguments (the row width N, dtypes) to get a compiled kernel; rows stay a
symbolic dim `M`, so one kernel serves every batch size. Parameters come in
the order inputs, outputs, scalars; outputs are allocated and returned
(`out_idx`). The launch shape for each N comes from `row_config`: rows that
split evenly over whole warps, narrow rows (a warp each, several a block),
other rows one a block with masked chunks; rows too wide for registers are
streamed through the block in chunks (SwiGLU tiles them over a 2-D grid), so
every N works.

    from tilemlir.kernels.norm import rmsnorm
    y = rmsnorm(N=4096)(x, w, 1e-6)
"""
