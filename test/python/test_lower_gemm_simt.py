"""lower-gemm-simt end to end: T.gemm compiled to CUDA (NVRTC, no GPU needed) and run at thread level on
the CPU backend (the GPU lowering simulated, races and out-of-range accesses errors) against float64 numpy
references on fresh random inputs: transposed operands, ragged M, N, K, fragment operands, integers. Every
compile here passes tensor_cores=False, so the f16/bf16 gemms that select-mma would give the tensor cores stay on
CUDA cores (test_lower_gemm_mma.py tests those)."""

import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.testing import relative_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def gemm_example():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import gemm

    return gemm


# -- CUDA text of examples/gemm.py --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example_source():
    fn = gemm_example().matmul.instantiate(N=256, K=256, block_M=32, block_N=32, block_K=16, threads=128)
    kernel = tilemlir.compile(fn, target="cuda", tensor_cores=False)  # NVRTC compiles it for the target arch
    assert kernel.cubin[:4] == b"\x7fELF"
    return kernel.cuda_source()


def k_loop_body(source: str) -> str:
    """The pipelined loop over K tiles: from its `for` to the store of the result after it."""
    start = source.index("for (int i = 0; i < 16; ++i)")
    return source[start:source.index(f"// gemm.py:{example_line('T.copy(C_f, C[')}", start)]


def example_line(text: str) -> int:
    """The line of examples/gemm.py holding `text`: the emitter's `// gemm.py:N` comments name it."""
    lines = (EXAMPLES / "gemm.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_example_k_loop_reads_both_shared_tiles(example_source):
    loop = re.search(r"for \(int k = 0; k < 16; \+\+k\) \{\n(.*?)\n\s*\}", example_source, re.S)
    assert loop, "no serial k loop of 16 steps in the generated source"
    # both operands read from the same slot of their T.Pipelined(num_stages=3) rings
    assert re.search(r"acc \+= __half2float\(A_s\[(\w+)\]\[\w+\]\[k\]\) \* __half2float\(B_s\[\1\]\[k\]\[\w+\]\);",
                     loop.group(1))


def test_example_k_loop_is_a_three_stage_ring_with_one_barrier(example_source):
    """T.Pipelined(num_stages=3): tiles 0 and 1 are copied (cp.async) before the loop, each iteration waits for
    its tile, synchronizes once, copies tile i + 2 into slot (i + 2) % 3 and computes on slot i % 3, both slots
    counters the loop carries (carry-ring-slots) and steps at its end."""
    start = example_source.index("for (int i = 0; i < 16; ++i)")
    prologue, body = example_source[:start], k_loop_body(example_source)
    assert prologue.count("tl_cp_async_commit();") == 2
    assert "tl_cp_async_cg16(&A_s[0][" in prologue and "tl_cp_async_cg16(&B_s[1][" in prologue
    assert body.count("__syncthreads();") == 1
    wait, barrier = body.index("tl_cp_async_wait<1>();"), body.index("__syncthreads();")
    assert "int slot = 0;\n  int slot_ahead2 = 2;\n  for (int i = 0; i < 16; ++i)" in example_source
    assert "% 3" not in body
    first_write = body.index("tl_cp_async_cg16(&A_s[slot_ahead2]")
    # rows past M are zero-filled by the copy itself (src_bytes), not by per-element stores
    assert re.search(r"tl_cp_async_cg16\(&A_s\[\w+\]\[\w+\]\[\w+\], &A\[[^;]*\], \(unsigned\)\(\w+ < M \? 16 : 0\)\);",
                     body), body
    assert "0.0f" not in body
    commit = body.index("tl_cp_async_commit();")
    first_read = body.index("A_s[slot]")
    step_read = re.search(r"int (\w+) = slot \+ 1;\n.*slot = \1 == 3 \? 0 : \1;", body, re.DOTALL)
    step_write = re.search(r"int (\w+) = slot_ahead2 \+ 1;\n.*slot_ahead2 = \1 == 3 \? 0 : \1;", body, re.DOTALL)
    assert step_read and step_write, body
    assert wait < barrier < first_write < commit < first_read < step_read.start(), body


# -- CPU thread level ---------------------------------------------------------------------------------------------


def ragged_gemm(block_M, block_N, block_K, trans_a, trans_b, dtype="float16", accum="float32", threads=128,
                a_fragment=False):
    """C = op(A) @ op(B) for run-time M, N, K (blocks at the edges padded by the copies)."""
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (block_K, block_M) if trans_a else (block_M, block_K)
    b_tile = (block_N, block_K) if trans_b else (block_K, block_N)

    @tilemlir.jit(out_idx=[2])
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            if a_fragment:
                A_t = T.alloc_fragment(a_tile, dtype)
            else:
                A_t = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                if trans_a:
                    T.copy(A[k * block_K, by * block_M], A_t)
                else:
                    T.copy(A[by * block_M, k * block_K], A_t)
                if trans_b:
                    T.copy(B[bx * block_N, k * block_K], B_s)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_t, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm


def operands(rng, m, n, k, trans_a, trans_b, dtype):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    return a, b, want


@pytest.mark.parametrize("trans_a, trans_b", [(True, False), (False, True), (True, True)])
def test_transposed_operands_at_thread_level(trans_a, trans_b, rng):
    kernel = tilemlir.compile(ragged_gemm(32, 32, 16, trans_a, trans_b), target="cpu", level="thread", tensor_cores=False)
    a, b, want = operands(rng, 64, 96, 48, trans_a, trans_b, np.float16)
    assert relative_error(kernel(a, b), want) <= 1e-3


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, True)])
def test_ragged_sizes_at_thread_level(trans_a, trans_b, rng):
    """M, N, K not multiples of the blocks: the edge tiles read padding 0 and write only inside C."""
    kernel = tilemlir.compile(ragged_gemm(32, 32, 16, trans_a, trans_b), target="cpu", level="thread", tensor_cores=False)
    a, b, want = operands(rng, 45, 70, 37, trans_a, trans_b, np.float16)
    assert relative_error(kernel(a, b), want) <= 1e-3


def test_bfloat16_with_a_fragment_operand_at_thread_level(rng):
    """A fragment A is staged through shared memory; the result matches the tile-level reference exactly."""
    fn = ragged_gemm(32, 64, 16, False, False, dtype="bfloat16", a_fragment=True)
    a, b, want = operands(rng, 50, 100, 40, False, False, ml_dtypes.bfloat16)
    got = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=False)(a, b)
    assert relative_error(got, want) <= 1e-3
    reference = tilemlir.compile(fn, target="cpu", level="tile")(a, b)
    assert np.array_equal(got, reference)


def test_fragment_operand_is_copied_to_shared_before_the_loop():
    fn = ragged_gemm(32, 64, 16, False, False, a_fragment=True)
    module = fn.frontend().module()
    with module.context:
        run_pipeline(module, "lower-gemm-simt")
        lowered = str(module)
    assert "tile.gemm" not in lowered
    assert re.search(r'"tile.alloc_shared"\(\) \{name = "A_t_gemm"\} : \(\) -> memref<32x16xf16, "shared">', lowered)
    assert re.search(r'"tile.copy"\(%\w+, %\w+(, %c0\w*){4}\) \{shape = \[32, 16\]\}', lowered)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_int8_accumulates_exactly_in_int32_at_thread_level(dtype, rng):
    """Signed operands widen with extsi, unsigned ones (values >= 128) with extui; sums are exact."""
    fn = ragged_gemm(32, 32, 32, False, True, dtype=dtype, accum="int32", a_fragment=True)
    info = np.iinfo(dtype)
    low = info.min if dtype == "int8" else 100
    a = rng.integers(low, info.max, (40, 70), dtype=dtype, endpoint=True)
    b = rng.integers(low, info.max, (33, 70), dtype=dtype, endpoint=True)
    got = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=False)(a, b)
    assert np.array_equal(got, a.astype(np.int64) @ b.astype(np.int64).T)


def test_float16_accumulator_rounds_like_the_tile_level_reference(rng):
    """f16 inputs into an f16 accumulator: both levels add in f16 with k ascending, so they agree bitwise."""
    fn = ragged_gemm(32, 32, 16, False, False, dtype="float16", accum="float16")
    a, b, want = operands(rng, 40, 64, 48, False, False, np.float16)
    got = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=False)(a, b)
    assert np.array_equal(got, tilemlir.compile(fn, target="cpu", level="tile")(a, b))
    assert relative_error(got, want) <= 1e-2
