# TileLang's examples/norm/layernorm.py, from https://github.com/tile-ai/tilelang/blob/a35008a42531c62b976ae4cec3855d4383db0f3c/examples/norm/layernorm.py
# Copyright (c) Tile-AI. MIT License: https://github.com/tile-ai/tilelang/blob/a35008a42531c62b976ae4cec3855d4383db0f3c/LICENSE
#
# Test data (test_tilelang_kernels.py), not tilemlir code: the kernel definitions of that file, unchanged
# except their import lines, which say tilemlir (each marked "# was: ..."); its driver code (torch on CUDA,
# benchmarks) and the imports only that code used are left out.
# fmt: off
# ruff: noqa

import tilemlir as tilelang  # was: import tilelang
import tilemlir.language as T  # was: import tilelang.language as T


@tilelang.jit(out_idx=[-3, -2, -1])
def _layernorm_fwd(N, D, eps=1e-5, blk_m=1, threads=256, in_dtype="bfloat16", out_dtype="bfloat16"):
    accum_dtype = "float"

    @T.prim_func
    def main(
        X: T.Tensor((N, D), in_dtype),
        gamma: T.Tensor((D,), in_dtype),
        beta: T.Tensor((D,), in_dtype),
        Y: T.Tensor((N, D), out_dtype),
        Mean: T.Tensor((N,), accum_dtype),
        Rstd: T.Tensor((N,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, blk_m), threads=threads) as bx:
            X_smem = T.alloc_shared((blk_m, D), in_dtype)
            G_smem = T.alloc_shared((D,), in_dtype)
            B_smem = T.alloc_shared((D,), in_dtype)
            X_local = T.alloc_fragment((blk_m, D), accum_dtype)
            X_sq_local = T.alloc_fragment((blk_m, D), accum_dtype)
            sum_row = T.alloc_fragment((blk_m,), accum_dtype)
            sumsq_row = T.alloc_fragment((blk_m,), accum_dtype)
            mean_row = T.alloc_fragment((blk_m,), accum_dtype)
            rstd_row = T.alloc_fragment((blk_m,), accum_dtype)

            T.copy(X[bx * blk_m, 0], X_smem)
            T.copy(gamma, G_smem)
            T.copy(beta, B_smem)

            for i, j in T.Parallel(blk_m, D):
                X_local[i, j] = T.Cast(accum_dtype, X_smem[i, j])
            for i, j in T.Parallel(blk_m, D):
                X_sq_local[i, j] = X_local[i, j] * X_local[i, j]

            T.reduce_sum(X_local, sum_row, dim=1)
            T.reduce_sum(X_sq_local, sumsq_row, dim=1)

            inv_D = T.float32(1.0) / T.Cast(accum_dtype, D)
            for i in T.Parallel(blk_m):
                mean_row[i] = sum_row[i] * inv_D
                rstd_row[i] = T.rsqrt(sumsq_row[i] * inv_D - mean_row[i] * mean_row[i] + T.Cast(accum_dtype, eps))
                Mean[bx * blk_m + i] = mean_row[i]
                Rstd[bx * blk_m + i] = rstd_row[i]

            for i, j in T.Parallel(blk_m, D):
                norm = (X_local[i, j] - mean_row[i]) * rstd_row[i]
                X_smem[i, j] = T.Cast(
                    out_dtype,
                    norm * T.Cast(accum_dtype, G_smem[j]) + T.Cast(accum_dtype, B_smem[j]),
                )

            T.copy(X_smem, Y[bx * blk_m, 0])

    return main


@tilelang.jit(out_idx=[-3])
def _layernorm_bwd(N, D, blk_m=32, threads=256, in_dtype="bfloat16"):
    assert N % blk_m == 0, f"N={N} must be a multiple of blk_m={blk_m}"
    accum_dtype = "float"

    @T.prim_func
    def main(
        DY: T.Tensor((N, D), in_dtype),
        X: T.Tensor((N, D), in_dtype),
        gamma: T.Tensor((D,), in_dtype),
        Mean: T.Tensor((N,), accum_dtype),
        Rstd: T.Tensor((N,), accum_dtype),
        DX: T.Tensor((N, D), in_dtype),
        DGamma: T.Tensor((D,), accum_dtype),
        DBeta: T.Tensor((D,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, blk_m), threads=threads) as bx:
            DY_smem = T.alloc_shared((1, D), in_dtype)
            X_smem = T.alloc_shared((1, D), in_dtype)
            G_smem = T.alloc_shared((D,), in_dtype)
            DX_smem = T.alloc_shared((1, D), in_dtype)

            x_hat = T.alloc_fragment((1, D), accum_dtype)
            dx_hat = T.alloc_fragment((1, D), accum_dtype)
            dx_hat_x_hat = T.alloc_fragment((1, D), accum_dtype)
            sum_dx_hat = T.alloc_fragment((1,), accum_dtype)
            sum_dx_hat_x_hat = T.alloc_fragment((1,), accum_dtype)
            dgamma_acc = T.alloc_fragment((D,), accum_dtype)
            dbeta_acc = T.alloc_fragment((D,), accum_dtype)

            T.copy(gamma, G_smem)
            T.clear(dgamma_acc)
            T.clear(dbeta_acc)

            inv_D = T.float32(1.0) / T.Cast(accum_dtype, D)

            for k in T.serial(blk_m):
                row = bx * blk_m + k
                T.copy(DY[row, 0], DY_smem)
                T.copy(X[row, 0], X_smem)
                m_v = Mean[row]
                r_v = Rstd[row]

                for i, j in T.Parallel(1, D):
                    xv = T.Cast(accum_dtype, X_smem[i, j])
                    dy_v = T.Cast(accum_dtype, DY_smem[i, j])
                    g_v = T.Cast(accum_dtype, G_smem[j])
                    x_hat[i, j] = (xv - m_v) * r_v
                    dx_hat[i, j] = dy_v * g_v
                    dx_hat_x_hat[i, j] = dx_hat[i, j] * x_hat[i, j]

                T.reduce_sum(dx_hat, sum_dx_hat, dim=1)
                T.reduce_sum(dx_hat_x_hat, sum_dx_hat_x_hat, dim=1)

                for i, j in T.Parallel(1, D):
                    c1 = sum_dx_hat_x_hat[0] * inv_D
                    c2 = sum_dx_hat[0] * inv_D
                    dx_v = r_v * (dx_hat[i, j] - c2 - x_hat[i, j] * c1)
                    DX_smem[i, j] = T.Cast(in_dtype, dx_v)
                    dy_v = T.Cast(accum_dtype, DY_smem[i, j])
                    dgamma_acc[j] += dy_v * x_hat[i, j]
                    dbeta_acc[j] += dy_v

                T.copy(DX_smem, DX[row, 0])

            for j in T.Parallel(D):
                T.atomic_add(DGamma[j], dgamma_acc[j], memory_order="relaxed")
                T.atomic_add(DBeta[j], dbeta_acc[j], memory_order="relaxed")

    return main
