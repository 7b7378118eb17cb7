"""Row kernels at widths config.row_config does not hold in registers (streamed rows, SwiGLU's
column tiles) and at widths it splits unevenly (masked chunks), on the CPU backend at tile and
thread level against float64 numpy references (bit for bit for the fp8 quantization), plus
their CUDA at widths of real models, compiled with NVRTC (no GPU needed).

`max_chunks=1` makes rows stream from 4096 float32 / 8192 16-bit columns, which keeps the
CPU runs small; each test asserts which kernel its width built."""

import re

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from tilemlir.kernels import activation, quant, reduce, softmax
from tilemlir.kernels.config import row_config
from tilemlir.testing import relative_error

BF16 = ml_dtypes.bfloat16
FP8 = ml_dtypes.float8_e4m3fn
LEVELS = ("tile", "thread")
NUMPY = {"float16": np.float16, "bfloat16": BF16, "float32": np.float32}


def cpu(factory, level, kernel_name, **kwargs):
    kernel = tilemlir.compile(factory.instantiate(**kwargs), target="cpu", level=level)
    assert kernel.name == kernel_name, f"{kwargs} built {kernel.name}, not the {kernel_name} under test"
    return kernel


# max_chunks=1: 4096-column passes. 8192 streams in two whole passes; 8292 ends in a pass of 100.
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [8192, 8292])
def test_row_sum_streamed(level, N, rng):
    x = (rng.standard_normal((5, N)) + rng.uniform(-2, 2, (5, 1))).astype(np.float32)
    y = cpu(reduce.row_sum, level, "row_reduce_streamed_kernel", N=N, max_chunks=1)(x)
    assert relative_error(y, x.astype(np.float64).sum(1)) < 1e-5


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [8192, 8292])
def test_row_max_streamed_negative_rows(level, N, rng):
    """All-negative rows: a ragged pass's missing columns must read as -inf, not 0. One row's
    max sits in the first column, one in the last (in the ragged pass)."""
    x = (-np.abs(rng.standard_normal((5, N))) - rng.uniform(0.5, 3, (5, 1))).astype(np.float32)
    x[1, 0], x[2, N - 1] = -0.01, -0.02
    y = cpu(reduce.row_max, level, "row_reduce_streamed_kernel", N=N, max_chunks=1)(x)
    assert np.array_equal(y, x.max(1))


@pytest.mark.parametrize("level", LEVELS)
def test_row_reductions_uneven_in_registers(level, rng):
    """5000 float32 columns are 1250 16-byte chunks: 320 threads x 4, the last 30 chunks masked."""
    N = 5000
    assert (row_config(N, "float32", 4).threads, row_config(N, "float32", 4).block_M) == (320, 1)
    x = (-np.abs(rng.standard_normal((6, N))) - 1).astype(np.float32)
    x[3, N - 1] = -0.5
    assert np.array_equal(cpu(reduce.row_max, level, "row_reduce_kernel", N=N)(x), x.max(1))
    assert relative_error(cpu(reduce.row_sum, level, "row_reduce_kernel", N=N)(x), x.astype(np.float64).sum(1)) < 1e-5


def quant_input(rng, N):
    """Rows of very different magnitudes whose absmax lies in the first column, the last column
    (a ragged pass when N is) and somewhere in the middle."""
    scales = np.array([1e-3, 0.7, 30.0, 2e4, 5e-2, 3.0])[:, None]
    x = rng.standard_normal((6, N)) * scales
    for row, col in ((0, 0), (1, N - 1), (2, N // 2 + 3), (3, N - 1)):
        x[row, col] = 8 * scales[row, 0] * (-1 if row % 2 else 1)
    return x.astype(BF16)


def check_quant(x, q, s):
    """PyTorch's `s = amax / 448; (x / s).to(fp8)`, bit for bit (see test_kernels.py)."""
    amax = np.abs(x.astype(np.float32)).max(1)
    want_s = amax * np.float32(1 / 448.0)
    want_q = (x.astype(np.float32) / want_s[:, None]).astype(FP8)
    assert np.array_equal(s, want_s)
    assert np.array_equal(q.view(np.uint8), want_q.view(np.uint8))


# max_chunks=1: 4096-column passes; 16384 is four whole passes, 17384 ends in a pass of 1000.
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [16384, 17384])
def test_quant_row_fp8_streamed_bitwise(level, N, rng):
    x = quant_input(rng, N)
    q, s = cpu(quant.quant_row_fp8, level, "quant_row_streamed_kernel", N=N, max_chunks=1)(x)
    check_quant(x, q, s)


@pytest.mark.parametrize("level", LEVELS)
def test_quant_row_fp8_uneven_in_registers_bitwise(level, rng):
    """5000 bf16 columns are 625 chunks: 160 threads x 4 (quant's default), 15 masked."""
    N = 5000
    assert (row_config(N, "bfloat16", 4).threads, row_config(N, "bfloat16", 4).block_M) == (160, 1)
    x = quant_input(rng, N)
    q, s = cpu(quant.quant_row_fp8, level, "quant_row_kernel", N=N)(x)
    check_quant(x, q, s)


def silu_mul_reference(x, N):
    g, u = x[:, :N].astype(np.float64), x[:, N:].astype(np.float64)
    return g / (1 + np.exp(-g)) * u


# max_chunks=1: tiles of 2048 columns; 16384 is eight whole tiles, 9192 ends in a tile of 1000 (whose
# gate copy reads up-half columns into lanes that are not stored).
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N", [16384, 9192])
def test_silu_mul_column_tiles(level, N, rng):
    x = rng.standard_normal((3, 2 * N)).astype(BF16)
    y = cpu(activation.silu_mul, level, "silu_mul_tiled_kernel", N=N, max_chunks=1)(x)
    assert relative_error(y, silu_mul_reference(x, N)) < 1e-2


@pytest.mark.parametrize("level", LEVELS)
def test_silu_mul_uneven_in_registers(level, rng):
    """5000 bf16 columns: one row per 320-thread block, 2 chunks a thread, 15 masked."""
    N = 5000
    assert (row_config(N, "bfloat16", 2).threads, row_config(N, "bfloat16", 2).block_M) == (320, 1)
    x = rng.standard_normal((3, 2 * N)).astype(BF16)
    y = cpu(activation.silu_mul, level, "silu_mul_kernel", N=N)(x)
    assert relative_error(y, silu_mul_reference(x, N)) < 1e-2


def softmax_reference(x):
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def negative_rows(rng, N, dtype):
    """Rows of values around -6 (max near -4): columns of a ragged chunk that read 0 instead of
    -inf would add exp(0 - max) ~ 50 each to the sum."""
    return (0.5 * rng.standard_normal((4, N)) - 6).astype(NUMPY[dtype])


# max_chunks=1: chunks of 256 threads x 8 = 2048 columns; 10240 is five whole chunks, 9192 ends in a
# chunk of 1000, 9193 also has rows that are not 16-byte aligned.
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("N, dtype", [(10240, "float16"), (9192, "bfloat16"), (9193, "float16")])
def test_softmax_streamed(level, N, dtype, rng):
    x = negative_rows(rng, N, dtype)
    y = cpu(softmax.softmax, level, "softmax_online_kernel", N=N, dtype=dtype, max_chunks=1)(x)
    assert relative_error(y, softmax_reference(x)) < (2e-3 if dtype == "float16" else 1e-2)


@pytest.mark.parametrize("level", LEVELS)
def test_softmax_uneven_in_registers(level, rng):
    """5000 bf16 columns: 160 threads x 4 chunks (softmax's default), 15 masked."""
    x = negative_rows(rng, 5000, "bfloat16")
    y = cpu(softmax.softmax, level, "softmax_kernel", N=5000, dtype="bfloat16")(x)
    assert relative_error(y, softmax_reference(x)) < 1e-2


def test_softmax_streams_only_rows_row_config_does_not_hold():
    """The threshold is row_config's: 32768 bf16 columns fit 1024 threads x 4 chunks."""
    assert row_config(32768, "bfloat16", 4) is not None and row_config(32776, "bfloat16", 4) is None
    assert softmax.softmax.instantiate(N=32768, dtype="bfloat16").__name__ == "softmax_kernel"
    assert softmax.softmax.instantiate(N=32776, dtype="bfloat16").__name__ == "softmax_online_kernel"


# Widths of real models: Llama-3-70B's intermediate size (28672) for SwiGLU, rows past 65536 for
# quantization, a long reduction, softmax with a ragged last chunk.
CUDA_CASES = [
    (reduce.row_sum, {"N": 100000}, "row_reduce_streamed_kernel", 16),
    (reduce.row_max, {"N": 100000}, "row_reduce_streamed_kernel", 16),
    (quant.quant_row_fp8, {"N": 65536 + 1000}, "quant_row_streamed_kernel", 32),
    (activation.silu_mul, {"N": 28672}, "silu_mul_tiled_kernel", 16),
    (softmax.softmax, {"N": 20000, "dtype": "bfloat16", "max_chunks": 2}, "softmax_online_kernel", 16),
]
FRAGMENT_DECLARATION = re.compile(r"^\s+(?:float|__nv_bfloat16|half|__nv_fp8_e4m3) \w+\[(\d+)\];", re.M)


@pytest.mark.parametrize("factory, kwargs, name, per_thread", CUDA_CASES,
                         ids=lambda v: getattr(v, "__name__", None) or (str(v) if isinstance(v, dict) else None))
def test_streamed_kernels_compile_to_cuda(factory, kwargs, name, per_thread, monkeypatch):
    """NVRTC compiles each, with per-thread fragments of max_chunks 16-byte chunks of the input (one
    warp per row of N = 100000 once made that 3125 floats and a 24 s compile). The fragment sizes are
    what is checked, not the wall clock (compile time is benchmarks/compile_time.py's)."""
    monkeypatch.setenv("TILEMLIR_DISABLE_CACHE", "1")
    kernel = tilemlir.compile(factory.instantiate(**kwargs), target="cuda")
    assert kernel.cubin[:4] == b"\x7fELF"
    assert kernel.name == name
    sizes = [int(n) for n in FRAGMENT_DECLARATION.findall(kernel.cuda_source())]
    assert sizes and max(sizes) == per_thread, sizes
