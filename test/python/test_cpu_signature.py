"""The runtime signature the CPU backend derives when it is given none."""

import pytest

from tilemlir.backends.cpu.signature import signature_from_info, signature_from_ir
from tilemlir.errors import CompileError
from tilemlir.frontend.info import KernelInfo, ParamInfo, SymbolInfo
from tilemlir.mlir import ir, make_context

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
