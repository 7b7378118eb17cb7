// select-mma (mma.sync): an fp8 gemm stays on CUDA cores, with a remark naming the path that would take it.
// RUN: tile-opt %s --verify-diagnostics -p select-mma

func.func @fp8_on_mma_sync() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x64xf8E4M3FN, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x64xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    // expected-remark @+1 {{T.gemm runs on CUDA cores: fp8 operands take the tensor cores only through wgmma m64nNk32 (tensor_cores='wgmma', sm_90a)}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<64x64xf8E4M3FN, "shared">, memref<64x64xf8E4M3FN, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
