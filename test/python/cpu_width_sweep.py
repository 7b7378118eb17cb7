"""Compile and run library kernels on the CPU at many row widths, in a process of its own.

    python cpu_width_sweep.py KERNEL:LEVEL:N[,N...] ...

For each KERNEL (row_max, quant_row_fp8, softmax_f16) at each LEVEL (tile,
thread) and width N: compile, run on fresh random rows and check the result
against numpy (row_max and quant_row_fp8 bit for bit, softmax by relative
error), printing `ok KERNEL LEVEL N`. `compiling KERNEL LEVEL N` is printed
(and flushed) first, so when LLVM aborts the process the last line names the
compile that killed it. Exits non-zero on the first failure.
"""

import sys

import ml_dtypes
import numpy as np

import tilemlir
from tilemlir.kernels import quant, reduce, softmax

ROWS = 3


def check_row_max(kernel, N, rng):
    x = rng.standard_normal((ROWS, N)).astype(np.float32)
    assert np.array_equal(kernel(x), x.max(1))


def check_quant_row_fp8(kernel, N, rng):
    x = (rng.standard_normal((ROWS, N)) * rng.uniform(0.01, 100, (ROWS, 1))).astype(ml_dtypes.bfloat16)
    q, s = kernel(x)
    xf = x.astype(np.float32)
    want_s = np.abs(xf).max(1) * np.float32(1 / 448.0)
    assert np.array_equal(s, want_s)
    want_q = (xf / want_s[:, None]).astype(ml_dtypes.float8_e4m3fn)
    assert np.array_equal(q.view(np.uint8), want_q.view(np.uint8))


def check_softmax_f16(kernel, N, rng):
    x = (3 * rng.standard_normal((ROWS, N))).astype(np.float16)
    y = kernel(x).astype(np.float64)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    assert np.linalg.norm(y - want) / np.linalg.norm(want) < 2e-3


KERNELS = {
    "row_max": (reduce.row_max, {}, check_row_max),
    "quant_row_fp8": (quant.quant_row_fp8, {}, check_quant_row_fp8),
    "softmax_f16": (softmax.softmax, {"dtype": "float16"}, check_softmax_f16),
}


def main(specs: list[str]) -> None:
    rng = np.random.default_rng()
    for spec in specs:
        name, level, widths = spec.split(":")
        factory, kwargs, check = KERNELS[name]
        for N in (int(n) for n in widths.split(",")):
            print(f"compiling {name} {level} {N}", flush=True)
            kernel = tilemlir.compile(factory.instantiate(N=N, **kwargs), target="cpu", level=level)
            check(kernel, N, rng)
            print(f"ok {name} {level} {N}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
