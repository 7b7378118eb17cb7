"""Elementwise add, C = A + B, over vectors of any length.

Each block adds one tile of `block_N` elements: both inputs are copied into
register fragments, added point by point in T.Parallel, and the sum is
copied out. The tail block is guarded by the copies (out-of-range elements
are neither read nor written). The addition happens in the tensors' dtype.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def elementwise_add(block_N=1024, dtype="float16", threads=128):
    N = T.symbolic("N")

    @T.prim_func
    def add(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            a = T.alloc_fragment((block_N,), dtype)
            b = T.alloc_fragment((block_N,), dtype)
            T.copy(A[bx * block_N], a)
            T.copy(B[bx * block_N], b)
            for i in T.Parallel(block_N):
                a[i] = a[i] + b[i]
            T.copy(a, C[bx * block_N])

    return add


def make_inputs(rng, n=100_003, dtype="float16"):
    from harness import numpy_dtype

    return [rng.standard_normal(n).astype(numpy_dtype(dtype)) for _ in range(2)]


def reference(a, b):
    return [a.astype("float64") + b.astype("float64")]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(elementwise_add.instantiate(), make_inputs, reference, tolerance=1e-3))
