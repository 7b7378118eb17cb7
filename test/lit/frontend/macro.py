# An inlined @T.macro: its ops carry the macro's own lines, the call's argument loads the caller's.
# RUN: tilemlir-frontend %s | FileCheck %s
# RUN: tilemlir-frontend %s | tile-opt | FileCheck %s --check-prefix=REPARSE
import tilemlir
import tilemlir.language as T

M = T.symbolic("M")


@T.macro
def scale_shift(v, scale):
    scaled = v * scale
    return scaled + 1.0


@T.macro
def normalize_rows(x, total, n):
    T.reduce_sum(x, total, dim=1)
    for i, j in T.Parallel(2, n):
        x[i, j] = scale_shift(x[i, j], 1.0 / n) - total[i]


@tilemlir.jit
def kernel(X: T.Tensor((M, 64), T.float32), Y: T.Tensor((M, 64), T.float32)):
    with T.Kernel(T.ceildiv(M, 2), threads=64) as bx:
        x = T.alloc_fragment((2, 64), T.float32)
        total = T.alloc_fragment((2,), T.float32)
        T.copy(X[bx * 2, 0], x)
        normalize_rows(x, total, 64)
        T.copy(x, Y[bx * 2, 0])

# CHECK-LABEL: func.func @kernel(
# CHECK: %[[X:.*]] = "tile.alloc_fragment"() {name = "x"} {{.*}} loc("{{.*}}macro.py":26:13)
# CHECK: %[[TOTAL:.*]] = "tile.alloc_fragment"() {name = "total"}
# CHECK: "tile.copy"({{.*}}) {{.*}} loc("{{.*}}macro.py":28:9)
# CHECK: "tile.reduce"(%[[X]], %[[TOTAL]]) {{.*}} loc("{{.*}}macro.py":18:5)
# CHECK: "tile.parallel"
# CHECK: %[[V:.*]] = memref.load %[[X]][{{.*}}] {{.*}} loc("{{.*}}macro.py":20:31)
# CHECK: %[[SCALED:.*]] = arith.mulf %[[V]], %{{.*}} : f32 loc("{{.*}}macro.py":12:14)
# CHECK: %[[SHIFTED:.*]] = arith.addf %[[SCALED]], %{{.*}} : f32 loc("{{.*}}macro.py":13:12)
# CHECK: %[[T:.*]] = memref.load %[[TOTAL]]
# CHECK: arith.subf %[[SHIFTED]], %[[T]] : f32 loc("{{.*}}macro.py":20:19)
# CHECK: }) : (index, index) -> () loc("{{.*}}macro.py":19:5)
# CHECK: "tile.copy"({{.*}}) {{.*}} loc("{{.*}}macro.py":30:9)

# REPARSE-LABEL: func.func @kernel(
# REPARSE: "tile.reduce"
