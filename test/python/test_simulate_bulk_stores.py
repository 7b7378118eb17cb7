"""simulate-threads on TMA stores and their bulk groups (backends/cpu/simulate/bulk_stores.py, the boxes decoded by
bulk_copies.py): hand-written thread-level kernels whose shared tile, laid out as docs/tensor_cores.md's
`tile.swizzle` places it (support.swizzled_element, not the compiler's or the simulator's code), goes to the
global tensor box by box, clipped at the tensor's edges; then one kernel per rule the simulation enforces,
each broken on purpose and caught with a message naming the ops."""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from support import kernel_module, swizzled_element
from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir

THREADS = 128
BLOCKS = 2  # block b stores its tile one box further down (dim -2)
DTYPES = {"bf16": (ml_dtypes.bfloat16, 2), "f32": (np.float32, 4)}
# the locations the messages name
FILL, FENCE, COMMIT, WAIT, POKE = "epilogue.py:11:9", "epilogue.py:12:5", "epilogue.py:40:9", "epilogue.py:41:9", \
    "epilogue.py:50:7"


def store_at(panel: int) -> str:
    return f"epilogue.py:{30 + panel}:9"


def loc(site: str) -> str:
    """The MLIR location of `site` (file:line:col)."""
    file, line, col = site.split(":")
    return f'loc("{file}":{line}:{col})'


@dataclass(frozen=True)
class Tile:
    """A shared tile of `panels` boxes side by side along the inner dim; `box` is one TMA box (outermost
    first), its inner dim the whole swizzle span (64 bytes unswizzled, one panel)."""

    dtype: str
    swizzle: int
    box: tuple[int, ...]
    panels: int = 1

    @property
    def element_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def numpy_type(self):
        return DTYPES[self.dtype][0]

    @property
    def rows(self) -> int:
        """The box's outer dims flattened: the rows of its swizzle pattern."""
        return math.prod(self.box[:-1])

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.box[:-1], self.box[-1] * self.panels)

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    def physical(self, index: tuple[int, ...]) -> int:
        row = int(np.ravel_multi_index(index[:-1], self.box[:-1]))
        if self.swizzle:
            return swizzled_element(row, index[-1], self.rows, self.swizzle, self.element_bytes)
        return row * self.shape[-1] + index[-1]

    def logical(self, flat: np.ndarray) -> np.ndarray:
        """The tile whose physical layout is `flat`."""
        places = np.array([self.physical(i) for i in np.ndindex(*self.shape)]).reshape(self.shape)
        assert sorted(places.ravel()) == list(range(self.elements))
        return flat[places]


def body(tile: Tile, origin: tuple[int, ...], *, fence: bool = True, commits: str = "last", wait: int | None = 0,
         issuer: int = 0, tail: str = "", fill: str = "%cn") -> str:
    """Every thread copies its share of the block's physical tile from X into C_s (up to element `fill`), fences
    (`fence`), then a barrier; thread `issuer` stores each panel's box at `origin` (the block's rows further
    down), commits after the last store (`commits="last"`), after each (`"each"`) or never (`"none"`), and waits
    with `pending = wait` (None: no wait); `tail` follows."""
    buf = f'memref<{tile.elements}x{tile.dtype}, "shared">'
    rank = len(tile.box)
    coords = []
    lines = []
    for d, value in enumerate(origin[:-1]):
        lines.append(f"      %o{d} = arith.constant {value} : index")
        coords.append(f"%o{d}")
    lines += [f"      %crows = arith.constant {tile.box[-2]} : index",
              f"      %down = arith.muli %bx, %crows : index",
              f"      %row = arith.addi %o{rank - 2}, %down : index"]
    coords[-1] = "%row"
    stores = []
    for p in range(tile.panels):
        start = tile.physical((*[0] * (rank - 1), p * tile.box[-1]))
        stores += [f"        %dst{p} = arith.constant {start} : index",
                   f"        %col{p} = arith.constant {origin[-1] + p * tile.box[-1]} : index",
                   f'        "tile.tma_store"(%buf, %dst{p}, {", ".join(coords)}, %col{p}) {{map = "C_map"}} '
                   f': ({buf}, {", ".join(["index"] * (rank + 1))}) -> () {loc(store_at(p))}']
        if commits == "each" or (commits == "last" and p == tile.panels - 1):
            stores.append(f'        "tile.bulk_commit_group"() : () -> () {loc(COMMIT)}')
    if wait is not None:
        stores.append(f'        "tile.bulk_wait_group_read"() {{pending = {wait} : i64}} : () -> () {loc(WAIT)}')
    fence_line = f'      "tile.fence_proxy_async"() : () -> () {loc(FENCE)}' if fence else ""
    text = f"""
      %buf = memref.alloca() {{name = "C_s", tile.swizzle = {tile.swizzle} : i64, tile.materialized,
                              tile.logical_shape = {list(tile.shape)}}} : {buf}
      %cn = arith.constant {tile.elements} : index
      %cstep = arith.constant {THREADS} : index
      %first = arith.muli %bx, %cn : index
      scf.for %i = %tx to {fill} step %cstep {{
        %src = arith.addi %first, %i : index
        %v = memref.load %X[%src] : memref<{BLOCKS * tile.elements}x{tile.dtype}>
        memref.store %v, %buf[%i] : {buf} {loc(FILL)}
      }}
{fence_line}
      gpu.barrier
      %issuer = arith.constant {issuer} : index
      %issues = arith.cmpi eq, %tx, %issuer : index
{chr(10).join(lines)}
      scf.if %issues {{
{chr(10).join(stores)}
      }}
{tail}"""
    return text.replace("$BUF", buf).replace("$X", f"memref<{BLOCKS * tile.elements}x{tile.dtype}>")


def poke(start: int = 0, issuer_only: bool = False) -> str:
    """Every thread (or the issuer alone) writes element `start + tx` of C_s (a value of X) at POKE."""
    text = f"""      %poke{start} = arith.constant {start} : index
      %at{start} = arith.addi %tx, %poke{start} : index
      %pv{start} = memref.load %X[%at{start}] : $X
      memref.store %pv{start}, %buf[%at{start}] : $BUF {loc(POKE)}"""
    return f"      scf.if %issues {{\n{text}\n      }}" if issuer_only else text


def thread_wait(pending: int = 0) -> str:
    return f"""      scf.if %issues {{
        "tile.bulk_wait_group_read"() {{pending = {pending} : i64}} : () -> () {loc(WAIT)}
      }}"""


def compile_store(tile: Tile, text: str):
    rank = len(tile.box)
    dims = [f"D{d}" for d in range(rank)]
    maps = f"C_map = {{tensor = 1 : i64, box = {list(tile.box)}, swizzle = {tile.swizzle} : i64}}"
    module = kernel_module(text, [("X", f"memref<{BLOCKS * tile.elements}x{tile.dtype}>"),
                                  ("C", f"memref<{'?x' * rank}{tile.dtype}>")],
                           dims=[[BLOCKS * tile.elements], dims], symbols=tuple(dims), grid=f"%c{BLOCKS}",
                           threads=THREADS, attrs=f", tile.tensor_maps = {{{maps}}}")
    with make_context(), ir.Location.unknown():
        return build(ir.Module.parse(module), None, "thread")


def inputs(tile: Tile, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Fresh random physical tiles (one per block) and a NaN-poisoned output."""
    x = np.random.default_rng().standard_normal(BLOCKS * tile.elements).astype(tile.numpy_type)
    return x, np.full(shape, np.nan, tile.numpy_type)


def expected(tile: Tile, x: np.ndarray, shape: tuple[int, ...], origin: tuple[int, ...]) -> np.ndarray:
    """Each block's logical tile at its origin, the elements outside the tensor dropped; NaN elsewhere."""
    want = np.full(shape, np.nan, tile.numpy_type)
    for block in range(BLOCKS):
        logical = tile.logical(x[block * tile.elements:(block + 1) * tile.elements])
        start = list(origin)
        start[-2] += block * tile.box[-2]
        for index in np.ndindex(*tile.shape):
            place = tuple(s + i for s, i in zip(start, index))
            if all(0 <= p < n for p, n in zip(place, shape)):
                want[place] = logical[index]
    return want


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def run(tile: Tile, text: str, shape: tuple[int, ...], origin: tuple[int, ...]) -> None:
    """Compile, run on fresh inputs, and compare with numpy."""
    kernel = compile_store(tile, text)
    x, c = inputs(tile, shape)
    kernel(x, c)
    assert_same(c, expected(tile, x, shape, origin))


def run_failing(tile: Tile, text: str, shape: tuple[int, ...], origin: tuple[int, ...], message: str) -> None:
    """The run stops with `message`, the store's values written all the same (it read C_s when issued)."""
    kernel = compile_store(tile, text)
    x, c = inputs(tile, shape)
    with pytest.raises(SimulationError, match=message):
        kernel(x, c)
    assert_same(c, expected(tile, x, shape, origin))


# ---------------------------------------------------------------------------------------------
STORES = [  # (tile, tensor shape, origin of block 0's box)
    pytest.param(Tile("bf16", 128, (16, 64), panels=2), (40, 200), (4, 8), id="bf16-swizzle128-inside"),
    pytest.param(Tile("bf16", 128, (16, 64), panels=2), (25, 100), (4, 8), id="bf16-swizzle128-ragged-m-and-n"),
    pytest.param(Tile("bf16", 64, (16, 32), panels=2), (30, 60), (6, 0), id="bf16-swizzle64-ragged-m-and-n"),
    pytest.param(Tile("bf16", 0, (16, 32)), (32, 40), (0, 8), id="bf16-unswizzled-ragged-n"),
    pytest.param(Tile("f32", 128, (16, 32), panels=2), (20, 50), (-5, -8), id="f32-swizzle128-negative-origin"),
    pytest.param(Tile("f32", 32, (8, 8), panels=2), (13, 30), (2, 20), id="f32-swizzle32-ragged-m-and-n"),
    pytest.param(Tile("f32", 0, (16, 16)), (30, 50), (2, 40), id="f32-unswizzled-ragged-m-and-n"),
    pytest.param(Tile("f32", 128, (2, 8, 32)), (2, 15, 30), (1, 3, 4), id="f32-swizzle128-3d-ragged-every-dim"),
]


@pytest.mark.parametrize("tile, shape, origin", STORES)
def test_the_boxes_land_in_the_tensor_clipped_at_its_edges(tile, shape, origin):
    run(tile, body(tile, origin), shape, origin)


def test_the_issuing_thread_may_rewrite_its_tile_after_its_wait_and_others_after_a_barrier():
    tile = Tile("bf16", 128, (16, 64), panels=2)
    run(tile, body(tile, (0, 0), tail=poke(issuer_only=True) + "\n      gpu.barrier\n" + poke(256)), (32, 128), (0, 0))


def test_a_pending_count_of_one_retires_the_older_group_only():
    """Panel 0's group is retired by `pending = 1`: rewriting it after a barrier is fine."""
    tile = Tile("bf16", 128, (16, 64), panels=2)
    text = body(tile, (0, 0), commits="each", wait=1, tail="      gpu.barrier\n" + poke() + "\n" + thread_wait())
    run(tile, text, (32, 128), (0, 0))


# -- the rules ---------------------------------------------------------------------------------------
RAGGED = Tile("bf16", 128, (16, 64), panels=2)
RAGGED_SHAPE, RAGGED_ORIGIN = (25, 100), (4, 8)


def test_writing_the_tile_before_the_wait_is_a_race():
    text = body(RAGGED, RAGGED_ORIGIN, wait=None, tail=poke() + "\n" + thread_wait())
    run_failing(RAGGED, text, RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"data race on shared buffer 'C_s' element 0 in block 0: thread 0 writes it at {POKE} while "
                rf"tile.tma_store at {store_at(0)} by thread 0 may still read it \(no tile.bulk_wait_group_read of "
                r"that thread has retired the bulk group holding the store")


def test_another_thread_writing_after_the_wait_without_a_barrier_is_a_race():
    text = body(RAGGED, RAGGED_ORIGIN, tail=poke())
    run_failing(RAGGED, text, RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"data race on shared buffer 'C_s' element 1 in block 0: thread 1 writes it at {POKE} in the barrier "
                rf"interval in which thread 0's tile.bulk_wait_group_read retired tile.tma_store at {store_at(0)} "
                r"reading it \(no gpu.barrier between that wait and this write\)")


def test_a_wait_leaving_the_newer_group_in_flight_then_a_write_of_its_tile_is_a_race():
    panel = RAGGED.physical((0, 64))
    text = body(RAGGED, RAGGED_ORIGIN, commits="each", wait=1,
                tail="      gpu.barrier\n" + poke(panel) + "\n" + thread_wait())
    run_failing(RAGGED, text, RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"data race on shared buffer 'C_s' element {panel} in block 0: thread 0 writes it at {POKE} while "
                rf"tile.tma_store at {store_at(1)} by thread 0 may still read it")


def test_a_write_not_fenced_to_the_async_proxy_is_caught():
    run_failing(RAGGED, body(RAGGED, RAGGED_ORIGIN, fence=False), RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"tile.tma_store at {store_at(0)} \(thread 0 of block 0\) reads element 0 of shared buffer 'C_s', "
                rf"which thread 0 wrote at {FILL} through the generic proxy with no tile.fence_proxy_async after the "
                r"write")


def test_a_fence_after_the_barrier_does_not_order_other_threads_writes():
    """The last thread issues: every other thread has fenced by then, but after the barrier."""
    text = body(RAGGED, RAGGED_ORIGIN, fence=False, issuer=THREADS - 1)
    text = text.replace("      gpu.barrier\n", f'      gpu.barrier\n      "tile.fence_proxy_async"() : () -> () '
                                                 f'{loc(FENCE)}\n', 1)
    run_failing(RAGGED, text, RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"tile.tma_store at {store_at(0)} \(thread {THREADS - 1} of block 0\) reads element 0 of shared "
                rf"buffer 'C_s', which thread 0 wrote at {FILL} and fenced \(tile.fence_proxy_async\), but no "
                r"gpu.barrier came between that fence and this store")


def test_a_store_never_committed_is_caught_at_the_block_end():
    run_failing(RAGGED, body(RAGGED, RAGGED_ORIGIN, commits="none"), RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"block 0 ends with tile.tma_store at {store_at(1)} by thread 0 not committed \(no "
                r"tile.bulk_commit_group after it")


def test_a_group_never_waited_for_is_caught_at_the_block_end():
    run_failing(RAGGED, body(RAGGED, RAGGED_ORIGIN, wait=None), RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"block 0 ends while tile.tma_store at {store_at(1)} by thread 0 may still read its shared tile "
                r"\(no tile.bulk_wait_group_read retired its bulk group")


def test_a_wait_with_the_group_still_pending_at_the_block_end_is_caught():
    run_failing(RAGGED, body(RAGGED, RAGGED_ORIGIN, wait=1), RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"block 0 ends while tile.tma_store at {store_at(1)} by thread 0 may still read its shared tile")


def test_a_store_reading_a_never_written_element_is_caught():
    """Only the first half of C_s is filled: the second panel's box reads elements no thread wrote."""
    text = body(RAGGED, RAGGED_ORIGIN, fill="%half").replace(
        "      %first", f"      %half = arith.constant {RAGGED.elements // 2} : index\n      %first", 1)
    kernel = compile_store(RAGGED, text)
    x, c = inputs(RAGGED, RAGGED_SHAPE)
    with pytest.raises(SimulationError, match=rf"tile.tma_store at {store_at(1)} \(thread 0 of block 0\) reads "
                                              rf"never-written element {RAGGED.elements // 2} of shared buffer 'C_s'"):
        kernel(x, c)
    want = expected(RAGGED, x, RAGGED_SHAPE, RAGGED_ORIGIN)
    assert_same(c[:, :RAGGED_ORIGIN[1] + 64], want[:, :RAGGED_ORIGIN[1] + 64])  # the first panel's box


def test_a_tma_load_into_the_tile_while_a_store_reads_it_is_a_race():
    """A TMA load into C_s issued before the store's wait: it may land while the store still reads."""
    load = f"""      %bar = memref.alloca() {{name = "bar"}} : memref<1xi64, "shared">
      scf.if %issues {{
        "tile.mbarrier_init"(%bar, %c0) {{count = 1 : i64}} : (memref<1xi64, "shared">, index) -> ()
        "tile.fence_mbarrier_init"() : () -> ()
        "tile.mbarrier_arrive_expect_tx"(%bar, %c0) {{bytes = 2048 : i64}} : (memref<1xi64, "shared">, index) -> ()
        "tile.tma_load"(%buf, %bar, %c0, %c0, %c0, %c0) {{map = "C_map"}}
            : ($BUF, memref<1xi64, "shared">, index, index, index, index) -> () {loc("epilogue.py:60:9")}
      }}
      "tile.mbarrier_wait"(%bar, %c0, %c0) : (memref<1xi64, "shared">, index, index) -> ()
{thread_wait()}"""
    text = body(RAGGED, RAGGED_ORIGIN, wait=None, tail=load)
    run_failing(RAGGED, text, RAGGED_SHAPE, RAGGED_ORIGIN,
                rf"data race on shared buffer 'C_s' element 0 in block 0: thread 0 issues a TMA load into it at "
                rf"epilogue.py:60:9 while tile.tma_store at {store_at(0)} by thread 0 may still read it")


# a TMA load of A's box into C_s, then a TMA store of C_s into C: both swizzle alike, so the box goes across as it is
COPY = f"""
      %buf = memref.alloca() {{name = "C_s", tile.swizzle = 128 : i64, tile.materialized,
                              tile.logical_shape = [16, 64]}} : memref<1024xbf16, "shared">
      %bar = memref.alloca() {{name = "bar"}} : memref<1xi64, "shared">
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {{
        "tile.mbarrier_init"(%bar, %c0) {{count = 1 : i64}} : (memref<1xi64, "shared">, index) -> ()
        "tile.fence_mbarrier_init"() : () -> ()
      }}
      gpu.barrier
      %r = arith.constant 5 : index
      %k = arith.constant 40 : index
      %r2 = arith.constant 2 : index
      %k2 = arith.constant 8 : index
      scf.if %is0 {{
        "tile.mbarrier_arrive_expect_tx"(%bar, %c0) {{bytes = 2048 : i64}} : (memref<1xi64, "shared">, index) -> ()
        "tile.tma_load"(%buf, %bar, %c0, %c0, %r, %k) {{map = "A_map"}}
            : (memref<1024xbf16, "shared">, memref<1xi64, "shared">, index, index, index, index) -> ()
      }}
      "tile.mbarrier_wait"(%bar, %c0, %c0) : (memref<1xi64, "shared">, index, index) -> ()
      scf.if %is0 {{
        "tile.tma_store"(%buf, %c0, %r2, %k2) {{map = "C_map"}} : (memref<1024xbf16, "shared">, index, index, index)
            -> () {loc(store_at(0))}
        "tile.bulk_commit_group"() : () -> ()
        "tile.bulk_wait_group_read"() {{pending = 0 : i64}} : () -> ()
      }}
"""
A_SHAPE, C_SHAPE = (12, 100), (10, 60)  # the load's box hangs over A's edges (zeros), the store's over C's


def copy_kernel(text: str):
    """(the kernel, fresh random A and C, C as numpy computes it after the kernel)."""
    maps = ("A_map = {tensor = 0 : i64, box = [16, 64], swizzle = 128 : i64}, "
            "C_map = {tensor = 1 : i64, box = [16, 64], swizzle = 128 : i64}")
    module = kernel_module(text, [("A", "memref<?x?xbf16>"), ("C", "memref<?x?xbf16>")],
                           dims=[["M", "K"], ["P", "N"]], symbols=("M", "K", "P", "N"), grid="%c1", threads=THREADS,
                           attrs=f", tile.tensor_maps = {{{maps}}}")
    with make_context(), ir.Location.unknown():
        kernel = build(ir.Module.parse(module), None, "thread")
    rng = np.random.default_rng()
    a = rng.standard_normal(A_SHAPE).astype(ml_dtypes.bfloat16)
    c = rng.standard_normal(C_SHAPE).astype(ml_dtypes.bfloat16)
    box = np.zeros((16, 64), ml_dtypes.bfloat16)
    box[:A_SHAPE[0] - 5, :A_SHAPE[1] - 40] = a[5:, 40:]
    want = c.copy()
    want[2:, 8:] = box[:C_SHAPE[0] - 2, :C_SHAPE[1] - 8]
    return kernel, a, c, want


def test_a_tma_load_then_a_tma_store_copies_the_box_without_a_proxy_fence():
    kernel, a, c, want = copy_kernel(COPY)
    kernel(a, c)
    assert_same(c, want)


def test_a_store_of_a_tile_whose_tma_load_has_not_landed_is_a_race():
    kernel, a, c, want = copy_kernel(COPY.replace('      "tile.mbarrier_wait"(%bar, %c0, %c0) : (memref<1xi64, "shared">, index, index) -> ()\n', ""))
    with pytest.raises(SimulationError, match=rf"data race on shared buffer 'C_s' element 0 in block 0: thread 0 reads "
                                              rf"it at {store_at(0)} while the TMA load of thread 0 into it has not "
                                              r"landed"):
        kernel(a, c)
    outside = np.ones(C_SHAPE, bool)  # the store wrote what C_s held before the load landed
    outside[2:, 8:] = False
    assert_same(c[outside], want[outside])


def test_a_box_narrower_than_its_swizzle_is_not_simulated():
    tile = Tile("bf16", 128, (16, 32))
    with pytest.raises(CompileError, match=r"cannot simulate tile.tma_store of tensor map 'C_map': its box's inner "
                                           r"dim is 64 bytes, the swizzle 128"):
        compile_store(tile, body(tile, (0, 0)))
