"""The emitter's side of the tensor-map ABI: `tile.tensor_maps` on the entry function becomes
`const __grid_constant__ CUtensorMap` parameters (after the arguments, before the symbols) and the
signature's `tensor_maps`, and the source compiles under NVRTC, which has no cuda.h."""

import pytest

from support import compiles, emit_text, kernel_module
from tilemlir.diagnostics import CompileError
from tilemlir.runtime.cuda_decl import check_declaration
from tilemlir.runtime.signature import TensorMapParam

BODY = """
      %v = vector.load %X[%bx, %c0] : memref<?x64xbf16>, vector<4xbf16>
      vector.store %v, %Y[%bx, %c0] : memref<?x64xbf16>, vector<4xbf16>"""
PARAMS = [("X", "memref<?x64xbf16>"), ("Y", "memref<?x64xbf16>")]
MAPS = ('{X_map = {tensor = 0 : i64, box = [64, 64], swizzle = 128 : i64, l2_promotion = 256 : i64}, '
        'int = {tensor = 1 : i64, box = [8, 32]}}')


def emit_with(maps: str):
    return emit_text(kernel_module(BODY, PARAMS, attrs=f", tile.tensor_maps = {maps}"))


def test_tensor_maps_become_grid_constant_parameters_and_signature_entries():
    emitted = emit_with(MAPS)
    sig = emitted.signature
    assert sig.tensor_maps == (TensorMapParam("X", "X_map", "bfloat16", (64, 64), 128, l2_promotion=256),
                               TensorMapParam("Y", "int", "bfloat16", (8, 32)))
    assert sig.cuda_params == ("X", "Y", "X_map", "int", "M")
    source = emitted.source
    assert ("    __nv_bfloat16* __restrict__ Y,\n    const __grid_constant__ CUtensorMap X_map,\n"
            "    const __grid_constant__ CUtensorMap int1,\n    int M) {") in source  # a C keyword is renamed
    assert "typedef struct CUtensorMap_st { alignas(128) unsigned long long opaque[16]; } CUtensorMap;" in source
    assert source.index("CUtensorMap_st") < source.index('extern "C"')
    check_declaration(source, sig, "the emitted source")
    compiles(emitted)


def test_a_kernel_without_maps_declares_no_map_type():
    emitted = emit_text(kernel_module(BODY, PARAMS))
    assert emitted.signature.tensor_maps == () and "CUtensorMap" not in emitted.source


@pytest.mark.parametrize("maps, message", [
    ('[{tensor = 0 : i64}]', "'tile.tensor_maps' must be a dictionary from map name to"),
    ('{X_map = {tensor = 0 : i64}}', "'tile.tensor_maps' must be a dictionary from map name to .*got X_map"),
    ('{X_map = {tensor = 0 : i64, box = array<i64: 64, 64>}}', "box = .i64...."),
    ('{X_map = {tensor = 0 : i64, box = [64, 64], swizle = 128 : i64}}', "optional swizzle and l2_promotion"),
    ('{Z_map = {tensor = 5 : i64, box = [64, 64]}}', "(an argument).*got Z_map"),
    ('{X_map = {tensor = 0 : i64, box = [64, 128], swizzle = 128 : i64}}',
     "the innermost box dim spans 256 bytes, more than the 128-byte swizzle width"),
])
def test_a_malformed_or_invalid_attribute_is_an_error(maps, message):
    with pytest.raises(CompileError, match=message):
        emit_with(maps)
