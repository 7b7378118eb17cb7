// keep-min-max-loops-scalar: the back edge of a loop computing a float minnum/maxnum gets a width-1
// vectorize annotation (LLVM 22's vectorizer aborts choosing a width for them); other loops none.
// RUN: tile-opt %s -p keep-min-max-loops-scalar | FileCheck %s

// CHECK: #[[VEC:.+]] = #llvm.loop_vectorize<width = 1 : i32>
// CHECK: #[[ANN:.+]] = #llvm.loop_annotation<vectorize = #[[VEC]], interleave = #{{.+}}>
// CHECK-LABEL: llvm.func @f(
// The sum loop's back edge: no annotation.
// CHECK: llvm.br ^bb1(%{{.+}}, %{{.+}} : i64, f32){{$}}
// The min loop's back edge.
// CHECK: llvm.br ^bb3(%{{.+}}, %{{.+}} : i64, f32) {loop_annotation = #[[ANN]]}
llvm.func @f(%p: !llvm.ptr, %n: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %init = llvm.mlir.constant(0.0 : f32) : f32
  llvm.br ^sum(%c0, %init : i64, f32)
^sum(%i: i64, %s: f32):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^sum_body, ^min(%c0, %init : i64, f32)
^sum_body:
  %a = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %a : !llvm.ptr -> f32
  %s2 = llvm.fadd %s, %x : f32
  %i2 = llvm.add %i, %c1 : i64
  llvm.br ^sum(%i2, %s2 : i64, f32)
^min(%j: i64, %m: f32):
  %min_more = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %min_more, ^min_body, ^done
^min_body:
  %b = llvm.getelementptr %p[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %y = llvm.load %b : !llvm.ptr -> f32
  %m2 = llvm.intr.minnum(%m, %y) : (f32, f32) -> f32
  %j2 = llvm.add %j, %c1 : i64
  llvm.br ^min(%j2, %m2 : i64, f32)
^done:
  llvm.return
}
