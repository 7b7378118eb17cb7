"""fp8 GEMM with DeepSeek-V3 block scaling: C (bf16) = (A * sa) @ (B * sb)^T.

A is M x K float8_e4m3 with a float32 scale per row and 128-wide K group
(`sa`, M x K/128: what `quant_fp8`-style per-token quantization gives); B is
N x K (stored K-major, as fp8 tensor cores read it) with a scale per 128 x 128
block (`sb`, N/128 x K/128). Each block walks K one 128-wide group at a time:
the group's fp8 product goes into a fresh float32 accumulator on the tensor
cores (wgmma m64nNk32 with `tensor_cores="wgmma"` on sm_90a), then a
`T.Parallel` adds it, times the group's two scales, into the running float32
sum. Promoting every group this way keeps full float32 precision across K
(the tensor cores' fp8 adder keeps fewer bits), as the DeepSeek-V3 report
recommends. Two accumulators of a 128 x 128 tile are 256 floats a thread
with 128 threads, more than a thread's registers: the default 256 threads
(two warpgroups, 64 rows each) hold 64 + 64.
"""

import tilemlir
import tilemlir.language as T

GROUP = 128  # the K width of one scale, and the rows and columns of one B scale block
FP8_E4M3_MAX = 448.0


@tilemlir.jit(out_idx=[-1])
def fp8_gemm(N=7168, K=2048, block_M=128, block_N=128, num_stages=3, threads=256, in_dtype="float8_e4m3",
             out_dtype="bfloat16"):
    if K % GROUP or GROUP % block_N:
        raise ValueError(f"fp8_gemm: K = {K} must be a multiple of the {GROUP}-wide scale groups, and block_N = "
                         f"{block_N} divide them (a block's columns share one B scale)")
    M = T.symbolic("M")
    groups = K // GROUP

    @T.prim_func
    def gemm(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype), sa: T.Tensor((M, groups), T.float32),
             sb: T.Tensor((T.ceildiv(N, GROUP), groups), T.float32), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, GROUP), in_dtype)
            B_s = T.alloc_shared((block_N, GROUP), in_dtype)
            group_sum = T.alloc_fragment((block_M, block_N), T.float32)
            total = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(total)
            for g in T.Pipelined(groups, num_stages=num_stages):
                T.copy(A[by * block_M, g * GROUP], A_s)
                T.copy(B[bx * block_N, g * GROUP], B_s)
                T.clear(group_sum)
                T.gemm(A_s, B_s, group_sum, transpose_B=True)
                for i, j in T.Parallel(block_M, block_N):
                    total[i, j] += group_sum[i, j] * sa[by * block_M + i, g] * sb[bx * block_N // GROUP, g]
            T.copy(total, C[by * block_M, bx * block_N])

    return gemm


def quantize_groups(x, rows_per_block):
    """x (float64, R x K) -> (e4m3 values, float32 scales [ceil(R / rows_per_block), K / 128]): each block of
    `rows_per_block` rows and 128 columns scaled so its largest magnitude is e4m3's largest value."""
    import ml_dtypes
    import numpy as np

    rows, k = x.shape
    blocks = -(-rows // rows_per_block)
    padded = np.zeros((blocks * rows_per_block, k))
    padded[:rows] = x
    tiles = padded.reshape(blocks, rows_per_block, k // GROUP, GROUP)
    amax = np.maximum(np.abs(tiles).max(axis=(1, 3)), 1e-4)  # [blocks, K / 128]
    scale = (amax / FP8_E4M3_MAX).astype(np.float32)
    q = tiles / scale.astype(np.float64)[:, None, :, None]
    return q.reshape(padded.shape)[:rows].astype(ml_dtypes.float8_e4m3fn), scale


def make_inputs(rng, m=129, n=256, k=384):
    """A quantized per (row, 128-column group), B per 128 x 128 block, of normal values with a spread of
    magnitudes across rows and groups (so the scales matter)."""
    import numpy as np

    a = rng.standard_normal((m, k)) * rng.uniform(0.1, 10, (m, 1)) * rng.uniform(0.5, 2, (1, k))
    b = rng.standard_normal((n, k)) * rng.uniform(0.1, 10, (n // GROUP + 1, 1)).repeat(GROUP, 0)[:n]
    a_q, sa = quantize_groups(a, 1)
    b_q, sb = quantize_groups(b, GROUP)
    return [a_q, b_q, sa, sb]


def dequantized(q, scale, rows_per_block):
    import numpy as np

    expanded = np.repeat(np.repeat(scale.astype(np.float64), rows_per_block, 0)[:q.shape[0]], GROUP, 1)
    return q.astype(np.float64) * expanded


def reference(a, b, sa, sb):
    return [dequantized(a, sa, 1) @ dequantized(b, sb, GROUP).T]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(fp8_gemm.instantiate(N=256, K=384), make_inputs, reference, tolerance=5e-3,
                         compile_options={"tensor_cores": "wgmma"}))
