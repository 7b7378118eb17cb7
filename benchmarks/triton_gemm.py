"""The Triton peer of the GEMM benchmark: a plain tiled Triton matmul as a Triton user writes it.

One program per BLOCK_M x BLOCK_N tile of C, programs ordered in groups of GROUP_M row blocks
(so neighbouring programs share A's rows and B's columns in L2), a float32 `tl.dot` accumulator
over K in BLOCK_K steps, masked loads at the M, N and K edges, C stored in the inputs' dtype.
`triton.autotune` picks among a few Hopper-sized configurations per (M, N, K).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=stages, num_warps=warps)
    for bm, bn, bk, stages, warps in (
        (128, 256, 64, 3, 8),
        (256, 128, 64, 3, 8),
        (128, 128, 64, 4, 4),
        (128, 128, 32, 4, 4),
        (64, 128, 64, 4, 4),
    )
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def _matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = pid // per_group * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = A + rows[:, None].to(tl.int64) * stride_am + ks[None, :] * stride_ak
    b_ptrs = B + ks[:, None].to(tl.int64) * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = C + rows[:, None].to(tl.int64) * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """c = a @ b (a: M x K, b: K x N, c: M x N preallocated), float32 accumulation."""
    m, k = a.shape
    k2, n = b.shape
    if k != k2 or tuple(c.shape) != (m, n):
        raise ValueError(f"matmul of {tuple(a.shape)} by {tuple(b.shape)} into {tuple(c.shape)}")

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

    _matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         c.stride(0), c.stride(1))
    return c


def chosen_config(m: int, n: int, k: int) -> str | None:
    """The configuration autotune picked for (M, N, K), once it has run there."""
    for key, config in getattr(_matmul_kernel, "cache", {}).items():  # keys: (M, N, K, dtypes...)
        if tuple(key[:3]) == (m, n, k):
            return str(config)
    return None
