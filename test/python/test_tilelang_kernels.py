"""TileLang's own example kernels (tilelang_kernels/, copied from github.com/tile-ai/tilelang with only their
import lines changed), called as their files call them, on the CPU target at tile and thread level
(TILEMLIR_INTERPRET) against float64 numpy, and compiled for sm_90a through NVRTC; the ones that use what
tilemlir lacks fail with a located error naming it (issue 22)."""

import importlib.util
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import CompileError
from tilemlir.testing import relative_error

KERNELS = Path(__file__).parent / "tilelang_kernels"
BF16 = ml_dtypes.bfloat16
FP8 = ml_dtypes.float8_e4m3fn
LEVELS = ("tile", "thread")
_modules: dict[str, object] = {}


def fixture(name: str):
    """The module of tilelang_kernels/<name>.py (loaded once)."""
    if name not in _modules:
        spec = importlib.util.spec_from_file_location(f"tilelang_kernels_{name}", KERNELS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[name] = module
    return _modules[name]


@pytest.fixture
def interpret(request, monkeypatch):
    monkeypatch.setenv("TILEMLIR_INTERPRET", request.param)
    return request.param


def on_cpu(test):
    """Run `test` at both CPU levels (the kernels called exactly as the TileLang file calls them)."""
    test = pytest.mark.filterwarnings("ignore:autotuning .* needs a GPU")(test)
    return pytest.mark.parametrize("interpret", LEVELS, indirect=True)(test)


def half(rng, *shape, dtype=np.float16):
    return rng.standard_normal(shape).astype(dtype)


def f64(x):
    return np.asarray(x, np.float64)


def rms_reference(a):
    ad = f64(a)
    return ad / np.sqrt((ad * ad).mean(1, keepdims=True) + 1e-12)


# ----------------------------------------------------------------------------
# Kernels that run.


@on_cpu
def test_elementwise_add(interpret, rng):
    K = fixture("elementwise_add")
    a, b = (rng.standard_normal((64, 96)).astype(np.float32) for _ in range(2))
    c = K.elementwise_add(a, b, block_M=32, block_N=32, threads=128, in_dtype=T.float32, out_dtype=T.float32)
    assert np.array_equal(c, a + b)


@on_cpu
def test_rms_norm(interpret, rng):
    K = fixture("rms_norm")
    a = rng.standard_normal((4, 512)).astype(np.float32)
    assert relative_error(K.rms_norm(a, 1), rms_reference(a)) < 1e-6
    assert relative_error(K.rms_norm_splitk(a, 2, 128), rms_reference(a)) < 1e-6


@on_cpu
def test_layernorm_forward(interpret, rng):
    K = fixture("layernorm")
    n, d = 8, 256
    x, g, b = half(rng, n, d, dtype=BF16), half(rng, d, dtype=BF16), half(rng, d, dtype=BF16)
    y, mean, rstd = K._layernorm_fwd(n, d)(x, g, b)
    xd = f64(x)
    mu, r = xd.mean(1), 1 / np.sqrt(xd.var(1) + 1e-5)
    assert relative_error(mean, mu) < 1e-6 and relative_error(rstd, r) < 1e-5
    assert relative_error(y, (xd - mu[:, None]) * r[:, None] * f64(g) + f64(b)) < 8e-3  # bf16 output


@on_cpu
def test_layernorm_backward(interpret, rng):
    K = fixture("layernorm")
    n, d = 64, 128
    dy, x, g = half(rng, n, d, dtype=BF16), half(rng, n, d, dtype=BF16), half(rng, d, dtype=BF16)
    xd = f64(x)
    mean = xd.mean(1).astype(np.float32)
    rstd = (1 / np.sqrt(xd.var(1) + 1e-5)).astype(np.float32)
    dgamma, dbeta = np.zeros(d, np.float32), np.zeros(d, np.float32)  # accumulated into (atomic adds)
    dx = K._layernorm_bwd(n, d)(dy, x, g, mean, rstd, dgamma, dbeta)
    x_hat = (xd - f64(mean)[:, None]) * f64(rstd)[:, None]
    dx_hat = f64(dy) * f64(g)
    want = f64(rstd)[:, None] * (dx_hat - dx_hat.mean(1, keepdims=True)
                                 - x_hat * (dx_hat * x_hat).mean(1, keepdims=True))
    assert relative_error(dx, want) < 8e-3  # bf16 output
    assert relative_error(dgamma, (f64(dy) * x_hat).sum(0)) < 1e-5
    assert relative_error(dbeta, f64(dy).sum(0)) < 1e-6


@on_cpu
def test_online_softmax(interpret, rng, monkeypatch):
    K = fixture("online_softmax")
    monkeypatch.setattr(K, "M", 3)  # the file's module-level sizes, which the kernel reads (8192 x 8192 there)
    monkeypatch.setattr(K, "N", 1024)
    x = (3 * rng.standard_normal((3, 1024))).astype(np.float16)
    y = K.softmax_kernel(x, BLOCK_N=256)
    # The kernel scales x by log2(e) in float16 (x's dtype), so the reference rounds those products the same
    # way and does the rest in float64; what is left is float32 exp2/log2 and the float16 output rounding.
    scale = np.float16(1.44269504)
    scaled = f64(x * scale)
    row_max = f64(x.max(1, keepdims=True) * scale)
    lse = row_max + np.log2(np.exp2(scaled - row_max).sum(1, keepdims=True))
    assert relative_error(y, np.exp2(scaled - lse)) < 1e-3


@on_cpu
def test_gemm(interpret, rng):
    K = fixture("gemm")
    a, b = half(rng, 256, 64), half(rng, 64, 128)
    c = K.matmul.compile(M=256, N=128, K=64, block_M=128, block_N=128, block_K=32)(a, b)
    assert relative_error(c, f64(a) @ f64(b)) < 1e-3


@on_cpu
def test_dynamic_shape_gemm(interpret, rng):
    K = fixture("dynamic_shape_gemm")
    a, b = half(rng, 200, 72), half(rng, 72, 136)  # no size a multiple of its block
    c = K.matmul_dynamic_mnk(a, b, 128, 128, 32, False, False, "float16", "float16", "float32", 3, 128)
    assert relative_error(c, f64(a) @ f64(b)) < 1e-3


@on_cpu
@pytest.mark.parametrize("name", ["gemm_splitk", "gemm_splitk_vectorize_atomicadd"])
def test_gemm_splitk(interpret, name, rng):
    K = fixture(name)
    a, b = half(rng, 256, 512), half(rng, 512, 128)
    c = np.zeros((256, 128), np.float32)  # the kernel adds each split's product into it
    K.matmul(a, b, c, 128, 128, 32, 4)
    assert relative_error(c, f64(a) @ f64(b)) < 1e-5


def fp8_groups(x, scale_floor=1e-4):
    """The per-token cast's math in float32 as the kernels do it: scale = amax / 448, q = clamp(x / scale)."""
    groups = x.reshape(x.shape[0], -1, 128)
    scale = np.maximum(np.abs(groups).max(2), np.float32(scale_floor)) / np.float32(448)
    q = np.clip(groups / scale[:, :, None], np.float32(-448), np.float32(448)).astype(FP8)
    return q.reshape(x.shape), scale


@on_cpu
def test_per_token_cast_to_fp8(interpret, rng):
    K = fixture("per_token_cast_to_fp8")
    x = (rng.standard_normal((16, 256)) * rng.uniform(0.01, 100, (16, 1))).astype(np.float32)
    q, s = K.per_token_cast_to_fp8(x, 8)
    want_q, want_s = fp8_groups(x)
    assert np.array_equal(s, want_s)
    assert np.array_equal(q.view(np.uint8), want_q.view(np.uint8))


@on_cpu
def test_group_per_split_token_cast_to_fp8(interpret, rng):
    K = fixture("group_per_split_token_cast_to_fp8")
    sizes = np.array([5, 11], np.int32)
    x = half(rng, int(sizes.sum()), 256, dtype=BF16)
    q, s = K.group_per_split_token_cast_to_fp8(x, sizes, 16, 8)
    assert q.shape == (2, 16, 256) and s.shape == (2, 16, 2)
    start = 0
    for group, size in enumerate(sizes):
        want_q, want_s = fp8_groups(x[start:start + size].astype(np.float32))
        assert np.array_equal(s[group, :size], want_s)
        assert np.array_equal(q[group, :size].view(np.uint8), want_q.view(np.uint8))
        assert not s[group, size:].any() and not q[group, size:].view(np.uint8).any()  # rows past the group
        start += size


@on_cpu
def test_topk(interpret, rng):
    K = fixture("topk")
    logits = rng.random((128, 64)).astype(np.float32)
    gates, indices = K.tl_topk(logits, 6, blk_m=64)  # blk_m given: TileLang's autotune does not tune
    order = np.argsort(-logits, 1, kind="stable")[:, :6]
    assert np.array_equal(indices, order)
    assert np.array_equal(gates, np.take_along_axis(logits, order, 1))


@on_cpu
def test_naive_gemv(interpret, rng):
    """Its per-thread k loop writes the shared row every thread reads: the barriers stand inside the loop, as
    TileLang's storage-sync puts them (at thread level the simulation checks them for races)."""
    K = fixture("gemv")
    a, b = half(rng, 256), half(rng, 128, 256)
    c = K.naive_gemv.compile(N=128, K=256, BLOCK_N=128, BLOCK_K=128)(a, b)
    assert relative_error(c, f64(b) @ f64(a)) < 1e-3


@on_cpu
def test_naive_splitk_gemv(interpret, rng):
    """Its BLOCK_K threads of a row add their partial sums into one shared element with T.atomic_add."""
    K = fixture("gemv")
    a, b = half(rng, 256), half(rng, 128, 256)
    c = K.naive_splitk_gemv.compile(N=128, K=256, BLOCK_N=32, BLOCK_K=32)(a, b)
    assert relative_error(c, f64(b) @ f64(a)) < 1e-3


# ----------------------------------------------------------------------------
# Through NVRTC for sm_90a (no GPU needed).


COMPILES = [
    ("elementwise_add", "elementwise_add",
     dict(M=1024, N=1024, block_M=32, block_N=32, threads=128, in_dtype=T.float32, out_dtype=T.float32)),
    ("rms_norm", "rms_norm", dict(M=1024, N=1024, blk_m=1)),
    ("rms_norm", "rms_norm_splitk", dict(M=1024, N=1024, blk_m=1, blk_k=512)),
    ("online_softmax", "softmax_kernel", dict()),
    ("gemm", "matmul", dict(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)),
    ("dynamic_shape_gemm", "matmul_dynamic_mnk",
     dict(block_M=128, block_N=128, block_K=32, trans_A=False, trans_B=False, in_dtype="float16",
          out_dtype="float16", accum_dtype="float32", num_stages=3, threads=128)),
    ("gemm_splitk", "matmul", dict(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32, split_k=4)),
    ("gemm_splitk_vectorize_atomicadd", "matmul",
     dict(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32, split_k=4)),
    ("per_token_cast_to_fp8", "per_token_cast_to_fp8", dict(M=8192, N=8192, blk_m=8)),
    ("group_per_split_token_cast_to_fp8", "group_per_split_token_cast_to_fp8",
     dict(M=8192, N=8192, BG=2, M_max=4096, blk_m=8)),
    ("topk", "tl_topk", dict(M=320, N=128, topk=6, blk_m=64)),
    ("gemv", "naive_gemv", dict(N=1024, K=1024, BLOCK_N=128, BLOCK_K=128)),
    ("gemv", "naive_splitk_gemv", dict(N=1024, K=1024, BLOCK_N=32, BLOCK_K=32)),
]


@pytest.mark.parametrize("name, kernel, arguments", COMPILES, ids=[f"{c[0]}.{c[1]}" for c in COMPILES])
def test_compiles_for_sm90a(name, kernel, arguments):
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = getattr(fixture(name), kernel).compile(target="cuda", arch="sm_90a", **arguments)
    assert compiled.cubin[:4] == b"\x7fELF"
    assert re.search(rf'extern "C" __global__ void __launch_bounds__\(\d+(, \d+)?\) {compiled.name}\(',
                     compiled.cuda_source())


def test_layernorm_compiles_for_sm90a():
    pytest.importorskip("cuda.bindings.nvrtc")
    K = fixture("layernorm")
    for factory in (K._layernorm_fwd.instantiate(4096, 8192), K._layernorm_bwd.instantiate(4096, 8192)):
        compiled = tilemlir.compile(factory, target="cuda", arch="sm_90a")
        assert compiled.cubin[:4] == b"\x7fELF"
        assert compiled.name == "main_kernel"  # TileLang's examples name their prim_func main


# ----------------------------------------------------------------------------
# Kernels that use what tilemlir lacks: a located error naming it.


UNSUPPORTED = [
    ("convolution", lambda K, rng: K.convolution(half(rng, 2, 8, 8, 16), half(rng, 3, 3, 16, 32), 1, 1, 1, 64, 128,
                                                 32, 3, 256),
     34, r"TileLang's `buffer.data`"),
    ("chunk_local_cumsum", lambda K, rng: K.tilelang_chunk_local_cumsum_scalar(2, 128, 4)(half(rng, 2, 128, 4)),
     46, r"shape mismatch in T.copy"),
    ("gemv", lambda K, rng: K.splitk_gemv_vectorized_tvm.compile(N=128, K=256, BLOCK_N=2, reduce_threads=32),
     195, r"'T' has no attribute 'attr'"),
    ("gemv", lambda K, rng: K.gemv_alloc_reducer.compile(M=128, N=256, block_M=128, block_N=128),
     243, r"the legacy reducer \(replication=\) is not supported"),
]


@pytest.mark.parametrize("interpret", ["tile"], indirect=True)
@pytest.mark.parametrize("name, call, line, text", UNSUPPORTED, ids=[f"{c[0]}:{c[2]}" for c in UNSUPPORTED])
def test_unsupported_is_a_located_error(interpret, name, call, line, text, rng):
    with pytest.raises(CompileError) as info:
        call(fixture(name), rng)
    location = info.value.location
    assert location is not None and Path(location.file) == KERNELS / f"{name}.py" and location.line == line
    assert re.search(text, str(info.value)), str(info.value)
