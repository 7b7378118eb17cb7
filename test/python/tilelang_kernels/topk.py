# TileLang's examples/topk/example_topk.py, from https://github.com/tile-ai/tilelang/blob/a35008a42531c62b976ae4cec3855d4383db0f3c/examples/topk/example_topk.py
# Copyright (c) Tile-AI. MIT License: https://github.com/tile-ai/tilelang/blob/a35008a42531c62b976ae4cec3855d4383db0f3c/LICENSE
#
# Test data (test_tilelang_kernels.py), not tilemlir code: the kernel definitions of that file, unchanged
# except their import lines, which say tilemlir (each marked "# was: ..."); its driver code (torch on CUDA,
# benchmarks) and the imports only that code used are left out.
# fmt: off
# ruff: noqa

import tilemlir as tilelang  # was: import tilelang
import tilemlir.language as T  # was: import tilelang.language as T
import itertools


def get_configs():
    iter_params = dict(
        blk_m=[64, 128, 256],
        threads=[128, 256, 512],
    )
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


@tilelang.autotune(configs=get_configs())
@tilelang.jit
def tl_topk(logits, topk, blk_m, threads=128):
    M, N = T.const("M, N")
    dtype = T.float32

    logits: T.Tensor([M, N], dtype)
    topk_gates = T.empty([M, topk], dtype)
    topk_indices = T.empty([M, topk], T.int32)

    with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
        logits_frag = T.alloc_fragment([blk_m, N], dtype=dtype)
        max_val = T.alloc_fragment([blk_m], dtype=dtype)
        expand_max_idx = T.alloc_fragment([blk_m, N], T.int32)
        max_idx = T.alloc_fragment([blk_m], T.int32)

        T.copy(logits[bx * blk_m, 0], logits_frag)

        for k in T.serial(topk):
            T.fill(expand_max_idx, -1)
            T.reduce_max(logits_frag, max_val, dim=1, clear=True)

            for i, j in T.Parallel(blk_m, N):
                expand_max_idx[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], j, expand_max_idx[i, j])

            T.reduce_max(expand_max_idx, max_idx, dim=1, clear=True)

            for i, j in T.Parallel(blk_m, N):
                logits_frag[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], -10000.0, logits_frag[i, j])

            for i in T.Parallel(blk_m):
                topk_gates[bx * blk_m + i, k] = max_val[i]
                topk_indices[bx * blk_m + i, k] = max_idx[i]

    return topk_gates, topk_indices
