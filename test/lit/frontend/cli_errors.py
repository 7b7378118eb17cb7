# A mistake in a kernel: tilemlir-frontend prints FILE:LINE:COL, the message, the line and a caret; exit 1.
# RUN: not tilemlir-frontend %s 2>&1 | FileCheck %s
import tilemlir
import tilemlir.language as T

M = T.symbolic("M")


@tilemlir.jit
def k(X: T.Tensor((M, 128), T.float32)):
    with T.Kernel(M, threads=128) as bx:
        a = T.alloc_fragment((M, 128), T.float32)
# CHECK: {{.*}}cli_errors.py:[[# @LINE - 1]]:30: error: T.alloc_fragment: the symbolic dim 'M' is used where a compile-time constant is required
# CHECK-NEXT: {{^}}        a = T.alloc_fragment((M, 128), T.float32)
# CHECK-NEXT: {{^                             \^$}}
