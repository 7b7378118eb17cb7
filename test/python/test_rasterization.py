"""T.use_swizzle (rewriting/rasterization.py): the map from launched block ids to the coordinates the kernel
sees is TileLang's rasterization and a bijection of the grid, for static and symbolic grids; kernels that use
it compute exactly what they compute without it on the CPU backend at both levels; the CUDA keeps the guard
elimination of the unswizzled kernel."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from thread_level_interpreter import Interpreter
from tilemlir.context import make_context
from tilemlir.dialects.tile import Rasterization
from tilemlir.mlir import func, ir
from tilemlir.rewriting.rasterization import rasterized_coordinates
from tilemlir.rewriting.thread_builder import Builder


def tilelang_coordinates(x: int, y: int, gx: int, gy: int, panel: int, order: str) -> tuple[int, int]:
    """TileLang's rasterization2DRow / rasterization2DColumn, written from their definition: the id's panel
    holds `panel` rows (columns) times the other extent, the last one what is left; inside it the id walks
    `stride` rows (columns) per column (row), odd panels backwards."""
    block = x + y * gx
    across, down = (gx, gy) if order == "row" else (gy, gx)
    panel_ids = panel * across
    offset, index = block % panel_ids, block // panel_ids
    total = -(-(gx * gy) // panel_ids)
    stride = panel if index + 1 < total else (gx * gy - index * panel_ids) // across
    step = across - 1 - offset // stride if index & 1 else offset // stride
    inner = offset % stride + index * panel
    return (step, inner) if order == "row" else (inner, step)


_CONTEXT = make_context()


def placement(gx: int, gy: int, raster: Rasterization, symbolic: bool) -> np.ndarray:
    """Run the map's IR over every launched block: out[y', x'] = the launched id that lands there (-1: none).
    With `symbolic`, gx and gy are function arguments (the divisions by values), else constants."""
    with _CONTEXT, ir.Location.unknown():
        module = ir.Module.create()
        index = ir.IndexType.get()
        out_type = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] * 2, index)
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("place", ([out_type, index, index], []))
        entry = function.add_entry_block()
        with ir.InsertionPoint(entry):
            func.ReturnOp([])
        out, *extents = entry.arguments
        b = Builder(ir.InsertionPoint(entry.operations[0]), ir.Location.unknown(), entry)
        grid = list(extents) if symbolic else [b.index(gx), b.index(gy)]
        with b.loop(grid[1], unroll=False) as (rows, y, _, _):
            with rows.loop(grid[0], unroll=False) as (inner, x, _, _):
                coordinates = rasterized_coordinates(inner, raster, [x, y], grid)
                inner.store(inner.add(x, inner.mul(y, grid[0])), out, [coordinates[1], coordinates[0]])
        assert module.operation.verify()
        placed = np.full((gy, gx), -1, dtype=np.int64)
        Interpreter(function, oob="error").run([placed, gx, gy])
    return placed


GRIDS = [(gx, gy) for gx, gy in itertools.product(range(1, 8), repeat=2)] + [(13, 29), (32, 5), (1, 40), (40, 1)]
PANELS = [1, 2, 3, 4, 5, 8, 10, 64]


@pytest.mark.parametrize("order", ["row", "column"])
@pytest.mark.parametrize("symbolic", [False, True], ids=["static-grid", "symbolic-grid"])
def test_the_map_is_tilelangs_and_a_bijection_of_every_grid(order, symbolic):
    for (gx, gy), panel in itertools.product(GRIDS, PANELS):
        placed = placement(gx, gy, Rasterization(order, panel), symbolic)
        want = np.full((gy, gx), -1, dtype=np.int64)
        for y, x in itertools.product(range(gy), range(gx)):
            cx, cy = tilelang_coordinates(x, y, gx, gy, panel, order)
            want[cy, cx] = x + y * gx
        assert np.array_equal(placed, want), (gx, gy, panel)
        assert sorted(placed.ravel().tolist()) == list(range(gx * gy)), (gx, gy, panel)


def test_row_panels_walk_down_their_rows_and_turn_back():
    """A 4 x 5 grid in panels of 2 rows: ids 0..7 fill rows 0-1 column by column left to right, ids 8..15 rows
    2-3 right to left, and the ragged last panel (row 4 alone) goes left to right again."""
    placed = placement(4, 5, Rasterization("row", 2), symbolic=False)
    assert placed.tolist() == [
        [0, 2, 4, 6],
        [1, 3, 5, 7],
        [14, 12, 10, 8],
        [15, 13, 11, 9],
        [16, 17, 18, 19],
    ]


def test_column_panels_walk_along_their_columns():
    placed = placement(5, 3, Rasterization("column", 2), symbolic=False)
    assert placed.tolist() == [
        [0, 1, 10, 11, 12],
        [2, 3, 8, 9, 13],
        [4, 5, 6, 7, 14],
    ]


# ----------------------------------------------------------------------------
# Kernels


@tilemlir.jit(out_idx=[-1])
def gemm(N=80, K=48, block=16, panel=3, order="row", enable=True, static_m=None):
    M = T.symbolic("M") if static_m is None else static_m

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=64) as (bx, by):
            A_s = T.alloc_shared((block, block), "float32")
            B_s = T.alloc_shared((block, block), "float32")
            C_f = T.alloc_fragment((block, block), "float32")
            T.use_swizzle(panel, order=order, enable=enable)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block), num_stages=2):
                T.copy(A[by * block, k * block], A_s)
                T.copy(B[k * block, bx * block], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block, bx * block])

    return kernel


@tilemlir.jit(out_idx=[-1])
def block_coordinates(panel=2, order="row"):
    """Each block writes its own cell: its linear coordinates and the input there (outputs start poisoned)."""
    GX, GY = T.symbolic("GX"), T.symbolic("GY")

    @T.prim_func
    def kernel(Shape: T.Tensor((GY, GX), "int32"), Out: T.Tensor((GY, GX, 2), "int32")):
        with T.Kernel(GX, GY, threads=32) as (bx, by):
            T.use_swizzle(panel, order)
            Out[by, bx, 0] = bx + by * GX
            Out[by, bx, 1] = Shape[by, bx]

    return kernel


@pytest.mark.parametrize("level", ["tile", "thread"])
@pytest.mark.parametrize("order, panel", [("row", 3), ("column", 2), ("row", 1), ("column", 7)])
@pytest.mark.parametrize("m", [77, 16])
def test_gemm_with_use_swizzle_is_exact_on_the_cpu(level, order, panel, m, rng):
    """A ragged M (77 rows: 5 row blocks, the last partial; 16: one row block) and ragged last panels: the result is
    bit for bit the unswizzled kernel's, and close to float64."""
    a = rng.standard_normal((m, 48)).astype(np.float32)
    b = rng.standard_normal((48, 80)).astype(np.float32)
    swizzled = tilemlir.compile(gemm.instantiate(panel=panel, order=order), target="cpu", level=level)(a, b)
    plain = tilemlir.compile(gemm.instantiate(enable=False), target="cpu", level=level)(a, b)
    assert np.array_equal(swizzled, plain)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(swizzled - reference)) < 1e-4 * np.max(np.abs(reference))


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_every_block_sees_distinct_coordinates(level, rng):
    """One compile over symbolic grids: every tile written once, by the block whose coordinates it is."""
    kernel = tilemlir.compile(block_coordinates.instantiate(panel=3, order="row"), target="cpu", level=level)
    for gx, gy in [(5, 7), (1, 4), (6, 1), (9, 9)]:
        shape = rng.integers(0, 1000, size=(gy, gx)).astype(np.int32)
        out = kernel(shape)
        assert np.array_equal(out[:, :, 0], np.add.outer(np.arange(gy) * gx, np.arange(gx)))
        assert np.array_equal(out[:, :, 1], shape)


def test_disabled_or_one_dim_kernels_carry_no_rasterization():
    assert "tile.rasterization = {order = \"row\", panel = 3 : i64}" in tilemlir.lower(gemm.instantiate())
    assert "tile.rasterization" not in tilemlir.lower(gemm.instantiate(enable=False))
    assert "tile.rasterization" not in tilemlir.lower(one_dim.instantiate())


@tilemlir.jit(out_idx=[-1])
def one_dim():
    M = T.symbolic("M")

    @T.prim_func
    def kernel(X: T.Tensor((M,), "float32"), Y: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=32) as bx:
            T.use_swizzle(4)
            Y[bx] = X[bx] * 2.0

    return kernel


@pytest.mark.parametrize("m, guards", [(96, 0), (77, 1)])
def test_the_cuda_keeps_the_guards_of_the_unswizzled_kernel(m, guards):
    """M = 96: no copy needs a guard, and with the remap the prover still shows every block's tiles inside A,
    B and C (its divisions are by constants); M = 77: only the partial row block's guard stays, as without it.
    The index math stays 32-bit."""
    plain = tilemlir.compile(gemm.instantiate(enable=False, static_m=m), target="cuda", arch="sm_90a")
    for order in ("row", "column"):
        swizzled = tilemlir.compile(gemm.instantiate(panel=4, order=order, static_m=m), target="cuda", arch="sm_90a")
        assert swizzled.ir("final").count("tile.guard") == plain.ir("final").count("tile.guard") == guards
        assert "32-bit index math" in swizzled.cuda_source()
        panel_ids = 4 * (5 if order == "row" else -(-m // 16))  # 4 rows of the 5 block columns, or 4 columns
        assert f"idx / {panel_ids};" in swizzled.cuda_source()
