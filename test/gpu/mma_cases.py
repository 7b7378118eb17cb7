"""The tensor-core GEMMs test_gemm_mma_gpu.py runs, by name, and how to get each one compiled: here (with the
compiler) they compile, on the offline GPU machine (no MLIR) they load from test/gpu/artifacts/<name>/, which
`build_artifacts.py` exports."""

import tilemlir.language as T
from example_cases import ARTIFACTS, ExampleCase, compiler_available


def gemm_prim_func(block_M, block_N, block_K, trans_a=False, trans_b=False, dtype="float16", accum="float32",
                out_dtype="float32", threads=128, a_fragment=False, epilogue=False, num_stages=2, m=None, n=None, k=None,
                b_dtype=None, staged=False):
    """The prim_func of C = op(A) @ op(B) (then + bias and ReLU with `epilogue`) over run-time M, N, K (or the
    static `m`, `n`, `k` given: a tensor map needs the inner dims known); C passed by the caller; B of `b_dtype`
    where it differs from A's (fp8 kinds); with `staged` the result goes through a shared tile of C's dtype."""
    M, N, K = m or T.symbolic("M"), n or T.symbolic("N"), k or T.symbolic("K")
    b_dtype = b_dtype or dtype
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (block_K, block_M) if trans_a else (block_M, block_K)
    b_tile = (block_N, block_K) if trans_b else (block_K, block_N)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, b_dtype), bias: T.Tensor((N,), accum),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            if a_fragment:
                A_t = T.alloc_fragment(a_tile, dtype)
            else:
                A_t = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, b_dtype)
            C_s = T.alloc_shared((block_M, block_N), out_dtype) if staged else None
            C_f = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_a:
                    T.copy(A[k * block_K, by * block_M], A_t)
                else:
                    T.copy(A[by * block_M, k * block_K], A_t)
                if trans_b:
                    T.copy(B[bx * block_N, k * block_K], B_s)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_t, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            if epilogue:
                for i, j in T.Parallel(block_M, block_N):
                    C_f[i, j] = T.max(C_f[i, j] + bias[bx * block_N + j], 0)
            if staged:
                T.copy(C_f, C_s)
                T.copy(C_s, C[by * block_M, bx * block_N])
            else:
                T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm



# mma.sync cases (tensor_cores="mma_sync": sm_90a would take wgmma where it can), then wgmma ones
MMA_CASES = {
    "mma_bf16_128x128x32": dict(block_M=128, block_N=128, block_K=32, dtype="bfloat16"),
    "mma_f16_128x128x32": dict(block_M=128, block_N=128, block_K=32, dtype="float16"),
    **{f"mma_{short}_trans_{int(ta)}{int(tb)}": dict(block_M=128, block_N=128, block_K=32, trans_a=ta, trans_b=tb,
                                                     dtype=dtype)
       for short, dtype in (("bf16", "bfloat16"), ("f16", "float16"))
       for ta, tb in ((False, True), (True, False), (True, True))},
    "mma_bf16_64x64x64": dict(block_M=64, block_N=64, block_K=64, threads=128, dtype="bfloat16"),
    "mma_bf16_128x256x32": dict(block_M=128, block_N=256, block_K=32, threads=256, dtype="bfloat16"),
    "mma_bf16_256x128x32": dict(block_M=256, block_N=128, block_K=32, threads=256, dtype="bfloat16"),
    "mma_bf16_fragment_a": dict(block_M=64, block_N=64, block_K=32, dtype="bfloat16", a_fragment=True),
    "mma_f16_accumulate_f16": dict(block_M=128, block_N=128, block_K=32, dtype="float16", accum="float16",
                                   out_dtype="float16"),
    "mma_bf16_bias_relu": dict(block_M=128, block_N=128, block_K=32, dtype="bfloat16", out_dtype="bfloat16",
                               epilogue=True),
}
WGMMA_CASES = {
    # 128, 64 and 32-byte swizzled A (block_K 64, 32, 16); B always N-major in 128-byte panels
    **{f"wgmma_{short}_128x128x{bk}": dict(block_M=128, block_N=128, block_K=bk, dtype=dtype, num_stages=3)
       for short, dtype in (("bf16", "bfloat16"), ("f16", "float16")) for bk in (64, 32, 16)},
    **{f"wgmma_bf16_trans_{int(ta)}{int(tb)}": dict(block_M=128, block_N=128, block_K=64, trans_a=ta, trans_b=tb,
                                                    dtype="bfloat16", num_stages=3)
       for ta, tb in ((False, True), (True, False), (True, True))},
    "wgmma_bf16_64x64x64": dict(block_M=64, block_N=64, block_K=64, dtype="bfloat16"),
    "wgmma_bf16_128x256x64": dict(block_M=128, block_N=256, block_K=64, threads=256, dtype="bfloat16", num_stages=3),
    "wgmma_bf16_256x128x64": dict(block_M=256, block_N=128, block_K=64, threads=256, dtype="bfloat16", num_stages=3),
    "wgmma_bf16_64x256x32_split_n": dict(block_M=64, block_N=256, block_K=32, threads=256, dtype="bfloat16"),
    "wgmma_bf16_bias_relu": dict(block_M=128, block_N=128, block_K=64, dtype="bfloat16", out_dtype="bfloat16",
                                 epilogue=True, num_stages=3),
}
# TMA-fed (tma=True): ring copies as TMA boxes on mbarriers. The tensors' inner dims are static (N, K; M too when
# A is stored K x M); the ragged ones are not multiples of the tile; M runs over several sizes.
TMA_CASES = {
    **{f"tma_wgmma_{short}_128x128x64_4096": dict(block_M=128, block_N=128, block_K=64, dtype=dtype, num_stages=4,
                                                   n=4096, k=4096)
       for short, dtype in (("bf16", "bfloat16"), ("f16", "float16"))},
    **{f"tma_wgmma_bf16_128x128x{bk}_ragged": dict(block_M=128, block_N=128, block_K=bk, dtype="bfloat16",
                                                    num_stages=4, n=1000, k=1000)
       for bk in (64, 32, 16)},
    "tma_wgmma_bf16_trans_01": dict(block_M=128, block_N=128, block_K=64, trans_b=True, dtype="bfloat16",
                                    num_stages=3, n=768, k=520),
    "tma_wgmma_bf16_trans_10": dict(block_M=128, block_N=128, block_K=64, trans_a=True, dtype="bfloat16",
                                    num_stages=3, m=1000, n=768, k=520),
    "tma_wgmma_bf16_trans_11": dict(block_M=128, block_N=128, block_K=64, trans_a=True, trans_b=True,
                                    dtype="bfloat16", num_stages=3, m=1000, n=768, k=520),
    "tma_wgmma_bf16_128x256x64": dict(block_M=128, block_N=256, block_K=64, threads=256, dtype="bfloat16",
                                      num_stages=3, n=1024, k=1040),
    "tma_wgmma_bf16_256x128x64": dict(block_M=256, block_N=128, block_K=64, threads=256, dtype="bfloat16",
                                      num_stages=3, n=1024, k=1040),
    "tma_wgmma_bf16_bias_relu": dict(block_M=128, block_N=128, block_K=64, dtype="bfloat16", out_dtype="bfloat16",
                                     epilogue=True, num_stages=3, n=640, k=384),
    "tma_mma_bf16_128x128x32": dict(block_M=128, block_N=128, block_K=32, dtype="bfloat16", num_stages=3,
                                    n=1024, k=1040),
}
TMA_WGMMA = ("tl_tma_load_2d(", "tl_mbarrier_wait(", "tl_wgmma_m64n")
# Warp-specialized (tma=True, warp_specialize=True): a producer warpgroup issues the TMA boxes, the user's threads
# run the wgmma and release each slot on an `empty` mbarrier; ragged N/K, one and two consumer warpgroups.
WS_CASES = {
    "ws_wgmma_bf16_128x128x64_4096": dict(block_M=128, block_N=128, block_K=64, dtype="bfloat16", num_stages=4,
                                          n=4096, k=4096),
    "ws_wgmma_bf16_128x128x64_ragged": dict(block_M=128, block_N=128, block_K=64, dtype="bfloat16", num_stages=3,
                                            n=1000, k=1000),
    "ws_wgmma_bf16_128x256x64": dict(block_M=128, block_N=256, block_K=64, threads=256, dtype="bfloat16",
                                     num_stages=3, n=1024, k=1040),
    # persistent: a grid of the SM count walking the tiles; and 7 blocks, each through many tiles of a ragged grid
    "ws_persistent_bf16_128x256x64_4096": dict(block_M=128, block_N=256, block_K=64, threads=256, dtype="bfloat16",
                                               num_stages=4, n=4096, k=4096, persistent=True),
    "ws_persistent_bf16_128x128x64_ragged": dict(block_M=128, block_N=128, block_K=64, dtype="bfloat16",
                                                 num_stages=3, n=1000, k=1000, persistent=7),
    # the result staged through a swizzled shared tile (bf16 out: stmatrix in, TMA stores out): persistent at
    # 4096, and ragged N on 5 blocks
    "ws_persistent_bf16_128x256x64_staged": dict(block_M=128, block_N=256, block_K=64, threads=256, dtype="bfloat16",
                                                 out_dtype="bfloat16", num_stages=3, n=4096, k=4096, persistent=True,
                                                 staged=True),
    "ws_persistent_bf16_128x128x64_staged_ragged": dict(block_M=128, block_N=128, block_K=64, dtype="bfloat16",
                                                        out_dtype="bfloat16", num_stages=3, n=1000, k=1000,
                                                        persistent=5, staged=True),
    # 4 stages leave no room for the whole staged tile: the epilogue goes out in 128 x 64 slabs
    "ws_persistent_bf16_128x256x64_staged_slabs": dict(block_M=128, block_N=256, block_K=64, threads=256,
                                                       dtype="bfloat16", out_dtype="bfloat16", num_stages=4, n=4096,
                                                       k=4096, persistent=True, staged=True),
}
WS_WGMMA = (*TMA_WGMMA, "tl_mbarrier_arrive(")
# fp8 wgmma m64nNk32 (K-major A and B: B stored N x K): 128/64/32-byte rows, mixed kinds, two warpgroups
FP8_WGMMA_CASES = {
    "wgmma_e4m3_128x128x128": dict(block_M=128, block_N=128, block_K=128, trans_b=True, dtype="float8_e4m3",
                                   num_stages=3),
    "wgmma_e4m3_e5m2_128x128x64": dict(block_M=128, block_N=128, block_K=64, trans_b=True, dtype="float8_e4m3",
                                       b_dtype="float8_e5m2", num_stages=3),
    "wgmma_e5m2_128x256x32": dict(block_M=128, block_N=256, block_K=32, trans_b=True, dtype="float8_e5m2",
                                  threads=256, num_stages=4),
}
# the helpers each family's CUDA must call: the proof it took that path
CASE_MARKERS = {**{name: ("tl_mma_m16n8k16_",) for name in MMA_CASES},
                **{name: ("tl_wgmma_m64n",) for name in WGMMA_CASES},
                **{name: ("tl_tma_load_2d(", "tl_mbarrier_wait(", "tl_mma_m16n8k16_") if "_mma_" in name else TMA_WGMMA
                   for name in TMA_CASES},
                **{name: ("tl_wgmma_m64n",) for name in FP8_WGMMA_CASES},
                **{name: WS_WGMMA for name in WS_CASES}}


# examples/gemm.py unchanged at N = K = 4096 (f16 in and out, 128x128x32 tiles, 3 stages); M is symbolic.
GEMM_EXAMPLE = ExampleCase("gemm_f16_4096x4096", "gemm", "matmul", {"N": 4096, "K": 4096})


# examples/fp8_gemm.py (DeepSeek-V3 block scales) at an issue-20 shape, on wgmma; M is symbolic.
FP8_GEMM_EXAMPLE = ExampleCase("fp8_gemm_7168x2048", "fp8_gemm", "fp8_gemm", {"N": 7168, "K": 2048},
                               options={"arch": "sm_90a", "tensor_cores": "wgmma"})


def compile_case(name: str):
    import tilemlir

    params = dict({**MMA_CASES, **WGMMA_CASES, **TMA_CASES, **FP8_WGMMA_CASES, **WS_CASES}[name])
    wgmma = name not in MMA_CASES and not (name in TMA_CASES and "_mma_" in name)
    split = {"warp_specialize": True, "persistent": params.pop("persistent", False)} if name in WS_CASES else {}
    kernel = tilemlir.compile(gemm_prim_func(**params), target="cuda", arch="sm_90a",
                              tensor_cores="wgmma" if wgmma else "mma_sync", tma=name in TMA_CASES or name in WS_CASES,
                              **split)
    _check_markers(name, kernel.cuda_source(), "did not take")
    return kernel


def _check_markers(name: str, source: str, what: str) -> None:
    missing = [m for m in CASE_MARKERS[name] if m not in source]
    assert not missing, f"{name} {what} the {' + '.join(CASE_MARKERS[name])} path (no {', '.join(missing)})"


def mma_kernel(name: str):
    """Case `name` compiled (with the compiler here) or loaded from its artifact (on the GPU machine)."""
    if compiler_available():
        return compile_case(name)
    from tilemlir.runtime import load

    if not (ARTIFACTS / name / "signature.json").is_file():
        raise FileNotFoundError(f"no compiler here (torch_mlir) and no artifact {ARTIFACTS / name}: run "
                                "`python test/gpu/build_artifacts.py` where the compiler is and carry test/gpu/artifacts")
    kernel = load(ARTIFACTS / name)
    _check_markers(name, kernel.cuda_source(), "'s artifact is not a GEMM of")
    return kernel
