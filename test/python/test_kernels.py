"""The kernel library (tilemlir.kernels) on the CPU backend, at tile level and thread level,
against float64 numpy references on fresh random inputs."""

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from tilemlir.kernels import activation, elementwise, norm, quant, reduce, softmax
from tilemlir.testing import relative_error

BF16 = ml_dtypes.bfloat16
FP8 = ml_dtypes.float8_e4m3fn
LEVELS = ("tile", "thread")


def cpu(factory, level, **kwargs):
    return tilemlir.compile(factory.instantiate(**kwargs), target="cpu", level=level)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [512, 576])
def test_rmsnorm(level, N, rng):
    x = rng.standard_normal((7, N)).astype(BF16)
    w = (1 + 0.1 * rng.standard_normal(N)).astype(BF16)
    y = cpu(norm.rmsnorm, level, N=N)(x, w, 1e-6)
    xd = x.astype(np.float64)
    want = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-6) * w.astype(np.float64)
    assert relative_error(y, want) < 1e-2


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [512, 576])  # 576: config.row_layout's 4-byte chunks, 4 rows a block
def test_add_layernorm(level, N, rng):
    x, r = (rng.standard_normal((5, N)).astype(BF16) for _ in range(2))
    w = (1 + 0.1 * rng.standard_normal(N)).astype(BF16)
    b = (0.1 * rng.standard_normal(N)).astype(BF16)
    y, h = cpu(norm.add_layernorm, level, N=N)(x, r, w, b, 1e-5)
    hd = (x.astype(np.float32) + r.astype(np.float32)).astype(BF16)
    assert np.array_equal(h.view(np.uint16), hd.view(np.uint16))
    hd = hd.astype(np.float64)
    mean = hd.mean(1, keepdims=True)
    want = (hd - mean) / np.sqrt(((hd - mean) ** 2).mean(1, keepdims=True) + 1e-5) * w.astype(np.float64) + b
    assert relative_error(y, want) < 1e-2


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [1024, 576])
def test_softmax(level, N, rng):
    x = (3 * rng.standard_normal((6, N))).astype(np.float16)
    y = cpu(softmax.softmax, level, N=N, dtype="float16")(x)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    assert relative_error(y, e / e.sum(1, keepdims=True)) < 2e-3


@pytest.mark.parametrize("level", LEVELS)
def test_row_reductions(level, rng):
    x = rng.standard_normal((9, 1024)).astype(np.float32)
    assert relative_error(cpu(reduce.row_sum, level, N=1024)(x), x.astype(np.float64).sum(1)) < 1e-5
    assert np.array_equal(cpu(reduce.row_max, level, N=1024)(x), x.max(1))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [512, 576])
def test_quant_row_fp8_bitwise(level, N, rng):
    x = (rng.standard_normal((5, N)) * rng.uniform(0.01, 100, (5, 1))).astype(BF16)
    q, s = cpu(quant.quant_row_fp8, level, N=N)(x)
    amax = np.abs(x.astype(np.float32)).max(1)
    want_s = amax * np.float32(1 / 448.0)  # PyTorch's amax / 448: a product with the reciprocal
    want_q = (x.astype(np.float32) / want_s[:, None]).astype(FP8)
    assert np.array_equal(s, want_s)
    assert np.array_equal(q.view(np.uint8), want_q.view(np.uint8))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [320, 1, 5, 64, 100])  # two full 128-blocks and a half block; one group under 128
def test_quant_block_fp8_ragged(level, N, rng):
    """A row narrower than a group is one group of N columns (it used to fail the verifier for any N < 128)."""
    x = (rng.standard_normal((11, N)) * 5).astype(BF16)
    q, s = cpu(quant.quant_block_fp8, level, N=N)(x)
    xf = x.astype(np.float32)
    assert s.shape == (11, -(-N // 128))
    for g in range(s.shape[1]):
        block = xf[:, g * 128:(g + 1) * 128]
        want_s = np.abs(block).max(1) * np.float32(1 / 448.0)
        assert np.array_equal(s[:, g], want_s)
        want_q = (block / want_s[:, None]).astype(FP8)
        assert np.array_equal(q[:, g * 128:(g + 1) * 128].view(np.uint8), want_q.view(np.uint8))


@pytest.mark.parametrize("level", LEVELS)
def test_silu_mul(level, rng):
    N = 512
    x = rng.standard_normal((4, 2 * N)).astype(BF16)
    y = cpu(activation.silu_mul, level, N=N)(x)
    g, u = x[:, :N].astype(np.float64), x[:, N:].astype(np.float64)
    assert relative_error(y, g / (1 + np.exp(-g)) * u) < 1e-2


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_elementwise_add_mul_ragged(level, dtype, rng):
    n = 3 * 8192 + 13
    npdt = np.float32 if dtype == "float32" else BF16
    a, b = (rng.standard_normal(n).astype(npdt) for _ in range(2))
    add = cpu(elementwise.add, level, dtype=dtype)(a, b)
    mul = cpu(elementwise.mul, level, dtype=dtype)(a, b)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    assert np.array_equal(add.astype(np.float32), (af + bf).astype(npdt).astype(np.float32))
    assert np.array_equal(mul.astype(np.float32), (af * bf).astype(npdt).astype(np.float32))


@pytest.mark.parametrize("level", LEVELS)
def test_cast_bf16_to_fp8_bitwise(level, rng):
    x = (rng.standard_normal(5000) * 50).astype(BF16)
    y = cpu(elementwise.cast, level, src="bfloat16", dst="float8_e4m3")(x)
    assert np.array_equal(y.view(np.uint8), x.astype(np.float32).astype(FP8).view(np.uint8))


CUDA_CASES = [
    (elementwise.add, {"dtype": "bfloat16"}),
    (elementwise.cast, {"src": "float32", "dst": "bfloat16"}),
    (softmax.softmax, {"N": 65536, "dtype": "bfloat16"}),
    *[(factory, {"N": n}) for n in (4096, 576) for factory in (
        norm.rmsnorm, norm.add_layernorm, reduce.row_sum, quant.quant_row_fp8, quant.quant_block_fp8,
        activation.silu_mul)],
    (quant.quant_block_fp8, {"N": 64}),
]


@pytest.mark.parametrize("factory,kwargs", CUDA_CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_library_kernel_compiles_to_cuda_with_vector_loads(factory, kwargs):
    """16-byte loads, except where config.row_layout reads 576-wide rows in 4-byte chunks."""
    kernel = factory(**kwargs)  # emits CUDA and compiles it with NVRTC for sm_90a (no GPU needed)
    assert kernel.cubin[:4] == b"\x7fELF"
    source = kernel.cuda_source()
    narrow = kwargs.get("N") == 576 and factory in (norm.add_layernorm, quant.quant_row_fp8)
    float32_input = factory is reduce.row_sum or kwargs.get("src") == "float32"
    vector = "bf16x2" if narrow else ("f32x4" if float32_input else "16x8")
    loads = [line for line in source.splitlines() if "*reinterpret_cast<const " in line]
    assert loads, "no vector load in the generated source"
    assert all(f"{vector}*>" in line for line in loads), loads


@pytest.mark.parametrize("factory, options, inputs", [
    (elementwise.add, {"dtype": "bfloat16"}, 2), (elementwise.cast, {"src": "bfloat16", "dst": "float8_e4m3"}, 1)])
def test_elementwise_whole_tiles_run_unguarded(factory, options, inputs):
    """A thread whose chunks lie inside n runs straight-line 16-byte accesses: no bounds
    check is left to make each guarded 16-bit load wait for the previous one. (eliminate-guards
    range-versions each copy's loop on its last chunk; the versions' ifs merge into one.)"""
    lines = factory(**options).cuda_source().splitlines()
    branches = [i for i, line in enumerate(lines) if line.startswith("  if (")]  # in the body, outside loops
    assert branches, "no bounds branch around the copies' loops"
    start = branches[0]
    middle = lines.index("  } else {", start)
    end = lines.index("  }", middle)
    whole_tile, partial = "\n".join(lines[start + 1:middle]), "\n".join(lines[middle + 1:end])
    assert "< n" not in whole_tile and "< n" in partial
    assert whole_tile.count("*reinterpret_cast<const ") == inputs  # one vector load per input, in an unrolled loop


def test_one_chunk_per_thread_loads_share_one_branch():
    """With one 16-byte chunk per thread there is no loop to range-version: each input's load
    keeps vectorize's whole-vector check. Both checks read n from A (the first tensor n sizes),
    so cse makes them one value and canonicalize merges the ifs: one branch holds both loads."""
    final = elementwise.add("bfloat16", threads=256, elements=8).ir("final")
    launch_body_ifs = [line for line in final.splitlines() if line.startswith("      scf.if ")]
    assert len(launch_body_ifs) == 2, launch_body_ifs  # the loads of both inputs, then the store
    assert launch_body_ifs[0] == launch_body_ifs[1]  # the store checks the same condition value
    first = final[final.index(launch_body_ifs[0]):]
    fast_path = first[:first.index("} else {")]
    assert fast_path.count("vector.load %arg0[") == 1 and fast_path.count("vector.load %arg1[") == 1
    assert "memref.dim %arg1" not in final and "memref.dim %arg2" not in final


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_elementwise_one_chunk_per_thread_ragged(dtype, rng):
    """The merged branch of both inputs' whole-vector loads, and its fallback, at thread level."""
    n = 5 * 2048 + 13
    npdt = np.float32 if dtype == "float32" else BF16
    a, b = (rng.standard_normal(n).astype(npdt) for _ in range(2))
    elements = 16 // np.dtype(npdt).itemsize
    add = cpu(elementwise.add, "thread", dtype=dtype, threads=256, elements=elements)(a, b)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    assert np.array_equal(add.astype(np.float32), (af + bf).astype(npdt).astype(np.float32))


def test_adjacent_row_checks_merge_into_one_region():
    """SwiGLU at 576 columns (4 rows per block) checks its row before each input copy; after
    cse makes those checks one value, canonicalize merges the ifs, so both inputs' loads share
    one branch region and issue back to back (one memory round trip instead of two)."""
    final = activation.silu_mul(N=576).ir("final")
    launch_body_ifs = [line for line in final.splitlines() if line.startswith("      scf.if ")]
    assert len(launch_body_ifs) == 2, launch_body_ifs  # the loads of both halves, then the store
    first = final[final.index(launch_body_ifs[0]):]
    loops_before_else = first[:first.index("} else {")].count("scf.for %arg14 = %c0 to %c3")
    assert loops_before_else == 2


def test_tuned_rows_apply_only_where_measured_and_only_to_defaults():
    from tilemlir.kernels.config import TUNED_ROWS, tuned

    assert TUNED_ROWS[("layernorm", 7168, "bfloat16")] == (8, 4)
    assert tuned("layernorm", 7168, "bfloat16", None, None, 2) == (8, 4)
    assert tuned("layernorm", 8192, "bfloat16", None, None, 2) == (2, None)
    assert tuned("layernorm", 7168, "float16", None, None, 2) == (2, None)
    assert tuned("layernorm", 7168, "bfloat16", 2, None, 2) == (2, 4)  # the caller's max_chunks wins
    assert tuned("layernorm", 7168, "bfloat16", None, 1, 2) == (8, 1)  # and its min_blocks
    source = norm.layernorm(N=7168).cuda_source()
    assert 'void __launch_bounds__(128, 4) layernorm_kernel(' in source


def test_narrow_row_layout_splits_a_row_evenly_over_a_warp():
    from tilemlir.kernels.config import row_config

    assert row_config(576, "bfloat16").row_layout.affine_maps(2) == (
        "affine_map<(d0, d1) -> ((((d1 floordiv 2) mod 32) + (d0 * 32)))>",
        "affine_map<(d0, d1) -> (((d1 mod 2) + ((d1 floordiv 64) * 2)))>")  # 9 chunks of 4 bytes a lane
    assert row_config(320, "bfloat16").row_layout.affine_maps(2)[1] == (
        "affine_map<(d0, d1) -> (((d1 mod 2) + ((d1 floordiv 64) * 2)))>")  # 8-byte would leave 2.5 a lane
    assert row_config(384, "bfloat16").row_layout.affine_maps(2)[1] == (
        "affine_map<(d0, d1) -> (((d1 mod 4) + ((d1 floordiv 128) * 4)))>")  # 8-byte chunks: 3 a lane
    assert row_config(512, "bfloat16").row_layout is None  # 16-byte chunks split evenly: inferred layout
    assert row_config(1000, "bfloat16").row_layout is None  # no chunk splits 1000 over 32 lanes
    assert row_config(4096, "bfloat16").row_layout is None  # a row per block


def test_residual_layernorm_alone_is_built_with_fast_math():
    """Measured per kernel (norm.py): fast math helps residual LayerNorm, slows plain LayerNorm."""
    fast = norm.add_layernorm(N=576)
    assert fast.compiled.options.fast_math and "rsqrtf(" in fast.cuda_source()
    plain = norm.layernorm(N=576)
    assert not plain.compiled.options.fast_math and "1.0f / sqrtf(" in plain.cuda_source()


def test_row_config_spreads_rows_by_width():
    from tilemlir.kernels.config import row_config, streamed_chunk

    assert row_config(4096, "bfloat16") == row_config(4096, "bfloat16", 2)  # 256 threads x 2 chunks
    assert (row_config(4096, "bfloat16").threads, row_config(4096, "bfloat16").block_M) == (256, 1)
    assert (row_config(2000, "bfloat16").threads, row_config(2000, "bfloat16").block_M) == (128, 4)  # narrow
    # 625 chunks split over no whole number of warps: one row a block, 320 threads x 2, 15 masked
    assert (row_config(5000, "bfloat16").threads, row_config(5000, "bfloat16").block_M) == (320, 1)
    assert row_config(20000, "bfloat16", 4).threads == 640
    assert row_config(20000, "bfloat16", 2) is None  # 2500 chunks > 1024 threads x 2: streamed
    assert row_config(16384, "bfloat16", 2).threads == 1024  # the widest row held in registers
    assert row_config(16385, "bfloat16", 2) is None
    assert streamed_chunk("bfloat16", 2) == 16384 and streamed_chunk("float32", 4) == 16384


@pytest.mark.parametrize("factory, kwargs, message", [
    (norm.rmsnorm, {"N": 4096, "max_chunks": 0}, "max_chunks must be a positive int, got 0"),
    (activation.silu_mul, {"N": 4096, "max_chunks": -1}, "max_chunks must be a positive int, got -1"),
    (norm.rmsnorm, {"N": "4096"}, "the row width N must be a positive int, got '4096'"),
    (norm.rmsnorm, {"N": True}, "the row width N must be a positive int, got True"),
    (norm.rmsnorm, {"N": 4096, "dtype": "int7"}, "unknown dtype 'int7'"),
    (quant.quant_row_fp8, {"N": 4096, "hold": "float16"},
     "hold must be float32 or the input dtype bfloat16, got float16"),
    (quant.quant_block_fp8, {"N": 0}, "the row width N must be a positive int, got 0"),
    (quant.quant_block_fp8, {"N": 128.0}, "the row width N must be a positive int, got 128.0"),
])
def test_bad_factory_arguments_are_named(factory, kwargs, message):
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


def test_elementwise_takes_float64(rng):
    a, b = (rng.standard_normal(1000) for _ in range(2))
    assert np.array_equal(cpu(elementwise.add, "thread", dtype="float64")(a, b), a + b)


HELD_ROWS = [  # (factory, number of bf16 row inputs, of bf16 vector inputs, of float32 scalars)
    (norm.rmsnorm, 1, 1, 1), (norm.add_rmsnorm, 2, 1, 1), (norm.layernorm, 1, 2, 1),
    (norm.add_layernorm, 2, 2, 1), (quant.quant_row_fp8, 1, 0, 0)]


@pytest.mark.parametrize("N", [512, 576, 1000])  # 16-byte chunks, 4-byte chunks, masked chunks
@pytest.mark.parametrize("factory, rows, vectors, scalars", HELD_ROWS, ids=lambda v: getattr(v, "__name__", None))
def test_rows_held_in_bf16_match_rows_held_in_float32_bitwise(factory, rows, vectors, scalars, N, rng):
    """hold='bfloat16' keeps the row in its input dtype and converts at each use: the same float32
    math on the same exactly converted values, so every output bit matches the float32 hold."""
    args = [(rng.standard_normal((6, N)) * rng.uniform(0.1, 10, (6, 1))).astype(BF16) for _ in range(rows)]
    args += [(1 + 0.1 * rng.standard_normal(N)).astype(BF16) for _ in range(vectors)] + [1e-5] * scalars
    held = cpu(factory, "thread", N=N, hold="bfloat16")(*args)
    wide = cpu(factory, "thread", N=N)(*args)
    for got, want in zip(held if isinstance(held, tuple) else (held,), wide if isinstance(wide, tuple) else (wide,)):
        assert np.isfinite(got.astype(np.float64)).all()
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("factory", [f for f, *_ in HELD_ROWS], ids=lambda f: f.__name__)
def test_rows_held_in_bf16_compile_to_bf16_registers(factory):
    source = factory(N=4096, hold="bfloat16").cuda_source()
    assert "__nv_bfloat16 x[" in source and "float x[" not in source


@pytest.mark.parametrize("N, bounds, held", [(4096, "(128)", False), (20000, "(640, 2)", True),
                                             (32768, "(1024, 2)", True)])
def test_quant_row_holds_wide_rows_in_bf16_two_blocks_per_multiprocessor(N, bounds, held):
    source = quant.quant_row_fp8(N).cuda_source()
    assert f"__launch_bounds__{bounds}" in source
    assert ("__nv_bfloat16 x[" in source) == held and ("float x[" in source) != held
