"""A kernel over a tensor of a static shape of 2**31 elements and more: the compiler makes it 64-bit.

`add_static(n)` adds two int8 vectors of exactly `n` elements (a static dim): with n >= 2**31 no
32-bit index math can address it, so the index width is chosen 64-bit without being asked
(emit_cuda/index_width.py), and the launch takes the tensors. Used by test_index_width_gpu.py
(artifact `add_i8_static_past_2_31`) and test/python/test_emit_cuda_index_width.py.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[2])
def add_static(n=2**31 + 4099, block=4096, threads=256):
    @T.prim_func
    def add(A: T.Tensor((n,), "int8"), B: T.Tensor((n,), "int8"), C: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            a = T.alloc_fragment((block,), "int8")
            b = T.alloc_fragment((block,), "int8")
            T.copy(A[bx * block], a)
            T.copy(B[bx * block], b)
            for i in T.Parallel(block):
                a[i] = a[i] + b[i]
            T.copy(a, C[bx * block])

    return add
