"""CPU-target kernels (and TILEMLIR_INTERPRET) on torch CPU tensors: read and written in place, the outputs torch
tensors of the kernel's dtype, bfloat16 and float8 included; a tensor on another device is refused, saying to
move it. Skipped where torch is not installed (it is no dependency)."""

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from tilemlir.diagnostics import LaunchError
from support import accumulate, scale_rows as scale

torch = pytest.importorskip("torch")


TORCH_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "float8_e4m3": "float8_e4m3fn"}


@pytest.mark.parametrize("level", ["tile", "thread"])
@pytest.mark.parametrize("dtype, out_dtype", [("float32", "float32"), ("bfloat16", "float32"),
                                              ("float32", "bfloat16"), ("float8_e4m3", "float16")])
def test_torch_cpu_tensors_in_and_out(level, dtype, out_dtype):
    """The outputs are torch tensors of the kernel's dtype, bit for bit what the same call on numpy gives and
    what torch computes (the product in float32, rounded once)."""
    kernel = tilemlir.compile(scale.instantiate(dtype, out_dtype), target="cpu", level=level)
    x = torch.randn(5, 64).to(getattr(torch, TORCH_DTYPES[dtype]))
    y = kernel(x, 1.5)
    assert isinstance(y, torch.Tensor) and y.dtype == getattr(torch, TORCH_DTYPES[out_dtype]) and y.shape == (5, 64)
    assert torch.equal(y, (x.to(torch.float32) * 1.5).to(y.dtype))
    from_numpy = kernel(_numpy_twin(x, dtype), 1.5)
    assert isinstance(from_numpy, np.ndarray)
    assert np.array_equal(from_numpy.view(_bits(y).dtype), _bits(y))


def _numpy_twin(tensor, dtype):
    """The numpy array of the same values (ml_dtypes for bfloat16 and float8)."""
    if dtype in ("bfloat16", "float8_e4m3"):
        return _bits(tensor).view(getattr(ml_dtypes, TORCH_DTYPES[dtype]))
    return tensor.numpy()


def _bits(tensor):
    return tensor.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[tensor.element_size()]).numpy()


def test_a_written_tensor_is_updated_in_place_and_a_strided_one_refused_like_numpys():
    kernel = tilemlir.compile(accumulate.instantiate(), target="cpu")
    x, acc = torch.arange(6, dtype=torch.float32), torch.ones(6)
    assert kernel(x, acc) is None
    assert acc.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    strided = torch.ones(12)[::2]
    with pytest.raises(LaunchError, match="'Acc'"):  # as for a strided numpy array: the kernel wants contiguous
        kernel(x, strided)


def test_a_tensor_on_another_device_says_to_move_it():
    kernel = tilemlir.compile(scale.instantiate(), target="cpu")
    with pytest.raises(LaunchError, match=r"argument 'X': a torch tensor on meta, but this kernel runs on the CPU "
                                          r"\(target='cpu' or TILEMLIR_INTERPRET\): pass X.cpu\(\) and move the "
                                          r"results back with .to\(device\)"):
        kernel(torch.empty(4, 64, device="meta"), 1.0)


def test_interpret_runs_a_cuda_kernel_on_torch_tensors(monkeypatch):
    monkeypatch.setenv("TILEMLIR_INTERPRET", "1")
    x = torch.randn(3, 64)
    y = scale("float32", "float32")(x, 2.0, stream=None)
    assert torch.equal(y, x * 2.0)
