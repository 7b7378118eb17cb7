"""RMSNorm and LayerNorm (plain and fused residual) at widths config.row_config does not hold in
registers (streamed rows, norm.py's two passes) and at one it splits unevenly (masked chunks), on
the CPU backend at tile and thread level against float64 numpy references (H bit for bit), plus
the streamed kernels' CUDA, compiled with NVRTC (no GPU needed).

Streamed passes hold 512 threads x max_chunks 16-byte chunks (LayerNorm half as many): 8192 bf16
columns (LayerNorm 4096) by default, 4096 with `max_chunks=1`, which streams rows from 8192
columns on; each test asserts which kernel its width built."""

import re
import time

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from tilemlir.kernels import norm
from tilemlir.kernels.config import row_config
from tilemlir.testing import relative_error

BF16 = ml_dtypes.bfloat16
LEVELS = ("tile", "thread")
RMS_EPS, LN_EPS = 1e-6, 1e-5
# The outputs are bfloat16 (relative rounding up to 2^-9): about 1.5e-3 per row when right. A
# ragged chunk's padding in LayerNorm's variance, or E[x^2] - mean^2 in float32 on the rows of mean
# 1000, gives 1.5e-2 and more on some row.
ROW_TOLERANCE = 5e-3

# (N, max_chunks): 17384 streams in 8192-column passes (4096 in residual LayerNorm's Welford pass and
# LayerNorm's output pass), the last of 1000 columns;
# 12288 in three whole 4096-column passes; 9193 ends in a pass of 1 column and its rows are not
# 16-byte aligned.
STREAMED = [(17384, None), (12288, 1), (9193, 1)]


def cpu(factory, level, kernel_name, N, max_chunks):
    kwargs = {"N": N} if max_chunks is None else {"N": N, "max_chunks": max_chunks}
    kernel = tilemlir.compile(factory.instantiate(**kwargs), target="cpu", level=level)
    assert kernel.name == kernel_name, f"{kwargs} built {kernel.name}, not the {kernel_name} under test"
    return kernel


def rows(rng, N):
    """Rows of mean 0, of mean 1000 (bf16 spacing 4 there: the variance is mostly rounding), of
    mean -300 with spread 4, and of spread 5."""
    x = rng.standard_normal((4, N))
    x[1] += 1000
    x[2] = 4 * x[2] - 300
    x[3] *= 5
    return x.astype(BF16)


def weights(rng, N):
    return (1 + 0.1 * rng.standard_normal(N)).astype(BF16), (0.1 * rng.standard_normal(N)).astype(BF16)


def rmsnorm_reference(x, w):
    xd = x.astype(np.float64)
    return xd / np.sqrt((xd * xd).mean(1, keepdims=True) + RMS_EPS) * w.astype(np.float64)


def layernorm_reference(x, w, b):
    xd = x.astype(np.float64)
    centred = xd - xd.mean(1, keepdims=True)
    rstd = 1 / np.sqrt((centred * centred).mean(1, keepdims=True) + LN_EPS)
    return centred * rstd * w.astype(np.float64) + b.astype(np.float64)


def residual(x, r):
    """bf16(x + r) as the kernels round it: the float32 sum, rounded to nearest even."""
    return (x.astype(np.float32) + r.astype(np.float32)).astype(BF16)


def check_h(h, want):
    assert np.array_equal(np.asarray(h).view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N, max_chunks", STREAMED)
def test_rmsnorm_streamed(level, N, max_chunks, rng):
    x, (w, _) = rows(rng, N), weights(rng, N)
    y = cpu(norm.rmsnorm, level, "rmsnorm_streamed_kernel", N, max_chunks)(x, w, RMS_EPS)
    assert relative_error(y, rmsnorm_reference(x, w), axis=1).max() < ROW_TOLERANCE


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N, max_chunks", STREAMED)
def test_add_rmsnorm_streamed(level, N, max_chunks, rng):
    x, r, (w, _) = rows(rng, N), rows(rng, N), weights(rng, N)
    y, h = cpu(norm.add_rmsnorm, level, "add_rmsnorm_streamed_kernel", N, max_chunks)(x, r, w, RMS_EPS)
    want_h = residual(x, r)
    check_h(h, want_h)
    assert relative_error(y, rmsnorm_reference(want_h, w), axis=1).max() < ROW_TOLERANCE


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N, max_chunks", STREAMED)
def test_layernorm_streamed(level, N, max_chunks, rng):
    x, (w, b) = rows(rng, N), weights(rng, N)
    y = cpu(norm.layernorm, level, "layernorm_streamed_kernel", N, max_chunks)(x, w, b, LN_EPS)
    assert relative_error(y, layernorm_reference(x, w, b), axis=1).max() < ROW_TOLERANCE


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N, max_chunks", STREAMED)
def test_add_layernorm_streamed(level, N, max_chunks, rng):
    x, r, (w, b) = rows(rng, N), rows(rng, N), weights(rng, N)
    y, h = cpu(norm.add_layernorm, level, "add_layernorm_streamed_kernel", N, max_chunks)(x, r, w, b, LN_EPS)
    want_h = residual(x, r)
    check_h(h, want_h)
    assert relative_error(y, layernorm_reference(want_h, w, b), axis=1).max() < ROW_TOLERANCE


@pytest.mark.parametrize("level", LEVELS)
def test_norms_uneven_in_registers(level, rng):
    """5000 bf16 columns are 625 chunks: one row per 320-thread block, 2 chunks a thread, 15 masked."""
    N = 5000
    assert (row_config(N, "bfloat16", 2).threads, row_config(N, "bfloat16", 2).block_M) == (320, 1)
    x, r, (w, b) = rows(rng, N), rows(rng, N), weights(rng, N)
    want_h = residual(x, r)
    y = cpu(norm.rmsnorm, level, "rmsnorm_kernel", N, None)(x, w, RMS_EPS)
    assert relative_error(y, rmsnorm_reference(x, w), axis=1).max() < ROW_TOLERANCE
    y, h = cpu(norm.add_rmsnorm, level, "add_rmsnorm_kernel", N, None)(x, r, w, RMS_EPS)
    check_h(h, want_h)
    assert relative_error(y, rmsnorm_reference(want_h, w), axis=1).max() < ROW_TOLERANCE
    y = cpu(norm.layernorm, level, "layernorm_kernel", N, None)(x, w, b, LN_EPS)
    assert relative_error(y, layernorm_reference(x, w, b), axis=1).max() < ROW_TOLERANCE
    y, h = cpu(norm.add_layernorm, level, "add_layernorm_kernel", N, None)(x, r, w, b, LN_EPS)
    check_h(h, want_h)
    assert relative_error(y, layernorm_reference(want_h, w, b), axis=1).max() < ROW_TOLERANCE


FACTORIES = [norm.rmsnorm, norm.add_rmsnorm, norm.layernorm, norm.add_layernorm]


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_norms_stream_only_rows_row_config_does_not_hold(factory):
    """The threshold is row_config's: 16384 bf16 columns fit 1024 threads x 2 chunks."""
    assert row_config(16384, "bfloat16", 2) is not None and row_config(16392, "bfloat16", 2) is None
    assert factory.instantiate(N=16384).__name__ == f"{factory.__name__}_kernel"
    assert factory.instantiate(N=16392).__name__ == f"{factory.__name__}_streamed_kernel"


FRAGMENT_DECLARATION = re.compile(r"^\s+(?:float|__nv_bfloat16) \w+\[(\d+)\];", re.M)


# 32768: a model's width (whole passes); 100000: a ragged last pass; 32769: rows not 16-byte aligned.
@pytest.mark.parametrize("N", [32768, 100000, 32769])
@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_streamed_norms_compile_to_cuda(factory, N, monkeypatch):
    """NVRTC compiles each at once, with per-thread fragments of 2 16-byte chunks of the input,
    1 for residual LayerNorm's Welford pass (one warp per row of N = 32768 once made that 1024
    floats and a 5 s compile)."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    start = time.perf_counter()
    kernel = tilemlir.compile(factory.instantiate(N=N), target="cuda")
    elapsed = time.perf_counter() - start
    assert kernel.cubin[:4] == b"\x7fELF"
    assert kernel.name == f"{factory.__name__}_streamed_kernel"
    assert elapsed < 10, f"{elapsed:.1f} s"
    source = kernel.cuda_source()
    assert "block (512, 1, 1)" in source
    sizes = [int(n) for n in FRAGMENT_DECLARATION.findall(source)]
    assert sizes and max(sizes) == (8 if factory.__name__ == "add_layernorm" else 16), sizes


def h_accesses(source):
    """(kind, index) of each 16-byte access to H in a CUDA source, `int name = ...;` aliases in the
    index replaced by their latest definition above it (until none is left)."""
    lines = source.splitlines()
    accesses = []
    for number, line in enumerate(lines):
        for kind, index in re.findall(r"\*reinterpret_cast<(const )?bf16x8\*>\(&H\[([^\]]*)\]\)", line):
            for _ in range(10):
                names = [n for n in re.findall(r"\b[a-z_]\w*\b", index) if n not in ("bx", "tx")]
                definitions = {n: alias_definition(lines, number, n) for n in names}
                definitions = {n: d for n, d in definitions.items() if d is not None}
                if not definitions:
                    break
                for name, definition in definitions.items():
                    index = re.sub(rf"\b{name}\b", f"({definition})", index)
            accesses.append(("load" if kind else "store", index))
    return accesses


def alias_definition(lines, before, name):
    for line in reversed(lines[:before]):
        match = re.match(rf"\s*int {name} = (.*);$", line)
        if match:
            return match.group(1)
    return None


@pytest.mark.parametrize("factory", [norm.add_rmsnorm, norm.add_layernorm], ids=lambda f: f.__name__)
def test_fused_streamed_norms_read_back_only_their_own_h(factory):
    """Pass 2 reads H with no barrier after pass 1 wrote it: on the GPU that is only safe because
    each thread loads exactly the addresses it stored (the same fragment's layout, so the same
    index expressions in the CUDA source). The CPU backend cannot see a violation. Whole passes
    only: with a ragged one the passes' loops are split differently (same addresses, other text)."""
    accesses = h_accesses(factory(N=32768).cuda_source())
    stores = sorted(index for kind, index in accesses if kind == "store")
    loads = sorted(index for kind, index in accesses if kind == "load")
    assert stores and stores == loads and all("tx" in index for index in stores), accesses


def test_streamed_layernorm_rereads_the_row_for_its_deviations():
    """The deviation pass's loop stays rolled: unrolled, NVCC kept the first pass's loads of the whole
    row for it instead of reading it again, and spilled 40 bytes a thread at N = 32768."""
    source = norm.layernorm(N=32768).cuda_source()
    rolled = [i for i, line in enumerate(source.splitlines()) if line.strip() == "#pragma unroll 1"]
    assert len(rolled) == 1
    loop = source.splitlines()[rolled[0] + 1:]
    assert "reinterpret_cast<const bf16x8*>(&X[" in "\n".join(loop[:8])
