"""Ready-made memory-bound kernels of LLM infrastructure, written in the public tilemlir DSL.

Each module holds `@tilemlir.jit` factories: call one with its compile-time
arguments (the row width N, dtypes) to get a compiled kernel; rows stay a
symbolic dim `M`, so one kernel serves every batch size. Parameters come in
the order inputs, outputs, scalars; outputs are allocated and returned
(`out_idx`). The launch shape for each N comes from `row_config`: rows that
split evenly over whole warps, narrow rows (a warp each, several a block),
other rows one a block with masked chunks; rows too wide for registers are
streamed through the block in chunks (SwiGLU tiles them over a 2-D grid), so
every N works. The row factories also take the block shape (`max_chunks`:
16-byte chunks a thread holds; `min_blocks`: resident blocks per SM, which
caps registers) and the norms and per-row quant `hold`, the dtype a row is
kept in registers (float32, or the 16-bit input dtype for half the
registers, with the same output bits); the defaults are what
`benchmarks/sweep_rows.py` measured best on the H200.

    from tilemlir.kernels.norm import rmsnorm
    y = rmsnorm(N=4096)(x, w, 1e-6)
"""
