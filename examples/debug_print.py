"""Debugging inside kernels with T.print.

`debug_scale` scales rows of a bf16 matrix and prints along the way: scalars
(the block's row, the scalar parameter, a bool), a fragment (printed through
a shared copy, by thread 0), a shared buffer of uint16 (by thread 32:
`warp_id=1`) and a local buffer of bf16 (widened to float32 to print). Every
line names the block and the printing thread; `expected_lines` says what a
run prints, row by row (the CPU target and the GPU print the same lines).
examples/device_assert.py shows T.device_assert.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def debug_scale(block=8, threads=64):
    M = T.symbolic("M")
    half = block // 2

    @T.prim_func
    def scale(X: T.Tensor((M, block), "bfloat16"), alpha: T.float32, Y: T.Tensor((M, block), "float32")):
        with T.Kernel(M, threads=threads) as row:
            x = T.alloc_fragment((block,), "float32")
            left = T.alloc_shared((2, half), "uint16")
            ends = T.alloc_local((2,), "bfloat16")
            T.copy(X[row, 0], x)
            T.print(row * 10 + 1, msg="row id")
            T.print(alpha)
            T.print(row % 2 == 0, msg="even row")
            for i in T.Parallel(block):
                x[i] = x[i] * alpha
            T.print(x, msg="scaled")
            for i, j in T.Parallel(2, half):
                left[i, j] = T.cast(65535 - row - i * half - j, "uint16")
            T.print(left, warp_id=1)
            ends[0] = X[row, 0]
            ends[1] = X[row, block - 1]
            T.print(ends, msg="ends of the row")
            T.copy(x, Y[row, 0])

    return scale


def expected_lines(x, alpha, threads=64) -> list[list[str]]:
    """What `debug_scale` prints for `x` (an (M, block) array of bf16 values as float32) and `alpha`,
    one list of lines per row (a block prints its lines in order; blocks run in any order on a GPU)."""
    import numpy as np

    x = np.asarray(x, np.float32)
    alpha = np.float32(alpha)
    block = x.shape[1]
    half = block // 2
    rows = []
    for row in range(x.shape[0]):
        head = f"block ({row}, 0, 0), thread"
        lines = [f"row id: {head} 0: {row * 10 + 1}", f"alpha: {head} 0: {'%.9g' % alpha}",
                 f"even row: {head} 0: {'true' if row % 2 == 0 else 'false'}"]
        lines += [f"scaled: {head} 0: x[{i}] = {'%.9g' % (x[row, i] * alpha)}" for i in range(block)]
        lines += [f"left: {head} 32: left[{i}, {j}] = {65535 - row - i * half - j}"
                  for i in range(2) for j in range(half)]
        lines += [f"ends of the row: {head} 0: ends[{k}] = {'%.9g' % x[row, (0, block - 1)[k]]}" for k in range(2)]
        rows.append(lines)
    return rows



def make_inputs(rng, rows=37, block=8):
    from harness import numpy_dtype

    return [rng.standard_normal((rows, block)).astype(numpy_dtype("bfloat16")), float(rng.uniform(0.5, 2.0))]


def reference(x, alpha):
    return [x.astype("float64") * alpha]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(debug_scale.instantiate(), make_inputs, reference, tolerance=1e-6))
