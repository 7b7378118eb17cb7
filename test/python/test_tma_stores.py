"""select-tma-stores and tma-stores (tma=True): an epilogue staged through a shared tile leaves it as thread 0's
TMA boxes, clipped at the tensor's ragged edge. The CPU thread-level simulation (proxy fences, bulk groups and
their pending reads checked, simulate/bulk_stores.py) runs each kernel bit for bit as the direct epilogue; a
missing proxy fence or a tile rewritten before thread 0's wait is reported."""

import ml_dtypes
import tilemlir
import tilemlir.language as T
import numpy as np
import pytest

from support import static_gemm
from tilemlir.backends.cpu.kernel import SimulationError
from tilemlir.passes import tma_stores, warp_specialize
from tilemlir.testing import relative_error

BF16 = ml_dtypes.bfloat16


def operands(rng, m, n, k):
    return rng.standard_normal((m, k)).astype(BF16), rng.standard_normal((k, n)).astype(BF16)


@pytest.mark.parametrize("block, threads, shape, c_dtype, options", [
    # wgmma, two warpgroups, bf16 out: stmatrix into the swizzled tile, four 128-byte panels; ragged M and N
    ((128, 256, 64), 256, (136, 320, 192), "bfloat16", {}),
    # f32 out (no stmatrix: the tile is 32-bit), two 128-byte panels of 32 floats, ragged M
    ((64, 64, 64), 128, (72, 64, 128), "float32", {}),
    # mma.sync fed by TMA: the proxy fence is tma-stores' own (no wgmma fence before the barrier)
    ((64, 64, 32), 128, (80, 72, 96), "bfloat16", {"tensor_cores": "mma_sync"}),
    # warp-specialized, persistent on 2 blocks through 3 x 2 tiles: the end-of-tile barrier at the epilogue's start
    ((64, 64, 64), 128, (136, 128, 192), "bfloat16", {"warp_specialize": True, "persistent": 2}),
])
def test_a_staged_epilogue_stored_by_tma_runs_as_the_direct_one(rng, block, threads, shape, c_dtype, options):
    m, n, k = shape
    staged = static_gemm(*block, n=n, k=k, threads=threads, shared_epilogue=True, c_dtype=c_dtype)
    direct = static_gemm(*block, n=n, k=k, threads=threads, c_dtype=c_dtype)
    compile_options = {"level": "thread", "tensor_cores": "wgmma", "tma": True, **options}
    a, b = operands(rng, m, k=k, n=n)
    got = staged.compile("cpu", **compile_options)(a, b)
    assert np.array_equal(got, direct.compile("cpu", **compile_options)(a, b))
    assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-2


def test_the_cuda_stores_the_tile_by_stmatrix_and_tma_boxes():
    """128 x 256 bf16: 16 stmatrix.x4 a thread (8 elements each, a warp's 4 matrices), 4 boxes of 128 x 64 by
    thread 0 after the proxy fence and the barrier; no thread stores C."""
    fn = static_gemm(128, 256, 64, n=512, k=256, threads=256, shared_epilogue=True, c_dtype="bfloat16")
    kernel = fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True)
    source = kernel.cuda_source()
    assert source.count("tl_stmatrix_x4_f32_bf16(&C_s[") == 16
    assert source.count("tl_tma_store_2d(&C_map, &C_s[") == 4
    assert "__nv_bfloat16* __restrict__ C," in source and "const __nv_bfloat16* __restrict__ C," not in source
    epilogue = source[source.index("tl_stmatrix_x4_f32_bf16(&C_s["):]
    fence, barrier = epilogue.index("tl_fence_proxy_async();"), epilogue.index("__syncthreads();")
    issue = epilogue.index("tl_tma_store_2d(")
    assert fence < barrier < issue < epilogue.index("tl_bulk_commit_group();") < epilogue.index(
        "tl_bulk_wait_group_read<0>();")
    assert epilogue[barrier:issue].splitlines()[-2].strip().startswith("if (")  # thread 0 alone (the init's test)
    assert "&C[" not in source.split("gemm(", 1)[1]
    maps = {m.name: m for m in kernel.signature.tensor_maps}
    assert maps["C_map"].box == (128, 64) and maps["C_map"].swizzle == 128


def test_without_the_proxy_fence_the_simulation_reports_the_unfenced_writes(rng, monkeypatch):
    """mma.sync launches have no wgmma fence before their barriers: without tma-stores' own, the threads' writes
    of the tile are not ordered before the async proxy reads it."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    monkeypatch.setattr(tma_stores, "_fence", lambda barrier: None)
    fn = static_gemm(64, 64, 32, n=72, k=96, shared_epilogue=True, c_dtype="bfloat16")
    kernel = fn.compile("cpu", level="thread", tensor_cores="mma_sync", tma=True)
    with pytest.raises(SimulationError, match=r"tile.tma_store at .*support\.py:\d+:\d+ \(thread 0 of block \d+\) "
                                              r"reads element \d+ of shared buffer 'C_s', which thread \d+ wrote at "
                                              r".* with no tile.fence_proxy_async after the write"):
        kernel(*operands(rng, 80, 72, 96))


def test_a_tile_rewritten_before_thread_0s_wait_is_a_race(rng, monkeypatch):
    """The persistent schedule's next epilogue writes the tile only after thread 0's wait for the last tile's
    stores and the consumers' barrier; without that wait the writes race with the TMA engine's reads."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    monkeypatch.setattr(warp_specialize._Split, "_first_thread_waits", lambda self, b: None)
    fn = static_gemm(64, 64, 64, n=128, k=192, shared_epilogue=True, c_dtype="bfloat16")
    kernel = fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True, warp_specialize=True, persistent=2)
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'C_s' element \d+ in block \d+: thread "
                                              r"\d+ .* while tile.tma_store at .*support\.py:\d+:\d+ by thread 0 may "
                                              r"still read it"):
        kernel(*operands(rng, 136, 128, 192))


def test_an_epilogue_the_block_cannot_hold_goes_out_in_slabs(rng):
    """128 x 256 tiles, 4 stages (192 KiB of rings) and a 64 KiB bf16 staged tile need 257 KiB: the epilogue goes
    out in four 128 x 64 slabs through two slab buffers (225 KiB in all); simulated, persistent on 2 blocks, bit
    for bit the direct epilogue. With 3 stages the whole tile fits and stays one."""
    m, n, k = 136, 512, 256
    options = {"level": "thread", "tensor_cores": "wgmma", "tma": True, "warp_specialize": True, "persistent": 2}
    staged = static_gemm(128, 256, 64, n=n, k=k, threads=256, num_stages=4, shared_epilogue=True, c_dtype="bfloat16")
    direct = static_gemm(128, 256, 64, n=n, k=k, threads=256, num_stages=4, c_dtype="bfloat16")
    a, b = operands(rng, m, n, k)
    got = staged.compile("cpu", **options)(a, b)
    assert np.array_equal(got, direct.compile("cpu", **options)(a, b))
    assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-2
    cuda = {key: value for key, value in options.items() if key != "level"}
    kernel = staged.compile("cuda", arch="sm_90a", **cuda)
    source = kernel.cuda_source()
    assert kernel.signature.shared_bytes <= 227 * 1024
    assert "C_s_slab0 =" in source and "C_s_slab1 =" in source and " C_s =" not in source
    assert source.count("tl_tma_store_2d(&C_map, &C_s_slab") == 4
    three = static_gemm(128, 256, 64, n=n, k=k, threads=256, num_stages=3, shared_epilogue=True, c_dtype="bfloat16")
    source = three.compile("cuda", arch="sm_90a", **cuda).cuda_source()
    assert " C_s =" in source and "slab" not in source


def test_a_direct_epilogue_goes_out_in_slabs_unless_it_says_disable_tma(rng):
    """examples/gemm.py's epilogue, `T.copy(C_f, C[...])`, with tma=True on wgmma: through two 128 x 64 slab
    buffers, stmatrix in and TMA boxes out; simulated, bit for bit the kernel with direct stores (tma=False).
    `T.copy(C_f, C[...], disable_tma=True)` keeps the direct stores."""
    m, n, k = 136, 320, 192
    fn = static_gemm(128, 256, 64, n=n, k=k, threads=256, c_dtype="bfloat16")
    a, b = operands(rng, m, n, k)
    got = fn.compile("cpu", level="thread", tensor_cores="wgmma", tma=True)(a, b)
    assert np.array_equal(got, fn.compile("cpu", level="thread", tensor_cores="wgmma")(a, b))
    source = fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True).cuda_source()
    assert "C_f_slab0 =" in source and source.count("tl_tma_store_2d(&C_map, &C_f_slab") == 4
    assert source.count("tl_stmatrix_x4_f32_bf16(&C_f_slab") == 16 and "&C[" not in source.split("gemm(", 1)[1]
    kept = static_gemm(128, 256, 64, n=n, k=k, threads=256, c_dtype="bfloat16", disable_tma_out=True)
    source = kept.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True).cuda_source()
    assert "slab" not in source and "tl_tma_store" not in source and "&C[" in source


def bias_relu_gemm(n, k, block=(64, 128, 64), threads=128, stages=3):
    """fp16 C = relu(A @ B^T + bias): B stored N x K (a linear layer's weight), the epilogue a T.Parallel over
    the accumulator before its direct copy out."""
    block_m, block_n, block_k = block
    M = T.symbolic("M")

    @tilemlir.jit(out_idx=[3])
    def gemm(A: T.Tensor((M, k), "float16"), B: T.Tensor((n, k), "float16"), bias: T.Tensor((n,), "float32"),
             C: T.Tensor((M, n), "float16")):
        with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(M, block_m), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_m, block_k), "float16")
            B_s = T.alloc_shared((block_n, block_k), "float16")
            C_f = T.alloc_fragment((block_m, block_n), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                T.copy(A[by * block_m, ko * block_k], A_s)
                T.copy(B[bx * block_n, ko * block_k], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            for i, j in T.Parallel(block_m, block_n):
                C_f[i, j] = T.max(C_f[i, j] + bias[bx * block_n + j], 0)
            T.copy(C_f, C[by * block_m, bx * block_n])

    return gemm


def test_a_parallel_epilogue_then_slabs_on_the_persistent_schedule(rng):
    """fp16, B K-major, bias and ReLU applied to the accumulator, then the slabs (2 of 64 columns): persistent on
    3 blocks over 3 x 2 ragged tiles, bit for bit the kernel with direct stores and no warp specialization."""
    m, n, k = 150, 200, 192
    fn = bias_relu_gemm(n, k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    options = {"level": "thread", "tensor_cores": "wgmma", "tma": True, "warp_specialize": True, "persistent": 3}
    got = fn.compile("cpu", **options)(a, b, bias)
    assert np.array_equal(got, fn.compile("cpu", level="thread", tensor_cores="wgmma")(a, b, bias))
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64).T + bias, 0)
    assert relative_error(got, want) <= 1e-3
    source = fn.compile("cuda", arch="sm_90a", **{key: v for key, v in options.items() if key != "level"}).cuda_source()
    assert source.count("tl_stmatrix_x4_f32_f16(&C_f_slab") == 8 and source.count("tl_tma_store_2d(&C_map") == 2


def test_two_epilogues_of_one_accumulator_take_slab_buffers_of_their_own(rng):
    """The accumulator copied into two tensors: each copy gets its two slab buffers (named apart in the CUDA)
    and its TMA stores; the stores of one tensor never mix with the other's."""
    M = T.symbolic("M")

    @tilemlir.jit(out_idx=[2, 3])
    def gemm(A: T.Tensor((M, 128), "bfloat16"), B: T.Tensor((128, 128), "bfloat16"),
             C: T.Tensor((M, 128), "bfloat16"), D: T.Tensor((M, 128), "bfloat16")):
        with T.Kernel(1, T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 64), "bfloat16")
            B_s = T.alloc_shared((64, 128), "bfloat16")
            C_f = T.alloc_fragment((64, 128), "float32")
            T.clear(C_f)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[by * 64, k * 64], A_s)
                T.copy(B[k * 64, 0], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 64, 0])
            T.copy(C_f, D[by * 64, 0])

    source = gemm.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True).cuda_source()
    for name in ("C_f_slab0", "C_f_slab1", "C_f_slab0_1", "C_f_slab1_1"):
        assert f"__nv_bfloat16* {name} = " in source
    assert source.count("tl_tma_store_2d(&C_map") == 2 and source.count("tl_tma_store_2d(&D_map") == 2
    a, b = operands(rng, 72, 128, 128)
    c, d = gemm.compile("cpu", level="thread", tensor_cores="wgmma", tma=True)(a, b)
    assert np.array_equal(c, d)
    assert relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-2
