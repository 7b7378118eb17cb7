"""Kernels written as TileLang's examples write them; only the two imports say tilemlir.

test_tilelang_compat.py runs each on the CPU backend (tile and thread level) against float64 numpy,
and compiles each for sm_90a through NVRTC.
"""

import tilemlir as tilelang
import tilemlir.language as T


@tilelang.jit(out_idx=[-1], pass_configs={
    tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
    tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
})
def elementwise_add(M, N, block_M, block_N, in_dtype, out_dtype, threads):

    @T.prim_func
    def main(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            start_x = bx * block_N
            start_y = by * block_M
            for (local_y, local_x) in T.Parallel(block_M, block_N):
                y = start_y + local_y
                x = start_x + local_x
                C[y, x] = A[y, x] + B[y, x]

    return main


@tilelang.jit(out_idx=[-1], pass_configs={"tl.enable_fast_math": False, "tl.config_index_bitwidth": 32})
def softmax(M, N, dtype=T.float16, accum_dtype=T.float):
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.Tensor[(M, N), dtype], Y: T.Tensor[(M, N), dtype]):
        with T.Kernel(M, threads=128) as bx:
            x = T.alloc_fragment((1, N), accum_dtype)
            row_max = T.alloc_fragment((1,), accum_dtype)
            row_sum = T.alloc_fragment((1,), accum_dtype)
            T.copy(X[bx, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(1, N):
                x[i, j] = T.exp2(x[i, j] * scale - row_max[i] * scale)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(1, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx, 0])

    return main


def rms_norm(M, N, blk_m):
    dtype = "float"

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            A_shared = T.alloc_shared((blk_m, N), dtype)
            A_pow_local = T.alloc_fragment((blk_m, N), dtype)
            A_local = T.alloc_fragment((blk_m, N), dtype)
            A_powsum = T.alloc_fragment((blk_m,), dtype)

            T.copy(A[bx * blk_m:(bx + 1) * blk_m, :], A_shared)
            T.copy(A_shared, A_local)
            for i, j in T.Parallel(blk_m, N):
                A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
            T.reduce_sum(A_pow_local, A_powsum, dim=1)
            for i in T.Parallel(blk_m):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N) + 1e-12
            for i, j in T.Parallel(blk_m, N):
                A_local[i, j] *= A_powsum[i]
            T.copy(A_local, B[bx * blk_m:(bx + 1) * blk_m, :])

    return main


rms_norm_kernel = tilelang.jit(rms_norm, out_idx=[-1], pass_configs={"tl.disable_tma_lower": True})


@tilelang.jit(out_idx=[1, 2])
def row_reduce(M, N, block_M, dtype="float32"):

    @T.prim_func
    def main(A: T.Tensor[M, N, dtype], Sum: T.Tensor[(M,), dtype], AbsMax: T.Buffer((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            a = T.alloc_fragment((block_M, N), dtype)
            s = T.alloc_fragment((block_M,), dtype)
            m = T.alloc_fragment((block_M,), dtype)
            T.copy(A[bx * block_M, 0], a)
            T.reduce_sum(a, s, dim=1)
            T.reduce_absmax(a, m, dim=1)
            T.copy(s, Sum[bx * block_M])
            T.copy(m, AbsMax[bx * block_M])

    return main


@tilelang.jit(out_idx=[1, 2])
def per_token_cast_to_fp8(M, N, blk_m):
    dtype = T.float
    group_size = 128
    fp8_min = -448.0
    fp8_max = 448.0

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), X_fp8: T.Tensor((M, N), T.float8_e4m3fn),
             X_amax: T.Tensor((M, T.ceildiv(N, group_size)), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), T.ceildiv(N, group_size), threads=128) as (bx, by):
            row = bx
            row_g_id = by
            y_local = T.alloc_fragment((blk_m, group_size), dtype)
            y_amax_local = T.alloc_fragment((blk_m,), dtype)
            y_s_local = T.alloc_fragment((blk_m,), dtype)
            y_q_local = T.alloc_fragment((blk_m, group_size), dtype)
            y_q_local_fp8 = T.alloc_fragment((blk_m, group_size), T.float8_e4m3fn)

            T.copy(X[row * blk_m:(row + 1) * blk_m, row_g_id * group_size:(row_g_id + 1) * group_size], y_local)
            T.reduce_absmax(y_local, y_amax_local, dim=1)
            for i in T.Parallel(blk_m):
                y_amax_local[i] = T.max(y_amax_local[i], 1e-4)
                y_s_local[i] = y_amax_local[i] / fp8_max
            for i, j in T.Parallel(blk_m, group_size):
                y_q_local[i, j] = T.clamp(y_local[i, j] / y_s_local[i], fp8_min, fp8_max)
            T.copy(y_q_local, y_q_local_fp8)
            for i in T.Parallel(blk_m):
                X_amax[row * blk_m + i, row_g_id] = y_s_local[i]
            T.copy(y_q_local_fp8, X_fp8[row * blk_m:(row + 1) * blk_m,
                                        row_g_id * group_size:(row_g_id + 1) * group_size])

    return main


@tilelang.jit(out_idx=[-1])
def masked_scale(M, N, block_N, dtype=T.half):
    """TVM's scalar spellings: T.Select / T.And / T.Or / T.if_then_else / T.Cast / astype / T.Serial /
    T.vectorized / T.max_value / T.min_value / dtype.bytes / tilelang.cdiv / tilelang.next_power_of_2."""
    vec = 16 // dtype.bytes  # elements in 16 bytes
    lanes = tilelang.next_power_of_2(vec - 1)
    blocks = tilelang.cdiv(N, block_N)

    @T.prim_func
    def main(A: T.StridedTensor((M, N), (N, 1), dtype), Lo: T.Tensor((M,), T.float32),
             B: T.Tensor((M, N), dtype)):
        with T.Kernel(blocks, M, threads=128) as (bx, by):
            for j in T.Parallel(block_N // vec):
                for v in T.vectorized(vec):
                    col = bx * block_N + j * vec + v
                    a = A[by, col].astype(T.float)
                    for _ in T.Serial(lanes // vec):
                        a = a * 2
                    lo = Lo[by]
                    keep = T.Or(T.And(a > lo, col % 2 == 0), col == 1)
                    big = T.Select(a > T.Cast(T.float32, 2), T.float32(2), a)
                    out = T.if_then_else(keep, big, T.max(T.min_value(dtype), T.float32(-1)))
                    B[by, col] = T.min(out, T.max_value(dtype))

    return main


# ----------------------------------------------------------------------------
# The eager style of current TileLang: tensor parameters declared in the body.


@tilelang.jit
def eager_add(A, B, block_M: int, block_N: int, threads: int):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B: T.Tensor((M, N), T.float32)
    C = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + \
                B[by * block_M + i, bx * block_N + j]
    return C


@tilelang.jit(pass_configs={
    tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
    tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
})
def tl_reduce_sum(A, BLOCK_N: int, BLOCK_M: int):
    N, M = T.const("N, M")
    dtype = T.float32
    A: T.Tensor((N, M), dtype)
    B = T.empty((N,), dtype)

    with T.Kernel(N // BLOCK_N, threads=256) as pid_n:
        A_local = T.alloc_fragment((BLOCK_N, BLOCK_M), dtype)
        B_local = T.alloc_fragment((BLOCK_N,), dtype)

        T.clear(B_local)

        for m_blk_id in T.Serial(M // BLOCK_M):
            T.copy(A[pid_n * BLOCK_N, m_blk_id * BLOCK_M], A_local)
            T.reduce_sum(A_local, B_local, dim=1, clear=False)

        T.copy(B_local, B[pid_n * BLOCK_N])

    return B


ROWS = T.dynamic("ROWS")


@tilelang.jit
def eager_row_scale(X, scale: float = 2.0, block_N: int = 128):
    N = T.const("N")
    X: T.Tensor[(ROWS, N), T.half]
    Y = T.empty((ROWS, N), T.float)
    S = T.empty((ROWS,), T.float)
    with T.Kernel(ROWS, threads=128) as bx:
        x = T.alloc_fragment((1, N), T.float)
        s = T.alloc_fragment((1,), T.float)
        T.copy(X[bx, 0], x)
        for i, j in T.Parallel(1, N):
            x[i, j] = x[i, j] * scale
        T.reduce_sum(x, s, dim=1)
        T.copy(x, Y[bx, 0])
        for i in T.Parallel(1):
            S[bx] = s[i]
    return Y, S


# ----------------------------------------------------------------------------
# Kernels of the kinds TileLang's examples hold (norms, top-k, split-K GEMM, thread-level GEMV), written here.


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, blk_m, eps=1e-5):
    dtype = T.float32

    @T.prim_func
    def main(X: T.Tensor((M, N), T.bfloat16), G: T.Tensor((N,), dtype), Bias: T.Tensor((N,), dtype),
             Y: T.Tensor((M, N), T.bfloat16)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            x = T.alloc_fragment((blk_m, N), dtype)
            sq = T.alloc_fragment((blk_m, N), dtype)
            mean = T.alloc_fragment((blk_m,), dtype)
            var = T.alloc_fragment((blk_m,), dtype)
            T.copy(X[bx * blk_m, 0], x)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(blk_m):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(blk_m, N):
                sq[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
            T.reduce_sum(sq, var, dim=1)
            for i in T.Parallel(blk_m):
                var[i] = T.rsqrt(var[i] / N + eps)
            for i, j in T.Parallel(blk_m, N):
                x[i, j] = (x[i, j] - mean[i]) * var[i] * G[j] + Bias[j]
            T.copy(x, Y[bx * blk_m, 0])

    return main


@tilelang.jit(out_idx=[1, 2])
def top_k(M, N, k, blk_m):
    """The k largest logits of each row and their columns, largest first (the lowest column among equals):
    k rounds of a row max, the first column holding it, and that column masked out."""
    dtype = T.float32

    @T.prim_func
    def main(Logits: T.Tensor((M, N), dtype), Gates: T.Tensor((M, k), dtype), Index: T.Tensor((M, k), T.int32)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            logits = T.alloc_fragment((blk_m, N), dtype)
            hits = T.alloc_fragment((blk_m, N), T.int32)
            best = T.alloc_fragment((blk_m,), dtype)
            where = T.alloc_fragment((blk_m,), T.int32)
            T.copy(Logits[bx * blk_m, 0], logits)
            for r in T.serial(k):
                T.reduce_max(logits, best, dim=1)
                for i, j in T.Parallel(blk_m, N):
                    hits[i, j] = T.if_then_else(logits[i, j] == best[i], j, N)
                T.reduce_min(hits, where, dim=1)
                for i, j in T.Parallel(blk_m, N):
                    logits[i, j] = T.if_then_else(j == where[i], -T.infinity(dtype), logits[i, j])
                for i in T.Parallel(blk_m):
                    Gates[bx * blk_m + i, r] = best[i]
                    Index[bx * blk_m + i, r] = where[i]

    return main


@tilelang.jit
def splitk_gemm(M, N, K, block_M, block_N, block_K, split_k, dtype=T.float16, accum_dtype=T.float32):
    """Each of split_k block slices of K adds its partial product into C (which starts at zero)."""
    k_per_split = K // split_k

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(k_per_split, block_K), num_stages=2):
                T.copy(A[by * block_M, bz * k_per_split + ko * block_K], A_shared)
                T.copy(B[bz * k_per_split + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])

    return main


@tilelang.jit(out_idx=[-1])
def thread_gemv(N, K, BLOCK_N, BLOCK_K, dtype=T.float16, accum_dtype=T.float32):
    """y = W @ x with explicit threads: thread (tn, tk) of a BLOCK_N x BLOCK_K block sums every BLOCK_K-th
    product of row tn into a register, then adds it into the row's shared partial sum."""

    @T.prim_func
    def main(X: T.Tensor((K,), dtype), W: T.Tensor((N, K), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, BLOCK_K)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            partial = T.alloc_local((1,), accum_dtype)
            row = T.alloc_shared((BLOCK_N,), accum_dtype)
            if tk == 0:
                row[tn] = 0
            T.sync_threads()
            partial[0] = 0
            for ko in T.serial(T.ceildiv(K, BLOCK_K)):
                k = ko * BLOCK_K + tk
                if k < K:
                    partial[0] += X[k].astype(accum_dtype) * W[bn * BLOCK_N + tn, k].astype(accum_dtype)
            T.atomic_add(row[tn], partial[0])
            T.sync_threads()
            if tk == 0:
                Y[bn * BLOCK_N + tn] = row[tn]

    return main
