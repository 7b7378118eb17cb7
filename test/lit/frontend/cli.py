# tilemlir-frontend prints every @tilemlir.jit kernel of a file in source order, separated by `// -----`,
# instantiates factories whose parameters all have defaults, and skips the others with a note.
# RUN: tilemlir-frontend %s 2>%t.err | FileCheck %s
# RUN: FileCheck %s --check-prefix=NOTE < %t.err
# RUN: tilemlir-frontend %s | tile-opt --split-input-file | FileCheck %s --check-prefix=REPARSE
# RUN: tilemlir-frontend %s --kernel second --no-debuginfo | FileCheck %s --check-prefix=ONLY
import tilemlir
import tilemlir.language as T

M = T.symbolic("M")


@tilemlir.jit
def first(X: T.Tensor((M,), T.float32)):
    with T.Kernel(M, threads=32) as bx:
        X[bx] = X[bx] + 1.0


@tilemlir.jit
def second(block=64):
    def kernel(X: T.Tensor((M,), "float16")):
        with T.Kernel(T.ceildiv(M, block), threads=block) as bx:
            x = T.alloc_shared((block,), "float16")
            T.copy(X[bx * block], x)

    return kernel


@tilemlir.jit
def needs_values(block):
    def kernel(X: T.Tensor((M,), "float16")):
        with T.Kernel(M, threads=block) as bx:
            pass

    return kernel


if __name__ == "__main__":
    raise SystemExit("the frontend must not run the main block")

# CHECK-LABEL: func.func @first(
# CHECK: arith.addf {{.*}} loc("{{.*}}cli.py":16:17)
# CHECK: // -----
# CHECK-LABEL: func.func @kernel(
# CHECK: "tile.alloc_shared"() {name = "x"} : () -> memref<64xf16, "shared"> loc("{{.*}}cli.py":23:17)
# CHECK-NOT: // -----

# NOTE: note: skipping factory 'needs_values': its parameters have no defaults to instantiate it with

# REPARSE: func.func @first(
# REPARSE: func.func @kernel(

# ONLY-NOT: @first
# ONLY: func.func @kernel(%arg0: memref<?xf16>)
# ONLY-NOT: loc(
