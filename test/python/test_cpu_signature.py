"""The runtime signature the CPU backend derives when it is given none."""

import sys

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from frontend_util import compile_error, message
from tilemlir.backends.cpu.kernel import build
from tilemlir.backends.cpu.signature import signature_from_info, signature_from_ir, written_params
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError, LaunchError
from tilemlir.frontend.info import KernelInfo, ParamInfo, SymbolInfo
from tilemlir.mlir import ir

KERNEL = """
func.func @k(%X: memref<?x64xi8>, %s: f32, %Y: memref<?x64xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "scale", "Y"], tile.arg_dims = [["M", 64], [], ["M", 64]],
    tile.arg_dtypes = ["uint8", "float32", "float32"], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %M = memref.dim %X, %c0 : memref<?x64xi8>
  %ok = arith.cmpi sge, %M, %c0 : index
  "tile.assume"(%ok) {expr = "M % 4 == 0"} : (i1) -> ()
  "tile.kernel"(%c4) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 96 : i64} : (index) -> ()
  return
}
"""


def test_signature_from_ir_reads_the_tile_attributes():
    with make_context():
        sig = signature_from_ir(ir.Module.parse(KERNEL), out_idx=(2,))
    assert [p.name for p in sig.params] == ["X", "scale", "Y"]
    assert sig.params[0].dtype == "uint8" and sig.params[0].shape == ("M", 64)
    assert sig.params[1].dtype == "float32"
    assert sig.symbols == ("M",) and sig.assumes == ("M % 4 == 0",) and sig.out_idx == (2,)
    assert sig.block == (96, 1, 1)


def test_signature_from_ir_falls_back_to_the_argument_types():
    text = KERNEL.replace('tile.arg_dtypes = ["uint8", "float32", "float32"], ', "")
    with make_context():
        sig = signature_from_ir(ir.Module.parse(text))
    assert sig.params[0].dtype == "int8"


def test_dynamic_dims_need_their_symbols():
    text = KERNEL.replace('tile.arg_dims = [["M", 64], [], ["M", 64]],', "")
    with make_context(), pytest.raises(CompileError, match="dynamic dims"):
        signature_from_ir(ir.Module.parse(text))


@pytest.mark.parametrize("dims, message", [
    ('[["M", 32], [], ["M", 64]]', "'tile.arg_dims' entry #0 says 32 for dim #1 of memref<?x64xi8>, which needs 64"),
    ('[["M", 64], [], ["K", 64]]', "'tile.symbols' must name each symbolic dim of 'tile.arg_dims' once, ['M', 'K'], got ['M']"),
    ('[["M", 64], [1], ["M", 64]]', "'tile.arg_dims' entry #1 must be empty for the scalar argument of type f32, got [1]"),
])
def test_signature_attributes_that_contradict_the_types_are_refused(dims, message):
    """With X declared (M, 32) over a memref<?x64xi8>, the runtime would have accepted a 32-column array the
    kernel reads 64 columns of. Thread-level IR (a gpu.launch, no tile.kernel whose verifier would refuse it
    at parse time)."""
    launch = ("gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c4) threads(%tx, %ty, %tz) in "
              "(%sx = %c4, %sy = %c4, %sz = %c4) {\n    gpu.terminator\n  }\n  return")
    text = KERNEL.replace('tile.arg_dims = [["M", 64], [], ["M", 64]]', f"tile.arg_dims = {dims}")
    text = text[:text.index('"tile.kernel"')] + launch + "\n}\n"
    with make_context(), pytest.raises(CompileError) as info:
        signature_from_ir(ir.Module.parse(text))
    assert info.value.diagnostics[0].message == f"CPU backend: {message}"


def test_signature_from_info():
    info = KernelInfo(
        name="k", threads=128, grid=("M",),
        params=(ParamInfo("X", "tensor", "bfloat16", ("M", 8)), ParamInfo("eps", "scalar", "float32"),
                ParamInfo("Y", "tensor", "bfloat16", ("M", 8))),
        symbols=(SymbolInfo("M", 0, 0),), assumes=("M > 0",), out_idx=(2,),
    )
    sig = signature_from_info(info)
    assert [p.name for p in sig.params] == ["X", "eps", "Y"] and sig.params[2].shape == ("M", 8)
    assert sig.out_idx == (2,) and sig.assumes == ("M > 0",) and sig.input_indices == (0, 1)


WRITES = """
func.func @k(%X: memref<?xf32>, %W: memref<?xf32>, %Y: memref<?xf32>, %Z: memref<?xf32>, %V: memref<?xf32>)
    attributes {tile.entry, tile.arg_names = ["X", "W", "Y", "Z", "V"],
    tile.arg_dims = [["M"], ["M"], ["M"], ["M"], ["M"]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %M = memref.dim %X, %c0 : memref<?xf32>
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = memref.load %X[%c0] : memref<?xf32>
    %f = "tile.alloc_fragment"() : () -> memref<4xf32, "fragment">
    "tile.copy"(%W, %f, %c0, %c0) {shape = [4]} : (memref<?xf32>, memref<4xf32, "fragment">, index, index) -> ()
    memref.store %x, %Y[%c0] : memref<?xf32>
    "tile.atomic_add"(%Z, %x, %c0) : (memref<?xf32>, f32, index) -> ()
    %view = memref.subview %V[0] [4] [1] : memref<?xf32> to memref<4xf32, strided<[1]>>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
"""


def test_written_params_count_every_use_but_a_known_read():
    with make_context():
        module = ir.Module.parse(WRITES)
        assert written_params(module) == {"Y", "Z", "V"}  # V: a view could be written through
        sig = signature_from_ir(module)
    assert {p.name: p.written for p in sig.params} == {"X": False, "W": False, "Y": True, "Z": True, "V": True}
    info = KernelInfo("k", (ParamInfo("X", "tensor", "float32", ("M",)), ParamInfo("Y", "tensor", "float32", ("M",))),
                      (SymbolInfo("M", 0, 0),), ("1", "1", "1"), 32)
    assert [p.written for p in signature_from_info(info, {"Y"}).params] == [False, True]
    assert [p.written for p in signature_from_info(info).params] == [True, True]  # unknown: all may be written


@tilemlir.jit
def add_into(block_N=64):
    N = T.symbolic("N")

    @T.prim_func
    def add(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), threads=32) as bx:
            a = T.alloc_fragment((block_N,), "float32")
            b = T.alloc_fragment((block_N,), "float32")
            T.copy(A[bx * block_N], a)
            T.copy(B[bx * block_N], b)
            for i in T.Parallel(block_N):
                a[i] = a[i] + b[i]
            T.copy(a, C[bx * block_N])

    return add


def test_cpu_kernel_rejects_an_output_sharing_memory_with_an_input():
    frontend = add_into.instantiate().frontend()
    kernel = build(frontend.module(), frontend.info, "tile")
    assert [p.written for p in kernel.signature.params] == [False, False, True]
    rng = np.random.default_rng()
    x = rng.standard_normal(300).astype(np.float32)
    b = rng.standard_normal(100).astype(np.float32)
    for out in (x[:100], x[50:150]):
        assert np.shares_memory(out, x[:100])
        with pytest.raises(LaunchError) as info:
            kernel(x[:100], b, out)
        assert str(info.value) == ("argument 'C' (written by the kernel) overlaps argument 'A': the kernel assumes "
                                   "its tensors do not alias (__restrict__); pass a separate output")
    out = x[100:200]  # adjacent to A: accepted
    a = x[:100].copy()
    kernel(x[:100], x[:100], out)  # A and B (only read) may be the same memory
    np.testing.assert_allclose(out.astype(np.float64), 2 * a.astype(np.float64), rtol=1e-6)
    assert np.array_equal(x[:100], a)


def test_cpu_kernel_rejects_byte_swapped_arrays():
    """The CPU backend reads arrays in place: a big-endian float32 would be computed as garbage."""
    kernel = tilemlir.compile(add_into.instantiate(), target="cpu")
    a = np.arange(70, dtype=np.float32)
    for name, args in (("A", (a.astype(">f4"), a, np.empty_like(a))), ("C", (a, a, np.empty(70, ">f4")))):
        with pytest.raises(LaunchError) as info:
            kernel(*args)
        assert str(info.value) == (f"argument {name!r}: a big-endian float32 array (typestr '>f4'); the CPU backend "
                                   f"reads {sys.byteorder}-endian data in place: convert it first, e.g. "
                                   "x.astype(x.dtype.newbyteorder('='))")
    out = np.empty_like(a)
    kernel(a.astype(">f4").astype(np.float32), a, out)
    assert np.array_equal(out, 2 * a)


def read_only_outputs(tmp_path):
    mapped = tmp_path / "out.bin"
    mapped.write_bytes(b"\x00" * 280)
    frozen = np.zeros(70, np.float32)
    frozen.flags.writeable = False
    yield "bytes", np.frombuffer(b"\x00" * 280, np.float32)
    yield "read-only mmap", np.memmap(mapped, np.float32, mode="r")
    yield "writeable=False", frozen


def test_cpu_kernel_rejects_read_only_arrays_it_writes_and_reads_read_only_inputs(tmp_path):
    kernel = tilemlir.compile(add_into.instantiate(), target="cpu")
    a = np.random.default_rng().standard_normal(70).astype(np.float32)
    for what, out in read_only_outputs(tmp_path):
        with pytest.raises(LaunchError) as info:
            kernel(a, a, out)
        assert str(info.value) == ("argument 'C': the kernel writes this array, but it is read-only (bytes, a "
                                   "read-only mmap, writeable=False): pass a writable array, e.g. np.array(x)"), what
        assert not out.any(), what
    read_only = np.frombuffer(a.tobytes(), np.float32)
    out = np.full(70, np.nan, np.float32)
    kernel(read_only, read_only, out)
    assert np.array_equal(out, 2 * a)


FP8_SCALAR_KERNEL = """
    @tilemlir.jit
    def k(X: T.Tensor((M,), T.float32), @@n: {dtype}):
        with T.Kernel(M, threads=128) as bx:
            X[bx] = 1.0
"""


@pytest.mark.parametrize("dtype, name", [("T.float8_e4m3", "float8_e4m3"), ('"float8_e5m2"', "float8_e5m2")])
def test_an_fp8_scalar_parameter_is_an_error_at_the_parameter(tmp_path, dtype, name):
    """Found by test_fuzz_dsl_mistakes: a SignatureError escaped the CPU backend, without a location."""
    assert message(compile_error(tmp_path, FP8_SCALAR_KERNEL.format(dtype=dtype), target="cpu")) == (
        f"scalar parameter 'n' cannot be {name}: a kernel argument has no {name} type; pass it as float32 and "
        "convert with T.cast")
