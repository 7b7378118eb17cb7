"""Row max and row sum of a matrix in one pass: Max[r] = max(X[r, :]), Sum[r] = sum(X[r, :]).

One block handles `block_M` rows and walks them `block_N` columns at a
time, accumulating into float32 fragments with `clear=False` (the running
max starts at -inf, the running sum at 0).
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[1, 2])
def row_reduce(N=8192, block_M=4, block_N=1024, dtype="float32", threads=128):
    assert N % block_N == 0, "row_reduce: N must be a multiple of block_N"
    M = T.symbolic("M")

    @T.prim_func
    def row_max_sum(X: T.Tensor((M, N), dtype), Max: T.Tensor((M,), T.float32), Sum: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), T.float32)
            row_max = T.alloc_fragment((block_M,), T.float32)
            row_sum = T.alloc_fragment((block_M,), T.float32)
            T.fill(row_max, -T.infinity(T.float32))
            T.clear(row_sum)
            for k in range(N // block_N):
                T.copy(X[bx * block_M, k * block_N], x)
                T.reduce_max(x, row_max, dim=1, clear=False)
                T.reduce_sum(x, row_sum, dim=1, clear=False)
            T.copy(row_max, Max[bx * block_M])
            T.copy(row_sum, Sum[bx * block_M])

    return row_max_sum


def make_inputs(rng, rows=29, n=8192, dtype="float32"):
    return [(rng.standard_normal((rows, n)) - 2).astype(dtype)]


def reference(x):
    x = x.astype("float64")
    return [x.max(axis=1), x.sum(axis=1)]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(row_reduce.instantiate(), make_inputs, reference, tolerance=1e-5))
