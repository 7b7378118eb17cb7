// The warpgroup ops: parse, print, re-parse the printed form; the generic form round-trips too.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// CHECK-LABEL: func.func @warpgroup_ops
func.func @warpgroup_ops() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<3x128x64xbf16, "shared">
    %b = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64} : memref<3x64x128xbf16, "shared">
    %acc = memref.alloca() {name = "C_f"} : memref<128xf32, "local">
    // CHECK: %[[DA:.+]] = "tile.wgmma_desc"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<3x128x64xbf16, "shared">, index, index, index) -> i64
    %da = "tile.wgmma_desc"(%a, %c1, %c0, %c0) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<3x128x64xbf16, "shared">, index, index, index) -> i64
    %db = "tile.wgmma_desc"(%b, %c1, %c0, %c0) {leading_bytes = 8192 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<3x64x128xbf16, "shared">, index, index, index) -> i64
    // CHECK: "tile.fence_proxy_async"() : () -> ()
    "tile.fence_proxy_async"() : () -> ()
    // CHECK: "tile.setmaxnreg"() {action = "inc", count = 232 : i64} : () -> ()
    "tile.setmaxnreg"() {action = "inc", count = 232 : i64} : () -> ()
    // CHECK: "tile.named_barrier"() {id = 1 : i64, threads = 128 : i64} : () -> ()
    "tile.named_barrier"() {id = 1 : i64, threads = 128 : i64} : () -> ()
    // CHECK: "tile.wgmma_fence"() : () -> ()
    "tile.wgmma_fence"() : () -> ()
    // CHECK: "tile.wgmma"(%[[DA]], %{{.+}}, %{{.+}}) {c_offset = 64 : i64, n = 128 : i64, operand_type = "bf16", trans_a = false, trans_b = true} : (i64, i64, memref<128xf32, "local">) -> ()
    "tile.wgmma"(%da, %db, %acc) {n = 128 : i64, operand_type = "bf16", c_offset = 64 : i64, trans_a = false, trans_b = true} : (i64, i64, memref<128xf32, "local">) -> ()
    // fp8: m64nNk32, K-major; B's type named where it differs from A's
    %a8 = memref.alloca() {name = "A8", tile.swizzle = 128 : i64} : memref<64x128xf8E4M3FN, "shared">
    %b8 = memref.alloca() {name = "B8", tile.swizzle = 128 : i64} : memref<128x128xf8E5M2, "shared">
    %da8 = "tile.wgmma_desc"(%a8, %c0, %c0) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<64x128xf8E4M3FN, "shared">, index, index) -> i64
    %db8 = "tile.wgmma_desc"(%b8, %c0, %c0) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<128x128xf8E5M2, "shared">, index, index) -> i64
    // CHECK: "tile.wgmma"(%{{.+}}, %{{.+}}, %{{.+}}) {b_type = "e5m2", c_offset = 0 : i64, n = 128 : i64, operand_type = "e4m3", trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    "tile.wgmma"(%da8, %db8, %acc) {n = 128 : i64, operand_type = "e4m3", b_type = "e5m2", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    // CHECK: "tile.wgmma"(%{{.+}}, %{{.+}}, %{{.+}}) {c_offset = 64 : i64, n = 128 : i64, operand_type = "e4m3", trans_a = false, trans_b = false}
    "tile.wgmma"(%da8, %da8, %acc) {n = 128 : i64, operand_type = "e4m3", c_offset = 64 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    // CHECK: "tile.wgmma_commit"() : () -> ()
    "tile.wgmma_commit"() : () -> ()
    // CHECK: "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
    "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
    gpu.terminator
  }
  return
}
