// fuse-fma: every math.fma rounded once, as CUDA's fmaf / __hfma round it.
// RUN: tile-opt %s -p fuse-fma | FileCheck %s

// f32, f64 and their vectors: the LLVM intrinsic (upstream math-expand-ops would split it).
// bf16 / f16: widened to f64, where the product is exact; the sum and its exact error
// (TwoSum), rounded to odd, then narrowed once. fp8: an f32 fma, narrowed once.
// CHECK-LABEL: func.func @fmas(
// CHECK-NOT: math.fma
// CHECK: llvm.intr.fma(%arg0, %arg1, %arg2) : (f32, f32, f32) -> f32
// CHECK: llvm.intr.fma(%arg3, %arg3, %arg3) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK: llvm.intr.fma(%arg4, %arg4, %arg4) : (f64, f64, f64) -> f64
// CHECK: %[[A:.+]] = arith.extf %arg5 : bf16 to f64
// CHECK: %[[B:.+]] = arith.extf %arg5 : bf16 to f64
// CHECK: %[[C:.+]] = arith.extf %arg5 : bf16 to f64
// CHECK: %[[P:.+]] = arith.mulf %[[A]], %[[B]] : f64
// CHECK: %[[S:.+]] = arith.addf %[[P]], %[[C]] : f64
// CHECK: %[[CP:.+]] = arith.subf %[[S]], %[[P]] : f64
// CHECK: %[[PP:.+]] = arith.subf %[[S]], %[[CP]] : f64
// CHECK: %[[PE:.+]] = arith.subf %[[P]], %[[PP]] : f64
// CHECK: %[[CE:.+]] = arith.subf %[[C]], %[[CP]] : f64
// CHECK: %[[E:.+]] = arith.addf %[[PE]], %[[CE]] : f64
// CHECK: %[[BITS:.+]] = arith.bitcast %[[S]] : f64 to i64
// CHECK: arith.cmpf one, %[[E]]
// CHECK: %[[ODD:.+]] = arith.select %{{.+}}, %{{.+}}, %[[BITS]] : i64
// CHECK: %[[RO:.+]] = arith.bitcast %[[ODD]] : i64 to f64
// CHECK: arith.truncf %[[RO]] : f64 to bf16
// CHECK: arith.truncf %{{.+}} : f64 to f16
// CHECK: %[[E8:.+]] = arith.extf %arg7 : f8E4M3FN to f32
// CHECK: %[[F8:.+]] = llvm.intr.fma(%[[E8]], %{{.+}}, %{{.+}}) : (f32, f32, f32) -> f32
// CHECK: arith.truncf %[[F8]] : f32 to f8E4M3FN
// CHECK: arith.extf %arg8 : vector<2xbf16> to vector<2xf64>
// CHECK: arith.truncf %{{.+}} : vector<2xf64> to vector<2xbf16>
func.func @fmas(%a: f32, %b: f32, %c: f32, %v: vector<4xf32>, %d: f64, %h: bf16, %g: f16, %e: f8E4M3FN,
                %w: vector<2xbf16>) -> (f32, vector<4xf32>, f64, bf16, f16, f8E4M3FN, vector<2xbf16>) {
  %0 = math.fma %a, %b, %c : f32
  %1 = math.fma %v, %v, %v : vector<4xf32>
  %2 = math.fma %d, %d, %d : f64
  %3 = math.fma %h, %h, %h : bf16
  %4 = math.fma %g, %g, %g : f16
  %5 = math.fma %e, %e, %e : f8E4M3FN
  %6 = math.fma %w, %w, %w : vector<2xbf16>
  return %0, %1, %2, %3, %4, %5, %6 : f32, vector<4xf32>, f64, bf16, f16, f8E4M3FN, vector<2xbf16>
}
