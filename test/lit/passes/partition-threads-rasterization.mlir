// partition-threads on a kernel with tile.rasterization (T.use_swizzle): the body reads the coordinates
// rewriting/rasterization.py computes from the launch's block ids at the top of the launch; the attribute
// does not reach the gpu.launch.
// RUN: tile-opt %s --split-input-file -p partition-threads | FileCheck %s
// RUN: tile-opt %s --split-input-file -p partition-threads | tile-opt --split-input-file -o /dev/null

// A static 5 x 3 grid in panels of 2 rows: every division is by a constant (a panel holds 10 ids; the
// last panel has 1 row, so its offset is the column itself and the row within it 0).
// CHECK-LABEL: func.func @rows
// CHECK: gpu.launch blocks(%[[BX:[^,]+]], %[[BY:[^,]+]], %{{[^)]+}}) in (%{{.+}} = %c5, %{{.+}} = %c3, %{{.+}} = %c1)
// CHECK: %[[YX:.+]] = arith.muli %[[BY]], %c5 : index
// CHECK: %[[ID:.+]] = arith.addi %[[BX]], %[[YX]] : index
// CHECK: %[[PANEL:.+]] = arith.divui %[[ID]], %c10 : index
// CHECK: %[[OFFSET:.+]] = arith.remui %[[ID]], %c10 : index
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[PANEL]], %c1{{.*}} : index
// CHECK: %[[HALF:.+]] = arith.divui %[[OFFSET]], %c2 : index
// CHECK: %[[STEP:.+]] = arith.select %[[LAST]], %[[OFFSET]], %[[HALF]] : index
// CHECK: %[[PAIR:.+]] = arith.remui %[[OFFSET]], %c2 : index
// CHECK: %[[ROW:.+]] = arith.select %[[LAST]], %c0, %[[PAIR]] : index
// CHECK: %[[PARITY:.+]] = arith.remui %[[PANEL]], %c2 : index
// CHECK: %[[BACK:.+]] = arith.cmpi ne, %[[PARITY]], %c0 : index
// CHECK: %[[MIRROR:.+]] = arith.subi %c4, %[[STEP]] : index
// CHECK: %[[X:.+]] = arith.select %[[BACK]], %[[MIRROR]], %[[STEP]] : index
// CHECK: %[[BASE:.+]] = arith.muli %[[PANEL]], %c2 : index
// CHECK: %[[Y:.+]] = arith.addi %[[ROW]], %[[BASE]] : index
// CHECK: memref.store %{{.+}}, %arg0[%[[Y]], %[[X]]] : memref<3x5xi32>
// CHECK-NEXT: gpu.terminator
// CHECK-NEXT: }{{$}}
func.func @rows(%out: memref<3x5xi32>) attributes {tile.entry} {
  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  "tile.kernel"(%c5, %c3) ({
  ^bb0(%bx: index, %by: index):
    %one = arith.constant 1 : i32
    memref.store %one, %out[%by, %bx] : memref<3x5xi32>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64, tile.rasterization = {order = "row", panel = 2 : i64}} : (index, index) -> ()
  return
}

// -----

// A symbolic grid in panels of 4 columns: the panel's id count and the last panel's width are values, so
// the last panel divides by its width (a value), the others by 4.
// CHECK-LABEL: func.func @columns
// CHECK: %[[GY:.+]] = memref.dim %arg0, %c0
// CHECK: %[[GX:.+]] = memref.dim %arg0, %c1
// CHECK: gpu.launch blocks(%[[BX:[^,]+]], %[[BY:[^,]+]], %{{[^)]+}}) in (%{{.+}} = %[[GX]], %{{.+}} = %[[GY]], %{{.+}} = %c1)
// CHECK: %[[YX:.+]] = arith.muli %[[BY]], %[[GX]] : index
// CHECK: %[[ID:.+]] = arith.addi %[[BX]], %[[YX]] : index
// CHECK: %[[IDS:.+]] = arith.muli %[[GY]], %c4 : index
// CHECK: %[[PANEL:.+]] = arith.divui %[[ID]], %[[IDS]] : index
// CHECK: %[[OFFSET:.+]] = arith.remui %[[ID]], %[[IDS]] : index
// CHECK: %[[WIDTH:.+]] = arith.subi %[[GX]], %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[PANEL]], %{{.+}} : index
// CHECK: %[[RAGGED:.+]] = arith.divui %[[OFFSET]], %[[WIDTH]] : index
// CHECK: %[[FULL:.+]] = arith.divui %[[OFFSET]], %c4 : index
// CHECK: %[[STEP:.+]] = arith.select %[[LAST]], %[[RAGGED]], %[[FULL]] : index
// CHECK: arith.remui %[[OFFSET]], %[[WIDTH]] : index
// CHECK: %[[COLUMN:.+]] = arith.select %[[LAST]]
// CHECK: %[[Y:.+]] = arith.select %{{.+}}, %{{.+}}, %[[STEP]] : index
// CHECK: %[[BASE:.+]] = arith.muli %[[PANEL]], %c4 : index
// CHECK: %[[X:.+]] = arith.addi %[[COLUMN]], %[[BASE]] : index
// CHECK: memref.store %{{.+}}, %arg0[%[[Y]], %[[X]]] : memref<?x?xi32>
func.func @columns(%out: memref<?x?xi32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %gy = memref.dim %out, %c0 : memref<?x?xi32>
  %gx = memref.dim %out, %c1 : memref<?x?xi32>
  "tile.kernel"(%gx, %gy) ({
  ^bb0(%bx: index, %by: index):
    %one = arith.constant 1 : i32
    memref.store %one, %out[%by, %bx] : memref<?x?xi32>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64, tile.rasterization = {order = "column", panel = 4 : i64}} : (index, index) -> ()
  return
}
