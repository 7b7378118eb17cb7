"""Row softmax, online: float16 in and out, float32 math.

One block handles `block_M` rows. A first pass streams each row through a
register fragment `block_N` columns at a time, keeping a running maximum
`m` and a running sum `s` of exp(x - m) (the sum is rescaled whenever the
maximum grows). A second pass reads the row again and writes
exp(x - m) / s. Rows of any length N that is a multiple of `block_N` work;
when `block_N == N` the row is read from global memory only twice.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def softmax(N=4096, block_M=1, block_N=1024, threads=128):
    assert N % block_N == 0, "softmax: N must be a multiple of block_N"
    M = T.symbolic("M")
    n_chunks = N // block_N

    @T.prim_func
    def softmax_kernel(X: T.Tensor((M, N), T.float16), Y: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), T.float32)
            m = T.alloc_fragment((block_M,), T.float32)
            s = T.alloc_fragment((block_M,), T.float32)
            chunk_max = T.alloc_fragment((block_M,), T.float32)
            chunk_sum = T.alloc_fragment((block_M,), T.float32)
            T.fill(m, -T.infinity(T.float32))
            T.clear(s)
            for k in range(n_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                T.reduce_max(x, chunk_max, dim=1)
                for i in T.Parallel(block_M):
                    m_new = T.max(m[i], chunk_max[i])
                    s[i] = s[i] * T.exp(m[i] - m_new)
                    m[i] = m_new
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp(x[i, j] - m[i])
                T.reduce_sum(x, chunk_sum, dim=1)
                for i in T.Parallel(block_M):
                    s[i] += chunk_sum[i]
            for k in range(n_chunks):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp(x[i, j] - m[i]) / s[i]
                T.copy(x, Y[bx * block_M, k * block_N])

    return softmax_kernel


def make_inputs(rng, rows=37, n=4096):
    return [(3 * rng.standard_normal((rows, n))).astype("float16")]


def reference(x):
    x = x.astype("float64")
    e = __import__("numpy").exp(x - x.max(axis=1, keepdims=True))
    return [e / e.sum(axis=1, keepdims=True)]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(softmax.instantiate(), make_inputs, reference, tolerance=2e-3))
