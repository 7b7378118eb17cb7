"""Factories the autotuner tests tune; a module of their own so that compiler worker processes and a
second interpreter import the very same functions."""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[1])
def scale(block=128, threads=128, factor=2.0, offset=0.0):
    """Y = X * factor + offset over a vector; `threads` above 1024 does not compile."""
    N = T.symbolic("N")

    @T.prim_func
    def scale_kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            x = T.alloc_fragment((block,), "float32")
            T.copy(X[bx * block], x)
            for i in T.Parallel(block):
                x[i] = x[i] * factor + offset
            T.copy(x, Y[bx * block])

    return scale_kernel


@tilemlir.jit
def accumulate(block=128, threads=128):
    """Y += X: reads what it writes, so tuning it needs restore_value=["Y"]."""
    N = T.symbolic("N")

    @T.prim_func
    def accumulate_kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            x = T.alloc_fragment((block,), "float32")
            y = T.alloc_fragment((block,), "float32")
            T.copy(X[bx * block], x)
            T.copy(Y[bx * block], y)
            for i in T.Parallel(block):
                y[i] = y[i] + x[i]
            T.copy(y, Y[bx * block])

    return accumulate_kernel


@tilemlir.jit(out_idx=[1])
def crashing(block=128, threads=128, crash=False):
    """Scale by 2; `crash=True` ends the compiling process the way a crash in native code would."""
    if crash:
        import os

        os._exit(3)
    return scale.fn(block=block, threads=threads)


# The space the persistence tests tune, in both processes: two fast configs, one that does not compile,
# one with a wrong result.
SCALE_CONFIGS = [{"block": 128}, {"block": 256}, {"block": 64, "threads": 2048}, {"block": 64, "offset": 1.0}]
