"""The CPU simulation's wgmma model (backends/cpu/simulate/ptx_isa.py: descriptor fields, canonical layouts with
32/64/128-byte swizzles, the m64nNk16 D fragment) against the hardware's wgmma.mma_async on the GPU.

A hand-written CUDA kernel (inline PTX, built by `tilemlir.runtime`, no MLIR) copies swizzled A and B tiles into
1024-byte-aligned shared memory, runs one wgmma with descriptors the model encodes (their start fields plus
the shared base address >> 4) and writes each thread's D registers out; the model computes the same registers
on the host. Fresh random inputs, outputs poisoned first. Skipped without a GPU; the sources compile through
NVRTC without one (`test_the_wgmma_kernels_compile`)."""

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.simulate import ptx_isa as isa

WARPGROUP = 128
# (trans_a, trans_b, swizzle, n): every major-ness pair per swizzle, and the n extremes
CASES = [(ta, tb, swizzle, 64) for swizzle in (32, 64, 128) for ta in (False, True) for tb in (False, True)] + [
    (False, False, 128, 8), (False, True, 128, 256), (True, False, 32, 128)]


def swizzled(matrix: np.ndarray, swizzle: int) -> np.ndarray:
    """docs/tensor_cores.md's `tile.swizzle` layout of a [rows, cols] 2-byte matrix, flat: panels of W bytes
    (panel p at p * rows * W), L = r * W + c_bytes, L' = L ^ (((L >> 7) & (W / 16 - 1)) << 4). (Also in
    test/python/support.py, which this MLIR-free file cannot import.)"""
    rows, cols = matrix.shape
    flat = np.zeros(rows * cols, dtype=matrix.dtype)
    for r in range(rows):
        for c in range(cols):
            panel, within = divmod(2 * c, swizzle)
            offset = r * swizzle + within
            offset ^= ((offset >> 7) & (swizzle // 16 - 1)) << 4
            flat[(panel * rows * swizzle + offset) // 2] = matrix[r, c]
    return flat


def operand(mn: int, swizzle: int, mn_major: bool, rng):
    """A bf16 operand with K = one swizzle row (of which the wgmma reads k 0..15), stored [mn, K] (K-major)
    or [K, mn]: (the matrix [mn, K] as float64, the stored flat bf16 buffer, its descriptor without start)."""
    k = max(16, swizzle // 2)
    matrix = rng.standard_normal((mn, k)).astype(ml_dtypes.bfloat16)
    stored = matrix.T if mn_major else matrix
    rows = stored.shape[0]
    desc = isa.MatrixDescriptor(0, rows * swizzle if mn_major else 16, 8 * swizzle, swizzle)
    return matrix.astype(np.float64), swizzled(np.ascontiguousarray(stored), swizzle), desc


def source(name: str, n: int, trans_a: bool, trans_b: bool, size_a: int, size_b: int) -> str:
    half = n // 2
    b_offset = -(-size_a * 2 // 1024) * 1024 // 2  # B from the next 1024-byte boundary
    registers = ", ".join(f"%{i}" for i in range(half))
    outputs = ", ".join(f'"+f"(d[{i}])' for i in range(half))
    return f"""#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(128)
{name}(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, const float* __restrict__ C,
       float* __restrict__ D, long long a_desc, long long b_desc) {{
  __shared__ __align__(1024) unsigned short smem[{b_offset + size_b}];
  const unsigned short* a_bits = reinterpret_cast<const unsigned short*>(A);
  const unsigned short* b_bits = reinterpret_cast<const unsigned short*>(B);
  const int t = threadIdx.x;
  for (int i = t; i < {size_a}; i += 128) smem[i] = a_bits[i];
  for (int i = t; i < {size_b}; i += 128) smem[{b_offset} + i] = b_bits[i];
  float d[{half}];
  for (int i = 0; i < {half}; ++i) d[i] = C[t * {half} + i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const unsigned long long base = (unsigned long long)(__cvta_generic_to_shared(smem) >> 4);
  const unsigned long long da = (unsigned long long)a_desc + base;
  const unsigned long long db = (unsigned long long)b_desc + base + {b_offset * 2 // 16};
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{half + 2}, 0;\\n"
               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16 {{{registers}}}, %{half}, %{half + 1}, p, 1, 1, "
               "{int(trans_a)}, {int(trans_b)};\\n}}\\n"
               : {outputs} : "l"(da), "l"(db), "r"(1));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  for (int i = 0; i < {half}; ++i) D[t * {half} + i] = d[i];
}}
"""


def case_name(trans_a, trans_b, swizzle, n) -> str:
    return f"wgmma_m64n{n}_t{int(trans_a)}{int(trans_b)}_sw{swizzle}"


def sizes(swizzle: int, n: int) -> tuple[int, int]:
    k = max(16, swizzle // 2)
    return 64 * k, n * k


def signature(name: str, n: int, size_a: int, size_b: int):
    from tilemlir.runtime import KernelSignature, ScalarParam, TensorParam

    half = n // 2
    return KernelSignature(
        name=name, params=(TensorParam("A", "bfloat16", (size_a,)), TensorParam("B", "bfloat16", (size_b,)),
                           TensorParam("C", "float32", (WARPGROUP, half)), TensorParam("D", "float32", (WARPGROUP, half)),
                           ScalarParam("a_desc", "int64"), ScalarParam("b_desc", "int64")),
        symbols=(), grid=("1", "1", "1"), block=(WARPGROUP, 1, 1),
        cuda_params=("A", "B", "C", "D", "a_desc", "b_desc"), out_idx=())


@pytest.mark.parametrize("trans_a, trans_b, swizzle, n", CASES)
def test_the_wgmma_kernels_compile(trans_a, trans_b, swizzle, n):
    nvrtc = pytest.importorskip("tilemlir.runtime.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc")
    from tilemlir.runtime.cuda_decl import check_declaration

    name = case_name(trans_a, trans_b, swizzle, n)
    text = source(name, n, trans_a, trans_b, *sizes(swizzle, n))
    check_declaration(text, signature(name, n, *sizes(swizzle, n)), name)
    ptx = nvrtc.compile_ptx(text, name, nvrtc.CompileOptions(arch="sm_90a"))
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("trans_a, trans_b, swizzle, n", CASES)
def test_hardware_wgmma_matches_the_model(trans_a, trans_b, swizzle, n, rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from tilemlir.runtime import build

    name = case_name(trans_a, trans_b, swizzle, n)
    a, stored_a, desc_a = operand(64, swizzle, trans_a, rng)
    b, stored_b, desc_b = operand(n, swizzle, trans_b, rng)
    size_a, size_b = stored_a.size, stored_b.size
    half = n // 2
    c = rng.standard_normal((WARPGROUP, half)).astype(np.float32)
    kernel = build(source(name, n, trans_a, trans_b, size_a, size_b), signature(name, n, size_a, size_b))
    device = {key: torch.from_numpy(value.view(np.int16)).view(torch.bfloat16).cuda()
              for key, value in (("A", stored_a), ("B", stored_b))}
    d = torch.full((WARPGROUP, half), float("nan"), device="cuda")
    signed = [bits - (1 << 64) if bits >= 1 << 63 else bits for bits in (desc_a.bits(), desc_b.bits())]
    kernel(device["A"], device["B"], torch.from_numpy(c).cuda(), d, *signed)
    torch.cuda.synchronize()
    got = d.cpu().numpy()
    shared = np.concatenate([stored_a.view(np.uint8), np.zeros(-(-size_a * 2 // 1024) * 1024 - size_a * 2, np.uint8),
                             stored_b.view(np.uint8)])
    b_start = -(-size_a * 2 // 1024) * 1024
    b_desc = isa.MatrixDescriptor(b_start, desc_b.leading, desc_b.stride, desc_b.swizzle).bits()
    model = isa.wgmma_m64nNk16(shared, desc_a.bits(), b_desc, c, n, "bf16", trans_a, trans_b)
    fragment = isa.wgmma_d_fragment(n)
    want = fragment.scatter(c[..., None]).astype(np.float64) + a[:, :16] @ b[:, :16].T
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - model) / np.linalg.norm(model) < 1e-5
    assert np.linalg.norm(fragment.scatter(got[..., None]) - want) / np.linalg.norm(want) < 1e-5
