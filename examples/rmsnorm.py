"""RMSNorm: Y = X / sqrt(mean(X**2) + eps) * W, row by row, float32 math.

One block normalises `block_M` rows of N (a compile-time width). The rows
are copied into a float32 fragment, squared, reduced to per-row sums, turned
into reciprocal RMS values, scaled by the weight and copied out (the copy
rounds to the output dtype).
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[2])
def rmsnorm(N=4096, block_M=1, dtype="bfloat16", threads=128):
    M = T.symbolic("M")

    @T.prim_func
    def rmsnorm_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                       Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), T.float32)
            rms = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, rms, dim=1)
            for i in T.Parallel(block_M):
                rms[i] = T.rsqrt(rms[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * rms[i] * w[j]
            T.copy(x, Y[bx * block_M, 0])

    return rmsnorm_kernel


def make_inputs(rng, rows=19, n=4096, dtype="bfloat16", eps=1e-6):
    from harness import numpy_dtype

    x = rng.standard_normal((rows, n)).astype(numpy_dtype(dtype))
    w = (1 + 0.1 * rng.standard_normal(n)).astype(numpy_dtype(dtype))
    return [x, w, eps]


def reference(x, w, eps):
    x = x.astype("float64")
    rms = 1 / (x * x).mean(axis=1, keepdims=True).__add__(eps) ** 0.5
    return [x * rms * w.astype("float64")]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(rmsnorm.instantiate(), make_inputs, reference, tolerance=1e-2))
