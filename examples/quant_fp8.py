"""Per-row float8 (e4m3) quantisation with a float32 scale per row.

For each row: amax = max |x|, scale = amax / 448 (448 is e4m3's largest
value), Q = x / scale rounded to e4m3, S = scale, so that Q * S
reconstructs x. An all-zero row gets a tiny positive scale instead of 0.
One block quantises `block_M` rows of N.
"""

import tilemlir
import tilemlir.language as T

FP8_E4M3_MAX = 448.0
MIN_AMAX = 1e-12


@tilemlir.jit(out_idx=[1, 2])
def quant_fp8(N=4096, block_M=1, dtype="bfloat16", threads=128):
    M = T.symbolic("M")

    @T.prim_func
    def quant(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), T.float8_e4m3), S: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            amax = T.alloc_fragment((block_M,), T.float32)
            inv_scale = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_absmax(x, amax, dim=1)
            for i in T.Parallel(block_M):
                scaled_amax = T.max(amax[i], MIN_AMAX)
                inv_scale[i] = FP8_E4M3_MAX / scaled_amax
                amax[i] = scaled_amax / FP8_E4M3_MAX
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.min(T.max(x[i, j] * inv_scale[i], -FP8_E4M3_MAX), FP8_E4M3_MAX)
            T.copy(x, Q[bx * block_M, 0])
            T.copy(amax, S[bx * block_M])

    return quant


def make_inputs(rng, rows=31, n=4096, dtype="bfloat16"):
    from harness import numpy_dtype

    x = rng.standard_normal((rows, n)) * rng.uniform(0.01, 100, (rows, 1))
    return [x.astype(numpy_dtype(dtype))]


def reference(x):
    import numpy as np

    x = x.astype("float64")
    scale = np.maximum(np.abs(x).max(axis=1), MIN_AMAX) / FP8_E4M3_MAX
    return [x / scale[:, None], scale]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(quant_fp8.instantiate(), make_inputs, reference, tolerance=4e-2))
