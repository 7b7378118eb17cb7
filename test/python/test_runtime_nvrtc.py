"""NVRTC compiles CUDA C++ to sm_90a cubins without a GPU; errors carry NVRTC's log."""

import struct

import pytest

from tilemlir.diagnostics import CompileError
from tilemlir.runtime.nvrtc import (CompileOptions, compile_cuda, compile_ptx, include_dirs, normalize_arch,
                                    nvrtc_version)

BF16_FP8_KERNEL = r"""
#include <cuda_bf16.h>
#include <cuda_fp8.h>

extern "C" __global__ void __launch_bounds__(128)
quantize_rows(const __nv_bfloat16* __restrict__ X, __nv_fp8_e4m3* __restrict__ Y, float scale, long long M) {
  long long row = (long long)blockIdx.x * 4 + threadIdx.x / 32;
  if (row >= M) return;
  const uint4* src = reinterpret_cast<const uint4*>(X + row * 256);
  for (int v = threadIdx.x % 32; v < 32; v += 32) {
    uint4 packed = src[v];
    const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&packed);
    for (int i = 0; i < 8; ++i)
      Y[row * 256 + v * 8 + i] = __nv_fp8_e4m3(__bfloat162float(h[i]) * scale);
  }
}
"""

EM_CUDA = 190


def elf_machine(cubin: bytes) -> int:
    return struct.unpack_from("<H", cubin, 18)[0]


def test_compiles_bf16_and_fp8_kernel_for_sm90a():
    cubin = compile_cuda(BF16_FP8_KERNEL, "quantize_rows", CompileOptions(arch="sm_90a"))
    assert cubin[:4] == b"\x7fELF"
    assert elf_machine(cubin) == EM_CUDA
    assert b"quantize_rows" in cubin
    assert len(cubin) > 1000


def test_fmad_and_fast_math_flags_reach_the_code():
    source = r'''extern "C" __global__ void f(float* y, const float* a, const float* b) {
      int i = threadIdx.x;
      y[i] = a[i] * b[i] + a[i] / b[i]; }'''
    default = compile_ptx(source, "f", CompileOptions())
    assert "fma.rn.f32" in default and "div.rn.f32" in default  # contraction on, IEEE division
    no_fma = compile_ptx(source, "f", CompileOptions(fmad=False))
    assert "fma.rn.f32" not in no_fma and "mul.rn.f32" in no_fma and "div.rn.f32" in no_fma
    fast = compile_ptx(source, "f", CompileOptions(fast_math=True))
    assert "div.rn.f32" not in fast and ("div.approx" in fast or "div.full" in fast)
    assert ".target sm_90a" in default
    flags = CompileOptions(arch="sm_80", fmad=False, fast_math=True, lineinfo=False).flags()
    assert flags[:4] == ["-arch=sm_80", "-std=c++17", "-default-device", "--fmad=false"]
    assert "-use_fast_math" in flags and "-lineinfo" not in flags
    assert "-use_fast_math" not in CompileOptions().flags() and "-lineinfo" in CompileOptions().flags()


def test_syntax_error_raises_compile_error_with_the_nvrtc_log():
    source = 'extern "C" __global__ void broken(float* y) {\n  y[0] = 1.0f\n}\n'
    with pytest.raises(CompileError) as info:
        compile_cuda(source, "broken", CompileOptions())
    message = str(info.value)
    assert message.startswith("error: NVRTC could not compile broken.cu for sm_90a:")
    assert 'broken.cu(3): error: expected a ";"' in message


def test_arch_names_are_normalized_and_checked():
    assert normalize_arch("90a") == "sm_90a"
    assert normalize_arch("compute_90a") == "sm_90a"
    assert normalize_arch(" sm_80 ") == "sm_80"
    with pytest.raises(CompileError, match="arch sm_20 is not supported by NVRTC"):
        normalize_arch("sm_20")
    with pytest.raises(CompileError, match="arch 'hopper' is not of the form sm_XX"):
        normalize_arch("hopper")
    with pytest.raises(CompileError, match="arch 90 is not of the form sm_XX"):
        normalize_arch(90)


def test_headers_come_from_the_pip_wheel_and_version_is_known():
    dirs = include_dirs()
    assert dirs, "no CUDA include directory found"
    assert any(d.endswith("include") for d in dirs)
    major, minor = nvrtc_version().split(".")
    assert int(major) >= 12 and int(minor) >= 0
