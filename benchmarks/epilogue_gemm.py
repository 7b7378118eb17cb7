"""examples/gemm.py's `matmul` with another epilogue, to measure the epilogues side by side (with `tma=True` on
wgmma the unchanged example leaves through slab buffers: docs/tensor_cores.md, "Epilogue slabs"):

- `epilogue="staged"`: TileLang's spelling of an epilogue through shared memory, `T.copy(C_f, C_s);
  T.copy(C_s, C[...])`: stmatrix into a swizzled tile, one thread's TMA boxes out (in slabs when the whole
  tile does not fit);
- `epilogue="lanes"`: `T.copy(C_f, C[...], disable_tma=True)`, each lane's pairs stored to global memory.

    python3 -m benchmarks.build_gemm_artifacts --example benchmarks/epilogue_gemm.py --tuned \\
        --kernel-args '{"epilogue": "lanes"}'
"""

import tilemlir
import tilemlir.language as T

EPILOGUES = ("staged", "lanes")


@tilemlir.jit(out_idx=[-1])
def matmul(N=4096, K=4096, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float32",
           num_stages=3, threads=128, enable_rasterization=False, panel_size=10, epilogue="staged"):
    if epilogue not in EPILOGUES:
        raise ValueError(f"epilogue must be one of {', '.join(EPILOGUES)}, got {epilogue!r}")
    M = T.symbolic("M")

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=panel_size, enable=enable_rasterization)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            if epilogue == "staged":
                C_s = T.alloc_shared((block_M, block_N), dtype)
                T.copy(C_f, C_s)
                T.copy(C_s, C[by * block_M, bx * block_N])
            else:
                T.copy(C_f, C[by * block_M, bx * block_N], disable_tma=True)

    return gemm
