// The register run of a row: 16 bytes of the element type it loads from global memory (loads are what a
// thread waits on), else of what it stores there.
// RUN: tile-opt %s --split-input-file -p infer-layouts,test-print-layouts --verify-diagnostics -o /dev/null

// bf16 in, fp8 out: runs of 8 (16-byte loads, 8-byte stores); 7168 = 896 runs, 7 per thread.
func.func @quantize(%X: memref<?x7168xbf16>, %Q: memref<?x7168xf8E4M3FN>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %M = memref.dim %X, %c0 : memref<?x7168xbf16>
  "tile.kernel"(%M) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x7168 over 128 threads, 56 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 128)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 1024) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x7168xf32, "fragment">
    "tile.copy"(%X, %x, %bx, %c0, %c0, %c0) {shape = [1, 7168]} : (memref<?x7168xbf16>, memref<1x7168xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%x, %Q, %c0, %c0, %bx, %c0) {shape = [1, 7168]} : (memref<1x7168xf32, "fragment">, memref<?x7168xf8E4M3FN>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// fp8 in, bf16 out: runs of 16 (16-byte loads, two 16-byte stores).
func.func @dequantize(%Q: memref<?x4096xf8E4M3FN>, %Y: memref<?x4096xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %M = memref.dim %Q, %c0 : memref<?x4096xf8E4M3FN>
  "tile.kernel"(%M) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x4096 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 16) mod 128)>, affine_map<(d0, d1) -> (d1 mod 16 + (d1 floordiv 2048) * 16)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x4096xf32, "fragment">
    "tile.parallel"(%c1, %c4096) ({
    ^bb0(%i: index, %j: index):
      %r = arith.addi %bx, %i : index
      %q = memref.load %Q[%r, %j] : memref<?x4096xf8E4M3FN>
      %v = arith.extf %q : f8E4M3FN to f32
      memref.store %v, %x[%i, %j] : memref<1x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %bx, %c0) {shape = [1, 4096]} : (memref<1x4096xf32, "fragment">, memref<?x4096xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

