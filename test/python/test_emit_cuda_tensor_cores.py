"""The CUDA of `tile.stmatrix` (emit_cuda/tensor_cores.py): its prelude helpers (conversion and packing, the
instruction's inline PTX), the one line per op on a hand-written thread-level kernel, and NVRTC compiling
it for sm_90a (stmatrix needs sm_90)."""

import re

from support import body_of, compiles, emit_text, kernel_module
from tilemlir.emit_cuda.tensor_cores import stmatrix_helper


def test_the_f32_helper_rounds_each_element_to_nearest_even_and_packs_the_pair_low_half_first():
    name, text = stmatrix_helper(4, False, "f32", "bf16")
    assert name == "tl_stmatrix_x4_f32_bf16"
    assert f"void {name}(void* row, {', '.join(f'float a{i}' for i in range(8))})" in text
    assert "__bfloat16_as_ushort(__float2bfloat16_rn(x))" in text
    assert "bits(lo) | (bits(hi) << 16)" in text
    assert '"stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"' in text
    assert ':: "r"(address), "r"(pack(a0, a1)), "r"(pack(a2, a3)), "r"(pack(a4, a5)), "r"(pack(a6, a7)) : "memory"' \
        in text
    assert "__cvta_generic_to_shared(row)" in text


def test_a_16_bit_helper_packs_the_bits_unconverted():
    name, text = stmatrix_helper(2, True, "bf16", "bf16")
    assert name == "tl_stmatrix_x2_trans_bf16_bf16"
    assert "(void* row, __nv_bfloat16 a0, __nv_bfloat16 a1, __nv_bfloat16 a2, __nv_bfloat16 a3)" in text
    assert "static_cast<unsigned>(__bfloat16_as_ushort(x))" in text and "_rn" not in text
    assert '"stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};"' in text


def test_the_f16_helper_converts_with_half_rounding():
    name, text = stmatrix_helper(1, False, "f32", "f16")
    assert name == "tl_stmatrix_x1_f32_f16"
    assert "__half_as_ushort(__float2half_rn(x))" in text
    assert '"stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};"' in text


# two warps: warp w stores the 16 x 16 block of rows 0-15, columns 16 w .. 16 w + 15 of C_s from f32 registers
# (lane l: row l % 16, column block l / 16 of its warp's), and two transposed 8 x 8 matrices into the 16-byte
# rows 16 w .. 16 w + 15 of the flat H_s from halves (lanes 0-15 give the rows)
STORE_BODY = """
      %cs = memref.alloca() {name = "C_s"} : memref<16x32xbf16, "shared">
      %cf = memref.alloca() {name = "C_f"} : memref<8xf32, "local">
      %hs = memref.alloca() {name = "H_s"} : memref<256xf16, "shared">
      %hf = memref.alloca() {name = "H_f"} : memref<4xf16, "local">
      scf.for %j = %c0 to %c8 step %c1 {
        %v = memref.load %X[%bx, %j] : memref<?x64xf32>
        memref.store %v, %cf[%j] : memref<8xf32, "local">
      }
      scf.for %j = %c0 to %c4 step %c1 {
        %v = memref.load %H[%bx, %j] : memref<?x64xf16>
        memref.store %v, %hf[%j] : memref<4xf16, "local">
      }
      %lane = arith.remui %tx, %c32 : index
      %warp = arith.divui %tx, %c32 : index
      %row = arith.remui %lane, %c16 : index
      %block = arith.divui %lane, %c16 : index
      %col0 = arith.muli %warp, %c16 : index
      %col1 = arith.muli %block, %c8 : index
      %col = arith.addi %col0, %col1 : index
      "tile.stmatrix"(%cs, %cf, %row, %col) {registers = [6, 0, 2, 4], trans = false}
          : (memref<16x32xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
      %hrow = arith.addi %col0, %row : index
      %flat = arith.muli %hrow, %c8 : index
      "tile.stmatrix"(%hs, %hf, %flat) {registers = [2, 0], trans = true}
          : (memref<256xf16, "shared">, memref<4xf16, "local">, index) -> ()
      gpu.barrier
      %o = memref.load %cs[%row, %tx] : memref<16x32xbf16, "shared">
      memref.store %o, %Y[%bx, %tx] : memref<?x64xbf16>
"""
HOST = """    %c16 = arith.constant 16 : index"""


def emitted_stores():
    return emit_text(kernel_module(STORE_BODY, [("X", "memref<?x64xf32>"), ("H", "memref<?x64xf16>"),
                                                ("Y", "memref<?x64xbf16>")], host=HOST))


def test_each_stmatrix_is_one_helper_call_on_its_row_and_register_elements():
    emitted = emitted_stores()
    body = body_of(emitted.source)
    assert re.search(r"^\s*tl_stmatrix_x4_f32_bf16\(&C_s\[\w+\]\[[^;]+\], C_f\[6\], C_f\[7\], C_f\[0\], C_f\[1\], "
                     r"C_f\[2\], C_f\[3\], C_f\[4\], C_f\[5\]\);$", body, re.M), body
    assert re.search(r"^\s*tl_stmatrix_x2_trans_f16_f16\(&H_s\[[^;]+\], H_f\[2\], H_f\[3\], H_f\[0\], H_f\[1\]\);$",
                     body, re.M), body
    prelude = emitted.source[:emitted.source.index('extern "C"')]
    assert prelude.count("void tl_stmatrix_x4_f32_bf16(") == 1
    assert prelude.count("void tl_stmatrix_x2_trans_f16_f16(") == 1
    assert "#include <cuda_bf16.h>" in prelude and "#include <cuda_fp16.h>" in prelude


def test_nvrtc_compiles_the_stmatrix_helpers_for_hopper():
    ptx = compiles(emitted_stores())
    assert len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 \[%r\d+\], \{%r\d+, %r\d+, %r\d+, %r\d+\};",
                          ptx)) == 1, ptx
    assert len(re.findall(r"stmatrix\.sync\.aligned\.m8n8\.x2\.trans\.shared\.b16 \[%r\d+\], \{%r\d+, %r\d+\};",
                          ptx)) == 1, ptx
