"""TileLang source compatibility (issue 22): TileLang-style kernels (tilelang_style_kernels.py, which imports
`tilemlir as tilelang`) on the CPU backend at tile and thread level against float64 numpy, and through
NVRTC for sm_90a; pass_configs and TileLang's other jit keywords; the `main` entry name; TileLang's
annotation spellings and helpers; located errors for what Python evaluates before the frontend; the
eager style."""

import logging
import re
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from frontend_util import frontend_error, load_module, marked, message
from tilemlir.diagnostics import CompileError
from tilemlir.pass_configs import KNOWN_KEYS, PassConfigKey, options_from_pass_configs

sys.path.insert(0, str(Path(__file__).parent))
import tilelang_style_kernels as K  # noqa: E402
from tilemlir.testing import relative_error

FP8 = ml_dtypes.float8_e4m3fn
LEVELS = ("tile", "thread")


def cpu(factory, level, *args):
    return tilemlir.compile(factory.instantiate(*args), target="cpu", level=level)


def nvrtc(factory, *args):
    """Compile for sm_90a through NVRTC (no GPU needed): the kernel, with a real cubin."""
    pytest.importorskip("cuda.bindings.nvrtc")
    kernel = tilemlir.compile(factory.instantiate(*args), target="cuda", arch="sm_90a")
    assert kernel.cubin[:4] == b"\x7fELF"
    return kernel


# ----------------------------------------------------------------------------
# The kernels, with real values.


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("in_dtype, out_dtype", [("float32", "float32"), ("float16", "float32")])
def test_elementwise_add(level, in_dtype, out_dtype, rng):
    a, b = (rng.standard_normal((64, 96)).astype(in_dtype) for _ in range(2))
    c = cpu(K.elementwise_add, level, 64, 96, 16, 32, in_dtype, out_dtype, 128)(a, b)
    want = (a + b).astype(out_dtype)  # TileLang adds in the inputs' dtype, then stores converting
    assert c.dtype == np.dtype(out_dtype)
    assert np.array_equal(c, want)


@pytest.mark.parametrize("level", LEVELS)
def test_softmax(level, rng):
    x = (3 * rng.standard_normal((5, 256))).astype(np.float16)
    y = cpu(K.softmax, level, 5, 256)(x)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    assert relative_error(y, e / e.sum(1, keepdims=True)) < 2e-3


@pytest.mark.parametrize("level", LEVELS)
def test_rms_norm(level, rng):
    a = rng.standard_normal((8, 128)).astype(np.float32)
    b = cpu(K.rms_norm_kernel, level, 8, 128, 2)(a)
    ad = a.astype(np.float64)
    want = ad * (1 / np.sqrt((ad * ad).mean(1, keepdims=True)) + 1e-12)  # the example's formula
    assert relative_error(b, want) < 1e-6


@pytest.mark.parametrize("level", LEVELS)
def test_row_reduce(level, rng):
    a = rng.standard_normal((8, 256)).astype(np.float32)
    s, m = cpu(K.row_reduce, level, 8, 256, 2)(a)
    assert relative_error(s, a.astype(np.float64).sum(1)) < 1e-5
    assert np.array_equal(m, np.abs(a).max(1))


@pytest.mark.parametrize("level", LEVELS)
def test_per_token_cast_to_fp8_bitwise(level, rng):
    x = (rng.standard_normal((4, 256)) * rng.uniform(0.01, 100, (4, 1))).astype(np.float32)
    x[1, :128] = 1e-6  # an all-tiny group: the 1e-4 floor of amax decides its scale
    q, s = cpu(K.per_token_cast_to_fp8, level, 4, 256, 2)(x)
    groups = x.reshape(4, 2, 128)
    amax = np.maximum(np.abs(groups).max(2), np.float32(1e-4))
    want_s = amax / np.float32(448.0)
    want_q = np.clip(groups / want_s[:, :, None], np.float32(-448.0), np.float32(448.0)).astype(FP8)
    assert np.array_equal(s, want_s)
    assert np.array_equal(q.view(np.uint8), want_q.reshape(4, 256).view(np.uint8))


def masked_scale_reference(a, lo):
    x = a.astype(np.float32) * np.float32(2)  # one T.Serial step: next_power_of_2(7) // 8
    col = np.arange(a.shape[1])[None, :]
    keep = ((x > lo[:, None]) & (col % 2 == 0)) | (col == 1)
    big = np.where(x > 2, np.float32(2), x)
    out = np.where(keep, big, np.float32(-1))  # T.max(T.min_value(half), -1)
    return np.minimum(out, np.float32(65504)).astype(np.float16)


@pytest.mark.parametrize("level", LEVELS)
def test_tvm_scalar_spellings(level, rng):
    a = (2 * rng.standard_normal((3, 256))).astype(np.float16)
    lo = rng.standard_normal(3).astype(np.float32)
    b = cpu(K.masked_scale, level, 3, 256, 64)(a, lo)
    assert np.array_equal(b, masked_scale_reference(a, lo))


@pytest.mark.parametrize("level", LEVELS)
def test_layer_norm(level, rng):
    x = rng.standard_normal((6, 256)).astype(ml_dtypes.bfloat16)
    g, b = (rng.standard_normal(256).astype(np.float32) for _ in range(2))
    y = cpu(K.layer_norm, level, 6, 256, 2)(x, g, b)
    xd = x.astype(np.float64)
    want = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-5) * g + b
    assert y.dtype == ml_dtypes.bfloat16
    assert relative_error(y, want) < 8e-3  # bf16 output


@pytest.mark.parametrize("level", LEVELS)
def test_top_k(level, rng):
    logits = rng.random((8, 64)).astype(np.float32)
    logits[3, 10] = logits[3, 20] = 2.0  # a tie: the lower column comes first
    gates, index = cpu(K.top_k, level, 8, 64, 5, 4)(logits)
    order = np.argsort(-logits, 1, kind="stable")[:, :5]
    assert np.array_equal(index, order)
    assert np.array_equal(gates, np.take_along_axis(logits, order, 1))


@pytest.mark.parametrize("level", LEVELS)
def test_splitk_gemm_adds_every_slice(level, rng):
    a, b = rng.standard_normal((64, 256)).astype(np.float16), rng.standard_normal((256, 64)).astype(np.float16)
    c = np.full((64, 64), 0.5, np.float32)  # the slices add into what C holds
    cpu(K.splitk_gemm, level, 64, 64, 256, 32, 32, 32, 4)(a, b, c)
    assert relative_error(c, 0.5 + a.astype(np.float64) @ b.astype(np.float64)) < 1e-6


@pytest.mark.parametrize("level", LEVELS)
def test_thread_level_gemv(level, rng):
    """2-D threads, T.get_thread_binding, a register partial and a shared atomic add (K = 200: the last k tile
    is partial)."""
    x, w = rng.standard_normal(200).astype(np.float16), rng.standard_normal((64, 200)).astype(np.float16)
    y = cpu(K.thread_gemv, level, 64, 200, 16, 8)(x, w)
    assert relative_error(y, w.astype(np.float64) @ x.astype(np.float64)) < 1e-3  # fp16 output


NVRTC_CASES = [
    (K.elementwise_add, (64, 96, 16, 32, "float16", "float32", 128)),
    (K.layer_norm, (6, 256, 2)),
    (K.top_k, (8, 64, 5, 4)),
    (K.splitk_gemm, (64, 64, 256, 32, 32, 32, 4)),
    (K.thread_gemv, (64, 200, 16, 8)),
    (K.softmax, (5, 256)),
    (K.rms_norm_kernel, (8, 128, 2)),
    (K.row_reduce, (8, 256, 2)),
    (K.per_token_cast_to_fp8, (4, 256, 2)),
    (K.masked_scale, (3, 256, 64)),
]


@pytest.mark.parametrize("factory, args", NVRTC_CASES, ids=[c[0].__name__ for c in NVRTC_CASES])
def test_compiles_for_sm90a_with_a_mangled_main(factory, args):
    kernel = nvrtc(factory, *args)
    assert kernel.name == "main_kernel"
    assert re.search(r'extern "C" __global__ void __launch_bounds__\(\d+(, \d+)?\) main_kernel\(', kernel.cuda_source())
    assert not re.search(r"\bmain\(", kernel.cuda_source())


# ----------------------------------------------------------------------------
# Kernel names C++ does not allow.


NAMED = """
@tilemlir.jit(out_idx=[-1])
def {name}(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < M:
                B[bx * 128 + i] = A[bx * 128 + i] * 2
"""


@pytest.mark.parametrize("name, c_name", [("main", "main_kernel"), ("double", "double_kernel"),
                                          ("ядро", "u____"), ("__twice", "u__twice"), ("twice", "twice")])
def test_kernel_names_become_valid_cuda_entry_points(tmp_path, rng, name, c_name):
    fn = getattr(load_module(tmp_path, NAMED.format(name=name)), name)
    a = rng.standard_normal(300).astype(np.float32)
    assert np.array_equal(tilemlir.compile(fn, target="cpu")(a), a * 2)
    pytest.importorskip("cuda.bindings.nvrtc")
    kernel = tilemlir.compile(fn, target="cuda", arch="sm_90a")
    assert kernel.name == c_name
    assert f" {c_name}(" in kernel.cuda_source()
    assert kernel.cubin[:4] == b"\x7fELF"


# ----------------------------------------------------------------------------
# pass_configs.


def test_pass_config_keys_import_as_in_tilelang():
    from tilemlir.transform import PassConfigKey as FromTransform

    assert FromTransform is PassConfigKey is tilemlir.PassConfigKey is tilemlir.transform.PassConfigKey


def test_every_tilelang_key_is_known():
    assert {k.value for k in PassConfigKey} <= KNOWN_KEYS
    assert "tirx.disable_vectorize" in KNOWN_KEYS  # later TileLang's spelling of the TIR keys


@pytest.mark.parametrize("configs, options", [
    ({PassConfigKey.TL_ENABLE_FAST_MATH: True}, {"fast_math": True}),
    ({"tl.enable_fast_math": False}, {"fast_math": False}),
    ({"tl.disable_fast_math": True}, {"fast_math": False}),
    ({"tl.disable_fast_math": False}, {"fast_math": True}),
    ({PassConfigKey.TL_CONFIG_INDEX_BITWIDTH: 64}, {"index_bits": 64}),
    ({"tl.config_index_bitwidth": 32}, {}),
    ({PassConfigKey.TL_DISABLE_WGMMA: True}, {"tensor_cores": "mma_sync"}),
    ({"tl.disable_wgmma": False}, {}),
    ({PassConfigKey.TL_DISABLE_TMA_LOWER: True, "tl.disable_warp_specialized": True, "tirx.noalias": True},
     {"tma": False}),
    ({"tl.disable_tma_lower": False}, {}),  # TMA stays opt-in
    (None, {}),
])
def test_pass_configs_become_options(configs, options):
    assert options_from_pass_configs(configs) == options


def test_ignored_keys_log_one_debug_line(caplog):
    with caplog.at_level(logging.DEBUG, logger="tilemlir.pass_configs"):
        options_from_pass_configs({PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
    lines = [r.getMessage() for r in caplog.records if r.name == "tilemlir.pass_configs"]
    assert lines == ["pass config tl.disable_warp_specialized=True ignored: tilemlir does not warp-specialize kernels"]


@pytest.mark.parametrize("configs, words", [
    ({"tl.disable_tma": True}, "unknown pass config key 'tl.disable_tma'"),
    ({"tl.enable_fast_math": 1}, "pass config 'tl.enable_fast_math' takes True or False, got 1"),
    ({"tl.config_index_bitwidth": 16}, "pass config 'tl.config_index_bitwidth' takes 32 or 64, got 16"),
    ([("tl.enable_fast_math", True)], "pass_configs must be a dict"),
])
def test_bad_pass_configs_are_located_errors(tmp_path, configs, words):
    source = f"""
    @@@tilemlir.jit(out_idx=[-1], pass_configs={configs!r})
    def k(A: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            T.fill(A[0:32], 0)
    """
    clean, line, _ = marked(source)
    with pytest.raises(CompileError) as info:
        load_module(tmp_path, clean)
    assert words in str(info.value)
    assert info.value.location.line == line


def test_pass_configs_reach_the_compile(tmp_path):
    module = load_module(tmp_path, """
    @tilemlir.jit(out_idx=[-1], pass_configs={"tl.enable_fast_math": True, "tl.config_index_bitwidth": 64})
    def k(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < M:
                    B[bx * 128 + i] = T.exp(A[bx * 128 + i])

    @tilemlir.jit(out_idx=[-1], pass_configs={"tl.enable_fast_math": True}, fast_math=False)
    def exact(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < M:
                    B[bx * 128 + i] = T.exp(A[bx * 128 + i])
    """)
    assert module.k.options == {"fast_math": True, "index_bits": 64}
    assert module.exact.options == {"fast_math": False}  # an explicit option wins
    pytest.importorskip("cuda.bindings.nvrtc")
    fast = tilemlir.compile(module.k, target="cuda", arch="sm_90a")
    exact = tilemlir.compile(module.exact, target="cuda", arch="sm_90a")
    assert fast.options.fast_math is True and "__expf" in fast.cuda_source()
    assert "__expf" not in exact.cuda_source()
    assert "long long M" in fast.cuda_source() and "long long M" not in exact.cuda_source()


# ----------------------------------------------------------------------------
# Annotations and helpers Python evaluates before the frontend.


def test_tensor_subscript_spellings():
    M = T.symbolic("M")
    assert T.Tensor[(M, 8), T.half] == T.Tensor((M, 8), T.float16)
    assert T.Tensor[M, 8, "float"] == T.Tensor((M, 8), T.float32)
    assert T.Tensor[(4,), T.int] == T.Tensor((4,), T.int32)
    assert T.Buffer[(M, 8), T.bfloat16] == T.Tensor((M, 8), T.bfloat16)
    assert T.Tensor((M, 8)) == T.Tensor((M, 8), T.float32)  # TileLang's default dtype
    assert T.StridedTensor((M, 8, 4), (32, 4, 1), T.float16) == T.Tensor((M, 8, 4), T.float16)
    N = T.symbolic("N")
    assert T.StridedTensor((M, N), (N, 1)) == T.Tensor((M, N), T.float32)


def test_tilelang_dtype_names_and_helpers():
    assert (T.float, T.half, T.double, T.int, T.uint, T.long, T.short) == (
        T.float32, T.float16, T.float64, T.int32, T.uint32, T.int64, T.int16)
    assert T.float8_e4m3fn is T.float8_e4m3
    assert [d.bytes for d in (T.bool, T.float8_e4m3fn, T.half, T.float, T.double)] == [1, 1, 2, 4, 8]
    assert tilemlir.cdiv(7, 2) == 4 and tilemlir.cdiv(8, 2) == 4 and tilemlir.cdiv(-7, 2) == -3
    assert [tilemlir.next_power_of_2(n) for n in (0, 1, 2, 3, 17, 64, 65)] == [1, 1, 2, 4, 32, 64, 128]
    assert T.Serial is T.serial
    with pytest.raises(TypeError, match="cdiv takes two ints"):
        tilemlir.cdiv(7.0, 2)


@pytest.mark.parametrize("annotation, words", [
    ("T.Tensor[T.float32]", "T.Tensor[...] takes the dims and then the dtype"),
    ("T.Tensor[(M, 8), 'float7']", "unknown dtype 'float7'"),
    ("T.StridedTensor((M, 8), (16, 1), T.float32)", "T.StridedTensor with strides (16, 1) is not supported"),
    ("T.StridedTensor((M, 8), (8,), T.float32)", "T.StridedTensor needs one stride per dim (2)"),
])
def test_annotation_errors_are_located(tmp_path, annotation, words):
    source = f"""
    @tilemlir.jit
    def k(A: @@{annotation}):
        with T.Kernel(1, threads=32) as bx:
            T.fill(A[0, 0:8], 0)
    """
    clean, line, col = marked(source)
    with pytest.raises(CompileError) as info:
        load_module(tmp_path, clean)
    assert words in str(info.value)
    assert (info.value.location.line, info.value.location.col) == (line, col)


@pytest.mark.parametrize("level", LEVELS)
def test_subscript_annotated_kernel_runs(tmp_path, rng, level):
    module = load_module(tmp_path, """
    @tilemlir.jit(out_idx=[-1])
    def k(A: T.Tensor[M, 64, T.half], B: T.Tensor[(M, 64), T.float]):
        with T.Kernel(M, threads=64) as bx:
            for j in T.Parallel(64):
                B[bx, j] = T.clamp(A[bx, j].astype(T.float), -1.0, T.Cast(T.float, 0.5))
    """)
    a = rng.standard_normal((5, 64)).astype(np.float16)
    b = tilemlir.compile(module.k, target="cpu", level=level)(a)
    assert np.array_equal(b, np.clip(a.astype(np.float32), -1.0, 0.5))


@pytest.mark.parametrize("annotation, words", [
    ("T.Tensor((M, 8), @@T.float8_e8m0fnu)", "T.float8_e8m0fnu (TileLang's e8m0 scale factors) is not supported"),
    ("@@T.Tensor((M, 8), T.float32, strides=(16, 1))", "T.Tensor: TileLang's `strides=(16, 1)` is not supported"),
    ("@@T.Tensor((M, 8), T.float32, scope='shared')", "T.Tensor: TileLang's `scope='shared'` is not supported"),
    ("@@T.Tensor((M, 8), T.float32, layout=3)", "T.Tensor() got an unexpected keyword argument 'layout'"),
    ("@@T.Tensor((M, 8), T.float32, shape=3)", "T.Tensor() got multiple values for argument 'shape'"),
    ("@@T.Tensor((M, 8), T.float32, 4)", "T.Tensor() takes the shape and the dtype, got 3 positional arguments"),
    ("@@T.Tensor(dtype=T.float32)", "T.Tensor() is missing its shape"),
    ("@@T.Tensr((M, 8), T.float32)", "'T' has no attribute 'Tensr'; did you mean 'Tensor'?"),
])
def test_def_time_failures_are_located_errors(tmp_path, annotation, words):
    source = f"""
    @tilemlir.jit
    def k(A: {annotation}):
        with T.Kernel(1, threads=32) as bx:
            T.fill(A[0, 0:8], 0)
    """
    clean, line, col = marked(source)
    with pytest.raises(CompileError) as info:
        load_module(tmp_path, clean)
    assert words in str(info.value)
    assert (info.value.location.line, info.value.location.col) == (line, col)


def test_factory_code_failures_are_located_errors(tmp_path):
    clean, line, col = marked("""
    @tilemlir.jit
    def factory(n):
        acc = @@T.alloc_barrier(n)
        return acc
    """)
    module = load_module(tmp_path, clean)
    with pytest.raises(CompileError) as info:
        module.factory(4)
    assert "T.alloc_barrier (TileLang's mbarriers) is not supported by tilemlir" in str(info.value)
    assert (info.value.location.line, info.value.location.col) == (line, col)
    assert not hasattr(T, "alloc_barrier") and hasattr(T, "alloc_fragment")


def test_unsupported_tilelang_feature_in_kernel_code(tmp_path):
    err = frontend_error(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            v = @@T.alloc_barrier(1)
    """)
    assert message(err) == "T.alloc_barrier (TileLang's mbarriers) is not supported by tilemlir " \
                           "(docs/tilelang.md lists what is)"


ALLOC_VAR = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 8), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
        scale = T.alloc_var(T.float32, {init})
        count = T.alloc_var(T.int32)
        for j in T.serial(8):
            count[0] += 1
        scale[0] = scale[0] * count[0]
        for i in T.Parallel(32):
            total = 0.0
            for j in T.serial(8):
                total = total + A[bx * 32 + i, j] * scale[0]
            if bx * 32 + i < M:
                B[bx * 32 + i] = total
"""


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("init, start", [("init=0.5", 0.5), ("1.5", 1.5), ("'local.var'", 0.0)])
def test_alloc_var(tmp_path, rng, level, init, start):
    fn = load_module(tmp_path, ALLOC_VAR.format(init=init)).k
    a = rng.standard_normal((40, 8)).astype(np.float32)
    b = tilemlir.compile(fn, target="cpu", level=level)(a)
    scale = np.float32(start * 8)
    want = np.zeros(40, np.float64)
    for j in range(8):
        want = want + a[:, j].astype(np.float64) * scale
    if start == 0.0:
        assert np.array_equal(b, np.zeros(40, np.float32))
    else:
        assert relative_error(b, want) < 1e-6  # the sum may be contracted to FMAs, as the CUDA computes it
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(fn, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"


def test_alloc_var_scope_is_checked(tmp_path):
    err = frontend_error(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            v = T.alloc_var(T.float32, 0, @@"shared")
    """)
    assert message(err) == "T.alloc_var: scope 'shared' is not supported (a variable lives in 'local.var')"


HINTS = """
@tilemlir.jit(out_idx=[1])
def k(A: T.Tensor((M, 64), T.float32), B: T.Tensor((M, 64), T.float32), S: T.Tensor((64,), T.float32)):
    with T.Kernel(M, threads=64) as bx:
        a = T.alloc_shared((1, 64), T.float32)
        T.copy(A[bx, 0], a, disable_tma=True, coalesced_width=4, eviction_policy="evict_first")
        T.copy(a, B[bx, 0], disable_tma=False)
        for j in T.Parallel(64):
            T.atomic_add(S[j], a[0, j], memory_order="relaxed")
"""


@pytest.mark.parametrize("level", LEVELS)
def test_copy_and_atomic_hints(tmp_path, rng, level):
    fn = load_module(tmp_path, HINTS).k
    a = rng.standard_normal((6, 64)).astype(np.float32)
    s = np.zeros(64, np.float32)
    b = tilemlir.compile(fn, target="cpu", level=level)(a, s)  # out_idx: B; S is added into in place
    assert np.array_equal(b, a)
    assert relative_error(s, a.astype(np.float64).sum(0)) < 1e-6
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(fn, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("call, words", [
    ("T.copy(A[0, 0], a, disable_tma=@@1)", "T.copy: disable_tma must be True or False, got 1"),
    ("T.copy(A[0, 0], a, coalesced_width=@@0)", "T.copy: coalesced_width must be a positive int, got 0"),
    ("T.copy(A[0, 0], a, eviction_policy=@@'evict_all')", "T.copy: eviction_policy must be one of"),
    ("T.atomic_add(A[0, 0], 1.0, memory_order=@@'release')",
     "T.atomic_add: memory_order='release' is not supported: tilemlir's atomic adds are relaxed"),
    ("T.atomic_add(A[0, 0], 1.0, return_prev=@@True)", "T.atomic_add: return_prev=True (the old value) is not supported"),
])
def test_bad_hints_are_located_errors(tmp_path, call, words):
    err = frontend_error(tmp_path, f"""
    @tilemlir.jit
    def k(A: T.Tensor((M, 64), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            a = T.alloc_shared((1, 64), T.float32)
            {call}
    """)
    assert words in str(err)


# ----------------------------------------------------------------------------
# The eager JIT style.


@pytest.mark.parametrize("level", LEVELS)
def test_eager_add(level, rng):
    a, b = (rng.standard_normal((64, 96)).astype(np.float32) for _ in range(2))
    kernel = K.eager_add.instantiate(a, b, 16, 32, 128)
    info = kernel.frontend().info
    assert K.eager_add.kind == "eager" and info.out_idx == (2,)
    assert [p.name for p in info.params] == ["A", "B", "C"]
    assert np.array_equal(tilemlir.compile(kernel, target="cpu", level=level)(a, b), a + b)
    assert K.eager_add.instantiate(a, b, 16, 32, 128) is kernel  # one kernel per specialization
    assert K.eager_add.instantiate(a[:32], b[:32], 16, 32, 128) is not kernel  # T.const dims specialize


@pytest.mark.parametrize("level", LEVELS)
def test_eager_reduce_sum(level, rng):
    x = rng.standard_normal((32, 1024)).astype(np.float32)
    got = tilemlir.compile(K.tl_reduce_sum.instantiate(x, 16, 128), target="cpu", level=level)(x)
    assert relative_error(got, x.astype(np.float64).sum(1)) < 1e-5


@pytest.mark.parametrize("level", LEVELS)
def test_eager_dynamic_dims_and_two_outputs(level, rng):
    h = rng.standard_normal((5, 256)).astype(np.float16)
    kernel = K.eager_row_scale.instantiate(h, 3.0)
    assert K.eager_row_scale.instantiate(h[:3], 3.0) is kernel  # ROWS is T.dynamic: one kernel for every size
    y, s = tilemlir.compile(kernel, target="cpu", level=level)(h)
    want = h.astype(np.float32) * np.float32(3)
    assert np.array_equal(y, want)
    assert relative_error(s, want.astype(np.float64).sum(1)) < 1e-6


@pytest.mark.parametrize("factory, args", [
    (K.eager_add, lambda rng: (rng.standard_normal((64, 96)).astype(np.float32),) * 2 + (16, 32, 128)),
    (K.tl_reduce_sum, lambda rng: (rng.standard_normal((32, 1024)).astype(np.float32), 16, 128)),
    (K.eager_row_scale, lambda rng: (rng.standard_normal((5, 256)).astype(np.float16),)),
], ids=["eager_add", "tl_reduce_sum", "eager_row_scale"])
def test_eager_kernels_compile_for_sm90a(factory, args, rng):
    pytest.importorskip("cuda.bindings.nvrtc")
    kernel = tilemlir.compile(factory.instantiate(*args(rng)), target="cuda", arch="sm_90a")
    assert kernel.cubin[:4] == b"\x7fELF"


EAGER_CALL = """
@tilemlir.jit(target="cpu")
def scale(X, factor: float):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float32)
    Y = T.empty((M, N), T.float32)
    with T.Kernel(M, threads=32) as bx:
        for j in T.Parallel(N):
            Y[bx, j] = X[bx, j] * factor
    return Y
"""


def test_eager_call_compiles_and_launches(tmp_path, rng):
    scale = load_module(tmp_path, EAGER_CALL).scale
    x = rng.standard_normal((3, 32)).astype(np.float32)
    assert np.array_equal(scale(x, 0.5), x * np.float32(0.5))
    assert np.array_equal(scale(x, factor=4.0), x * np.float32(4.0))


@pytest.mark.parametrize("body, call, words", [
    ("""
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    @@B: T.Tensor((M, N), T.float32)
    C = T.empty((M, N), T.float32)
    """, "(a, b_wide)", "T.const dim N is 8 by one argument and 9 by 'B' (4, 9)"),
    ("""
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    @@B: T.Tensor((M,), T.float32)
    C = T.empty((M, N), T.float32)
    """, "(a, a)", "argument 'B' has 2 dim(s) (4, 8), but is declared T.Tensor((T.symbolic('M'),), T.float32)"),
    ("""
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    @@B: T.Tensor((M, N), T.float32)
    C = T.empty((M, N), T.float32)
    """, "(a, 3)", "argument 'B' must be an array or tensor"),
    ("""
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B: @@T.Tensor((M, N * 2), T.float32)
    C = T.empty((M, N), T.float32)
    """, "(a, a)", "arithmetic on dims is not supported"),
])
def test_eager_signature_errors_are_located(tmp_path, body, call, words):
    source = "@tilemlir.jit\ndef k(A, B):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + """
    with T.Kernel(1, threads=32) as bx:
        for j in T.Parallel(8):
            C[0, j] = A[0, j] + B[0, j]
    return C
"""
    clean, line, col = marked(source)
    module = load_module(tmp_path, clean)
    a, b_wide = np.ones((4, 8), np.float32), np.ones((4, 9), np.float32)
    with pytest.raises(CompileError) as info:
        eval(f"module.k.instantiate{call}", {"module": module, "a": a, "b_wide": b_wide})
    assert words in str(info.value)
    assert (info.value.location.line, info.value.location.col) == (line, col)


def test_eager_return_must_be_its_outputs(tmp_path):
    clean, line, col = marked("""
    @tilemlir.jit
    def k(A):
        M = T.const("M")
        A: T.Tensor((M,), T.float32)
        C = T.empty((M,), T.float32)
        with T.Kernel(1, threads=32) as bx:
            for j in T.Parallel(M):
                C[j] = A[j]
        return @@A
    """)
    module = load_module(tmp_path, clean)
    with pytest.raises(CompileError) as info:
        module.k.instantiate(np.ones(32, np.float32)).frontend()
    assert "an eager kernel returns its T.empty outputs, in the order they are made (C)" in str(info.value)
    assert (info.value.location.line, info.value.location.col) == (line, col)


JIT_KEYWORDS = """
@tilemlir.jit(out_idx=[-1], target="auto", execution_backend="cython", verbose=True, target_host="llvm",
              debug_root_path="/tmp/nowhere", compile_flags=["-O3"])
def k(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
        for i in T.Parallel(32):
            if bx * 32 + i < M:
                B[bx * 32 + i] = A[bx * 32 + i] + 1
"""


def test_tilelang_jit_keywords_are_accepted(tmp_path, rng, caplog):
    with caplog.at_level(logging.DEBUG, logger="tilemlir.jit"):
        fn = load_module(tmp_path, JIT_KEYWORDS).k
    assert fn.target is None and fn.options == {}
    ignored = sorted(r.getMessage().split("=")[0] for r in caplog.records if r.name == "tilemlir.jit")
    assert ignored == ["jit keyword compile_flags", "jit keyword debug_root_path", "jit keyword execution_backend",
                       "jit keyword target_host", "jit keyword verbose"]
    a = rng.standard_normal(70).astype(np.float32)
    assert np.array_equal(tilemlir.compile(fn, target="cpu")(a), a + np.float32(1))


@pytest.mark.parametrize("keywords, words", [
    ("target='hip'", "target 'hip' is not supported: tilemlir compiles for 'cuda' and 'cpu'"),
    ("execution_backend='jax'", "unknown execution_backend 'jax'"),
])
def test_bad_tilelang_jit_keywords_are_located(tmp_path, keywords, words):
    clean, line, _ = marked(f"""
    @@@tilemlir.jit({keywords})
    def k(A: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            T.fill(A[0:32], 0)
    """)
    with pytest.raises(CompileError) as info:
        load_module(tmp_path, clean)
    assert words in str(info.value)
    assert info.value.location.line == line


@pytest.mark.parametrize("level", LEVELS)
def test_eager_compile_with_const_dims(rng, level):
    kernel = K.eager_add.compile(M=64, N=96, block_M=16, block_N=32, threads=128, target="cpu", level=level)
    a, b = (rng.standard_normal((64, 96)).astype(np.float32) for _ in range(2))
    assert np.array_equal(kernel(a, b), a + b)
    a = rng.standard_normal((32, 1024)).astype(np.float32)
    reduce = K.tl_reduce_sum.compile(target="cpu", level=level, N=32, M=1024, BLOCK_N=16, BLOCK_M=128)
    assert relative_error(reduce(a), a.astype(np.float64).sum(1)) < 1e-5


@pytest.mark.parametrize("keywords, words", [
    (dict(M=64, block_M=16, block_N=32, threads=128), "T.const dim(s) N are not known: pass them to compile(), "
                                                      "e.g. compile(N=...)"),
    (dict(M=64, N=96, K=3, block_M=16, block_N=32, threads=128),
     "'K' is neither a parameter nor a T.const dim of eager kernel 'eager_add' (its T.const dims: M, N)"),
    (dict(M=64, N=0, block_M=16, block_N=32, threads=128), "T.const dim N must be a positive int, got 0"),
])
def test_eager_compile_errors(keywords, words):
    with pytest.raises(CompileError, match=re.escape(words)):
        K.eager_add.compile(target="cpu", **keywords)


# ----------------------------------------------------------------------------
# Constructs TileLang's example kernels use.


GROUP_MAX = """
@tilemlir.jit
def group_max(X, group: int):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float32)
    G = T.empty((M, T.ceildiv(N, group)), T.float32)
    with T.Kernel(M, T.ceildiv(N, group), threads=32) as (bx, by):
        x = T.alloc_fragment((1, group), T.float32, scope="local.fragment")
        s = T.alloc_shared((1, group), T.float32, scope="shared.dyn")
        m = T.alloc_fragment((1,), T.float32)
        for k in T.Pipelined(1, num_stages=0):
            T.copy(X[bx, by * group], s)
        T.copy(s, x)
        T.reduce_max(x, m, dim=1)
        G[bx, by] = m[0]
    return G
"""


@pytest.mark.parametrize("level", LEVELS)
def test_empty_shape_from_const_dims(tmp_path, rng, level):
    """T.empty((M, T.ceildiv(N, group))) with T.const dims (the shape is computed once the dims are known), with
    TileLang's alloc scopes and num_stages=0."""
    fn = load_module(tmp_path, GROUP_MAX).group_max
    x = rng.standard_normal((3, 100)).astype(np.float32)
    kernel = fn.instantiate(x, 32)
    assert [p.shape for p in kernel.frontend().info.params] == [(3, 100), (3, 4)]
    g = tilemlir.compile(kernel, target="cpu", level=level)(x)
    padded = np.pad(x, ((0, 0), (0, 28)), constant_values=-np.inf)
    assert np.array_equal(g, padded.reshape(3, 4, 32).max(2))
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(kernel, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"


def test_num_stages_zero_is_no_pipelining(tmp_path):
    """TileLang's num_stages=0 (no software pipelining) is tilemlir's num_stages=1: the same IR."""
    zero = load_module(tmp_path, GROUP_MAX).group_max
    one = load_module(tmp_path, GROUP_MAX.replace("num_stages=0", "num_stages=1")).group_max
    x = np.zeros((3, 100), np.float32)
    text = [tilemlir.lower(f.instantiate(x, 32), stage="frontend") for f in (zero, one)]
    assert "num_stages = 1" in text[0] and text[0] == text[1]


def test_alloc_scope_decides_the_space(tmp_path):
    """As in TileLang, scope= decides where a buffer lives, whichever T.alloc_* makes it."""
    module = load_module(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((M, 32), T.float32)):
        with T.Kernel(M, threads=32) as bx:
            f = T.alloc_fragment((32,), T.float32, scope="shared")
            T.copy(A[bx, 0], f)
            T.copy(f, A[bx, 0])
    """)
    text = tilemlir.lower(module.k, stage="frontend")
    assert "tile.alloc_shared" in text and "tile.alloc_fragment" not in text


@pytest.mark.parametrize("statement, words", [
    ("s = T.alloc_shared((32,), T.float32, scope=@@'global')",
     "T.alloc_shared: scope 'global' is not supported (TileLang's 'shared', 'shared.dyn', 'local.fragment' and "
     "'local' are)"),
    ("for k in T.Pipelined(1, num_stages=@@-1):\n                T.fill(A[bx, 0:32], 0)",
     "T.Pipelined: num_stages must be at least 0, got -1"),
])
def test_alloc_scope_and_stage_errors_are_located(tmp_path, statement, words):
    err = frontend_error(tmp_path, f"""
    @tilemlir.jit
    def k(A: T.Tensor((M, 32), T.float32)):
        with T.Kernel(M, threads=32) as bx:
            {statement}
    """)
    assert words in message(err)


PER_THREAD_CLEAR = """
@tilemlir.jit(out_idx=[-1])
def row_dot(A: T.Tensor((M, 64), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
        tx = T.get_thread_binding(0)
        acc = T.alloc_local((2,), T.float32)
        T.clear(acc)
        for k in T.serial(64):
            if bx * 32 + tx < M:
                acc[k % 2] += A[bx * 32 + tx, k] * A[bx * 32 + tx, k]
        T.fill(acc, acc[0] + acc[1])
        if bx * 32 + tx < M:
            B[bx * 32 + tx] = acc[1]
"""


def test_clear_and_fill_of_per_thread_buffers(tmp_path, rng):
    """T.clear / T.fill of a per-thread T.alloc_local: every thread fills its own copy, as in TileLang."""
    fn = load_module(tmp_path, PER_THREAD_CLEAR).row_dot
    a = rng.standard_normal((40, 64)).astype(np.float32)
    want = (a.astype(np.float64) ** 2).sum(1)
    for level in LEVELS:
        b = tilemlir.compile(fn, target="cpu", level=level)(a)
        assert relative_error(b, want) < 1e-6
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(fn, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"
