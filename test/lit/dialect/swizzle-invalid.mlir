// The tile.swizzle rules of tile.alloc_shared, one chunk each: a chunk fails if its rule is removed.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @bad_width() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op 'tile.swizzle' must be one of 0, 32, 64, 128, got 16}}
    %s = "tile.alloc_shared"() {tile.swizzle = 16 : i64} : () -> memref<8x64xf16, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @rows_too_short() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op 'tile.swizzle' = 128 needs rows of a multiple of 128 bytes, got 64}}
    %s = "tile.alloc_shared"() {tile.swizzle = 128 : i64} : () -> memref<8x32xf16, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @rank_one() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op 'tile.swizzle' needs a buffer of rank 2 or more (rows of a tile), got rank 1}}
    %s = "tile.alloc_shared"() {tile.swizzle = 32 : i64} : () -> memref<64xf16, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @not_shared() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_local' op only shared buffers carry a 'tile.swizzle' attribute}}
    %s = "tile.alloc_local"() {tile.swizzle = 32 : i64} : () -> memref<8x64xf16, "local">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
