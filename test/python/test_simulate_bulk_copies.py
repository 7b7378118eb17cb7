"""simulate-threads on TMA loads and mbarriers (backends/cpu/simulate/bulk_copies.py): hand-written
thread-level kernels whose boxes land where the hardware puts them (the compiler's swizzled layout,
`shared_layouts.physical_element`), zeros outside the tensor, and the bugs the simulation catches:
a wrong parity deadlocks, a read before the wait races, an arrive_expect_tx short of the box's bytes
overflows the phase."""


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


@pytest.mark.parametrize("edit, message", [
    (lambda k: k.replace('"tile.fence_mbarrier_init"() : () -> ()', ""),
     r"tile.tma_load at .* by thread 0 of block 0: it completes on mbarrier 'full'\[1\], whose init no "
     r"tile.fence_mbarrier_init"),
    (lambda k: k.replace("      gpu.barrier\n", "", 1),
     r"tile.mbarrier_wait on mbarrier 'full'\[1\] by thread 1 of block 0 at .*: thread 0 initialized it with no "
     r"gpu.barrier between"),
    (lambda k: k.replace("scf.for %s = %c0 to %c3", "scf.for %s = %c2 to %c3"),
     r"tile.mbarrier_arrive_expect_tx on mbarrier 'full'\[1\] by thread 0 of block 0 at .*: the barrier is not "
     r"initialized"),
    (lambda k: k.replace('"tile.mbarrier_wait"(%full, %c1, %c0)', '"tile.mbarrier_arrive"(%full, %c1)')
               .replace("(memref<3xi64, \"shared\">, index, index) -> ()\n      \"tile.mbarrier_wait\"(%full, %c2",
                        "(memref<3xi64, \"shared\">, index) -> ()\n      \"tile.mbarrier_wait\"(%full, %c2"),
     r"tile.mbarrier_arrive at .* by thread 0 of block 0 on mbarrier 'full'\[1\]: the phase's arrival count goes "
     r"negative \(more arrivals than its count while it waits for 2048 transaction bytes\)"),
], ids=["no-fence", "no-barrier-after-init", "uninitialized", "extra-arrival"])
def test_barrier_misuse_is_caught(edit, message):
    body = edit(RING.replace("$EARLY_READ", "").replace("$PARITY", "0").replace("$BYTES", "2048")
                .replace("$ROW1", "8").replace("$COL1", "0").replace("$ROW2", "32").replace("$COL2", "64")
                .replace("$RING_ELEMS", "3072").replace("$OUT_ELEMS", "2048"))
    with pytest.raises(SimulationError, match=message):
        run(compile_tma(body, 2048, RING_MAP), random_tensor(40, 100), 2048)


def test_reading_without_waiting_is_a_race():
    """Only thread 0 waits: the copy has landed when thread 1 reads, but nothing ordered thread 1 after it."""
    body = (RING.replace("$EARLY_READ", "").replace("$PARITY", "0").replace("$BYTES", "2048")
            .replace("$ROW1", "8").replace("$COL1", "0").replace("$ROW2", "32").replace("$COL2", "64")
            .replace("$RING_ELEMS", "3072").replace("$OUT_ELEMS", "2048"))
    body = body.replace('      "tile.mbarrier_wait"(%full, %c1, %c0)',
                        '      scf.if %is0 {\n      "tile.mbarrier_wait"(%full, %c1, %c0)', 1)
    body = body.replace('"tile.mbarrier_wait"(%full, %c2, %c0) : (memref<3xi64, "shared">, index, index) -> ()',
                        '"tile.mbarrier_wait"(%full, %c2, %c0) : (memref<3xi64, "shared">, index, index) -> ()\n'
                        '      }', 1)
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'A_s' element \d+ in block 0: thread 1 "
                                              r"reads it .* which a TMA load wrote in phase 0 of its mbarrier, but the "
                                              r"thread has not waited for that phase"):
        run(compile_tma(body, 2048, RING_MAP), random_tensor(40, 100), 2048)


def test_block_ending_with_a_load_in_flight_is_caught():
    body = (RING.replace("$EARLY_READ", "").replace("$PARITY", "0").replace("$BYTES", "2048")
            .replace("$ROW1", "8").replace("$COL1", "0").replace("$ROW2", "32").replace("$COL2", "64")
            .replace("$RING_ELEMS", "3072").replace("$OUT_ELEMS", "2048"))
    body = body.split('      "tile.mbarrier_wait"(%full, %c1')[0]
    with pytest.raises(SimulationError, match=r"block 0 ends with tile.tma_load at .* by thread 0 in flight on "
                                              r"mbarrier 'full'\[1\]: no thread waited on the barrier after it"):
        run(compile_tma(body, 2048, RING_MAP), random_tensor(40, 100), 2048)


# ---------------------------------------------------------------------------------------------
# (2) a producer/consumer loop over 8 tiles through a 3-slot ring: thread 0 waits until the consumers
# released the slot (empty, 128 arrivals; the parity before the slot's first use is that of the phase
# "before" phase 0, so the wait holds at once), announces the bytes and loads tile t; every thread
# waits for full[t mod 3] with parity (t / 3) & 1, copies the tile out and arrives on empty.
PIPELINE = """
      %ring = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64, tile.materialized,
                               tile.logical_shape = [3, 16, 64]} : memref<3072xf16, "shared">
      %full = memref.alloca() {name = "full"} : memref<3xi64, "shared">
      %empty = memref.alloca() {name = "empty"} : memref<3xi64, "shared">
      %c3 = arith.constant 3 : index
      %c16 = arith.constant 16 : index
      %c1024 = arith.constant 1024 : index
      %cthreads_ = arith.constant 128 : index
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {
        scf.for %s = %c0 to %c3 step %c1 {
          "tile.mbarrier_init"(%full, %s) {count = 1 : i64} : (memref<3xi64, "shared">, index) -> ()
          "tile.mbarrier_init"(%empty, %s) {count = 128 : i64} : (memref<3xi64, "shared">, index) -> ()
        }
        "tile.fence_mbarrier_init"() : () -> ()
      }
      gpu.barrier
      %ctiles = arith.constant 8 : index
      scf.for %t = %c0 to %ctiles step %c1 {
        %s = arith.remui %t, %c3 : index
        %round = arith.divui %t, %c3 : index
        %parity = arith.remui %round, %c2 : index
        %released = arith.xori %parity, %c$FLIP : index
        %slot = arith.muli %s, %c1024 : index
        scf.if %is0 {
          "tile.mbarrier_wait"(%empty, %s, %released) : (memref<3xi64, "shared">, index, index) -> ()
          "tile.mbarrier_arrive_expect_tx"(%full, %s) {bytes = 2048 : i64} : (memref<3xi64, "shared">, index) -> ()
          %row = arith.muli %t, %c16 : index
          "tile.tma_load"(%ring, %full, %slot, %s, %row, %c0) {map = "A_map"}
              : (memref<3072xf16, "shared">, memref<3xi64, "shared">, index, index, index, index) -> ()
        }
        "tile.mbarrier_wait"(%full, %s, %parity) : (memref<3xi64, "shared">, index, index) -> ()
        %base = arith.muli %t, %c1024 : index
        scf.for %i = %tx to %c1024 step %cthreads_ {
          %src = arith.addi %slot, %i : index
          %v = memref.load %ring[%src] : memref<3072xf16, "shared">
          %dst = arith.addi %base, %i : index
          memref.store %v, %Out[%dst] : memref<8192xf16>
        }
        $RELEASE
      }
"""
RELEASE = '"tile.mbarrier_arrive"(%empty, %s) : (memref<3xi64, "shared">, index) -> ()'


def pipeline_kernel(flip=1, release=RELEASE):
    return compile_tma(PIPELINE.replace("$FLIP", str(flip)).replace("$RELEASE", release), 8192, RING_MAP)


def test_producer_consumer_pipeline_over_eight_tiles():
    a = random_tensor(8 * 16 + 5, 64)
    out = run(pipeline_kernel(), a, 8192)
    for t in range(8):
        want = placed(a[16 * t:16 * t + 16], 128, (t % 3,), (3, 16, 64))
        got = np.array([out[1024 * t + k - 1024 * (t % 3)] for k in want])
        np.testing.assert_array_equal(got, np.array(list(want.values())), err_msg=f"tile {t}")


def test_producer_waiting_with_the_consumers_parity_deadlocks():
    """Without the flip the producer waits for phase 0 of empty[0] before any consumer could arrive."""
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread 0 waits at .* for the phase of parity 0 of "
                                              r"mbarrier 'empty'\[0\]"):
        run(pipeline_kernel(flip=0), random_tensor(8 * 16, 64), 8192)


def test_consumers_not_releasing_slots_deadlocks_the_producer():
    with pytest.raises(SimulationError, match=r"deadlock in block 0: thread 0 waits at .* for the phase of parity 0 of "
                                              r"mbarrier 'empty'\[0\]"):
        run(pipeline_kernel(release=""), random_tensor(8 * 16, 64), 8192)


# ---------------------------------------------------------------------------------------------
# Placement: a 16-row tile of two W-byte panels (W = 0: one 64-byte-row box) in slot 1 of a 2-slot
# buffer, one box per panel at the panel's physical origin, read back through the compiler's layout.
PLACEMENT = """
      %buf = memref.alloca() {name = "T_s", tile.swizzle = $W : i64, tile.materialized,
                              tile.logical_shape = [2, 16, $COLS]} : memref<$RING_ELEMSxf16, "shared">
      %bar = memref.alloca() {name = "bar"} : memref<1xi64, "shared">
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {
        "tile.mbarrier_init"(%bar, %c0) {count = 1 : i64} : (memref<1xi64, "shared">, index) -> ()
        "tile.fence_mbarrier_init"() : () -> ()
      }
      gpu.barrier
      %row = arith.constant $ROW : index
      scf.if %is0 {
        "tile.mbarrier_arrive_expect_tx"(%bar, %c0) {bytes = $BYTES : i64} : (memref<1xi64, "shared">, index) -> ()
$LOADS
      }
      "tile.mbarrier_wait"(%bar, %c0, %c0) : (memref<1xi64, "shared">, index, index) -> ()
"""
LOAD = """        %dst$P = arith.constant $DST : index
        %col$P = arith.constant $COL : index
        "tile.tma_load"(%buf, %bar, %dst$P, %c0, %row, %col$P) {map = "T_map"}
            : (memref<$RING_ELEMSxf16, "shared">, memref<1xi64, "shared">, index, index, index, index) -> ()"""


@pytest.mark.parametrize("width", [0, 32, 64, 128])
def test_boxes_land_where_the_compilers_layout_reads_them(width):
    cols = 32 if width == 0 else width  # two panels of width // 2 halves, or one unswizzled 64-byte row
    panels = 1 if width == 0 else 2
    per_panel = cols // panels
    tile_elems = 16 * cols
    col0 = 8  # the tile starts 8 columns in; the last panel hangs over the tensor's 8 + cols - 4 columns
    loads = "\n".join(LOAD.replace("$P", str(p))
                      .replace("$DST", str(tile_elems + physical_element((0, p * per_panel), (16, cols), 2, width)))
                      .replace("$COL", str(col0 + p * per_panel)) for p in range(panels))
    body = (PLACEMENT.replace("$LOADS", loads).replace("$W", str(width)).replace("$COLS", str(cols))
            .replace("$ROW", "3").replace("$BYTES", str(2 * tile_elems))
            + copy_out("%buf", tile_elems, f"%c{tile_elems}_")).replace("$RING_ELEMS", str(2 * tile_elems)) \
        .replace("$OUT_ELEMS", str(tile_elems))
    body = body.replace(f"%c{tile_elems}_", "%tile_start").replace(
        "      %cn_out", f"      %tile_start = arith.constant {tile_elems} : index\n      %cn_out", 1)
    tmap = f"T_map = {{tensor = 0 : i64, box = [16, {per_panel}], swizzle = {width} : i64}}"
    a = random_tensor(40, col0 + cols - 4)
    out = run(compile_tma(body, tile_elems, tmap), a, tile_elems)
    want = placed(box_of(a, 3, col0, 16, cols), width)
    assert sorted(want) == list(range(tile_elems))
    np.testing.assert_array_equal(np.array([out[k] for k in want]), np.array(list(want.values())))


def test_box_narrower_than_its_swizzle_is_not_simulated():
    body = (PLACEMENT.replace("$LOADS", LOAD.replace("$P", "0").replace("$DST", "0").replace("$COL", "0"))
            .replace("$W", "128").replace("$COLS", "128").replace("$ROW", "0").replace("$BYTES", "1024")
            .replace("$RING_ELEMS", "4096"))
    with pytest.raises(CompileError, match=r"cannot simulate tile.tma_load of tensor map 'T_map': its box's inner dim "
                                           r"is 64 bytes, the swizzle 128"):
        compile_tma(body, 64, "T_map = {tensor = 0 : i64, box = [16, 32], swizzle = 128 : i64}")
