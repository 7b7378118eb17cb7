"""Debugging inside kernels with T.device_assert.

`checked_gather` gathers `table[index[i]]` and asserts every index is in the
table: on the GPU a bad index traps (the launch fails; the message, the
Python line, the block and the thread go to stderr); on the CPU target the
run raises a located `tilemlir.DeviceAssertionError`. examples/debug_print.py
shows T.print.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def checked_gather(block=128, threads=128):
    N, M = T.symbolic("N"), T.symbolic("M")

    @T.prim_func
    def gather(table: T.Tensor((N,), "float32"), index: T.Tensor((M,), "int32"), out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block), threads=threads) as bx:
            for i in T.Parallel(block):
                k = index[bx * block + i]
                T.device_assert(k >= 0, "negative index")
                T.device_assert(k < N, "index past the end of the table")
                out[bx * block + i] = table[k]

    return gather



def make_inputs(rng, n=1000, m=5000):
    return [rng.standard_normal(n).astype("float32"), rng.integers(0, n, m).astype("int32")]


def reference(table, index):
    return [table.astype("float64")[index]]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(checked_gather.instantiate(), make_inputs, reference, tolerance=0.0))
