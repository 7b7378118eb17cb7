"""Kernels taken to thread level by infer-layouts, lower-tile-ops and partition-threads, then run in simt.

simt runs every thread of every block, checks that shuffles and barriers
are reached by whole warps / blocks and that shared memory is race-free,
and gives out-of-range global reads their `tile.pad`. Outputs start as
NaN (or -7) and are compared with float64 references; inputs are fresh
random data.
"""

import numpy as np
import pytest

import partition_support as ps
import tilemlir
import tilemlir.language as T
from support import example_module
from tilemlir.testing import relative_error

RNG = np.random.default_rng()
REDUCE = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
          "absmax": T.reduce_absmax}


def simulate(kernel, inputs):
    frontend = kernel.frontend()
    module = ps.thread_level(frontend.located_text)
    return ps.call(module, inputs, list(frontend.info.out_idx)), module


def numpy_reduce(kind, x, axis):
    x = x.astype(np.float64)
    return {"sum": x.sum(axis), "max": x.max(axis), "min": x.min(axis), "abssum": np.abs(x).sum(axis),
            "absmax": np.abs(x).max(axis)}[kind]


def combine(kind, a, b):
    return {"sum": a + b, "abssum": a + b, "max": np.maximum(a, b), "absmax": np.maximum(a, b),
            "min": np.minimum(a, b)}[kind]


# ----------------------------------------------------------------------------
# Reductions.


@tilemlir.jit(out_idx=[1])
def row_reduction(N=256, block_M=2, kind="max", clear=True, threads=64, start=0.5):
    M = T.symbolic("M")

    @T.prim_func
    def reduce_rows(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            r = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            if not clear:
                T.fill(r, start)
            if kind == "sum":
                T.reduce_sum(x, r, dim=1, clear=clear)
            elif kind == "max":
                T.reduce_max(x, r, dim=1, clear=clear)
            elif kind == "min":
                T.reduce_min(x, r, dim=1, clear=clear)
            elif kind == "abssum":
                T.reduce_abssum(x, r, dim=1, clear=clear)
            else:
                T.reduce_absmax(x, r, dim=1, clear=clear)
            T.copy(r, Y[bx * block_M])

    return reduce_rows


@pytest.mark.parametrize("kind", ["sum", "max", "min", "abssum", "absmax"])
@pytest.mark.parametrize("clear", [True, False])
@pytest.mark.parametrize("n, block_m, threads", [
    (256, 2, 64),    # each row over 2 warps: shuffles, then the shared exchange
    (64, 4, 128),    # a warp per row: shuffles only
    (1000, 1, 128),  # a padded row: 125 runs of 8 over 128 threads
    (24, 3, 32),     # short rows, padded rows and columns
])
def test_row_reductions(kind, clear, n, block_m, threads):
    rows = 7  # not a multiple of block_M: the last block reads padding rows
    x = (RNG.standard_normal((rows, n)) - 1.5).astype(np.float32)
    (y,), module = simulate(row_reduction.instantiate(N=n, block_M=block_m, kind=kind, clear=clear,
                                                      threads=threads, start=0.5), [x])
    want = numpy_reduce(kind, x, 1)
    if not clear:
        want = combine(kind, want, 0.5)
    assert relative_error(y, want) < 1e-6


@tilemlir.jit(out_idx=[1])
def column_reduction(N=64, block_M=32, kind="max", threads=128):
    M = T.symbolic("M")

    @T.prim_func
    def reduce_columns(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            r = T.alloc_fragment((N,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            if kind == "sum":
                T.reduce_sum(x, r, dim=0)
            elif kind == "max":
                T.reduce_max(x, r, dim=0)
            else:
                T.reduce_min(x, r, dim=0)
            T.copy(r, Y[bx, 0])

    return reduce_columns


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_column_reductions_read_padding_as_the_identity(kind):
    rows = 80  # the last block of 32 rows reads 16 rows past the end: max/min must not see them as 0
    x = (RNG.standard_normal((rows, 64)) + (3.0 if kind == "min" else -3.0)).astype(np.float32)
    (y,), _ = simulate(column_reduction.instantiate(kind=kind), [x])
    y = y[:3]  # block b writes row b
    padded = np.concatenate([x, np.full((16, 64), np.nan)])
    want = np.stack([numpy_reduce(kind, block[~np.isnan(block[:, 0])], 0) for block in padded.reshape(3, 32, 64)])
    assert relative_error(y, want) < 1e-6


@tilemlir.jit(out_idx=[1])
def vector_total(N=1024, threads=128):
    B = T.symbolic("B")

    @T.prim_func
    def total(X: T.Tensor((B, N), T.float32), Y: T.Tensor((B,), T.float32)):
        with T.Kernel(B, threads=threads) as bx:
            x = T.alloc_fragment((N,), T.float32)
            t = T.alloc_fragment((1,), T.float32)
            T.copy(X[bx, 0], x)
            T.reduce_sum(x, t, dim=0)
            for i in T.Parallel(1):
                Y[bx + i] = t[i]

    return total


@pytest.mark.parametrize("n, threads", [(1024, 128), (100, 32), (8, 256)])
def test_a_rank_one_reduction_read_outside_parallel(n, threads):
    x = RNG.standard_normal((3, n)).astype(np.float32)
    (y,), _ = simulate(vector_total.instantiate(N=n, threads=threads), [x])
    assert relative_error(y, x.astype(np.float64).sum(1)) < 1e-6


# ----------------------------------------------------------------------------
# Copies between every level, with element type conversions.


@tilemlir.jit(out_idx=[1])
def copy_path(path="SF", block_M=4, N=64, threads=64):
    M = T.symbolic("M")

    @T.prim_func
    def copies(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            s = T.alloc_shared((block_M, N), T.float32)
            s2 = T.alloc_shared((block_M, N), T.float16)
            f = T.alloc_fragment((block_M, N), T.float32)
            l = T.alloc_local((block_M, N), T.float32)
            if path == "S":
                T.copy(X[bx * block_M, 0], s)
                T.copy(s, Y[bx * block_M, 0])
            elif path == "SF":
                T.copy(X[bx * block_M, 0], s)
                T.copy(s, f)
                T.copy(f, s2)
                T.copy(s2, Y[bx * block_M, 0])
            elif path == "L":
                T.copy(X[bx * block_M, 0], l)
                T.copy(l, Y[bx * block_M, 0])
            elif path == "FL":
                T.copy(X[bx * block_M, 0], f)
                T.copy(f, l)
                T.copy(l, Y[bx * block_M, 0])
            elif path == "LF":
                T.copy(X[bx * block_M, 0], l)
                T.copy(l, f)
                T.copy(f, Y[bx * block_M, 0])
            else:  # "SL": shared -> local -> shared
                T.copy(X[bx * block_M, 0], s)
                T.copy(s, l)
                T.copy(l, s2)
                T.copy(s2, Y[bx * block_M, 0])

    return copies


@pytest.mark.parametrize("path", ["S", "SF", "L", "FL", "LF", "SL"])
def test_copies_between_levels(path):
    x = RNG.standard_normal((10, 64)).astype(np.float16)
    (y,), module = simulate(copy_path.instantiate(path=path), [x])
    assert np.array_equal(y, x)  # f16 -> f32 -> f16 is exact


@tilemlir.jit(out_idx=[1])
def fill_levels(threads=64):
    M = T.symbolic("M")

    @T.prim_func
    def fills(X: T.Tensor((M, 32), T.float32), Y: T.Tensor((M, 32), T.float32)):
        with T.Kernel(T.ceildiv(M, 2), threads=threads) as bx:
            s = T.alloc_shared((2, 32), T.float32)
            f = T.alloc_fragment((2, 32), T.float32)
            g = T.alloc_fragment((2, 32), T.float32)
            l = T.alloc_local((2, 32), T.float32)
            T.fill(s, 2.0)
            T.fill(l, 3.0)
            T.copy(s, f)
            T.copy(l, g)
            T.copy(X[bx * 2, 0], s)
            for i, j in T.Parallel(2, 32):
                f[i, j] = f[i, j] * s[i, j] + g[i, j]
            T.copy(f, Y[bx * 2, 0])

    return fills


def test_fills_and_shared_reuse():
    x = RNG.standard_normal((6, 32)).astype(np.float32)
    (y,), module = simulate(fill_levels.instantiate(), [x])
    assert relative_error(y, 2.0 * x + 3.0) < 1e-7


@tilemlir.jit(out_idx=[1])
def transposed_pair(N=32, threads=128):
    M = T.symbolic("M")

    @T.prim_func
    def transposed(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, N), threads=threads) as bx:
            a = T.alloc_fragment((N, N), T.float32)
            b = T.alloc_fragment((N, N), T.float32)
            T.copy(X[bx * N, 0], a)
            for i, j in T.Parallel(N, N):
                b[j, i] = a[i, j] * 2.0
            T.copy(b, Y[bx * N, 0])

    return transposed


def test_a_transposed_access_shares_the_layout_transposed():
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    (y,), _ = simulate(transposed_pair.instantiate(), [x])
    want = np.concatenate([2 * x[k:k + 32].T for k in (0, 32)])
    assert relative_error(y, want) < 1e-7


# ----------------------------------------------------------------------------
# The example kernels.


def run_example(name, params, input_args, tolerance):
    module = example_module(name)
    kernel = getattr(module, name).instantiate(**params)
    inputs = module.make_inputs(RNG, **input_args)
    outputs, thread_ir = simulate(kernel, inputs)
    for got, want in zip(outputs, module.reference(*inputs)):
        assert relative_error(got, want) < tolerance
    return str(thread_ir)


@pytest.mark.parametrize("n, threads, block_m, barriers", [
    (1024, 32, 1, 0),   # a row in one warp: shuffles only
    (2048, 64, 1, 1),   # 2 warps
    (4096, 128, 1, 1),  # 4 warps
    (8192, 256, 1, 1),  # 8 warps
    (4096, 128, 4, 0),  # 4 rows: a warp per row, no exchange
    (4096, 256, 2, 1),  # 2 rows, each across 4 warps
    (1000, 128, 2, 1),  # 1000 columns: padded runs
])
def test_rmsnorm(n, threads, block_m, barriers):
    ir_text = run_example("rmsnorm", dict(N=n, threads=threads, block_M=block_m), dict(rows=5, n=n), 1e-2)
    assert ir_text.count("gpu.barrier") == barriers
    assert "tile." not in ir_text.replace("tile.entry", "").replace("tile.layout", "").replace(
        "tile.unroll", "").replace("tile.pad", "").replace("tile.arg", "").replace("tile.symbols", "")


@pytest.mark.parametrize("n, block_n, block_m, threads, barriers", [
    (1024, 1024, 1, 32, 0),    # one warp per row
    (2048, 1024, 1, 128, 2),   # the row over 4 warps: one exchange per reduction (max, sum) per chunk
    (4096, 4096, 1, 256, 2),   # 8 warps
    (1000, 1000, 2, 128, 2),   # padded rows of 1000
    (512, 512, 4, 128, 0),     # 4 rows of 64 runs: a warp per row
])
def test_online_softmax(n, block_n, block_m, threads, barriers):
    ir_text = run_example("softmax", dict(N=n, block_N=block_n, block_M=block_m, threads=threads),
                          dict(rows=3, n=n), 2e-3)
    assert ir_text.count("gpu.barrier") == barriers


@pytest.mark.parametrize("name, params, inputs, tolerance", [
    ("layernorm", dict(N=2048, threads=128), dict(rows=3, n=2048), 2e-3),
    ("quant_fp8", dict(N=1024, threads=128), dict(rows=3, n=1024), 0.05),
    ("silu_and_mul", dict(D=512, block_D=256), dict(rows=6, d=512), 1e-2),
    ("row_reduce", dict(N=2048, block_N=512), dict(rows=6, n=2048), 1e-6),
    ("elementwise_add", dict(block_N=1024), dict(n=3001), 2e-3),
])
def test_other_examples(name, params, inputs, tolerance):
    run_example(name, params, inputs, tolerance)


def test_non_divisible_1000x1000():
    # 1000 x 1000 with 8-row blocks: 125 blocks, the row padded to 1024 columns of registers.
    ir_text = run_example("rmsnorm", dict(N=1000, threads=128, block_M=8), dict(rows=1000, n=1000), 1e-2)
    assert "arith.cmpi ult" in ir_text  # masked registers past column 1000


# ----------------------------------------------------------------------------
# Reductions into other levels, of other ranks, from shared memory.


@tilemlir.jit(out_idx=[1])
def reduction_into(level="shared", N=128, block_M=4, threads=64):
    M = T.symbolic("M")

    @T.prim_func
    def reduce_into(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), T.float16)
            s = T.alloc_shared((block_M,), T.float32)
            l = T.alloc_local((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            if level == "shared":
                T.reduce_sum(x, s, dim=1)
                T.copy(s, Y[bx * block_M])
            else:
                T.reduce_max(x, l, dim=1)
                T.copy(l, Y[bx * block_M])

    return reduce_into


@pytest.mark.parametrize("level, kind", [("shared", "sum"), ("local", "max")])
def test_fragment_reductions_into_shared_and_local_buffers(level, kind):
    x = RNG.standard_normal((10, 128)).astype(np.float16)  # f16 in, f32 accumulation
    (y,), _ = simulate(reduction_into.instantiate(level=level), [x])
    assert relative_error(y, numpy_reduce(kind, x, 1)) < 1e-6


@tilemlir.jit(out_idx=[1])
def middle_dim_reduction(threads=128):
    @T.prim_func
    def reduce_middle(X: T.Tensor((4, 8, 32), T.float32), Y: T.Tensor((4, 32), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            x = T.alloc_fragment((4, 8, 32), T.float32)
            r = T.alloc_fragment((4, 32), T.float32)
            T.copy(X, x)
            T.reduce_sum(x, r, dim=1)
            T.copy(r, Y)

    return reduce_middle


def test_a_middle_dim_of_a_rank_three_fragment():
    x = RNG.standard_normal((4, 8, 32)).astype(np.float32)
    (y,), _ = simulate(middle_dim_reduction.instantiate(), [x])
    assert relative_error(y, x.astype(np.float64).sum(1)) < 1e-6


@tilemlir.jit(out_idx=[1])
def shared_source_reduction(threads=64):
    @T.prim_func
    def reduce_shared(X: T.Tensor((4, 64), T.float32), Y: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=threads) as bx:
            s = T.alloc_shared((4, 64), T.float32)
            r = T.alloc_fragment((4,), T.float32)
            T.copy(X, s)
            T.reduce_abssum(s, r, dim=1)
            T.copy(r, Y)

    return reduce_shared


def test_a_shared_source_reduces_serially_per_destination_element():
    x = RNG.standard_normal((4, 64)).astype(np.float32)
    (y,), module = simulate(shared_source_reduction.instantiate(), [x])
    assert relative_error(y, np.abs(x.astype(np.float64)).sum(1)) < 1e-6
    assert str(module).count("gpu.barrier") == 1  # the copy into s, then the reads of other threads
