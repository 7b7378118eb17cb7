// expand-narrow-floats: casts to and from f16 / bf16 / fp8 as integer code on their bits (LLVM has no
// fp8 and converts halves differently per host). The bit-exact semantics are checked against
// ml_dtypes in test_cpu_expand_narrow_floats.py; here, the form.
// RUN: tile-opt %s -p expand-narrow-floats | FileCheck %s

// CHECK-LABEL: func.func @casts(
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: arith.bitcast %arg0 : f32 to i32
// CHECK: %[[H:.+]] = arith.trunci %{{.+}} : i32 to i16
// CHECK: %[[A:.+]] = arith.bitcast %[[H]] : i16 to f16
// CHECK: arith.bitcast %arg1 : f16 to i16
// CHECK: %[[B:.+]] = arith.bitcast %{{.+}} : i32 to f32
// CHECK: arith.bitcast %arg2 : vector<2xbf16> to vector<2xi16>
// CHECK: %[[C:.+]] = arith.bitcast %{{.+}} : vector<2xi32> to vector<2xf32>
// CHECK: return %[[A]], %[[B]], %[[C]] : f16, f32, vector<2xf32>
func.func @casts(%x: f32, %h: f16, %v: vector<2xbf16>) -> (f16, f32, vector<2xf32>) {
  %a = arith.truncf %x : f32 to f16
  %b = arith.extf %h : f16 to f32
  %c = arith.extf %v : vector<2xbf16> to vector<2xf32>
  return %a, %b, %c : f16, f32, vector<2xf32>
}

// Casts between wide floats are not its business.
// CHECK-LABEL: func.func @wide(
// CHECK: arith.extf %arg0 : f32 to f64
func.func @wide(%x: f32) -> f64 {
  %a = arith.extf %x : f32 to f64
  return %a : f64
}
