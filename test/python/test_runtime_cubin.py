"""tilemlir.runtime.cubin: the registers per kernel read from a cubin's .nv.info agree with ptxas's own report."""

import re

import pytest

from tilemlir.runtime import cubin
from tilemlir.runtime.nvrtc import CompileOptions, compile_cuda, ptxas_report

KERNELS = r"""
extern "C" __global__ void few(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" __global__ void __launch_bounds__(128) many(float* x, int n) {
  float acc[48];
  #pragma unroll
  for (int i = 0; i < 48; ++i) acc[i] = x[threadIdx.x + i * n];
  #pragma unroll
  for (int r = 0; r < 8; ++r) {
    #pragma unroll
    for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + r + 1) % 48] + 1.0f;
  }
  #pragma unroll
  for (int i = 0; i < 48; ++i) x[threadIdx.x + i * n] = acc[i];
}
"""


def test_register_counts_match_ptxas():
    options = CompileOptions(arch="sm_90a")
    counts = cubin.register_counts(compile_cuda(KERNELS, "two", options))
    report = ptxas_report(KERNELS, "two", options)
    reported = dict(re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", report, re.S))
    assert set(counts) == {"few", "many"} == set(reported)
    assert counts == {name: int(n) for name, n in reported.items()}
    assert counts["many"] > counts["few"]


@pytest.mark.parametrize("image, words", [
    (b"not an elf image at all" * 4, "not a 64-bit little-endian ELF image"),
    (b"\x7fELF\x01\x01" + bytes(100), "not a 64-bit little-endian ELF image"),
])
def test_what_is_not_a_cubin_is_refused(image, words):
    with pytest.raises(cubin.CubinError, match=words):
        cubin.register_counts(image)
