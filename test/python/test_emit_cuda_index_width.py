"""The emitted kernel's index width: 32-bit only where the interval analysis proves every index value (and
every intermediate the emitter writes) fits in an int for the tensors the runtime accepts, else 64-bit.

The largest accepted shapes are run for real: the kernel's last block, compiled for the host under UBSan
(`host_kernel.run_block`), with only the elements that block touches backed by memory.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from host_kernel import Window, run_block
from support import emit_text, emitted_cuda, kernel_module

import tilemlir
import tilemlir.language as T
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError, LaunchError
from tilemlir.emit_cuda.index_width import symbol_bounds
from tilemlir.emit_cuda.kernel import find_kernel
from tilemlir.kernels import elementwise
from tilemlir.mlir import ir
from tilemlir.runtime.checks import ArgumentBinder, ArrayDesc

INT32_MAX = 2**31 - 1
WIDER = re.escape("compile the kernel with index_bits=64 (tilemlir.compile(..., index_bits=64) or "
                  "@tilemlir.jit(index_bits=64))")


def tile_of(elements: int, threads: int = elementwise.THREADS) -> int:
    """Elements one block of the float32 elementwise kernels covers (whole 16-byte chunks per thread)."""
    return threads * max(elements, 4)


def last_block(n: int, tile: int) -> int:
    return -(-n // tile) - 1


def binder_error(signature, *shapes) -> str | None:
    """The LaunchError the argument checks give for tensors of these shapes (no memory needed: each is
    described at its own 2**44-aligned address), or None."""
    tensors = [p for p in signature.params if hasattr(p, "shape")]
    descs = [ArrayDesc(tuple(shape), None, p.dtype, (i + 1) << 44, None)
             for i, (shape, p) in enumerate(zip(shapes, tensors))]
    try:
        ArgumentBinder(signature).bind(descs, device=None)
    except LaunchError as exc:
        return str(exc)
    return None


# -- the reproducer: add(elements=12) at n = 2**31 - 1 ---------------------------------------------------------


def test_the_guard_of_add_elements_12_leaves_int32_so_the_kernel_is_64_bit():
    """Its last block's guard `idx + (idx1 + 1027) < n` reaches 2**31 + 1023 at n = 2**31 - 1: as int it
    overflows and out-of-range accesses pass the guard. The kernel is 64-bit; 32-bit is refused, at the guard."""
    kernel = elementwise.add.instantiate(elements=12)
    emitted = emitted_cuda(kernel)
    assert emitted.signature.index_bits == 64
    assert "long long n) {" in emitted.source and "const long long bx = blockIdx.x;" in emitted.source
    guard = last_block(INT32_MAX, 1536) * 1536 + (elementwise.THREADS - 1) * 4 + 1027
    assert guard == 2**31 + 1023
    with pytest.raises(CompileError, match=rf"elementwise.py:\d+:\d+: error: index_bits=32 is not safe for this "
                                           rf"kernel: the index 'arith.addi' computes here may reach \[1027, {guard}\]"):
        emitted_cuda(kernel, index_bits=32)
    with pytest.raises(CompileError, match=r"index_bits=32 is not safe.*use index_bits=64"):
        tilemlir.compile(kernel, target="cuda", index_bits=32)


@pytest.mark.parametrize("elements", [4, 12, 16, 20, 24, 32])
def test_the_width_is_32_bits_exactly_when_the_last_blocks_indices_fit(elements):
    """A block covers [bx * tile, (bx + 1) * tile): the largest index a guard computes is the last block's
    end - 1, which fits an int at n = 2**31 - 1 exactly when the tile divides 2**31."""
    tile = tile_of(elements)
    largest = (last_block(INT32_MAX, tile) + 1) * tile - 1
    emitted = emitted_cuda(elementwise.add.instantiate(elements=elements))
    assert emitted.signature.index_bits == (32 if largest <= INT32_MAX else 64), (tile, largest)


@pytest.mark.parametrize("elements", [12, 16, 20])
def test_the_last_block_at_2_31_minus_1_computes_exactly_without_overflow(elements, rng, tmp_path):
    """The kernel's last block at the largest n the runtime accepts, under UBSan: every element of
    [first, n) is A + B, bit for bit, and nothing outside it is written (the margins keep their poison)."""
    n, tile, margin = INT32_MAX, tile_of(elements), 64
    block = last_block(n, tile)
    first = block * tile
    emitted = emitted_cuda(elementwise.add.instantiate(elements=elements))
    count = n - first + 2 * margin
    a, b = (rng.standard_normal(count).astype(np.float32) for _ in range(2))
    c = np.full(count, np.nan, np.float32)
    windows = {"A": Window(first - margin, a), "B": Window(first - margin, b), "C": Window(first - margin, c)}
    out = run_block(emitted.source, emitted.signature, (block, 0, 0), {"n": n}, windows, tmp_path)["C"]
    inside = slice(margin, count - margin)
    assert np.array_equal(out[inside], a[inside] + b[inside])
    assert np.isnan(out[:margin]).all() and np.isnan(out[count - margin:]).all()


# -- 2-D shapes: each dim fits, their product may not --------------------------------------------------------

M, N = T.symbolic("M"), T.symbolic("N")


@tilemlir.jit
def copy_2d(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
    with T.Kernel(T.ceildiv(N, 512), M, threads=128) as (bx, by):
        x = T.alloc_fragment((512,), "float32")
        T.copy(X[by, bx * 512], x)
        T.copy(x, Y[by, bx * 512])


def test_a_2d_kernel_stays_32_bit_and_the_runtime_refuses_2_31_elements_of_fitting_dims():
    """`X[by * N + col]` stays below M * N, which the runtime keeps below 2**31: 32-bit. (32768, 65536) has
    2**31 elements: refused, naming the argument, the count, the limit and the option; 64-bit takes it."""
    narrow = emitted_cuda(copy_2d).signature
    assert narrow.index_bits == 32
    assert re.fullmatch(rf"argument 'X': 2147483648 elements exceed the kernel's 32-bit indexing "
                        rf"\(at most 2147483647\); {WIDER}", binder_error(narrow, (32768, 65536), (32768, 65536)))
    assert binder_error(narrow, (32767, 65536), (32767, 65536)) is None
    wide = emitted_cuda(copy_2d, index_bits=64).signature
    assert wide.index_bits == 64 and binder_error(wide, (32768, 65536), (32768, 65536)) is None


def test_the_last_block_of_the_largest_accepted_2d_shape_runs_without_overflow(rng, tmp_path):
    rows, cols, margin = 32767, 65536, 64
    emitted = emitted_cuda(copy_2d)
    block = (last_block(cols, 512), rows - 1, 0)
    first = (rows - 1) * cols + block[0] * 512
    count = rows * cols - first + 2 * margin
    x = rng.standard_normal(count).astype(np.float32)
    y = np.full(count, np.nan, np.float32)
    windows = {"X": Window(first - margin, x), "Y": Window(first - margin, y)}
    out = run_block(emitted.source, emitted.signature, block, {"M": rows, "N": cols}, windows, tmp_path)["Y"]
    assert np.array_equal(out[margin:count - margin], x[margin:count - margin])
    assert np.isnan(out[:margin]).all() and np.isnan(out[count - margin:]).all()


def test_a_static_dim_bounds_its_symbol_and_an_empty_dim_bounds_nothing():
    text = kernel_module("", [("X", "memref<?x65536xf32>"), ("Y", "memref<?x?xf32>"), ("Z", "memref<?x0xf32>")],
                         dims=[["M", 65536], ["M", "N"], ["K", 0]], symbols=("M", "N", "K"))
    with make_context():
        kernel = find_kernel(ir.Module.parse(text).operation)
    assert symbol_bounds(kernel) == {"M": 32767, "N": INT32_MAX, "K": INT32_MAX}
    square = kernel_module("", [("X", "memref<?x?xf32>")], dims=[["S", "S"]], symbols=("S",), grid="%c1")
    with make_context():
        assert symbol_bounds(find_kernel(ir.Module.parse(square).operation)) == {"S": 46340}  # 46341**2 > 2**31 - 1


# -- what the analysis checks, one at a time ------------------------------------------------------------------

FLAT = [("X", "memref<?xf32>")]  # n = M elements: M may be 2**31 - 1


def flat_kernel(body: str, params=FLAT, **kwargs) -> str:
    return kernel_module(body, params, dims=kwargs.pop("dims", [["M"]]), grid="%c1", **kwargs)


def widths(text: str) -> tuple[int, str | None]:
    """(the width chosen, the error index_bits=32 gives or None)."""
    bits = emit_text(text).signature.index_bits
    try:
        emit_text(text, index_bits=32)
    except CompileError as exc:
        return bits, str(exc)
    return bits, None


def test_a_value_that_leaves_int32_makes_the_kernel_64_bit():
    body = '      %p = arith.addi %M, %c1 : index loc("p.py":4:8)\n      memref.store %z, %X[%p] : memref<?xf32>'
    bits, message = widths(flat_kernel("      %z = arith.constant 0.0 : f32\n" + body))
    assert bits == 64
    assert message.startswith("p.py:4:8: error: index_bits=32 is not safe for this kernel: the index 'arith.addi' "
                              "computes here may reach [1, 2147483648], outside 32-bit int"), message
    fitting = flat_kernel("      %z = arith.constant 0.0 : f32\n      %p = arith.subi %M, %c1 : index\n"
                          "      memref.store %z, %X[%p] : memref<?xf32>")
    assert widths(fitting) == (32, None)


def test_the_dividend_of_a_ceiling_division_counts():
    """ceildiv(M, 64) fits, but C writes it `(M + 63) >> 6`: M + 63 does not."""
    body = ('      %q = arith.ceildivui %M, %c64 : index loc("q.py":2:1)\n'
            '      %z = arith.constant 0.0 : f32\n      memref.store %z, %X[%q] : memref<?xf32>')
    bits, message = widths(flat_kernel(body))
    assert bits == 64 and "q.py:2:1: error" in message
    assert ("the dividend a + b - 1 of the ceiling division here ('arith.ceildivui') may reach [63, 2147483710]"
            in message)
    assert "(M + 63) >> 6" in emit_text(flat_kernel(body)).source
    small = flat_kernel(body.replace("%M, %c64", "%tx, %c64"))
    assert widths(small) == (32, None)


def test_every_term_of_an_affine_map_counts():
    """(M * 64 + tx) floordiv 128 is below 2**30, but its term M * 64 leaves int32."""
    body = ('      %a = affine.apply affine_map<(d0, d1) -> ((d0 * 64 + d1) floordiv 128)>(%M, %tx) loc("a.py":3:1)\n'
            '      %z = arith.constant 0.0 : f32\n      memref.store %z, %X[%a] : memref<?xf32>')
    bits, message = widths(flat_kernel(body))
    assert bits == 64 and "a.py:3:1: error" in message and "may reach [0, 137438953408]" in message, message


def test_a_loop_variable_past_its_last_step_counts():
    loop = ('      %z = arith.constant 0.0 : f32\n'
            '      scf.for %i = %tx to %M step %c64 {\n'
            '        memref.store %z, %X[%i] : memref<?xf32>\n'
            '      } loc("l.py":5:2)')
    bits, message = widths(flat_kernel(loop))
    assert bits == 64 and "l.py:5:2: error" in message and "after its last step, may reach [0, 2147483710]" in message
    bounded = flat_kernel(loop, params=[("X", "memref<?x64xf32>")], dims=[["M", 64]]).replace(
        "memref<?xf32>", "memref<?x64xf32>").replace("%X[%i]", "%X[%i, %tx]")
    assert widths(bounded) == (32, None)  # M <= (2**31 - 1) / 64: M + 63 fits


def test_index_scalars_are_int32_ranges_and_unbounded_values_count():
    plain = flat_kernel("      %z = arith.constant 0.0 : f32\n      memref.store %z, %X[%s] : memref<?xf32>",
                        params=[*FLAT, ("s", "index")], dims=[["M"], []])
    assert widths(plain) == (32, None)
    shifted = plain.replace("%X[%s]", "%X[%t]").replace("      memref.store", "      %t = arith.addi %s, %c1 : index\n"
                                                                              "      memref.store")
    assert widths(shifted)[0] == 64
    cast = flat_kernel("      %i = arith.index_cast %k : i64 to index\n      %z = arith.constant 0.0 : f32\n"
                       "      memref.store %z, %X[%i] : memref<?xf32>", params=[*FLAT, ("k", "i64")], dims=[["M"], []])
    bits, message = widths(cast)
    assert bits == 64 and "may reach [-inf, inf]" in message


def test_a_static_tensor_of_2_31_elements_cannot_be_32_bit():
    body = ("      %v = memref.load %X[%bx] : memref<2147483648xi8>\n"
            "      memref.store %v, %X[%tx] : memref<2147483648xi8>")
    text = kernel_module(body, [("X", "memref<2147483648xi8>")], dims=[[2147483648]], symbols=(), grid="%c8")
    bits, message = widths(text)
    assert bits == 64
    assert "index_bits=32 is not possible for this kernel: tensor 'X' has 2147483648 elements" in message


def test_index_bits_64_is_granted_and_bad_values_are_refused():
    text = flat_kernel("      %z = arith.constant 0.0 : f32\n      memref.store %z, %X[%tx] : memref<?xf32>")
    assert emit_text(text).signature.index_bits == 32
    assert emit_text(text, index_bits=64).signature.index_bits == 64
    for bad in (16, 64.0, True):
        with pytest.raises(CompileError, match=rf"index_bits must be 32, 64 or None \(chosen by the compiler\), "
                                               rf"got {re.escape(repr(bad))}"):
            emit_text(text, index_bits=bad)


# -- tensors of 2**31 elements and more ---------------------------------------------------------------------

L = T.symbolic("L")


@tilemlir.jit(out_idx=[1])
def last_256(X: T.Tensor((L,), "int8"), Y: T.Tensor((256,), "int8")):
    with T.Kernel(1, threads=16) as bx:
        y = T.alloc_fragment((256,), "int8")
        T.copy(X[L - 256], y)
        T.copy(y, Y[0])


def huge_input(rng, length: int) -> np.ndarray:
    """A zero-filled int8 array of `length` elements with a random tail: numpy's zeros are mapped lazily,
    so only the pages the tail touches take memory (kilobytes of a 2 GiB array)."""
    x = np.zeros(length, np.int8)
    x[-256:] = rng.integers(-128, 128, 256, dtype=np.int8)
    return x


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_the_cpu_target_indexes_past_2_31(level, rng):
    x = huge_input(rng, 2**31 + 1000)
    kernel = tilemlir.compile(last_256, target="cpu", level=level, index_bits=64)
    assert np.array_equal(kernel(x), x[-256:])


def test_past_2_31_elements_a_32_bit_kernel_is_refused_and_index_bits_64_runs_it(rng, tmp_path):
    """The chosen 32-bit kernel takes 2**31 - 1 elements and refuses 2**31 + 1000 naming the option; the
    index_bits=64 kernel takes them, and its last (only) block reads the tail exactly, on the host."""
    narrow = emitted_cuda(last_256)
    assert narrow.signature.index_bits == 32
    assert binder_error(narrow.signature, (2**31 - 1,), (256,)) is None
    assert re.fullmatch(rf"argument 'X': 2147484648 elements exceed the kernel's 32-bit indexing "
                        rf"\(at most 2147483647\); {WIDER}", binder_error(narrow.signature, (2**31 + 1000,), (256,)))
    wide = emitted_cuda(last_256, index_bits=64)
    assert binder_error(wide.signature, (2**31 + 1000,), (256,)) is None
    for emitted, length in ((narrow, 2**31 - 1), (wide, 2**31 + 1000)):
        tail = rng.integers(-128, 128, 256, dtype=np.int8)
        windows = {"X": Window(length - 256, tail), "Y": Window(0, np.full(256, 0x5A, np.int8))}
        out = run_block(emitted.source, emitted.signature, (0, 0, 0), {"L": length}, windows, tmp_path)
        assert np.array_equal(out["Y"], tail)


def test_llm_logits_of_2_31_elements_need_index_bits_64():
    """16384 x 131072 (a batch of LLM logits) is 2**31 elements: the chosen softmax is 32-bit and refuses
    it, saying what to do; index_bits=64 takes it (test/gpu/test_index_width_gpu.py runs it)."""
    from tilemlir.kernels import softmax

    kernel = softmax.softmax.instantiate(N=131072, dtype="bfloat16")
    narrow = emitted_cuda(kernel).signature
    assert narrow.index_bits == 32 and binder_error(narrow, (16383, 131072), (16383, 131072)) is None
    assert re.fullmatch(rf"argument 'X': 2147483648 elements exceed the kernel's 32-bit indexing "
                        rf"\(at most 2147483647\); {WIDER}", binder_error(narrow, (16384, 131072), (16384, 131072)))
    wide = emitted_cuda(kernel, index_bits=64).signature
    assert wide.index_bits == 64 and binder_error(wide, (16384, 131072), (16384, 131072)) is None


# -- a static shape of 2**31 elements and more: 64-bit without being asked -----------------------------------

STATIC_LENGTH = 2**31 + 1000


@tilemlir.jit(out_idx=[1])
def static_last_256(X: T.Tensor((STATIC_LENGTH,), "int8"), Y: T.Tensor((256,), "int8")):
    with T.Kernel(1, threads=16) as bx:
        y = T.alloc_fragment((256,), "int8")
        T.copy(X[STATIC_LENGTH - 256], y)
        T.copy(y, Y[0])


def test_a_static_shape_past_2_31_compiles_64_bit_and_refuses_32_at_its_line(rng, tmp_path):
    """No option: the kernel is 64-bit (NVRTC compiles it; its last block reads the tail exactly, run on the
    host); index_bits=32 is a CompileError at the kernel naming the tensor and its size."""
    kernel = tilemlir.compile(static_last_256, "cuda", arch="sm_90a", use_cache=False)
    assert kernel.signature.index_bits == 64 and kernel.cubin
    assert binder_error(kernel.signature, (STATIC_LENGTH,)) is None  # the runtime takes the tensor (Y is the output)
    emitted = emitted_cuda(static_last_256)
    assert emitted.signature.index_bits == 64
    tail = rng.integers(-128, 128, 256, dtype=np.int8)
    windows = {"X": Window(STATIC_LENGTH - 256, tail), "Y": Window(0, np.full(256, 0x5A, np.int8))}
    assert np.array_equal(run_block(emitted.source, emitted.signature, (0, 0, 0), {}, windows, tmp_path)["Y"], tail)
    with pytest.raises(CompileError) as info:
        tilemlir.compile(static_last_256, "cuda", arch="sm_90a", index_bits=32, use_cache=False)
    assert info.value.location.file == __file__
    assert info.value.diagnostics[0].message == (
        f"index_bits=32 is not possible for this kernel: tensor 'X' has {STATIC_LENGTH} elements, more than 32-bit "
        "index math can address (at most 2147483647); use index_bits=64")


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_the_cpu_target_runs_a_static_shape_past_2_31(level, rng):
    x = huge_input(rng, STATIC_LENGTH)
    kernel = tilemlir.compile(static_last_256, target="cpu", level=level)
    assert np.array_equal(kernel(x), x[-256:])


def test_the_static_shape_gpu_case_is_64_bit_without_being_asked():
    """test/gpu/static_shape_kernels.add_static (the artifact test_index_width_gpu.py runs on the H200)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
    from static_shape_kernels import add_static

    kernel = tilemlir.compile(add_static.instantiate(), "cuda", arch="sm_90a", use_cache=False)
    assert kernel.signature.index_bits == 64 and kernel.cubin
    assert [p.shape for p in kernel.signature.params] == [(2**31 + 4099,)] * 3
