"""tile.stmatrix in the thread-level simulation (`backends/cpu/simulate/collectives.py`), on hand-written
thread-level kernels of one warp.

The reference is the PTX ISA's stmatrix mapping written out here (9.7.14.5.16 and its Figure 107: lane l
stores elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of each matrix from its register, low half
first; lanes 8i..8i+7 give the addresses of the rows of matrix i, the other lanes' addresses are unused;
.trans stores the matrix transposed), not the simulator's table. f32 sources are rounded to nearest even
(ml_dtypes' conversion), with exact ties among the inputs so that truncation or rounding ties away would
show. Every kernel first fills the shared buffer from a random tensor, so an element stmatrix should not
write keeps its fill, and copies the whole buffer out into a poisoned output.
"""

import json

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.context import make_context
from tilemlir.dialects import tensor_core_ops as tc
from tilemlir.ir_util import walk_ops
from tilemlir.mlir import ir

WARP = 32
SHAPE = (16, 32)  # the shared buffer: 64 rows of 16 bytes, four to a buffer row
SLOTS = SHAPE[0] * SHAPE[1] // 8
NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}
IGNORED = (99, 3)  # the (row, col) the lanes past 8 * count give: outside the buffer and misaligned
REGISTERS = {1: [6], 2: [5, 0], 4: [2, 8, 0, 5]}  # unordered, odd, gapped: each pair is read where it says


# -- the kernels ----------------------------------------------------------------------------------------
def _each_element(shape: tuple[int, ...], body: str) -> str:
    """A loop running `body` on each element `$E` a thread owns: column tx of a 2-D buffer of 32 columns,
    every 32nd element from tx of a flat one."""
    if len(shape) == 2:
        return f"""    scf.for %er = %c0 to %c{shape[0]} step %c1 {{
      {body.replace("$E", "%er, %tx")}
    }}"""
    return f"""    scf.for %ek = %c0 to %c{shape[0]} step %c32 {{
      %ef = arith.addi %ek, %tx : index
      {body.replace("$E", "%ef")}
    }}"""


def stmatrix_kernel(src: str, dst: str, registers: list[int], trans: bool, shape=SHAPE, *, fill: str | None = None,
                    then: str = "", outputs: tuple[tuple[str, str, list[int]], ...] = (),
                    barrier_after: bool = True) -> str:
    """X [32, R] (lane l's registers), A [32, rank] (lane l's row address, i32), F (the fill, copied into the
    buffer by `fill`, else by plain stores) -> Y (the shared buffer after the stmatrix), and `outputs` (name,
    type, dims) that `then` writes after the stmatrix."""
    width, rank = max(registers) + 2, len(shape)
    buffer = f"memref<{'x'.join(map(str, shape))}x{dst}"
    params = [("X", f"memref<32x{width}x{src}>", [WARP, width]), ("A", f"memref<32x{rank}xi32>", [WARP, rank]),
              ("F", f"{buffer}>", list(shape)), ("Y", f"{buffer}>", list(shape)), *outputs]
    args = ", ".join(f"%{name}: {type_}" for name, type_, _ in params)
    names, dims = json.dumps([p[0] for p in params]), json.dumps([p[2] for p in params])
    constants = "\n".join(f"  %c{n} = arith.constant {n} : index" for n in sorted({0, 1, 4, 32, *shape, width}))
    indices = ", ".join(f"%i{d}" for d in range(rank))
    row = "\n".join(f"""    %a{d} = memref.load %A[%tx, %c{d}] : memref<32x{rank}xi32>
    %i{d} = arith.index_cast %a{d} : i32 to index""" for d in range(rank))
    fill = fill or _each_element(shape, f"""%f = memref.load %F[$E] : {buffer}>
      memref.store %f, %s[$E] : {buffer}, "shared">""")
    copy_out = _each_element(shape, f"""%o = memref.load %s[$E] : {buffer}, "shared">
      memref.store %o, %Y[$E] : {buffer}>""")
    return f"""
func.func @st({args}) attributes {{tile.entry, tile.arg_names = {names}, tile.arg_dims = {dims},
                                  tile.symbols = []}} {{
{constants}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
    %s = memref.alloca() {{name = "S"}} : {buffer}, "shared">
    %r = memref.alloca() {{name = "R"}} : memref<{width}x{src}, "local">
{fill}
    scf.for %j = %c0 to %c{width} step %c1 {{
      %x = memref.load %X[%tx, %j] : memref<32x{width}x{src}>
      memref.store %x, %r[%j] : memref<{width}x{src}, "local">
    }}
{row}
    gpu.barrier
    "tile.stmatrix"(%s, %r, {indices}) {{registers = {registers}, trans = {str(trans).lower()}}}
        : ({buffer}, "shared">, memref<{width}x{src}, "local">{", index" * rank}) -> ()
{"    gpu.barrier" if barrier_after else ""}
{then}
{copy_out}
    gpu.terminator
  }}
  return
}}
"""


def compile_kernel(text: str):
    with make_context(), ir.Location.unknown():
        return build(ir.Module.parse(text), None, "thread")


# -- inputs and the ISA's reference ------------------------------------------------------------------
def random_slots(rng, count: int) -> np.ndarray:
    """Distinct 16-byte row slots of the buffer for the 8 * count lanes whose addresses are used, -1 for the others."""
    slots = np.full(WARP, -1)
    slots[:8 * count] = rng.permutation(SLOTS)[:8 * count]
    return slots


def addresses(slots: np.ndarray, rank: int) -> np.ndarray:
    """A [32, rank]: each lane's (row, col), or flat element index, of its slot's first element."""
    rows = np.where(slots >= 0, slots * 8 // SHAPE[1], IGNORED[0])
    cols = np.where(slots >= 0, slots * 8 % SHAPE[1], IGNORED[1])
    index = np.stack([rows, cols], 1) if rank == 2 else (rows * SHAPE[1] + cols)[:, None]
    return index.astype(np.int32)


def with_ties(values: np.ndarray, dst: str) -> np.ndarray:
    """float32 values, every other one moved to the exact midpoint of two neighbouring `dst` values."""
    dropped = 16 if dst == "bf16" else 13  # the float32 mantissa bits the conversion drops
    bits = values.view(np.uint32).copy()
    midpoints = (bits & ~np.uint32((1 << dropped) - 1)) | np.uint32(1 << (dropped - 1))
    bits[::2] = midpoints[::2]
    return bits.view(np.float32)


def source_values(rng, shape, src: str, dst: str) -> np.ndarray:
    """Registers of `src` values of magnitude 0.01 to 100 (normal in f16), f32 ones with ties for `dst`."""
    values = rng.uniform(0.01, 100.0, shape) * rng.choice([-1.0, 1.0], shape)
    if src == "f32":
        return with_ties(values.astype(np.float32).ravel(), dst).reshape(shape)
    return values.astype(NUMPY[src])


def isa_reference(fill: np.ndarray, x: np.ndarray, slots: np.ndarray, registers, trans: bool, dst: str):
    """The buffer after stmatrix, by 9.7.14.5.16: lane l's pair i holds matrix i's (l / 4, 2 (l % 4) + e),
    stored in the row lane 8i + row addresses (transposed, with .trans)."""
    out = fill.copy().reshape(-1)
    for matrix, offset in enumerate(registers):
        for lane in range(WARP):
            for half in range(2):
                row, col = lane // 4, 2 * (lane % 4) + half
                address_lane, element = (8 * matrix + col, row) if trans else (8 * matrix + row, col)
                out[slots[address_lane] * 8 + element] = np.asarray(x[lane, offset + half]).astype(NUMPY[dst])
    return out.reshape(fill.shape)


def bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.uint16)


def run_stmatrix(rng, src: str, dst: str, registers: list[int], trans: bool, shape=SHAPE, x=None, rounded=None):
    """(the buffer after the stmatrix of registers `x`, random by default, and the ISA's reference; `rounded`:
    the values the reference takes for `x`, converted by ml_dtypes by default)."""
    kernel = compile_kernel(stmatrix_kernel(src, dst, registers, trans, shape))
    slots = random_slots(rng, len(registers))
    x = source_values(rng, (WARP, max(registers) + 2), src, dst) if x is None else x
    fill = rng.standard_normal(shape).astype(NUMPY[dst])
    out = np.full(shape, np.nan, NUMPY[dst])
    kernel(x, addresses(slots, len(shape)), fill, out)
    return out, isa_reference(fill, x if rounded is None else rounded, slots, registers, trans, dst)


# -- stores ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("types", [("f32", "bf16"), ("f32", "f16"), ("bf16", "bf16")], ids="{0[0]}->{0[1]}".format)
@pytest.mark.parametrize("trans", [False, True], ids=["rows", "trans"])
@pytest.mark.parametrize("count", [1, 2, 4], ids="x{}".format)
def test_stmatrix_stores_each_lanes_pairs_where_the_isa_says(count, trans, types, rng):
    out, want = run_stmatrix(rng, *types, REGISTERS[count], trans)
    np.testing.assert_array_equal(bits(out), bits(want))


def test_stmatrix_into_a_flat_buffer_takes_physical_element_indices(rng):
    """After materialize-shared-layouts a buffer is one-dimensional and each lane's index physical."""
    out, want = run_stmatrix(rng, "f32", "bf16", REGISTERS[4], True, shape=(SHAPE[0] * SHAPE[1],))
    np.testing.assert_array_equal(bits(out), bits(want))


@pytest.mark.parametrize("dst, ulp", [("bf16", 2**-7), ("f16", 2**-10)])
def test_f32_ties_round_to_even(dst, ulp, rng):
    """1 + ulp / 2 lies halfway between 1 and 1 + ulp and goes to the even 1; 1 + 3 ulp / 2 goes up to the even
    1 + 2 ulp (truncation gives 1 + ulp, rounding ties away 1 + ulp for the first); likewise below zero."""
    ties = np.array([1 + ulp / 2, 1 + 3 * ulp / 2, -1 - ulp / 2, -1 - 3 * ulp / 2], np.float32)
    even = np.array([1, 1 + 2 * ulp, -1, -1 - 2 * ulp], np.float32)
    width = max(REGISTERS[4]) + 2
    x, rounded = (np.resize(values, (WARP, width)) for values in (ties, even))
    out, want = run_stmatrix(rng, "f32", dst, REGISTERS[4], False, x=x, rounded=rounded)
    np.testing.assert_array_equal(bits(out), bits(want))


def test_the_python_builder_makes_the_op_the_kernels_spell(rng):
    """`tensor_core_ops.stmatrix` in place of the parsed op: the same op, and the same stores."""
    registers = REGISTERS[2]
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(stmatrix_kernel("f32", "bf16", registers, False))
        parsed = next(op for op in walk_ops(module.operation) if op.name == "tile.stmatrix")
        dst, src, *indices = parsed.operands
        with ir.InsertionPoint(parsed), parsed.location:
            built = tc.stmatrix(dst, src, indices, registers)
        assert str(built.operation) == str(parsed)
        parsed.erase()
        kernel = build(module, None, "thread")
    slots = random_slots(rng, 2)
    x = source_values(rng, (WARP, max(registers) + 2), "f32", "bf16")
    fill = rng.standard_normal(SHAPE).astype(ml_dtypes.bfloat16)
    out = np.full(SHAPE, np.nan, ml_dtypes.bfloat16)
    kernel(x, addresses(slots, 2), fill, out)
    np.testing.assert_array_equal(bits(out), bits(isa_reference(fill, x, slots, registers, False, "bf16")))


# -- a round trip through ldmatrix ------------------------------------------------------------------------
def ldmatrix_back(count: int, trans: bool, dst: str) -> str:
    """ldmatrix of the stmatrix's rows into `%back`, each lane's words stored to W[tx, 0..count)."""
    return f"""
    %back = memref.alloca() {{name = "back"}} : memref<4xi32, "local">
    "tile.ldmatrix"(%s, %back, %i0, %i1) {{count = {count} : i64, trans = {str(trans).lower()}, dst_offset = 0 : i64}}
        : (memref<16x32x{dst}, "shared">, memref<4xi32, "local">, index, index) -> ()
    %count = arith.constant {count} : index
    scf.for %m = %c0 to %count step %c1 {{
      %w = memref.load %back[%m] : memref<4xi32, "local">
      memref.store %w, %W[%tx, %m] : memref<32x4xi32>
    }}"""


@pytest.mark.parametrize("src", ["bf16", "f16"])
@pytest.mark.parametrize("trans", [False, True], ids=["rows", "trans"])
@pytest.mark.parametrize("count", [1, 2, 4], ids="x{}".format)
def test_ldmatrix_of_the_stored_rows_gives_back_the_registers(count, trans, src, rng):
    """stmatrix, then ldmatrix of the same rows: each lane's word i is its pair i, low half first, bit for bit."""
    registers = REGISTERS[count]
    kernel = compile_kernel(stmatrix_kernel(src, src, registers, trans, then=ldmatrix_back(count, trans, src),
                                            outputs=(("W", "memref<32x4xi32>", [WARP, 4]),)))
    slots = random_slots(rng, count)
    x = source_values(rng, (WARP, max(registers) + 2), src, src)
    words = np.full((WARP, 4), -1, np.int32)
    kernel(x, addresses(slots, 2), rng.standard_normal(SHAPE).astype(NUMPY[src]), np.zeros(SHAPE, NUMPY[src]),
           words)
    pairs = bits(x)[:, [[offset, offset + 1] for offset in registers]].astype(np.uint32)  # [lane, matrix, half]
    np.testing.assert_array_equal(words[:, :count].view(np.uint32), pairs[..., 0] | pairs[..., 1] << 16)


# -- errors ---------------------------------------------------------------------------------------------
def run_with_row(rng, lane: int, row_address, count: int = 4):
    """x4 f32 -> bf16 with lane `lane`'s row address replaced by `row_address`."""
    kernel = compile_kernel(stmatrix_kernel("f32", "bf16", REGISTERS[count], False))
    index = addresses(random_slots(rng, count), 2)
    index[lane] = row_address
    x = source_values(rng, (WARP, max(REGISTERS[count]) + 2), "f32", "bf16")
    kernel(x, index, np.zeros(SHAPE, ml_dtypes.bfloat16), np.zeros(SHAPE, ml_dtypes.bfloat16))


def test_a_misaligned_row_address_is_an_error_at_the_op(rng):
    with pytest.raises(SimulationError, match=r"stmatrix at .*: thread 5 of block 0 addressed a row 4 elements past "
                                              r"a 16-byte boundary \(last index 12\)"):
        run_with_row(rng, 5, (3, 12))


@pytest.mark.parametrize("row_address, dim, index", [((16, 8), 0, 16), ((2, 32), 1, 32), ((-1, 0), 0, -1)],
                         ids=["past-the-rows", "past-the-columns", "negative"])
def test_a_row_address_outside_the_buffer_is_an_error_at_the_op(row_address, dim, index, rng):
    with pytest.raises(SimulationError, match=rf"stmatrix at .*: thread 9 of block 0 addressed a row outside shared "
                                              rf"buffer 'S' \(16x32\): index {index} on dim {dim}"):
        run_with_row(rng, 9, row_address)


def test_only_the_addresses_of_lanes_below_8_count_are_used(rng):
    """x2: lanes 16-31 give a misaligned row outside the buffer (IGNORED, as in the store tests above),
    which is no error; the same address from lane 15 is one."""
    run_with_row(rng, 16, IGNORED, count=2)
    with pytest.raises(SimulationError, match="thread 15 of block 0 addressed a row 3 elements past a 16-byte"):
        run_with_row(rng, 15, IGNORED, count=2)


def test_stmatrix_writes_race_as_the_lane_that_supplied_the_value(rng):
    """Without the barrier after the stmatrix, thread 0 copying column 0 out reads S[1, 0] (element 32): the
    row lane 4 addressed (slot 4), element 0 of matrix 0's row 4, which lane 16 supplied; that is the race
    reported."""
    kernel = compile_kernel(stmatrix_kernel("f32", "bf16", REGISTERS[4], False, barrier_after=False))
    x = source_values(rng, (WARP, max(REGISTERS[4]) + 2), "f32", "bf16")
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'S' element 32 in block 0: thread 0 reads "
                                              r"it at .*, but thread 16 wrote it since the last gpu.barrier"):
        kernel(x, addresses(np.arange(WARP), 2), np.zeros(SHAPE, ml_dtypes.bfloat16),
               np.zeros(SHAPE, ml_dtypes.bfloat16))


# -- over cp.async copies ---------------------------------------------------------------------------------
# the fill: thread t copies the 16-byte row t / 4, column block t % 4 (rows 0-7) by cp.async, and stores column
# t of rows 8-15; WAIT goes before the stmatrix or after it
ASYNC_FILL = """
    %c8 = arith.constant 8 : index
    %fr = arith.divui %tx, %c4 : index
    %fb = arith.remui %tx, %c4 : index
    %fc = arith.muli %fb, %c8 : index
    "tile.cp_async"(%s, %F, %fr, %fc, %fr, %fc) {bytes = 16 : i64}
        : (memref<16x32xbf16, "shared">, memref<16x32xbf16>, index, index, index, index) -> ()
    "tile.cp_async_commit"() : () -> ()
    scf.for %er = %c8 to %c16 step %c1 {
      %f = memref.load %F[%er, %tx] : memref<16x32xbf16>
      memref.store %f, %s[%er, %tx] : memref<16x32xbf16, "shared">
    }"""
WAIT = """
    "tile.cp_async_wait"() {pending = 0 : i64} : () -> ()"""
# lanes 0-7 address rows in the stored half (slots 32-39), lane 8 slot 9 (S[2, 8:16], thread 9's copy)
ASYNC_SLOTS = np.concatenate([np.arange(32, 40), [9, 8], np.arange(10, 32)])


def run_after_async_fill(rng, waited: bool):
    kernel = compile_kernel(stmatrix_kernel("f32", "bf16", REGISTERS[4], False,
                                            fill=ASYNC_FILL + (WAIT if waited else ""), then="" if waited else WAIT))
    x = source_values(rng, (WARP, max(REGISTERS[4]) + 2), "f32", "bf16")
    fill = rng.standard_normal(SHAPE).astype(ml_dtypes.bfloat16)
    out = np.full(SHAPE, np.nan, ml_dtypes.bfloat16)
    kernel(x, addresses(ASYNC_SLOTS, 2), fill, out)
    return out, isa_reference(fill, x, ASYNC_SLOTS, REGISTERS[4], False, "bf16")


def test_stmatrix_over_landed_copies_overwrites_them(rng):
    out, want = run_after_async_fill(rng, waited=True)
    np.testing.assert_array_equal(bits(out), bits(want))


def test_stmatrix_over_a_copy_in_flight_is_a_race_of_the_supplying_lane(rng):
    """Thread 0's first element in the copied half is matrix 1's (0, 0): the row lane 8 addresses, S[2, 8]
    (element 72), which thread 9's cp.async has not landed; thread 0 supplied it, so thread 0 writes it."""
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'S' element 72 in block 0: thread 0 writes "
                                              r"it by the stmatrix at .* while the cp.async of thread 9 into it has "
                                              r"not landed"):
        run_after_async_fill(rng, waited=False)


# -- indices of the lanes ------------------------------------------------------------------------------
# a block of 8 x 4 threads: thread (x, y), lane 8 y + x, addresses the row (y, x) of a 4 x 8 x 8 buffer with its
# thread ids themselves as indices, and copies that row out
THREAD_ID_INDICES = """
func.func @st(%X: memref<32x8xf32>, %Y: memref<4x8x8xbf16>) attributes {tile.entry, tile.arg_names = ["X", "Y"],
    tile.arg_dims = [[32, 8], [4, 8, 8]], tile.symbols = []} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c4, %sz = %c1) {
    %s = memref.alloca() {name = "S"} : memref<4x8x8xbf16, "shared">
    %r = memref.alloca() {name = "R"} : memref<8xf32, "local">
    %y8 = arith.muli %ty, %c8 : index
    %lane = arith.addi %y8, %tx : index
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %X[%lane, %j] : memref<32x8xf32>
      memref.store %x, %r[%j] : memref<8xf32, "local">
    }
    "tile.stmatrix"(%s, %r, %ty, %tx, %c0) {registers = [0, 2, 4, 6], trans = true}
        : (memref<4x8x8xbf16, "shared">, memref<8xf32, "local">, index, index, index) -> ()
    gpu.barrier
    scf.for %j = %c0 to %c8 step %c1 {
      %o = memref.load %s[%ty, %tx, %j] : memref<4x8x8xbf16, "shared">
      memref.store %o, %Y[%ty, %tx, %j] : memref<4x8x8xbf16>
    }
    gpu.terminator
  }
  return
}
"""


def test_thread_ids_as_indices_are_each_lanes_own(rng):
    """The collective reads lane 8i + row's indices: thread ids given directly are that lane's ids."""
    kernel = compile_kernel(THREAD_ID_INDICES)
    x = source_values(rng, (WARP, 8), "f32", "bf16")
    out = np.full((4, 8, 8), np.nan, ml_dtypes.bfloat16)
    kernel(x, out)
    want = isa_reference(np.zeros((4, 8, 8), ml_dtypes.bfloat16), x, np.arange(WARP), [0, 2, 4, 6],
                         True, "bf16")
    np.testing.assert_array_equal(bits(out), bits(want))
