"""simulate-threads runs Hopper wgmma (backends/cpu/simulate/warpgroup.py): hand-written thread-level kernels
whose shared operands are laid out as docs/tensor_cores.md's `tile.swizzle` places them (written here, not
taken from the compiler or the simulator), against float64 products; then one kernel per ordering rule the
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

ELEMENT_BYTES = 2  # bf16


# -- the shared layout, as docs/tensor_cores.md states it -------------------------------------------
def physical_element(row: int, col: int, rows: int, swizzle: int) -> int:
    """Where logical (row, col) of a [rows, cols] bf16 buffer with `tile.swizzle = swizzle` lives (element
    index of the one-dimensional buffer materialize-shared-layouts makes): the row's bytes in panels of W,
    panel p at p * rows * W, within a panel L = r * W + c_bytes, L' = L ^ (((L >> 7) & (W / 16 - 1)) << 4)."""
    c_bytes = col * ELEMENT_BYTES
    panel, within = divmod(c_bytes, swizzle)
    offset = row * swizzle + within
    offset ^= ((offset >> 7) & (swizzle // 16 - 1)) << 4
    return (panel * rows * swizzle + offset) // ELEMENT_BYTES


def laid_out(matrix: np.ndarray, swizzle: int) -> np.ndarray:
    rows, cols = matrix.shape
    flat = np.full(rows * cols, np.nan, dtype=np.float32)
    for r in range(rows):
        for c in range(cols):
            flat[physical_element(r, c, rows, swizzle)] = matrix[r, c]
    assert not np.isnan(flat).any()
    return flat


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
        return laid_out(matrix_mn_k if self.major == "k" else matrix_mn_k.T, self.swizzle)

    def descriptor(self, step: int) -> tuple[int, int, int]:
        """(physical element of the step's first element, leading bytes, stride bytes): K-major, 8 rows of
        W bytes apart (SBO) and LBO unused; MN-major, panels of W bytes along MN apart (LBO = rows * W) and
        8 K rows apart (SBO)."""
        rows = self.shape[0]
        if self.major == "k":
            return physical_element(0, 16 * step, rows, self.swizzle), 16, 8 * self.swizzle
        return physical_element(16 * step, 0, rows, self.swizzle), rows * self.swizzle, 8 * self.swizzle


# -- the kernel ---------------------------------------------------------------------------------------
def wgmma_kernel(a: Operand, b: Operand, n: int, *, threads: int = 128, steps: int | None = None,
                 desc_shape: tuple[int, ...] | None = None, edit=None) -> str:
    """Global A and B (already laid out) copied into shared by all threads, C into the accumulator
    registers, then fence.proxy.async, barrier, wgmma.fence, one wgmma per k16 step, commit, wait 0,
    and the registers out to D [thread, n / 2]. `desc_shape`: B's shared buffer shape (default one dim)."""
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
    constants = "\n".join(f"  %c{v} = arith.constant {v} : index" for v in sorted(needed - {0, 1, 128}))
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
{constants}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %cthreads, %sy = %c1, %sz = %c1) {{
    %a_s = memref.alloca() {{name = "A_s"}} : memref<{size_a}xbf16, "shared">
    %b_s = memref.alloca() {{name = "B_s"}} : {b_type}
    %acc = memref.alloca() {{name = "C_f"}} : memref<{half}xf32, "local">
    scf.for %i = %tx to %csa step %cthreads {{
      %v = memref.load %A[%i] : memref<{size_a}xbf16>
      memref.store %v, %a_s[%i] : memref<{size_a}xbf16, "shared">
    }}
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
    return edit(text) if edit else text


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


def run_wgmma(kernel, a: Operand, b: Operand, n: int, rng, steps: int | None = None):
    """(D as a 64 x n matrix, its float64 reference)."""
    steps = a.k // 16 if steps is None else steps
    a_mk = bf16(rng.standard_normal((64, a.k)))
    b_nk = bf16(rng.standard_normal((n, b.k)))
    c = rng.standard_normal((64, n)).astype(np.float32)
    rows, cols = d_coordinates(n)
    d = np.full((128, n // 2), np.nan, np.float32)
    kernel(bf16(a.layout(a_mk.astype(np.float32))), bf16(b.layout(b_nk.astype(np.float32))), c[rows, cols], d)
    got = np.full((64, n), np.nan)
    got[rows, cols] = d
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
