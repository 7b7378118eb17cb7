"""simulate-threads runs Hopper wgmma (backends/cpu/simulate/warpgroup.py): hand-written thread-level kernels
whose shared operands are laid out as docs/tensor_cores.md's `tile.swizzle` places them (support.swizzled,
not the compiler's or the simulator's code), against float64 products; then one kernel per ordering rule the
simulation enforces, each broken on purpose and caught with a message naming the op and the thread."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir
from tilemlir.testing import relative_error

from support import swizzled, swizzled_element

ELEMENT_BYTES = 2  # bf16


@dataclass(frozen=True)
class Operand:
    """A wgmma operand tile in shared memory: `major` "k" stores [mn, K] (K contiguous), "mn" stores
    [K, mn]; the descriptor of k-step s starts at logical element (0, 16 s) or (16 s, 0)."""

    mn: int
    k: int
    major: str
    swizzle: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.mn, self.k) if self.major == "k" else (self.k, self.mn)

    def layout(self, matrix_mn_k: np.ndarray) -> np.ndarray:
        return swizzled(matrix_mn_k if self.major == "k" else matrix_mn_k.T, self.swizzle)

    def descriptor(self, step: int) -> tuple[int, int, int]:
        """(physical element of the step's first element, leading bytes, stride bytes): K-major, 8 rows of
        W bytes apart (SBO) and LBO unused; MN-major, panels of W bytes along MN apart (LBO = rows * W) and
        8 K rows apart (SBO)."""
        rows = self.shape[0]
        if self.major == "k":
            return swizzled_element(0, 16 * step, rows, self.swizzle), 16, 8 * self.swizzle
        return swizzled_element(16 * step, 0, rows, self.swizzle), rows * self.swizzle, 8 * self.swizzle


# -- the kernel ---------------------------------------------------------------------------------------
def wgmma_kernel(a: Operand, b: Operand, n: int, *, threads: int = 128, steps: int | None = None,
                 desc_shape: tuple[int, ...] | None = None, async_a: bool = False) -> str:
    """Global A and B (already laid out) copied into shared by all threads, C into the accumulator
    registers, then fence.proxy.async, barrier, wgmma.fence, one wgmma per k16 step, commit, wait 0,
    and the registers out to D [thread, n / 2]. `desc_shape`: B's shared buffer shape (default one dim);
    `async_a`: A copied by 16-byte cp.async, one group, waited for before the proxy fence."""
    size_a, size_b, half = a.mn * a.k, b.mn * b.k, n // 2
    steps = a.k // 16 if steps is None else steps
    b_shape = desc_shape or (size_b,)
    b_type = f'memref<{"x".join(map(str, b_shape))}xbf16, "shared">'
    lines, needed = [], set()
    for s in range(steps):
        pa, la, sa = a.descriptor(s)
        pb, lb, sb = b.descriptor(s)
        b_index = ", ".join(f"%c{d}" for d in np.unravel_index(pb, b_shape))
        needed |= {int(pa), *map(int, np.unravel_index(pb, b_shape))}
        lines += [
            f'    %da{s} = "tile.wgmma_desc"(%a_s, %c{pa}) {{leading_bytes = {la} : i64, stride_bytes = {sa} : i64, '
            f'swizzle = {a.swizzle} : i64}} : (memref<{size_a}xbf16, "shared">, index) -> i64',
            f'    %db{s} = "tile.wgmma_desc"(%b_s, {b_index}) {{leading_bytes = {lb} : i64, stride_bytes = {sb} : i64, '
            f'swizzle = {b.swizzle} : i64}} : ({b_type}, {", ".join(["index"] * len(b_shape))}) -> i64',
            f'    "tile.wgmma"(%da{s}, %db{s}, %acc) {{n = {n} : i64, operand_type = "bf16", c_offset = 0 : i64, '
            f'trans_a = {str(a.major == "mn").lower()}, trans_b = {str(b.major == "mn").lower()}}} '
            f': (i64, i64, memref<{half}xf32, "local">) -> ()']
    wgmmas = "\n".join(lines)
    constants, b_store, b_split = "", "%b_s[%i]", ""
    if len(b_shape) > 1:  # the flat element index as row-major indices of B's buffer
        strides = [int(np.prod(b_shape[d + 1:])) for d in range(len(b_shape))]
        b_split = "\n".join(
            f"      %bq{d} = arith.divui %i, %c{strides[d]} : index\n"
            f"      %bi{d} = arith.remui %bq{d}, %c{b_shape[d]} : index" for d in range(len(b_shape)))
        b_store = "%b_s[" + ", ".join(f"%bi{d}" for d in range(len(b_shape))) + "]"
        needed |= {*strides, *b_shape}
    constants = "\n".join(f"  %c{v} = arith.constant {v} : index" for v in sorted(needed - {0, 1, 8, 128}))
    if async_a:
        copy_a = f"""    %chunk0 = arith.muli %tx, %c8 : index
    scf.for %i = %chunk0 to %csa step %cstride {{
      "tile.cp_async"(%a_s, %A, %i, %i) {{bytes = 16 : i64}} : (memref<{size_a}xbf16, "shared">, memref<{size_a}xbf16>, index, index) -> ()
    }}
    "tile.cp_async_commit"() : () -> ()
    "tile.cp_async_wait"() {{pending = 0 : i64}} : () -> ()"""
    else:
        copy_a = f"""    scf.for %i = %tx to %csa step %cthreads {{
      %v = memref.load %A[%i] : memref<{size_a}xbf16>
      memref.store %v, %a_s[%i] : memref<{size_a}xbf16, "shared">
    }}"""
    text = f"""
func.func @wg(%A: memref<{size_a}xbf16>, %B: memref<{size_b}xbf16>, %C: memref<{threads}x{half}xf32>,
              %D: memref<{threads}x{half}xf32>) attributes {{tile.entry, tile.arg_names = ["A", "B", "C", "D"],
    tile.arg_dims = [[{size_a}], [{size_b}], [{threads}, {half}], [{threads}, {half}]], tile.symbols = []}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %cthreads = arith.constant {threads} : index
  %csa = arith.constant {size_a} : index
  %csb = arith.constant {size_b} : index
  %chalf = arith.constant {half} : index
  %c8 = arith.constant 8 : index
  %cstride = arith.constant {8 * threads} : index
  %zero = arith.constant 0.0 : f32
{constants}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %cthreads, %sy = %c1, %sz = %c1) {{
    %a_s = memref.alloca() {{name = "A_s"}} : memref<{size_a}xbf16, "shared">
    %b_s = memref.alloca() {{name = "B_s"}} : {b_type}
    %acc = memref.alloca() {{name = "C_f"}} : memref<{half}xf32, "local">
{copy_a}
    scf.for %i = %tx to %csb step %cthreads {{
      %v = memref.load %B[%i] : memref<{size_b}xbf16>
{b_split}
      memref.store %v, {b_store} : {b_type}
    }}
    scf.for %i = %c0 to %chalf step %c1 {{
      %v = memref.load %C[%tx, %i] : memref<{threads}x{half}xf32>
      memref.store %v, %acc[%i] : memref<{half}xf32, "local">
    }}
    "tile.fence_proxy_async"() : () -> ()
    gpu.barrier
    "tile.wgmma_fence"() : () -> ()
{wgmmas}
    "tile.wgmma_commit"() : () -> ()
    "tile.wgmma_wait"() {{pending = 0 : i64}} : () -> ()
    scf.for %i = %c0 to %chalf step %c1 {{
      %v = memref.load %acc[%i] : memref<{half}xf32, "local">
      memref.store %v, %D[%tx, %i] : memref<{threads}x{half}xf32>
    }}
    gpu.terminator
  }}
  return
}}
"""
    return text


def compile_thread(text: str):
    with make_context(), ir.Location.unknown():
        return build(ir.Module.parse(text), None, "thread")


def d_coordinates(n: int) -> tuple[np.ndarray, np.ndarray]:
    """[thread, register] -> (row, col) of D, from the ISA's Figure 149 as this test reads it: warp w holds
    rows 16 w .. 16 w + 15, lane l's registers 4 j .. 4 j + 3 are columns 8 j + 2 (l % 4) + {0, 1} of rows
    l / 4 (registers 4 j, 4 j + 1) and l / 4 + 8 (4 j + 2, 4 j + 3)."""
    thread, register = np.meshgrid(np.arange(128), np.arange(n // 2), indexing="ij")
    warp, lane = thread // 32, thread % 32
    rows = 16 * warp + lane // 4 + 8 * ((register // 2) % 2)
    cols = 8 * (register // 4) + 2 * (lane % 4) + register % 2
    return rows, cols


def bf16(values: np.ndarray) -> np.ndarray:
    return values.astype(ml_dtypes.bfloat16)


def run_wgmma(kernel, a: Operand, b: Operand, n: int, rng, steps: int | None = None, threads: int = 128):
    """(D as [warpgroup, 64, n], its float64 reference): every warpgroup computes the same product."""
    steps = a.k // 16 if steps is None else steps
    a_mk = bf16(rng.standard_normal((64, a.k)))
    b_nk = bf16(rng.standard_normal((n, b.k)))
    c = rng.standard_normal((64, n)).astype(np.float32)
    rows, cols = d_coordinates(n)
    groups = threads // 128
    d = np.full((threads, n // 2), np.nan, np.float32)
    kernel(bf16(a.layout(a_mk.astype(np.float32))), bf16(b.layout(b_nk.astype(np.float32))),
           np.tile(c[rows, cols], (groups, 1)), d)
    got = np.full((groups, 64, n), np.nan)
    for group in range(groups):
        got[group][rows, cols] = d[128 * group:128 * (group + 1)]
    k = 16 * steps
    want = c.astype(np.float64) + a_mk[:, :k].astype(np.float64) @ b_nk[:, :k].astype(np.float64).T
    return got, want


# -- numbers ------------------------------------------------------------------------------------------
LAYOUTS = [(major_a, major_b, swizzle) for swizzle in (32, 64, 128) for major_a in ("k", "mn")
           for major_b in ("k", "mn")]


@pytest.mark.parametrize("major_a, major_b, swizzle", LAYOUTS)
def test_wgmma_reads_every_canonical_layout(major_a, major_b, swizzle, rng):
    """K = two swizzle rows of bf16 (K-major: two panels along K when the row is wider than W)."""
    k = 2 * swizzle // ELEMENT_BYTES if swizzle < 128 else 64
    a, b = Operand(64, k, major_a, swizzle), Operand(64, k, major_b, swizzle)
    got, want = run_wgmma(compile_thread(wgmma_kernel(a, b, 64)), a, b, 64, rng)
    assert relative_error(got, want) < 1e-6


@pytest.mark.parametrize("n", [8, 64, 128, 256])
def test_wgmma_n(n, rng):
    a, b = Operand(64, 64, "k", 128), Operand(n, 64, "mn", 128) if n >= 64 else Operand(n, 64, "k", 128)
    got, want = run_wgmma(compile_thread(wgmma_kernel(a, b, n)), a, b, n, rng)
    assert relative_error(got, want) < 1e-6


def test_descriptor_indices_of_a_buffer_of_any_rank(rng):
    """B's buffer kept three-dimensional: the descriptor's start is the row-major offset of its indices."""
    a, b = Operand(64, 64, "k", 128), Operand(64, 64, "mn", 64)
    kernel = compile_thread(wgmma_kernel(a, b, 64, desc_shape=(2, 32, 64)))
    got, want = run_wgmma(kernel, a, b, 64, rng)
    assert relative_error(got, want) < 1e-6


# -- what the simulation catches ------------------------------------------------------------------------
A64, B64 = Operand(64, 64, "k", 128), Operand(64, 64, "mn", 128)
FENCE_PROXY = '"tile.fence_proxy_async"() : () -> ()'
WGMMA_FENCE = '"tile.wgmma_fence"() : () -> ()'
COMMIT = '"tile.wgmma_commit"() : () -> ()'
WAIT = '"tile.wgmma_wait"() {pending = 0 : i64} : () -> ()'
WGMMA_OP = '"tile.wgmma"('


def edited(text: str, *, drop: tuple[str, ...] = (), after: dict[str, str] | None = None,
           replace: dict[str, str] | None = None) -> str:
    """`text` without the lines holding each of `drop`, with lines inserted after the (first) line
    holding each key of `after`, and each key of `replace` replaced (each must be there)."""
    lines = text.split("\n")
    for needle in drop:
        hits = [i for i, line in enumerate(lines) if needle in line]
        assert hits, needle
        del lines[hits[0]]
    for needle, new in (after or {}).items():
        hits = [i for i, line in enumerate(lines) if needle in line]
        assert hits, needle
        lines[hits[0] + 1:hits[0] + 1] = new.split("\n")
    text = "\n".join(lines)
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def at(text: str, needle: str, occurrence: int = 0) -> str:
    """A pattern for the location of the op on the line holding `needle` (the parsed text is file '-')."""
    lines = [i + 1 for i, line in enumerate(text.split("\n")) if needle in line]
    return f"-:{lines[occurrence]}:"


EPILOGUE_LOAD = '%v = memref.load %acc[%i] : memref<32xf32, "local">'
LAST_WGMMA = '"tile.wgmma"(%da3,'


def run_broken(text: str, rng, threads: int = 128) -> None:
    run_wgmma(compile_thread(text), A64, B64, 64, rng, threads=threads)


def test_reading_the_accumulator_before_a_wait_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), drop=(WAIT,))
    with pytest.raises(SimulationError, match=rf"thread 0 of block 0 reads accumulator register C_f\[0\] at "
                                              rf"{at(text, EPILOGUE_LOAD)}\d+ while tile.wgmma #3 into it has not been "
                                              rf"retired by a tile.wgmma_wait \(#0 at {at(text, WGMMA_OP)}"):
        run_broken(text, rng)


def test_a_wait_keeps_the_newest_pending_batches(rng):
    """Two batches and `pending = 1`: the second is still in flight; a second wait with 0 retires it."""
    two_batches = edited(wgmma_kernel(A64, B64, 64), after={'"tile.wgmma"(%da1,': COMMIT})
    one_pending = edited(two_batches, replace={"pending = 0": "pending = 1"})
    with pytest.raises(SimulationError, match=r"reads accumulator register C_f\[0\] .* while tile.wgmma #3"):
        run_broken(one_pending, rng)
    both = edited(one_pending, after={'"tile.wgmma_wait"() {pending = 1': WAIT})
    got, want = run_wgmma(compile_thread(both), A64, B64, 64, rng)
    assert relative_error(got, want) < 1e-6


def test_writing_the_accumulator_of_a_wgmma_in_flight_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64),
                  after={LAST_WGMMA: '    memref.store %zero, %acc[%c0] : memref<32xf32, "local">'})
    with pytest.raises(SimulationError, match=rf"thread 0 of block 0 writes accumulator register C_f\[0\] at "
                                              rf"{at(text, 'memref.store %zero')}"):
        run_broken(text, rng)


def test_a_wgmma_without_a_wgmma_fence_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), drop=(WGMMA_FENCE,))
    with pytest.raises(SimulationError, match=rf"tile.wgmma at {at(text, WGMMA_OP)}\d+: thread 0 of block 0 "
                                              r"\(warpgroup 0\) issued it before any tile.wgmma_fence"):
        run_broken(text, rng)


def test_accumulator_touched_after_the_wgmma_fence_is_an_error(rng):
    """The fence comes before the code that loads C into the registers."""
    text = edited(wgmma_kernel(A64, B64, 64), drop=(WGMMA_FENCE,), after={"%b_s = memref.alloca": "    " + WGMMA_FENCE})
    with pytest.raises(SimulationError, match=rf"tile.wgmma at {at(text, WGMMA_OP)}\d+: thread 0 of block 0: "
                                              r"its accumulator register C_f\[0\] was accessed by other code since "
                                              r"the thread's last tile.wgmma_fence"):
        run_broken(text, rng)


def test_a_wgmma_never_committed_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), drop=(COMMIT, WAIT, EPILOGUE_LOAD, "memref.store %v, %D"))
    with pytest.raises(SimulationError, match=rf"tile.wgmma at {at(text, WGMMA_OP)}\d+: thread 0 of block 0 "
                                              r"issued it \(batch 0\) and the kernel ended before a tile.wgmma_commit "
                                              r"closed its batch"):
        run_broken(text, rng)


def test_a_wgmma_never_waited_for_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), drop=(WAIT, EPILOGUE_LOAD, "memref.store %v, %D"))
    with pytest.raises(SimulationError, match=r"issued it \(batch 0\) and the kernel ended before a tile.wgmma_wait "
                                              r"retired its batch"):
        run_broken(text, rng)


def test_a_generic_write_without_a_proxy_fence_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), drop=(FENCE_PROXY,))
    with pytest.raises(SimulationError, match=rf"tile.wgmma at {at(text, WGMMA_OP)}\d+ \(thread 0 of block 0\) "
                                              r"reads element \d+ of shared buffer 'A_s', which thread \d+ wrote through "
                                              r"the generic proxy with no tile.fence_proxy_async after the write"):
        run_broken(text, rng)


def test_a_proxy_fence_after_the_barrier_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), drop=(FENCE_PROXY,), after={"gpu.barrier": "    " + FENCE_PROXY})
    with pytest.raises(SimulationError, match=r"reads element \d+ of shared buffer 'A_s', which thread \d+ wrote and "
                                              r"fenced \(tile.fence_proxy_async\), but no gpu.barrier came between"):
        run_broken(text, rng)


def test_a_cp_async_copy_needs_its_wait_and_the_proxy_fence(rng):
    """cp.async, wait, fence.proxy.async, barrier, wgmma: right; the fence before the wait (when the copy
    had not landed) is an error; a wait leaving the copy's group in flight is a race."""
    text = wgmma_kernel(A64, B64, 64, async_a=True)
    got, want = run_wgmma(compile_thread(text), A64, B64, 64, rng)
    assert relative_error(got, want) < 1e-6
    early_fence = edited(text, drop=(FENCE_PROXY,), after={'"tile.cp_async_commit"': "    " + FENCE_PROXY})
    with pytest.raises(SimulationError, match=r"shared buffer 'A_s', which thread \d+ wrote through the generic proxy "
                                              r"with no tile.fence_proxy_async after the write"):
        run_broken(early_fence, rng)
    in_flight = edited(text, replace={'"tile.cp_async_wait"() {pending = 0': '"tile.cp_async_wait"() {pending = 1'})
    with pytest.raises(SimulationError, match=rf"data race on shared buffer 'A_s' element \d+ in block 0: tile.wgmma at "
                                              rf"{at(text, WGMMA_OP)}\d+ \(thread 0\) reads it while the "
                                              r"cp.async of thread \d+ into it has not landed"):
        run_broken(in_flight, rng)


def test_overwriting_an_operand_of_a_wgmma_in_flight_is_a_race(rng):
    text = edited(wgmma_kernel(A64, B64, 64), after={COMMIT: '    %old = memref.load %a_s[%tx] : memref<4096xbf16, "shared">\n'
                                                             '    memref.store %old, %a_s[%tx] : memref<4096xbf16, "shared">'})
    with pytest.raises(SimulationError, match=rf"data race on shared buffer 'A_s' element 0 in block 0: thread 0 writes "
                                              rf"it at {at(text, 'memref.store %old')}\d+ while a tile.wgmma of "
                                              r"warpgroup 0 reading it is in flight"):
        run_broken(text, rng)


def test_a_cp_async_into_an_operand_of_a_wgmma_in_flight_is_a_race(rng):
    copy = ('    "tile.cp_async"(%a_s, %A, %c0, %c0) {bytes = 16 : i64} : (memref<4096xbf16, "shared">, '
            'memref<4096xbf16>, index, index) -> ()\n    "tile.cp_async_commit"() : () -> ()')
    text = edited(wgmma_kernel(A64, B64, 64), after={COMMIT: copy, WAIT: '    "tile.cp_async_wait"() {pending = 0 : i64} '
                                                                         ': () -> ()'})
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'A_s' element 0 in block 0: thread 0 issues "
                                              r"a cp.async into it at .* while a tile.wgmma of warpgroup 0"):
        run_broken(text, rng)


def test_other_warpgroups_write_operands_only_after_a_barrier_after_the_wait(rng):
    """Two warpgroups each run the product; every thread then rewrites A_s[tx]: thread 0 (warpgroup 0,
    after its own wait) still races with warpgroup 1's wgmma, which nothing says has finished."""
    rewrite = ('    %old = memref.load %a_s[%tx] : memref<4096xbf16, "shared">\n'
               '    memref.store %old, %a_s[%tx] : memref<4096xbf16, "shared">')
    text = edited(wgmma_kernel(A64, B64, 64, threads=256), after={WAIT: rewrite})
    with pytest.raises(SimulationError, match=r"thread 0 writes it at .* while a tile.wgmma of warpgroup 1 reading it "
                                              r"is in flight"):
        run_broken(text, rng, threads=256)
    ordered = edited(wgmma_kernel(A64, B64, 64, threads=256), after={WAIT: "    gpu.barrier\n" + rewrite})
    got, want = run_wgmma(compile_thread(ordered), A64, B64, 64, rng, threads=256)
    assert relative_error(got, want) < 1e-6


def test_a_descriptor_with_a_misaligned_start_is_an_error(rng):
    text = edited(wgmma_kernel(A64, B64, 64), replace={'"tile.wgmma_desc"(%a_s, %c0)': '"tile.wgmma_desc"(%a_s, %c4)'},
                  after={"%c0 = arith.constant 0 : index": "  %c4 = arith.constant 4 : index"})
    with pytest.raises(SimulationError, match=rf"tile.wgmma_desc at {at(text, '(%a_s, %c4)')}\d+: thread "
                                              r"0 of block 0 described a matrix starting at byte 8 of shared buffer "
                                              r"'A_s', 8 bytes past a 16-byte boundary"):
        run_broken(text, rng)


def test_threads_of_a_warpgroup_giving_different_descriptors_is_an_error(rng):
    """Each thread's A descriptor starts at its own row (lane % 8): not one descriptor for the warpgroup."""
    own_row = ("    %lane_row = arith.remui %tx, %c8 : index\n"
               "    %own = arith.muli %lane_row, %c64 : index")
    text = edited(wgmma_kernel(A64, B64, 64), after={WGMMA_FENCE: own_row,
                                                     "%c0 = arith.constant 0 : index": "  %c64 = arith.constant 64 : index"},
                  replace={'"tile.wgmma_desc"(%a_s, %c0)': '"tile.wgmma_desc"(%a_s, %own)'})
    with pytest.raises(SimulationError, match=rf"tile.wgmma at {at(text, WGMMA_OP)}\d+: thread 1 of block 0: its A "
                                              r"descriptor differs from thread 0's, the first of its warpgroup"):
        run_broken(text, rng)


def test_a_descriptor_that_cannot_be_traced_is_a_compile_error():
    hidden = ("    %hidden = arith.muli %da0, %one : i64")
    text = edited(wgmma_kernel(A64, B64, 64), after={'%da0 = "tile.wgmma_desc"': hidden},
                  replace={'"tile.wgmma"(%da0,': '"tile.wgmma"(%hidden,'})
    text = edited(text, after={"%c0 = arith.constant 0 : index": "  %one = arith.constant 1 : i64"})
    with pytest.raises(CompileError, match=r"cannot simulate tile.wgmma: its A descriptor traces to no "
                                           r"tile.wgmma_desc"):
        compile_thread(text)


def test_a_wgmma_needs_whole_warpgroups():
    with pytest.raises(CompileError, match=r"cannot simulate tile.wgmma in a block of 64 threads: it runs on whole "
                                           r"warpgroups of 128"):
        compile_thread(wgmma_kernel(A64, B64, 64, threads=64))


def test_a_wgmma_under_a_thread_dependent_condition_is_a_compile_error():
    text = edited(wgmma_kernel(A64, B64, 64), after={WGMMA_FENCE: "    %low = arith.cmpi ult, %tx, %c8 : index\n"
                                                                  "    scf.if %low {"})
    text = edited(text, after={LAST_WGMMA: "    }"})
    with pytest.raises(CompileError, match=r"cannot simulate tile.wgmma under a thread-dependent condition"):
        compile_thread(text)


def test_operand_type_must_match_the_buffer():
    text = wgmma_kernel(A64, B64, 64).replace('operand_type = "bf16"', 'operand_type = "f16"')
    with pytest.raises(CompileError, match=r"cannot simulate tile.wgmma with operand_type f16 on its A buffer of bf16"):
        compile_thread(text)


def test_a_descriptor_advanced_through_its_start_field(rng):
    """The k16 steps of a K-major 128-byte-swizzled A as step 0's descriptor plus 32 s bytes >> 4 in the start
    field (integer arithmetic on the descriptor, which the simulator traces back to its tile.wgmma_desc)."""
    text = wgmma_kernel(A64, B64, 64)
    for s in (1, 2, 3):
        text = edited(text, drop=(f'%da{s} = "tile.wgmma_desc"',),
                      after={'%da0 = "tile.wgmma_desc"': f"    %da{s} = arith.addi %da0, %step{s} : i64",
                             "%c0 = arith.constant 0 : index": f"  %step{s} = arith.constant {2 * s} : i64"})
    assert text.count('"tile.wgmma_desc"(%a_s') == 1
    got, want = run_wgmma(compile_thread(text), A64, B64, 64, rng)
    assert relative_error(got, want) < 1e-6


def test_descriptors_carried_through_a_loop(rng):
    """One wgmma in an scf.for over the k16 steps, its descriptors loop-carried and advanced by their start
    fields (A K-major: 32 bytes a step; B N-major: 16 rows of 128 bytes)."""
    lines = wgmma_kernel(A64, B64, 64).split("\n")
    first = next(i for i, line in enumerate(lines) if '%da1 = "tile.wgmma_desc"' in line)
    last = next(i for i, line in enumerate(lines) if LAST_WGMMA in line)
    wgmma = next(line for line in lines if '"tile.wgmma"(%da0' in line)
    loop = [
        "    %c4 = arith.constant 4 : index",
        "    %a_step = arith.constant 2 : i64",
        "    %b_step = arith.constant 128 : i64",
        "    %ends:2 = scf.for %s = %c0 to %c4 step %c1 iter_args(%da = %da0, %db = %db0) -> (i64, i64) {",
        "  " + wgmma.replace("%da0, %db0", "%da, %db"),
        "      %da_next = arith.addi %da, %a_step : i64",
        "      %db_next = arith.addi %db, %b_step : i64",
        "      scf.yield %da_next, %db_next : i64, i64",
        "    }"]
    start = next(i for i, line in enumerate(lines) if '"tile.wgmma"(%da0' in line)
    text = "\n".join(lines[:start] + loop + lines[last + 1:])
    assert text.count('"tile.wgmma"(') == 1 and first > start
    got, want = run_wgmma(compile_thread(text), A64, B64, 64, rng)
    assert relative_error(got, want) < 1e-6
