"""FlashAttention forward: O = softmax(Q K^T / sqrt(D)) V, bf16 in and out, float32 math.

Tensors are (batch, heads, seq, dim). K and V may have fewer heads than Q
(grouped-query attention: `groups` query heads share one K/V head). Each
block owns `block_M` query rows of one head. It walks the keys in
`block_N` steps (software pipelined): S = Q K^T on tensor cores into a
float32 accumulator, an online softmax on S (row maximum, exp2 of the
log2e-scaled scores, row sum, and a rescale of the output accumulator by how
much the maximum moved), S rounded into a bf16 fragment P, and O += P V.
Keys past the sequence's end score -inf. With `causal`, the loop stops at
the diagonal and only blocks that cross it mask. The kernel also returns the
log-sum-exp of every row's scaled scores (natural log), as FlashAttention does.
"""

import math

import tilemlir
import tilemlir.language as T

LOG2E = 1.4426950408889634


@tilemlir.jit(out_idx=[-2, -1])
def flash_attention(batch=1, heads=4, kv_heads=None, dim=64, causal=False, block_M=64, block_N=64, num_stages=2,
                    threads=128, dtype="bfloat16"):
    kv_heads = kv_heads or heads
    assert heads % kv_heads == 0, "flash_attention: heads must be a multiple of kv_heads"
    groups = heads // kv_heads
    scale = LOG2E / math.sqrt(dim)  # scores in the log2 domain: exp(x / sqrt(D)) = exp2(x * scale)
    seq = T.symbolic("seq")

    @T.prim_func
    def attention(Q: T.Tensor((batch, heads, seq, dim), dtype), K: T.Tensor((batch, kv_heads, seq, dim), dtype),
                  V: T.Tensor((batch, kv_heads, seq, dim), dtype), O: T.Tensor((batch, heads, seq, dim), dtype),
                  LSE: T.Tensor((batch, heads, seq), T.float32)):
        with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((block_M, dim), dtype)
            K_s = T.alloc_shared((block_N, dim), dtype)
            V_s = T.alloc_shared((block_N, dim), dtype)
            S = T.alloc_fragment((block_M, block_N), T.float32)
            P = T.alloc_fragment((block_M, block_N), dtype)
            O_f = T.alloc_fragment((block_M, dim), T.float32)
            row_max = T.alloc_fragment((block_M,), T.float32)
            prev_max = T.alloc_fragment((block_M,), T.float32)
            rescale = T.alloc_fragment((block_M,), T.float32)
            row_sum = T.alloc_fragment((block_M,), T.float32)
            denom = T.alloc_fragment((block_M,), T.float32)

            T.copy(Q[bz, by, bx * block_M, 0], Q_s)
            T.clear(O_f)
            T.clear(denom)
            T.fill(row_max, -T.infinity(T.float32))
            kv_blocks = T.ceildiv(seq, block_N)
            if causal:
                kv_blocks = T.min(kv_blocks, T.ceildiv((bx + 1) * block_M, block_N))
            for k in T.Pipelined(kv_blocks, num_stages=num_stages):
                T.copy(K[bz, by // groups, k * block_N, 0], K_s)
                T.copy(V[bz, by // groups, k * block_N, 0], V_s)
                T.clear(S)
                T.gemm(Q_s, K_s, S, transpose_B=True)
                last_key = (k + 1) * block_N - 1  # only blocks crossing the sequence's end or the diagonal mask
                if last_key >= seq or (causal and last_key > bx * block_M):
                    for i, j in T.Parallel(block_M, block_N):
                        key = k * block_N + j
                        visible = key < seq and (not causal or key <= bx * block_M + i)
                        S[i, j] = T.if_then_else(visible, S[i, j], -T.infinity(T.float32))
                T.copy(row_max, prev_max)
                T.reduce_max(S, row_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    rescale[i] = T.exp2((prev_max[i] - row_max[i]) * scale)
                for i, j in T.Parallel(block_M, block_N):
                    S[i, j] = T.exp2(S[i, j] * scale - row_max[i] * scale)
                T.reduce_sum(S, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                for i, j in T.Parallel(block_M, dim):
                    O_f[i, j] *= rescale[i]
                T.copy(S, P)
                T.gemm(P, V_s, O_f)
            for i, j in T.Parallel(block_M, dim):
                O_f[i, j] /= denom[i]
            T.copy(O_f, O[bz, by, bx * block_M, 0])
            for i in T.Parallel(block_M):
                denom[i] = (row_max[i] * scale + T.log2(denom[i])) / LOG2E
            T.copy(denom, LSE[bz, by, bx * block_M])

    return attention


def make_inputs(rng, batch=1, heads=4, kv_heads=None, seq=100, dim=64, dtype="bfloat16"):
    from harness import numpy_dtype

    kv_heads = kv_heads or heads
    q = rng.standard_normal((batch, heads, seq, dim))
    k = rng.standard_normal((batch, kv_heads, seq, dim))
    v = rng.standard_normal((batch, kv_heads, seq, dim))
    return [x.astype(numpy_dtype(dtype)) for x in (q, k, v)]


def reference(q, k, v, causal=False):
    """Output and log-sum-exp in float64."""
    import numpy as np

    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        seq = q.shape[2]
        scores = np.where(np.tril(np.ones((seq, seq), dtype=bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(axis=-1, keepdims=True)
    return [weights / total @ v, (top + np.log(total))[..., 0]]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(flash_attention.instantiate(), make_inputs, reference, tolerance=1e-2))
