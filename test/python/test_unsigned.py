"""Unsigned integers (uint8/16/32/64) end to end: values whose top bit is set must never be read as negative.

MLIR integers are signless (uint8 and int8 are both `i8`), so every place that
converts, compares, divides, shifts, widens or reduces an integer must know
the language dtype. Kernels run on the CPU backend at tile level (the
reference loops) and thread level (the GPU lowering, simulated); what only
the CUDA text shows (C conversions of `unsigned char`, shuffles of narrow
integers, the signature's dtypes) is checked in the emitted source, which is
then compiled with NVRTC.
"""

import re

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from support import compiles, emitted_cuda
from tilemlir.diagnostics import CompileError

LEVELS = ("tile", "thread")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")


def cpu(fn, level):
    return tilemlir.compile(fn, target="cpu", level=level)


def top_half(rng, dtype, shape):
    """Values with the top bit set: read as signed they would all be negative."""
    info = np.iinfo(dtype)
    return rng.integers(info.max // 2 + 1, info.max, shape, dtype=dtype, endpoint=True)


def rows_by_range(rng, dtype, n):
    """Four rows: all below the top bit, all above it, mixed, and the full range including 0 and max."""
    info = np.iinfo(dtype)
    half = info.max // 2 + 1
    rows = [rng.integers(1, half - 1, n, dtype=dtype),
            rng.integers(half + 1, info.max - 1, n, dtype=dtype, endpoint=True),
            rng.integers(half - 3, half + 3, n, dtype=dtype),
            rng.integers(0, info.max, n, dtype=dtype, endpoint=True)]
    rows[3][[0, -1]] = [0, info.max]
    return np.stack(rows)


# -- copies: conversions to float, widening, and back -------------------------------------------------------------


def to_float_kernel(dtype, block=1024):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1, 2])
    def to_float(X: T.Tensor((4, N), dtype), Y: T.Tensor((4, N), T.float32), S: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((4, block), T.float32)
            s = T.alloc_fragment((4,), T.float32)
            T.copy(X[0, 0], x)
            T.reduce_sum(x, s, dim=1)
            T.copy(x, Y[0, 0])
            T.copy(s, S)

    return to_float


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_copy_to_float_and_sum(dtype, level, rng):
    x = top_half(rng, dtype, (4, 1000))
    y, s = cpu(to_float_kernel(dtype), level)(x)
    assert np.array_equal(y, x.astype(np.float32)), (x[y != x.astype(np.float32)][:4], y[y != x.astype(np.float32)][:4])
    want = x.astype(np.float64).sum(1)
    assert np.max(np.abs(s - want) / want) < 1e-4, (s, want)  # float32 sums of 1000 terms


def roundtrip_kernel(dtype, block=1024):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1, 2])
    def roundtrip(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((block,), T.float64)
            z = T.alloc_fragment((block,), dtype)
            T.copy(X[0], x)
            for i in T.Parallel(block):
                x[i] = x[i] + 0.25  # float -> unsigned truncates toward zero: back to the integer
                z[i] = T.cast(x[i], dtype)
            T.copy(x, Y[0])
            T.copy(z, Z[0])

    return roundtrip


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32"])
def test_float_roundtrip(dtype, level, rng):
    x = top_half(rng, dtype, 1000)
    y, z = cpu(roundtrip_kernel(dtype), level)(x)
    assert np.array_equal(y, x) and np.array_equal(z, x), (x[:4], y[:4], z[:4])


def widen_kernel(src, dst, block=1024):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1, 2])
    def widen(X: T.Tensor((N,), src), Y: T.Tensor((N,), dst), S: T.Tensor((1,), dst)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((block,), dst)
            s = T.alloc_fragment((1,), dst)
            T.copy(X[0], x)
            T.reduce_sum(x, s)
            T.copy(x, Y[0])
            T.copy(s, S)

    return widen


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("src, dst", [("uint8", "int32"), ("uint16", "uint32"), ("uint32", "int64"),
                                      ("uint8", "uint64")])
def test_widening_copy_zero_extends(src, dst, level, rng):
    x = top_half(rng, src, 1000)
    y, s = cpu(widen_kernel(src, dst), level)(x)
    assert np.array_equal(y, x.astype(dst)), (x[:4], y[:4])
    assert s[0] == x.astype(np.int64).sum()


def reduce_widening_kernel(src, dst, N=1000):
    @tilemlir.jit(out_idx=[1, 2])
    def reduce_widening(X: T.Tensor((4, N), src), S: T.Tensor((4,), dst), M: T.Tensor((4,), dst)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((4, N), src)
            y = T.alloc_fragment((4, N), src)
            s = T.alloc_fragment((4,), dst)
            m = T.alloc_fragment((4,), dst)
            T.copy(X, x)
            T.copy(X, y)
            T.reduce_sum(x, s, dim=1)
            T.reduce_max(y, m, dim=1)
            T.copy(s, S)
            T.copy(m, M)

    return reduce_widening


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("src, dst", [("uint8", "uint32"), ("uint16", "uint64"), ("uint8", "int32")])
def test_reduce_into_a_wider_type_zero_extends(src, dst, level, rng):
    x = rows_by_range(rng, src, 1000)
    s, m = cpu(reduce_widening_kernel(src, dst), level)(x)
    assert s.tolist() == x.astype(np.int64).sum(1).tolist()
    assert m.tolist() == x.max(1).tolist()


# -- reductions: comparisons, identities and padding --------------------------------------------------------------


def extremes_kernel(dtype, block=1024):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1, 2, 3, 4])
    def extremes(X: T.Tensor((4, N), dtype), Mx: T.Tensor((4,), dtype), Mn: T.Tensor((4,), dtype),
                 Amx: T.Tensor((4,), dtype), Asum: T.Tensor((4,), T.uint64)):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((4, block), dtype)  # one fragment per reduction kind: padding is its identity
            b = T.alloc_fragment((4, block), dtype)
            c = T.alloc_fragment((4, block), dtype)
            d = T.alloc_fragment((4, block), T.uint64)
            mx = T.alloc_fragment((4,), dtype)
            mn = T.alloc_fragment((4,), dtype)
            amx = T.alloc_fragment((4,), dtype)
            asum = T.alloc_fragment((4,), T.uint64)
            T.copy(X[0, 0], a)
            T.copy(X[0, 0], b)
            T.copy(X[0, 0], c)
            T.copy(X[0, 0], d)
            T.reduce_max(a, mx, dim=1)
            T.reduce_min(b, mn, dim=1)
            T.reduce_absmax(c, amx, dim=1)
            T.reduce_abssum(d, asum, dim=1)
            T.copy(mx, Mx)
            T.copy(mn, Mn)
            T.copy(amx, Amx)
            T.copy(asum, Asum)

    return extremes


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_max_min_and_abs_reductions_with_padding(dtype, level, rng):
    """1000 columns in 1024-wide fragments: 24 padding columns per row, which must not win."""
    x = rows_by_range(rng, dtype, 1000)
    mx, mn, amx, asum = cpu(extremes_kernel(dtype), level)(x)
    assert mx.tolist() == x.max(1).tolist()
    assert mn.tolist() == x.min(1).tolist()
    assert amx.tolist() == x.max(1).tolist()
    want = [sum(int(v) for v in row) % 2**64 for row in x]
    assert asum.tolist() == want


def serial_reduce_kernel(dtype, N=64):
    @tilemlir.jit(out_idx=[1, 2])
    def serial_reduce(X: T.Tensor((4, N), dtype), Mx: T.Tensor((4,), dtype), Mn: T.Tensor((4,), dtype)):
        with T.Kernel(1, threads=32):
            x = T.alloc_shared((4, N), dtype)
            mx = T.alloc_fragment((4,), dtype)
            mn = T.alloc_fragment((4,), dtype)
            T.copy(X, x)
            T.reduce_max(x, mx, dim=1)
            T.reduce_min(x, mn, dim=1)
            T.copy(mx, Mx)
            T.copy(mn, Mn)

    return serial_reduce


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", ["uint16", "uint64"])
def test_reductions_of_shared_buffers(dtype, level, rng):
    x = rows_by_range(rng, dtype, 64)
    mx, mn = cpu(serial_reduce_kernel(dtype), level)(x)
    assert mx.tolist() == x.max(1).tolist() and mn.tolist() == x.min(1).tolist()


# -- element code: comparisons, division, shifts, min/max, scalars, constants -------------------------------------


def element_kernel(dtype, block=128):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=list(range(2, 9)))
    def element_ops(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), Lt: T.Tensor((N,), T.int32),
                    Mx: T.Tensor((N,), dtype), Q: T.Tensor((N,), dtype), R: T.Tensor((N,), dtype),
                    Sh: T.Tensor((N,), dtype), F: T.Tensor((N,), T.float64), Inv: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                a = A[n]
                b = B[n]
                Lt[n] = T.cast(a < b, T.int32) + 2 * T.cast(a >= b, T.int32)
                Mx[n] = T.max(a, b) - T.min(a, b)
                Q[n] = a // (b | 1)
                R[n] = a % (b | 1)
                Sh[n] = a >> 3
                F[n] = T.cast(a, T.float64)
                Inv[n] = ~a

    return element_ops


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_element_code(dtype, level, rng):
    n = 300
    a = rows_by_range(rng, dtype, n).reshape(-1)[rng.permutation(4 * n)][:n]
    b = rows_by_range(rng, dtype, n).reshape(-1)[rng.permutation(4 * n)][:n]
    lt, mx, q, r, sh, f, inv = cpu(element_kernel(dtype), level)(a, b)
    ai, bi = [int(v) for v in a], [int(v) for v in b]
    assert lt.tolist() == [1 if x < y else 2 for x, y in zip(ai, bi)]
    assert mx.tolist() == [abs(x - y) for x, y in zip(ai, bi)]
    assert q.tolist() == [x // (y | 1) for x, y in zip(ai, bi)]
    assert r.tolist() == [x % (y | 1) for x, y in zip(ai, bi)]
    assert sh.tolist() == [x >> 3 for x in ai]
    assert f.tolist() == [float(x) for x in ai]
    assert inv.tolist() == [(~x) % 2 ** np.iinfo(dtype).bits for x in ai]


def scalar_kernel(dtype, block=128):
    N = T.symbolic("N")
    dtype = T.dtype(dtype)

    @tilemlir.jit(out_idx=[2, 3, 4])
    def with_scalar(X: T.Tensor((N,), dtype), s: dtype, F: T.Tensor((N,), T.float64), Gt: T.Tensor((N,), T.int32),
                    Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                F[n] = T.cast(s, T.float64) + T.cast(X[n], T.float64)
                Gt[n] = T.cast(X[n] > s, T.int32)
                Y[n] = X[n] // s

    return with_scalar


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_scalar_parameter_above_the_signed_range(dtype, level, rng):
    s = int(np.iinfo(dtype).max) - 5
    x = rows_by_range(rng, dtype, 50).reshape(-1)
    f, gt, y = cpu(scalar_kernel(dtype), level)(x, s)
    xi = [int(v) for v in x]
    assert f.tolist() == [float(np.float64(s) + np.float64(v)) for v in xi]
    assert gt.tolist() == [int(v > s) for v in xi]
    assert y.tolist() == [v // s for v in xi]


def constant_kernel(block=128):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[2, 3, 4])
    def big_constants(X: T.Tensor((N,), T.uint64), B: T.Tensor((N,), T.uint8), Y: T.Tensor((N,), T.uint64),
                      Z: T.Tensor((N,), T.uint8), Gt: T.Tensor((N,), T.int32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                Y[n] = X[n] ^ 0x8000000000000001
                Z[n] = B[n] + 200
                Gt[n] = T.cast(X[n] > 0x8000000000000000, T.int32)

    return big_constants


@pytest.mark.parametrize("level", LEVELS)
def test_constants_above_the_signed_range(level, rng):
    x = rows_by_range(rng, "uint64", 40).reshape(-1)
    b = rows_by_range(rng, "uint8", 40).reshape(-1)
    y, z, gt = cpu(constant_kernel(), level)(x, b)
    assert y.tolist() == [int(v) ^ 0x8000000000000001 for v in x]
    assert z.tolist() == [(int(v) + 200) % 256 for v in b]
    assert gt.tolist() == [int(int(v) > 2**63) for v in x]


# -- mixed signed and unsigned operands: numpy's promotion, or a located error -----------------------------------


def mixed_kernel(block=64):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[4, 5, 6, 7])
    def mixed(U8: T.Tensor((N,), T.uint8), I8: T.Tensor((N,), T.int8), U32: T.Tensor((N,), T.uint32),
              I32: T.Tensor((N,), T.int32), Sum16: T.Tensor((N,), T.int16), Lt: T.Tensor((N,), T.int32),
              Diff64: T.Tensor((N,), T.int64), Max32: T.Tensor((N,), T.int32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                Sum16[n] = U8[n] + I8[n]  # int16: 255 + 127 and 0 - 128 both fit
                Lt[n] = T.cast(I32[n] < U32[n], T.int32)  # compared in int64
                Diff64[n] = U32[n] - I32[n]
                Max32[n] = T.max(U8[n], I8[n]) * 1  # int16, stored into int32

    return mixed


@pytest.mark.parametrize("level", LEVELS)
def test_mixed_signedness_promotes_like_numpy(level, rng):
    n = 200
    u8, i8 = rows_by_range(rng, "uint8", n // 4).reshape(-1), rng.integers(-128, 127, n, dtype=np.int8, endpoint=True)
    u32, i32 = rows_by_range(rng, "uint32", n // 4).reshape(-1), rng.integers(-2**31, 2**31, n, dtype=np.int32)
    s16, lt, d64, m32 = cpu(mixed_kernel(), level)(u8, i8, u32, i32)
    assert np.array_equal(s16, u8 + i8) and (u8 + i8).dtype == np.int16
    assert lt.tolist() == [int(int(a) < int(b)) for a, b in zip(i32, u32)]
    assert np.array_equal(d64, u32 - i32) and (u32 - i32).dtype == np.int64
    assert m32.tolist() == [max(int(a), int(b)) for a, b in zip(u8, i8)]


def located_error(fn, line_text):
    """Compile `fn` and return its CompileError, checking it points at the source line holding `line_text`."""
    with pytest.raises(CompileError) as info:
        tilemlir.compile(fn, target="cpu")
    message = str(info.value)
    assert f"{__file__}:" in message and line_text in message, message
    return message


def test_uint64_with_a_signed_integer_is_a_located_error():
    @T.prim_func
    def k(A: T.Tensor((64,), T.uint64), B: T.Tensor((64,), T.int64), C: T.Tensor((64,), T.int64)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                C[i] = A[i] + B[i]

    message = located_error(k, "C[i] = A[i] + B[i]")
    assert "no integer type holds every int64 and uint64 value" in message and "T.cast" in message


def test_negative_literal_with_an_unsigned_value_is_a_located_error():
    @T.prim_func
    def k(A: T.Tensor((64,), T.uint16), C: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                C[i] = T.cast(A[i] > -1, T.int32)

    assert "the constant -1 does not fit in uint16 (range 0..65535)" in located_error(k, "A[i] > -1")


def test_reducing_signed_values_into_an_unsigned_dst_is_a_located_error():
    @T.prim_func
    def k(A: T.Tensor((4, 64), T.int8), C: T.Tensor((4,), T.uint16)):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((4, 64), T.int8)
            c = T.alloc_fragment((4,), T.uint16)
            T.copy(A, a)
            T.reduce_max(a, c, dim=1)
            T.copy(c, C)

    message = located_error(k, "T.reduce_max(a, c, dim=1)")
    assert "'a' is int8 but dst 'c' is uint16" in message


def test_allocations_of_unsigned_dtypes_are_marked():
    @T.prim_func
    def k(A: T.Tensor((64,), T.uint32), C: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=64):
            u = T.alloc_fragment((64,), T.uint32)
            s = T.alloc_shared((64,), T.int32)
            T.copy(A, u)
            T.copy(u, s)
            T.copy(s, C)

    text = tilemlir.lower(k)
    allocs = [line for line in text.splitlines() if "tile.alloc_" in line]
    assert len(allocs) == 2
    assert all(("tile.unsigned" in line) == ('"u"' in line) for line in allocs), allocs
    assert 'tile.arg_dtypes = ["uint32", "int32"]' in text


# -- the CUDA text: unsigned values are held in signed C types, so every read as unsigned says so -----------------

UNSIGNED_C = {"uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
              "uint64": "unsigned long long"}


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_cuda_converts_unsigned_loads_to_float_through_their_own_width(dtype):
    emitted = emitted_cuda(to_float_kernel(dtype))
    body = emitted.source[emitted.source.index('extern "C"'):]
    unsigned = UNSIGNED_C[dtype]
    assert f"(float)({unsigned})X[" in body, body  # not (float)(unsigned int) of a sign-extended signed char
    assert emitted.signature.params[0].dtype == dtype  # the runtime accepts uint tensors, not int ones
    compiles(emitted)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_cuda_reductions_of_unsigned_fragments_compare_unsigned_and_shuffle(dtype):
    emitted = emitted_cuda(extremes_kernel(dtype))
    body = emitted.source[emitted.source.index('extern "C"'):]
    unsigned = UNSIGNED_C[dtype]
    assert f"max(({unsigned})" in body and f"min(({unsigned})" in body
    assert "__shfl_xor_sync" in body  # narrow integers are shuffled as int
    assert f"int{np.iinfo(dtype).bits}" not in [p.dtype for p in emitted.signature.params]
    ptx = compiles(emitted)
    assert "shfl.sync.bfly.b32" in ptx


ELEMENT_CASTS = [  # (op, source, destination, expected C)
    ("arith.uitofp", "i8", "f32", "(float)(unsigned char)X_v"),
    ("arith.uitofp", "i16", "f64", "(double)(unsigned short)X_v"),
    ("arith.uitofp", "i8", "bf16", "__uint2bfloat16_rn((unsigned char)X_v)"),
    ("arith.uitofp", "i16", "f16", "__uint2half_rn((unsigned short)X_v)"),
    ("arith.uitofp", "i8", "f8E4M3FN", "tl_to_e4m3((double)(unsigned char)X_v)"),
    ("arith.fptoui", "f32", "i8", "(signed char)(unsigned char)X_v"),
    ("arith.extui", "i16", "i64", "(long long)(unsigned short)X_v"),
]


def test_cuda_element_conversions_of_narrow_unsigned_integers():
    from support import elementwise_module, emit_text, normalized

    inputs = {f"I{i}": src for i, (_, src, _, _) in enumerate(ELEMENT_CASTS)}
    outputs = {f"O{i}": dst for i, (_, _, dst, _) in enumerate(ELEMENT_CASTS)}
    ops = "\n".join(f"      %O{i}_r = {op} %I{i}_v : {src} to {dst}"
                    for i, (op, src, dst, _) in enumerate(ELEMENT_CASTS))
    emitted = emit_text(elementwise_module(inputs, outputs, ops))
    for i, (_, _, _, expected) in enumerate(ELEMENT_CASTS):
        text = normalized(emitted.source, f"I{i}").replace(f"I{i}_v", "X_v")
        assert f"O{i}[bx * 64 + tx] = {expected};" in text, (expected, emitted.source)
    compiles(emitted)


def test_cuda_does_not_assume_narrow_sums_of_non_negative_values_stay_non_negative():
    """(x & 127) + 100 on i8 wraps past 127: its uitofp must still read the bits as unsigned."""
    from support import elementwise_module, emit_text, normalized

    ops = """      %m = arith.constant 127 : i8
      %h = arith.constant 100 : i8
      %low = arith.andi %X_v, %m : i8
      %s = arith.addi %low, %h : i8
      %Y_r = arith.uitofp %s : i8 to f32
      %w = arith.muli %low, %h : i8
      %Z_r = arith.cmpi ult, %w, %h : i8"""
    emitted = emit_text(elementwise_module({"X": "i8"}, {"Y": "f32", "Z": "i1"}, ops))
    text = normalized(emitted.source, "X")
    low = re.search(r"signed char (\w+) = \(signed char\)\(X_v & 127\);", text).group(1)
    assert f"Y[bx * 64 + tx] = (float)(unsigned char)(signed char)({low} + 100);" in text, text
    assert f"Z[bx * 64 + tx] = (unsigned char)(signed char)({low} * 100) < 100;" in text, text
    compiles(emitted)


# -- guards: an index computed from unsigned values is not the signed reading of its bits -------------------------


def unsigned_index_kernel(size, base):
    @tilemlir.jit(out_idx=[1])
    def gather(X: T.Tensor((size,), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                Y[i] = X[T.cast(i, T.uint8) + T.cast(base, T.uint8)]  # a uint8 index: base + i < 256

    return gather


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("size, base", [(200, 150), (256, 150), (120, 100), (300, 192)])
def test_guards_of_indices_built_from_unsigned_values(size, base, level, rng):
    """base + i in i8 is negative as signed (150 + i is -106 + i): the guard `index < size` must stay
    where the unsigned index can reach `size`."""
    x = rng.standard_normal(size).astype(np.float32) + 10
    y = cpu(unsigned_index_kernel(size, base), level)(x)
    want = [x[base + i] if base + i < size else 0.0 for i in range(64)]  # out of range: padding 0
    assert y.tolist() == [float(v) for v in np.array(want, np.float32)]


def gemm_kernel(M=32, N=32, K=48):
    @tilemlir.jit(out_idx=[2])
    def gemm(A: T.Tensor((M, K), T.uint8), B: T.Tensor((K, N), T.uint8), C: T.Tensor((M, N), T.int32)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, K), T.uint8)
            b = T.alloc_shared((K, N), T.uint8)
            c = T.alloc_fragment((M, N), T.int32)
            T.copy(A, a)
            T.copy(B, b)
            T.clear(c)
            T.gemm(a, b, c)
            T.copy(c, C)

    return gemm


@pytest.mark.parametrize("level", LEVELS)
def test_gemm_of_unsigned_tiles(level, rng):
    a, b = top_half(rng, "uint8", (32, 48)), top_half(rng, "uint8", (48, 32))
    c = cpu(gemm_kernel(), level)(a, b)
    assert np.array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_unwritten_unsigned_outputs_are_poisoned_with_the_highest_value(dtype):
    @tilemlir.jit(out_idx=[1])
    def half(X: T.Tensor((64,), dtype), Y: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                if i < 32:
                    Y[i] = X[i]

    x = np.arange(64, dtype=dtype)
    y = cpu(half, "tile")(x)
    assert y[:32].tolist() == list(range(32)) and (y[32:] == np.iinfo(dtype).max).all()


def grid_kernel(dtype):
    N = T.symbolic("N")
    dtype = T.dtype(dtype)

    @tilemlir.jit(out_idx=[1])
    def scaled(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32), n: dtype):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] * 2.0

    return scaled


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_grid_from_an_unsigned_scalar(dtype, rng):
    """The runtime computes the grid from the parameter's Python value, which is non-negative."""
    assert emitted_cuda(grid_kernel(dtype)).signature.grid == ("(n + 127) // 128", "1", "1")
    x = rng.standard_normal(1000).astype(np.float32)
    for level in LEVELS:
        y = cpu(grid_kernel(dtype), level)(x, 700)
        assert np.array_equal(y[:768], 2 * x[:768]) and np.isnan(y[768:]).all()


def element_min_kernel(dtype, block=256):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1])
    def element_min(X: T.Tensor((N,), dtype), Mn: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((block,), dtype)
            mn = T.alloc_fragment((1,), dtype)
            for i in T.Parallel(block):
                x[i] = X[i]  # past N: the padding, which must be the unsigned maximum
            T.reduce_min(x, mn)
            T.copy(mn, Mn)

    return element_min


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_padding_of_element_code_loads_feeding_an_unsigned_min(dtype, level, rng):
    x = top_half(rng, dtype, 200)
    assert cpu(element_min_kernel(dtype), level)(x).tolist() == [x.min()]


def test_launch_checks_the_signedness_of_tensors_and_the_range_of_scalars():
    from tilemlir.diagnostics import LaunchError

    convert = cpu(to_float_kernel("uint8"), "tile")
    with pytest.raises(LaunchError, match="argument 'X': expected dtype uint8, got int8"):
        convert(np.zeros((4, 10), np.int8))
    scaled = cpu(scalar_kernel("uint16"), "tile")
    with pytest.raises(LaunchError, match=r"-1 is out of range for uint16 \[0, 65535\]"):
        scaled(np.zeros(10, np.uint16), -1)
    with pytest.raises(LaunchError, match=r"65536 is out of range for uint16"):
        scaled(np.zeros(10, np.uint16), 65536)


def hash_kernel(block=128):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1])
    def fnv(X: T.Tensor((N,), T.uint32), H: T.Tensor((N,), T.uint32)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                h = (X[n] ^ 2166136261) * 16777619  # wraps modulo 2**32
                H[n] = (h << 7) + (h >> 25) + 3000000000

    return fnv


@pytest.mark.parametrize("level", LEVELS)
def test_unsigned_arithmetic_wraps(level, rng):
    x = rows_by_range(rng, "uint32", 50).reshape(-1)
    got = cpu(hash_kernel(), level)(x)
    mask = 2**32 - 1
    want = []
    for v in (int(v) for v in x):
        h = ((v ^ 2166136261) * 16777619) & mask
        want.append((((h << 7) & mask) + (h >> 25) + 3000000000) & mask)
    assert got.tolist() == want


def test_cuda_wrapping_arithmetic_is_unsigned_in_c():
    """Signed overflow is undefined in C++: 32-bit products, sums and shifts that wrap are computed on
    unsigned operands (index math is not: it is assumed not to overflow)."""
    emitted = emitted_cuda(hash_kernel())
    body = emitted.source[emitted.source.index('extern "C"'):]
    products = re.findall(r"int (\w+) = \(int\)\(\(unsigned int\)\([\w.\[\]]+ \^ -2128831035\) \* 16777619u\);", body)
    assert products, body
    for h in products:  # a wrapped result feeds the next unsigned sum without casts back and forth
        assert f"(int)(((unsigned int){h} << 7) + ((unsigned int){h} >> 25) + 3000000000u)" in body, body
    compiles(emitted)


def test_cuda_64_bit_constants_beyond_the_signed_range():
    emitted = emitted_cuda(constant_kernel())
    body = emitted.source[emitted.source.index('extern "C"'):]
    assert "(unsigned long long)" in body and "> 9223372036854775808ull" in body, body
    assert "^ -9223372036854775807LL" in body  # 0x8000000000000001's bits, as a long long
    assert "-9223372036854775808LL" not in body  # not a literal: 9223372036854775808LL does not fit
    compiles(emitted)


def test_cuda_int64_minimum_literal():
    from support import elementwise_module, emit_text, normalized

    ops = """      %m = arith.constant -9223372036854775808 : i64
      %Y_r = arith.xori %X_v, %m : i64"""
    emitted = emit_text(elementwise_module({"X": "i64"}, {"Y": "i64"}, ops))
    assert "Y[bx * 64 + tx] = X_v ^ (-9223372036854775807LL - 1);" in normalized(emitted.source, "X")
    compiles(emitted)


# -- grid extents from narrow unsigned scalars divided by constants with the top bit set --------------------------


def narrow_grid_kernel(dtype, divisor):
    half = 1 << (np.iinfo(dtype).bits - 1)  # as an int8/int16 constant: the most negative value

    @tilemlir.jit(out_idx=[1])
    def blocks(X: T.Tensor((4, 4), T.float32), Y: T.Tensor((4, 4), T.float32), n: T.dtype(dtype)):
        with T.Kernel(T.ceildiv(n, divisor), n // half, threads=32) as (bx, by):
            for i in T.Parallel(32):
                if i == 0:
                    Y[by, bx] = X[by, bx] * 2.0

    return blocks


NARROW_GRIDS = [("uint8", 128, (200, 255)), ("uint8", 200, (200, 255)),
                ("uint16", 32768, (40000, 65535)), ("uint16", 40000, (40000, 65535))]


@pytest.mark.parametrize("dtype, divisor, values", NARROW_GRIDS)
def test_grid_from_a_narrow_unsigned_scalar_and_a_large_divisor(dtype, divisor, values, rng):
    """`divisor` and 2**(bits-1) are negative as int8/int16 constants: read signed, the grid would be 0 or
    negative blocks (or, before the fix, no grid formula at all)."""
    from tilemlir.runtime.signature import KernelSignature, SignatureExprs

    half = 1 << (np.iinfo(dtype).bits - 1)
    signature = emitted_cuda(narrow_grid_kernel(dtype, divisor)).signature
    assert signature.grid == (f"(n + {divisor - 1}) // {divisor}", f"n // {half}", "1")
    grid_fns = SignatureExprs(KernelSignature.from_json(signature.to_json())).grid_fns  # what the runtime runs
    x = rng.standard_normal((4, 4)).astype(np.float32) + 10
    for n in values:
        blocks = (-(-n // divisor), n // half)
        assert tuple(f([n]) for f in grid_fns) == (*blocks, 1)
        for level in LEVELS:
            y = cpu(narrow_grid_kernel(dtype, divisor), level)(x, n)
            written = ~np.isnan(y)
            assert written.sum() == blocks[0] * blocks[1] and written[:blocks[1], :blocks[0]].all(), (n, level, y)
            assert np.array_equal(y[written], 2 * x[written])


def test_narrow_unsigned_grid_kernel_compiles():
    compiles(emitted_cuda(narrow_grid_kernel("uint8", 200)))


# -- padding of copies that change signedness: the identity of the fragment's reduction, not the read's -----------


def converting_extremes_kernel(src, dst, block=1024):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1, 2])
    def converting_extremes(X: T.Tensor((4, N), src), Mx: T.Tensor((4,), dst), Mn: T.Tensor((4,), dst)):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((4, block), dst)  # 1000 columns read into 1024: 24 padding columns per row
            b = T.alloc_fragment((4, block), dst)
            mx = T.alloc_fragment((4,), dst)
            mn = T.alloc_fragment((4,), dst)
            T.copy(X[0, 0], a)
            T.copy(X[0, 0], b)
            T.reduce_max(a, mx, dim=1)
            T.reduce_min(b, mn, dim=1)
            T.copy(mx, Mx)
            T.copy(mn, Mn)

    return converting_extremes


def signed_rows(rng, dtype, n):
    """Four rows: all negative, all non-negative, mixed around 0, and the full range with both ends."""
    info = np.iinfo(dtype)
    rows = [rng.integers(info.min + 1, -2, n, dtype=dtype), rng.integers(1, info.max - 1, n, dtype=dtype),
            rng.integers(-3, 3, n, dtype=dtype), rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)]
    rows[3][[0, -1]] = [info.min, info.max]
    return np.stack(rows)


SIGNEDNESS_CHANGES = [("int8", "uint8"), ("uint8", "int8"), ("int8", "uint16"), ("int16", "uint32"),
                      ("uint16", "int16"), ("uint8", "int16"), ("int32", "uint64")]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("src, dst", SIGNEDNESS_CHANGES)
def test_padding_of_copies_into_a_fragment_of_the_other_signedness(src, dst, level, rng):
    """An int8 global read into a uint8 fragment feeding a max must pad with the uint8 identity 0: the
    int8 identity -128 becomes 128 in the fragment and wins every row whose values are below it."""
    x = (signed_rows if src.startswith("int") else rows_by_range)(rng, src, 1000)
    converted = x.astype(dst)  # what the copy does: the bits, sign- or zero-extended by the source's dtype
    mx, mn = cpu(converting_extremes_kernel(src, dst), level)(x)
    assert mx.tolist() == converted.max(1).tolist(), (x.min(1), x.max(1))
    assert mn.tolist() == converted.min(1).tolist(), (x.min(1), x.max(1))


@pytest.mark.parametrize("level", LEVELS)
def test_padding_of_float_copies_into_an_int_fragment(level, rng):
    """float32 into int32: +-inf (the float identities) have no int32 value; the padding is the float32
    nearest the int32 identity that still converts (2**31 - 128 for a min, -2**31 for a max)."""
    x = (rng.standard_normal((4, 1000)) * 1e6).astype(np.float32)
    x[1] = np.abs(x[1]) + 1e9  # every value positive: a min padded with a converted -inf or 0 would win
    x[2] = -np.abs(x[2]) - 1e9
    mx, mn = cpu(converting_extremes_kernel("float32", "int32"), level)(x)
    assert mx.tolist() == x.astype(np.int32).max(1).tolist() and mn.tolist() == x.astype(np.int32).min(1).tolist()


def element_store_max_kernel(block=256):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[1])
    def element_store_max(X: T.Tensor((N,), T.int8), Mx: T.Tensor((1,), T.uint8)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((block,), T.uint8)
            mx = T.alloc_fragment((1,), T.uint8)
            for i in T.Parallel(block):
                x[i] = X[i]  # the int8's bits; past N the padding, which must be uint8's 0
            T.reduce_max(x, mx)
            T.copy(mx, Mx)

    return element_store_max


@pytest.mark.parametrize("level", LEVELS)
def test_padding_of_element_stores_into_a_fragment_of_the_other_signedness(level, rng):
    x = rng.integers(1, 100, 200, dtype=np.int8)  # as uint8 all below 128: a padding of -128 would win
    assert cpu(element_store_max_kernel(), level)(x).tolist() == [x.max()]


# -- integer powers: an unsigned exponent with the top bit set is not negative ------------------------------------


def power_kernel(dtype, block=64):
    N = T.symbolic("N")

    @tilemlir.jit(out_idx=[2, 3])
    def power(X: T.Tensor((N,), dtype), K: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype),
              Z: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            for i in T.Parallel(block):
                n = bx * block + i
                Y[n] = X[n] ** K[n]
                Z[n] = X[n] ** (np.iinfo(dtype).max - 2)  # a constant exponent with the top bit set

    return power


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", UNSIGNED)
def test_integer_power_with_an_unsigned_exponent(dtype, level, rng):
    """math.ipowi reads its exponent as signed: 3 ** 200 on uint8 was 0 (3 ** -56), not 161."""
    bits = np.iinfo(dtype).bits
    x = np.concatenate([rows_by_range(rng, dtype, 50).reshape(-1), np.array([0, 1, 2, 3, 255], dtype)])
    k = np.concatenate([rows_by_range(rng, dtype, 50).reshape(-1), np.array([200, 255, 128, 200, 128], dtype)])
    y, z = cpu(power_kernel(dtype), level)(x, k)
    modulus = 1 << bits
    assert y.tolist() == [pow(int(a), int(b), modulus) for a, b in zip(x, k)]
    assert z.tolist() == [pow(int(a), modulus - 3, modulus) for a in x]
