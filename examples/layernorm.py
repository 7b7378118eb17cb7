"""LayerNorm: Y = (X - mean) / sqrt(var + eps) * W + B, row by row, float32 math.

One block normalises `block_M` rows of N. The mean comes from one
reduction; the variance from a second reduction over the centred values
(two passes over registers, more accurate than E[x^2] - E[x]^2).
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[3])
def layernorm(N=4096, block_M=1, dtype="float16", threads=128):
    M = T.symbolic("M")

    @T.prim_func
    def layernorm_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
                         Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), T.float32)
            b = T.alloc_fragment((N,), T.float32)
            mean = T.alloc_fragment((block_M,), T.float32)
            rstd = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            T.copy(B, b)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] - mean[i]
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, rstd, dim=1)
            for i in T.Parallel(block_M):
                rstd[i] = T.rsqrt(rstd[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * rstd[i] * w[j] + b[j]
            T.copy(x, Y[bx * block_M, 0])

    return layernorm_kernel


def make_inputs(rng, rows=23, n=4096, dtype="float16", eps=1e-5):
    from harness import numpy_dtype

    x = (0.5 + rng.standard_normal((rows, n))).astype(numpy_dtype(dtype))
    w = (1 + 0.1 * rng.standard_normal(n)).astype(numpy_dtype(dtype))
    b = (0.1 * rng.standard_normal(n)).astype(numpy_dtype(dtype))
    return [x, w, b, eps]


def reference(x, w, b, eps):
    x = x.astype("float64")
    centred = x - x.mean(axis=1, keepdims=True)
    rstd = 1 / ((centred * centred).mean(axis=1, keepdims=True) + eps) ** 0.5
    return [centred * rstd * w.astype("float64") + b.astype("float64")]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(layernorm.instantiate(), make_inputs, reference, tolerance=2e-3))
