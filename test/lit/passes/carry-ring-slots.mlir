// carry-ring-slots: in a unit-step scf.for, each distinct (iv + c) mod S becomes an iter_arg counter,
// (lower + c) mod S before the loop and `slot + 1 == S ? 0 : slot + 1` after each iteration.
// RUN: tile-opt %s -p carry-ring-slots | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s -p carry-ring-slots | tile-opt -o /dev/null

// Two slots of a 3-deep ring (t and t + 2) from lower bound 0: counters start at 0 and 2, the loop's own
// iter_arg stays first, and the remainders are gone.
// CHECK-LABEL: func.func @ring
// CHECK: %[[R:.+]]:3 = scf.for %{{.+}} iter_args(%{{.+}} = %cst, %[[READ:.+]] = %c0{{[_0-9]*}}, %[[WRITE:.+]] = %c2{{[_0-9]*}}) -> (f32, index, index)
// CHECK-NOT: arith.remui
// CHECK-NOT: arith.addi
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[WRITE]]]
// CHECK: memref.load %{{.+}}[%[[READ]]]
// CHECK: %[[RN:.+]] = arith.addi %[[READ]], %c1{{[_0-9]*}} : index
// CHECK: %[[RW:.+]] = arith.cmpi eq, %[[RN]], %c3{{[_0-9]*}} : index
// CHECK: %[[RS:.+]] = arith.select %[[RW]], %c0{{[_0-9]*}}, %[[RN]] : index
// CHECK: %[[WN:.+]] = arith.addi %[[WRITE]], %c1{{[_0-9]*}} : index
// CHECK: %[[WW:.+]] = arith.cmpi eq, %[[WN]], %c3{{[_0-9]*}} : index
// CHECK: %[[WS:.+]] = arith.select %[[WW]], %c0{{[_0-9]*}}, %[[WN]] : index
// CHECK: scf.yield %{{.+}}, %[[RS]], %[[WS]] : f32, index, index
// CHECK: return %[[R]]#0 : f32
func.func @ring(%buf: memref<3xf32>, %n: index, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %t = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %ahead = arith.addi %t, %c2 : index
    %write = arith.remui %ahead, %c3 : index
    %read = arith.remui %t, %c3 : index
    memref.store %x, %buf[%write] : memref<3xf32>
    %v = memref.load %buf[%read] : memref<3xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  return %sum : f32
}

// A lower bound that is not a constant: the counter starts at (lower + 1) mod 4. A loop of step 2 and a
// remainder of something else than the iv plus a constant are left alone.
// CHECK-LABEL: func.func @offsets
// CHECK: %[[START:.+]] = arith.addi %[[LO:.+]], %{{.+}} : index
// CHECK: %[[S0:.+]] = arith.remui %[[START]], %{{.+}} : index
// CHECK: scf.for %{{.+}} = %[[LO]] to %{{.+}} step %{{.+}} iter_args(%[[SLOT:.+]] = %[[S0]]) -> (index)
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[SLOT]]]
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %[[C2:[^ ]+]] {
// CHECK: arith.remui %[[J]]
// CHECK: arith.muli
// CHECK: arith.remui
func.func @offsets(%buf: memref<4xf32>, %lo: index, %n: index, %x: f32) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %t = %lo to %n step %c1 {
    %a = arith.addi %c1, %t : index
    %slot = arith.remui %a, %c4 : index
    memref.store %x, %buf[%slot] : memref<4xf32>
  }
  scf.for %j = %lo to %n step %c2 {
    %slot = arith.remui %j, %c4 : index
    memref.store %x, %buf[%slot] : memref<4xf32>
    %d = arith.muli %j, %c2 : index
    %other = arith.remui %d, %c4 : index
    memref.store %x, %buf[%other] : memref<4xf32>
  }
  return
}
