"""Fused SiLU-and-multiply (the gated MLP activation): Y = silu(X[:, :D]) * X[:, D:].

X holds the gate and the up projection side by side (M x 2D). Each block
reads a `block_M x block_D` tile of both halves into float32 fragments,
computes g * sigmoid(g) * u point by point and writes the tile of Y.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def silu_and_mul(D=11008, block_M=4, block_D=256, dtype="bfloat16", threads=128):
    M = T.symbolic("M")

    @T.prim_func
    def silu_mul(X: T.Tensor((M, 2 * D), dtype), Y: T.Tensor((M, D), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(D, block_D), threads=threads) as (bm, bd):
            gate = T.alloc_fragment((block_M, block_D), T.float32)
            up = T.alloc_fragment((block_M, block_D), T.float32)
            T.copy(X[bm * block_M, bd * block_D], gate)
            T.copy(X[bm * block_M, D + bd * block_D], up)
            for i, j in T.Parallel(block_M, block_D):
                gate[i, j] = gate[i, j] * T.sigmoid(gate[i, j]) * up[i, j]
            T.copy(gate, Y[bm * block_M, bd * block_D])

    return silu_mul


def make_inputs(rng, rows=13, d=11008, dtype="bfloat16"):
    from harness import numpy_dtype

    return [(2 * rng.standard_normal((rows, 2 * d))).astype(numpy_dtype(dtype))]


def reference(x):
    import numpy as np

    x = x.astype("float64")
    d = x.shape[1] // 2
    gate, up = x[:, :d], x[:, d:]
    return [gate / (1 + np.exp(-gate)) * up]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(silu_and_mul.instantiate(), make_inputs, reference, tolerance=1e-2))
