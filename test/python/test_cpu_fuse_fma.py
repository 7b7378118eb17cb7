"""`T.fma` on the CPU rounds once, as the CUDA emitter's fmaf / __hfma do; `a * b + c` written out
rounds twice on both (the GPU code is built with --fmad=false), so the CPU agrees with the GPU."""

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from exact_float import fma_exact, fma_float32
from tilemlir.kernels import quant

BF16, FP8 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn
LEVELS = ("tile", "thread")
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": BF16}  # (fp8 arithmetic is done in float32)


@tilemlir.jit(out_idx=[3, 4])
def fma_and_mul_add(N, dtype):
    @T.prim_func
    def fma_kernel(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), C: T.Tensor((N,), dtype),
                   F: T.Tensor((N,), dtype), D: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
            for i in T.Parallel(64):
                F[bx * 64 + i] = T.fma(A[bx * 64 + i], B[bx * 64 + i], C[bx * 64 + i])
                D[bx * 64 + i] = A[bx * 64 + i] * B[bx * 64 + i] + C[bx * 64 + i]

    return fma_kernel


def near_ties(dtype, rng, n):
    """Operands whose exact a * b + c lies just off a rounding tie of `dtype` or of a * b: a * b
    is a tie (or exact) and c is far smaller, so rounding twice (or rounding a * b first) errs."""
    np_type = DTYPES[dtype]
    man = {"float32": 23, "float16": 10, "bfloat16": 7}[dtype]
    # a = 1.5 and b = 1 + k 2^-man: a * b = 1.5 + 1.5 k 2^-man, a tie of the format for odd k
    k = rng.integers(1, 2 ** (man - 1), n) | 1
    a = np.full(n, 1.5)
    b = 1 + k * 2.0 ** -man
    tiny = {"float32": 2.0 ** -60, "float16": 2.0 ** -24, "bfloat16": 2.0 ** -100}[dtype]
    c = rng.choice([-1, 1], n) * tiny
    return (v.astype(np_type) for v in (a, b, c))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_fma_rounds_once_and_mul_add_rounds_twice(dtype, level, rng):
    np_type = DTYPES[dtype]
    tied = list(near_ties(dtype, rng, 64))
    scale = 16 if dtype == "float16" else 100  # float16 products stay finite
    spread = [(rng.standard_normal(128) * scale).astype(np_type) for _ in range(3)]
    a, b, c = (np.concatenate([t, s]) for t, s in zip(tied, spread))
    fused, mul_add = tilemlir.compile(fma_and_mul_add.instantiate(N=192, dtype=dtype), target="cpu", level=level)(a, b, c)
    want = fma_exact(a, b, c, np_type)
    assert np.array_equal(fused.view(np.uint8), want.view(np.uint8))
    product = (a.astype(np.float32) * b.astype(np.float32)).astype(np_type).astype(np.float32)  # rounded to dtype
    twice = (product + c.astype(np.float32)).astype(np_type)
    assert np.array_equal(mul_add.view(np.uint8), twice.view(np.uint8))
    assert not np.array_equal(want[:64].view(np.uint8), twice[:64].view(np.uint8))  # the ties tell them apart


def test_fma_float32_reference_rounds_once(rng):
    """The vectorized numpy fmaf agrees with the exact rational one, ties and all."""
    tied = list(near_ties("float32", rng, 500))
    spread = [rng.standard_normal(500).astype(np.float32) * np.float32(2.0) ** rng.integers(-60, 60, 500)
              for _ in range(3)]
    a, b, c = (np.concatenate([t, s]) for t, s in zip(tied, spread))
    assert np.array_equal(fma_float32(a, b, c), fma_exact(a, b, c, np.float32))
    assert not np.array_equal(fma_float32(a, b, c), (a.astype(np.float64) * b + c).astype(np.float32))


def markstein_quotients(x, s, fma):
    """quant.quantize's arithmetic: q = x * (1/s) corrected by two FMAs."""
    inv = np.float32(1) / s
    q = x * inv
    return fma(fma(-q, s, x), inv, q)


def unfused(a, b, c):
    return (np.float32(a) * b).astype(np.float32) + c


def rows_with_midpoint_quotients(rng, rows, N):
    """bf16 rows where some x / S are fp8 rounding ties, found per row's amax: quotients the
    Markstein division gets right only with fused multiply-adds (x / S = 3.5 * 2^-9 at N = 3063
    in issue 14). Each row holds its amax, its tie-making values and random fill."""
    fp8_values = np.arange(1, 0x7E, dtype=np.uint8).view(FP8).astype(np.float32)
    midpoints = (fp8_values[:-1] + fp8_values[1:]) / 2
    out = np.empty((rows, N), np.float32)
    for r in range(rows):
        while True:
            amax = np.float32(float(BF16(rng.uniform(1, 2))) * 2.0 ** int(rng.integers(-20, 20)))
            s = amax * np.float32(1 / 448.0)
            assert s.dtype == np.float32
            ties = (midpoints * s).astype(BF16).astype(np.float32)
            ties = ties[ties < amax]
            fused = markstein_quotients(ties, s, fma_float32).astype(FP8)
            split = markstein_quotients(ties, s, unfused).astype(FP8)
            telling = ties[fused.view(np.uint8) != split.view(np.uint8)]
            if telling.size:
                break
        fill = np.clip(rng.uniform(-amax, amax, N).astype(BF16).astype(np.float32), -amax, amax)
        fill[fill == 0] = amax  # no zeros: -0 / S is +0 in the kernel (x * (1 / S) then FMAs)
        picks = rng.choice(N, telling.size + 1, replace=False)
        fill[picks] = np.concatenate([[amax], telling * rng.choice([-1, 1], telling.size)])
        out[r] = fill
    return out.astype(BF16)


@pytest.mark.parametrize("level", LEVELS)
def test_quant_row_fp8_matches_the_gpu_arithmetic_bitwise_at_3063(level, rng):
    N = 3063
    x = rows_with_midpoint_quotients(rng, 4, N)
    q, s = tilemlir.compile(quant.quant_row_fp8.instantiate(N=N), target="cpu", level=level)(x)
    xf = x.astype(np.float32)
    want_s = np.abs(xf).max(1) * np.float32(1 / 448.0)
    assert np.array_equal(s, want_s)
    model = markstein_quotients(xf, want_s[:, None], fma_float32).astype(FP8)
    assert np.array_equal(q.view(np.uint8), model.view(np.uint8))
    assert np.array_equal(q.view(np.uint8), (xf / want_s[:, None]).astype(FP8).view(np.uint8))  # = x / S
    split = markstein_quotients(xf, want_s[:, None], unfused).astype(FP8)
    assert not np.array_equal(model.view(np.uint8), split.view(np.uint8))  # unfused would differ
