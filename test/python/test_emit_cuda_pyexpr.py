"""Grid extents computed in sized-integer arithmetic: the host's formula wraps where the device's does.

The kernel's IR says what the grid is (MLIR's arith ops wrap modulo 2**bits); the
CPU backend runs that IR as it is, so the blocks it runs are the reference the
runtime's formula must reproduce on every call path: the general path's closure,
the fast path's Python source and the native plan's postfix program."""

import random
from array import array

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import LaunchError
from tilemlir.runtime import native
from tilemlir.runtime.checks import ArgumentBinder
from tilemlir.runtime.expr import Expr
from tilemlir.runtime.native_call import _program, plan_spec
from tilemlir.runtime.signature import KernelSignature, SignatureExprs

from support import emit_text, kernel_module

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def as_int(value, dtype):
    """`value` as numpy's fixed-width integer of `dtype` holds it (its low bits)."""
    return int(np.array(value % 2**64, dtype=np.uint64).astype(np.dtype(dtype).str.replace("i", "u")).view(dtype))


def ceildiv(a, b):
    return -(-a // b)


# -- the formulas, from hand-written IR: K is an int32 scalar (uint32 where declared), M a symbol ----------------------

STORE = "      %v = arith.constant 0.0 : f32\n      memref.store %v, %Y[%bx, %tx] : memref<?x64xf32>"
UINT32_K = ', tile.arg_dtypes = ["float32", "uint32"]'
M_PLUS_1 = """%m = arith.index_cast %M : index to {t}
    %one = arith.constant 1 : {t}
    %s = arith.addi %m, %one : {t}
    %g = arith.index_cast %s : {t} to index"""

WRAPPING = [  # (host IR computing %g, the K type, dtypes attribute, expected formula, reference over (M, K))
    ("""%c4_i32 = arith.constant 4 : i32
    %c128_i32 = arith.constant 128 : i32
    %k4 = arith.muli %K, %c4_i32 : i32
    %q = arith.ceildivsi %k4, %c128_i32 : i32
    %g = arith.index_cast %q : i32 to index""", "i32", "", "-(-wrap(K * 4, 32) // 128)",
     lambda m, k: ceildiv(as_int(k * 4, "int32"), 128)),
    ("""%t = arith.trunci %K : i32 to i8
    %g = arith.index_cast %t : i8 to index""", "i32", "", "wrap(K, 8)", lambda m, k: as_int(k, "int8")),
    ("""%t = arith.trunci %K : i32 to i8
    %e = arith.extui %t : i8 to i32
    %g = arith.index_castui %e : i32 to index""", "i32", "", "wrapu(K, 8)", lambda m, k: as_int(k, "uint8")),
    ("""%t = arith.trunci %K : i32 to i16
    %e = arith.extsi %t : i16 to i64
    %c3_i64 = arith.constant 3 : i64
    %s = arith.addi %e, %c3_i64 : i64
    %g = arith.index_cast %s : i64 to index""", "i32", "", "wrap(K, 16) + 3", lambda m, k: as_int(k, "int16") + 3),
    ("""%c4_i32 = arith.constant 4 : i32
    %c128_i32 = arith.constant 128 : i32
    %k4 = arith.muli %K, %c4_i32 : i32
    %q = arith.ceildivui %k4, %c128_i32 : i32
    %g = arith.index_castui %q : i32 to index""", "i32", UINT32_K, "(wrapu(K * 4, 32) + 127) // 128",
     lambda m, k: ceildiv(as_int(k * 4, "uint32"), 128)),
    ("""%c4_i32 = arith.constant 4 : i32
    %c128_i32 = arith.constant 128 : i32
    %k4 = arith.muli %K, %c4_i32 : i32
    %q = arith.ceildivui %k4, %c128_i32 : i32
    %g = arith.index_castui %q : i32 to index""", "i32", "", "(wrapu(K * 4, 32) + 127) // 128",
     lambda m, k: ceildiv(as_int(k * 4, "uint32"), 128)),  # a signed K read unsigned: once refused
    ("""%c4_i64 = arith.constant 4 : i64
    %c128_i64 = arith.constant 128 : i64
    %k4 = arith.muli %K, %c4_i64 : i64
    %q = arith.ceildivsi %k4, %c128_i64 : i64
    %g = arith.index_cast %q : i64 to index""", "i64", "", "-(-wrap(K * 4, 64) // 128)",
     lambda m, k: ceildiv(as_int(k * 4, "int64"), 128)),
    (M_PLUS_1.format(t="i32"), "i32", "", "wrap(M + 1, 32)", lambda m, k: as_int(m + 1, "int32")),
    ("""%kk = arith.muli %K, %K : i32
    %kkk = arith.muli %kk, %K : i32
    %g = arith.index_cast %kkk : i32 to index""", "i32", "", "wrap(wrap(K * K, 32) * K, 32)",
     lambda m, k: as_int(k * k * k, "int32")),  # K**3 could leave int64: its factor K * K is read first
    ("""%c4_i32 = arith.constant 4 : i32
    %k4 = arith.muli %K, %c4_i32 : i32
    %e = arith.extsi %k4 : i32 to i64
    %c1_i64 = arith.constant 1 : i64
    %s = arith.addi %e, %c1_i64 : i64
    %g = arith.index_cast %s : i64 to index""", "i32", "", "wrap(K * 4, 32) + 1",
     lambda m, k: as_int(k * 4, "int32") + 1),  # extended after it wrapped: the i64 sum cannot wrap
    ("""%c200_i8 = arith.constant 200 : i8
    %c300_i32 = arith.constant 300 : i32
    %t = arith.trunci %c300_i32 : i32 to i8
    %s = arith.addi %t, %c200_i8 : i8
    %g = arith.index_castui %s : i8 to index""", "i32", "", "244", lambda m, k: (300 + 200) % 256),
]

NOT_WRAPPING = [  # sized arithmetic whose range proves it fits: no wrap in the formula
    (M_PLUS_1.format(t="i64"), "i32", "", "M + 1", lambda m, k: m + 1),
    ("""%c100_i32 = arith.constant 100 : i32
    %r = arith.remui %K, %c100_i32 : i32
    %t = arith.trunci %r : i32 to i8
    %g = arith.index_cast %t : i8 to index""", "i32", UINT32_K, "K % 100", lambda m, k: k % 100),
    ("""%t = arith.trunci %K : i32 to i8
    %e = arith.extui %t : i8 to i32
    %c3_i32 = arith.constant 3 : i32
    %s = arith.muli %e, %c3_i32 : i32
    %g = arith.index_cast %s : i32 to index""", "i32", "", "wrapu(K, 8) * 3", lambda m, k: as_int(k, "uint8") * 3),
    ("""%c128_i32 = arith.constant 128 : i32
    %q = arith.ceildivui %K, %c128_i32 : i32
    %g = arith.index_castui %q : i32 to index""", "i32", UINT32_K, "(K + 127) // 128", lambda m, k: ceildiv(k, 128)),
    ("""%c2_i32 = arith.constant 2 : i32
    %q = arith.floordivsi %K, %c2_i32 : i32
    %s = arith.addi %q, %c2_i32 : i32
    %g = arith.index_cast %s : i32 to index""", "i32", "", "K // 2 + 2", lambda m, k: k // 2 + 2),
]


def k_values(rng, unsigned):
    low, high = (0, 2**32 - 1) if unsigned else (INT32_MIN, INT32_MAX)
    edges = [low, high, 0, 1, 2**30 + 100, 2**29 + 33, -(2**30) - 100, 255, 256, 2**16 + 5]
    return [v for v in edges if low <= v <= high] + [rng.randint(low, high) for _ in range(300)]


def kernel_grid(host, k_type, attrs, index_bits=32):
    module = kernel_module(STORE, [("Y", "memref<?x64xf32>"), ("K", k_type)], host=f"    {host}", grid="%g",
                           attrs=attrs)
    return emit_text(module, index_bits=index_bits).signature


@pytest.mark.parametrize("host, k_type, attrs, expected, reference", WRAPPING + NOT_WRAPPING,
                         ids=[case[3] for case in WRAPPING + NOT_WRAPPING])
def test_sized_integer_grids_wrap_exactly_where_they_can(host, k_type, attrs, expected, reference):
    signature = kernel_grid(host, k_type, attrs)
    assert signature.grid[0] == expected
    closure = Expr(expected).closure({"M": 0, "K": 1})
    rng = random.Random(expected)
    bits = 64 if k_type == "i64" else 32
    for k in k_values(rng, unsigned=bool(attrs)) + ([rng.randint(-(2**63), 2**63 - 1) for _ in range(50)]
                                                    if bits == 64 else []):
        m = rng.choice([1, INT32_MAX, rng.randint(1, INT32_MAX)])
        assert closure([m, k]) == reference(m, k), (m, k)


def test_a_64_bit_kernel_bounds_its_symbols_at_2_63():
    """`M + 1` in i64 fits while M stays below 2**31 (a 32-bit kernel's symbols), not below 2**63. In i32
    it wraps in either kernel; in a 64-bit one M + 1 could leave int64, so M is read as an i32 first."""
    in_i32, in_i64 = M_PLUS_1.format(t="i32"), M_PLUS_1.format(t="i64")
    assert kernel_grid(in_i32, "i32", "", index_bits=64).grid[0] == "wrap(wrap(M, 32) + 1, 32)"
    assert kernel_grid(in_i64, "i32", "", index_bits=32).grid[0] == "M + 1"
    assert kernel_grid(in_i64, "i32", "", index_bits=64).grid[0] == "wrap(M + 1, 64)"


# -- end to end: the CPU backend's blocks against the runtime's grid on every call path --------------------------------

N = T.symbolic("N")
BLOCK = 128
ELEMENTS = 8192  # room for the 56 blocks of the largest grid here


TIMES4_GRIDS = {"int32": "-(-wrap(n * 4, 32) // 128)", "uint32": "(wrapu(n * 4, 32) + 127) // 128",
                "int64": "-(-wrap(n * 4, 64) // 128)"}


def times4_kernel(dtype):
    @tilemlir.jit(out_idx=[1])
    def times4(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32), n: T.dtype(dtype)):
        with T.Kernel(T.ceildiv(n * 4, BLOCK), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                Y[bx * BLOCK + i] = X[bx * BLOCK + i] * 2.0

    return times4


def truncated_kernel():
    @tilemlir.jit(out_idx=[1])
    def truncated(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32), n: T.int32):
        with T.Kernel(T.int8(n), threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                Y[bx * BLOCK + i] = X[bx * BLOCK + i] * 2.0

    return truncated


def emitted_signature(fn):
    from tilemlir import driver
    from tilemlir.emit_cuda import emit

    module = fn.frontend().module()
    with module.context:
        driver.run_stages(module, "final")
        return KernelSignature.from_json(emit(module).signature.to_json())


def check_runtime_grids(signature, n, blocks, program_overflows=False):
    """The grid's x extent as each call path computes it with scalar n (the env: N, then n) is `blocks`:
    the general path's (which refuses a negative grid), the fast path's source, the native plan's program
    (None where an intermediate value leaves int64: the plan then hands the call to the general path)."""
    env = [ELEMENTS, n]
    if blocks >= 0:
        assert ArgumentBinder(signature).grid(env) == (blocks, 1, 1)
    else:
        with pytest.raises(LaunchError, match=f"grid dim x = .* evaluates to {blocks} with"):
            ArgumentBinder(signature).grid(env)
    expr = SignatureExprs(signature).grid[0]
    assert eval(expr.to_python({"N": "s_N", "n": "v_n"}.__getitem__), {}, {"s_N": env[0], "v_n": env[1]}) == blocks
    extension = native.load()
    if extension is not None:
        assert plan_spec(signature) is not None  # the native plan takes the kernel
        words = _program(expr, {"N": 0, "n": 1}, False)
        program = extension.evaluate_program(array("q", [len(words), *words]).tobytes(), tuple(env))
        assert program == (None if program_overflows else blocks)


def cpu_blocks(fn, n, rng):
    """How many blocks the CPU backend ran: each writes its 128 elements of Y (poisoned with NaN)."""
    x = rng.standard_normal(ELEMENTS).astype(np.float32) + 5
    y = tilemlir.compile(fn, target="cpu", level="tile")(x, n)
    written = ~np.isnan(y)
    blocks = int(written.sum()) // BLOCK
    assert written.sum() == blocks * BLOCK and written[: blocks * BLOCK].all()
    assert np.array_equal(y[written], 2 * x[written])
    return blocks


@pytest.mark.parametrize("dtype, n, blocks", [
    ("int32", 2**30 + 100, 4),  # n * 4 = 2**32 + 400 wraps to 400: 4 blocks, not 33554436
    ("int32", 2**29 + 33, -(2**24) + 2),  # wraps negative: no block runs, and the runtime refuses the grid
    ("int32", 700, 22), ("int32", -700, -21),
    ("uint32", 2**30 + 100, 4), ("uint32", 2**31 + 1000, 32),  # wrapu(n * 4, 32) = 4000
    ("int64", 2**62 + 200, 7),  # 2**64 + 800 wraps to 800
])
def test_grid_of_a_scalar_times_4_matches_the_cpu_backend(dtype, n, blocks, rng):
    fn = times4_kernel(dtype)
    signature = emitted_signature(fn)
    assert signature.grid == (TIMES4_GRIDS[dtype], "1", "1")
    check_runtime_grids(signature, n, blocks, program_overflows=dtype == "int64")  # int64: n * 4 leaves int64
    assert cpu_blocks(fn, n, rng) == max(blocks, 0)


@pytest.mark.parametrize("n, blocks", [(300, 44), (8, 8), (255 + 256 * 7, -1), (200, -56), (-200, 56), (2**31 - 1, -1)])
def test_grid_of_an_int8_truncation_matches_the_cpu_backend(n, blocks, rng):
    fn = truncated_kernel()
    signature = emitted_signature(fn)
    assert signature.grid == ("wrap(n, 8)", "1", "1")
    check_runtime_grids(signature, n, blocks)
    assert cpu_blocks(fn, n, rng) == max(blocks, 0)

