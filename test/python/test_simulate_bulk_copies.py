"""simulate-threads on TMA loads and mbarriers (backends/cpu/simulate/bulk_copies.py): hand-written
thread-level kernels whose boxes land where the hardware puts them (the compiler's swizzled layout,
`shared_layouts.physical_element`), zeros outside the tensor, and the bugs the simulation catches:
a wrong parity deadlocks, a read before the wait races, an arrive_expect_tx short of the box's bytes
overflows the phase."""

import re

import numpy as np
import pytest

from support import kernel_module
from tilemlir.analysis.shared_layouts import physical_element
from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir

THREADS = 128


def compile_tma(body: str, out_elements: int, maps: str, host: str = ""):
    text = kernel_module(body, [("A", "memref<?x?xf16>"), ("Out", f"memref<{out_elements}xf16>")],
                         dims=[["M", "K"], [out_elements]], symbols=("M", "K"), grid="%c1", threads=THREADS,
                         attrs=f", tile.tensor_maps = {{{maps}}}", host=host)
    with make_context(), ir.Location.unknown():
        return build(ir.Module.parse(text), None, "thread")


def random_tensor(rows: int, cols: int) -> np.ndarray:
    return np.random.default_rng().standard_normal((rows, cols)).astype(np.float16)


def run(kernel, a: np.ndarray, out_elements: int) -> np.ndarray:
    out = np.full(out_elements, np.nan, np.float16)
    kernel(a, out)
    return out


def box_of(a: np.ndarray, row: int, col: int, rows: int, cols: int) -> np.ndarray:
    """The box at (row, col) as TMA reads it: zeros outside the tensor."""
    box = np.zeros((rows, cols), np.float16)
    inside = a[row:row + rows, col:col + cols]
    box[:inside.shape[0], :inside.shape[1]] = inside
    return box


def placed(tile: np.ndarray, width: int, lead: tuple[int, ...] = (), shape: tuple[int, ...] | None = None) -> dict:
    """{physical element: value} of a logical tile stored `tile.swizzle = width` (the compiler's layout)."""
    shape = shape or tile.shape
    return {physical_element((*lead, r, c), shape, 2, width): tile[r, c]
            for r in range(tile.shape[0]) for c in range(tile.shape[1])}


def copy_out(buffer: str, elements: int, offset: str = "%c0") -> str:
    """Every thread copies its share of the raw shared buffer (from `offset`) to Out."""
    return f"""
      %cn_out = arith.constant {elements} : index
      %cstep_out = arith.constant {THREADS} : index
      scf.for %i = %tx to %cn_out step %cstep_out {{
        %src = arith.addi %i, {offset} : index
        %v = memref.load {buffer}[%src] : memref<$RING_ELEMSxf16, "shared">
        memref.store %v, %Out[%i] : memref<$OUT_ELEMSxf16>
      }}"""


# ---------------------------------------------------------------------------------------------
# (1) one thread loads two boxes (the second over the tensor's edge) into slots 1 and 2 of a 3-slot
# ring of 16 x 64 f16 tiles swizzled 128 bytes; every thread waits on both and copies the slots out.
RING = """
      %ring = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64, tile.materialized,
                               tile.logical_shape = [3, 16, 64]} : memref<3072xf16, "shared">
      %full = memref.alloca() {name = "full"} : memref<3xi64, "shared">
      %c3 = arith.constant 3 : index
      %c1024 = arith.constant 1024 : index
      %c2048 = arith.constant 2048 : index
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {
        scf.for %s = %c0 to %c3 step %c1 {
          "tile.mbarrier_init"(%full, %s) {count = 1 : i64} : (memref<3xi64, "shared">, index) -> ()
        }
        "tile.fence_mbarrier_init"() : () -> ()
      }
      gpu.barrier
      %r1 = arith.constant $ROW1 : index
      %k1 = arith.constant $COL1 : index
      %r2 = arith.constant $ROW2 : index
      %k2 = arith.constant $COL2 : index
      scf.if %is0 {
        "tile.mbarrier_arrive_expect_tx"(%full, %c1) {bytes = $BYTES : i64} : (memref<3xi64, "shared">, index) -> ()
        "tile.tma_load"(%ring, %full, %c1024, %c1, %r1, %k1) {map = "A_map"}
            : (memref<3072xf16, "shared">, memref<3xi64, "shared">, index, index, index, index) -> ()
        "tile.mbarrier_arrive_expect_tx"(%full, %c2) {bytes = 2048 : i64} : (memref<3xi64, "shared">, index) -> ()
        "tile.tma_load"(%ring, %full, %c2048, %c2, %r2, %k2) {map = "A_map"}
            : (memref<3072xf16, "shared">, memref<3xi64, "shared">, index, index, index, index) -> ()
      }
      $EARLY_READ
      "tile.mbarrier_wait"(%full, %c1, %c$PARITY) : (memref<3xi64, "shared">, index, index) -> ()
      "tile.mbarrier_wait"(%full, %c2, %c0) : (memref<3xi64, "shared">, index, index) -> ()
""" + copy_out("%ring", 2048, "%c1024")
RING_MAP = "A_map = {tensor = 0 : i64, box = [16, 64], swizzle = 128 : i64}"
EARLY_READ = """%early = memref.load %ring[%c1024] : memref<3072xf16, "shared">
      memref.store %early, %Out[%c0] : memref<2048xf16>"""


def ring_kernel(parity=0, size=2048, early_read=""):
    body = (RING.replace("$EARLY_READ", early_read).replace("$PARITY", str(parity)).replace("$BYTES", str(size))
            .replace("$ROW1", "8").replace("$COL1", "0").replace("$ROW2", "32").replace("$COL2", "64")
            .replace("$RING_ELEMS", "3072").replace("$OUT_ELEMS", "2048"))
    return compile_tma(body, 2048, RING_MAP)


def test_two_boxes_land_swizzled_with_zeros_outside_the_tensor():
    a = random_tensor(40, 100)  # the second box, rows 32..47 and columns 64..127, hangs over both edges
    out = run(ring_kernel(), a, 2048)
    want = {**placed(box_of(a, 8, 0, 16, 64), 128, (1,), (3, 16, 64)),
            **placed(box_of(a, 32, 64, 16, 64), 128, (2,), (3, 16, 64))}
    got = {k: out[k - 1024] for k in want}
    assert sorted(want) == list(range(1024, 3072))
    np.testing.assert_array_equal(np.array(list(got.values())), np.array(list(want.values())))
    assert (box_of(a, 32, 64, 16, 64)[8:] == 0).all() and (box_of(a, 32, 64, 16, 64)[:, 36:] == 0).all()


def test_wrong_parity_is_a_deadlock():
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread 0 waits at .* for the phase of parity 1 "
                                              r"of mbarrier 'full'\[1\] to complete"):
        run(ring_kernel(parity=1), random_tensor(40, 100), 2048)


def test_read_before_the_wait_is_a_race():
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'A_s' element 1024 in block 0: thread 0 "
                                              r"reads it .* while the TMA load of thread 0 into it has not landed"):
        run(ring_kernel(early_read=EARLY_READ), random_tensor(40, 100), 2048)


def test_expect_tx_short_of_the_box_overflows_the_phase():
    with pytest.raises(SimulationError, match=r"mbarrier 'full'\[1\] in block 0: tile.tma_load at .* by thread 0 "
                                              r"delivers more bytes than the phase's arrive_expect_tx announced"):
        run(ring_kernel(size=1024), random_tensor(40, 100), 2048)
