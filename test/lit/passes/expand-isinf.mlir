// expand-isinf: math.isinf x as |x| == inf, which upstream lowers to LLVM (math.isinf it cannot).
// RUN: tile-opt %s -p expand-isinf | FileCheck %s

// CHECK-LABEL: func.func @isinf(
// CHECK-NOT: math.isinf
// CHECK: %[[INF:.+]] = arith.constant 0x7F800000 : f32
// CHECK: %[[ABS:.+]] = math.absf %arg0 : f32
// CHECK: %[[A:.+]] = arith.cmpf oeq, %[[ABS]], %[[INF]] : f32
// CHECK: %[[VINF:.+]] = arith.constant dense<0x7C00> : vector<4xf16>
// CHECK: %[[VABS:.+]] = math.absf %arg1 : vector<4xf16>
// CHECK: %[[B:.+]] = arith.cmpf oeq, %[[VABS]], %[[VINF]] : vector<4xf16>
// CHECK: return %[[A]], %[[B]] : i1, vector<4xi1>
func.func @isinf(%x: f32, %v: vector<4xf16>) -> (i1, vector<4xi1>) {
  %a = math.isinf %x : f32
  %b = math.isinf %v : vector<4xf16>
  return %a, %b : i1, vector<4xi1>
}
