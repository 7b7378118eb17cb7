"""Test helpers shared between test files (test files do not import each other): hand-written kernel
modules, the CUDA emitter run on them or on a jit function through the whole pipeline, and NVRTC
compiles of the result (no GPU needed); a hand-written CUDA kernel and its signature; the examples."""


import json

import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.context import make_context
from tilemlir.emit_cuda import emit
from tilemlir.mlir import ir
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

ROWS = 64  # the static column count of the helper kernels


# -- building thread-level modules ------------------------------------------------------------------

HOST_CONSTANTS = """
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index"""


def kernel_module(body: str, params: list[tuple[str, str]], *, name: str = "k", dims: list | None = None,
                  symbols: tuple[str, ...] = ("M",), grid: str = "%M", threads: int = 64, host: str = "",
                  attrs: str = "", locs: str = "") -> str:
    """A module with one `tile.entry` kernel. `params` are (name, type); the SSA name of each is `%name`.
    Tensors of rank 2 get dims ["M", 64] unless `dims` says otherwise; %M reads dim 0 of the first one."""
    if dims is None:
        dims = [["M", ROWS] if t.startswith("memref<?x") else ([] if not t.startswith("memref") else None)
                for _, t in params]
    first_tensor = next((n, t) for n, t in params if t.startswith("memref"))
    dim_line = f"    %M = memref.dim %{first_tensor[0]}, %c0 : {first_tensor[1]}" if "M" in symbols else ""
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    names = json.dumps([n for n, _ in params])
    return f"""{locs}
module {{
  func.func @{name}({args}) attributes {{tile.entry, tile.arg_names = {names},
      tile.arg_dims = {json.dumps(dims)}, tile.symbols = {json.dumps(list(symbols))}{attrs}}} {{{HOST_CONSTANTS}
    %cthreads = arith.constant {threads} : index
{dim_line}
{host}
    gpu.launch blocks(%bx, %by, %bz) in (%gx = {grid}, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %cthreads, %sy = %c1, %sz = %c1) {{
{body}
      gpu.terminator
    }}
    return
  }}
}}
"""


def elementwise_module(inputs: dict[str, str], outputs: dict[str, str], ops: str, name: str = "k") -> str:
    """Loads every input at [bx, tx] as %name, runs `ops` (which define %out for each output `out`),
    stores each output at [bx, tx]. Element types by name; all tensors are ?x64."""
    params = [(n, f"memref<?x{ROWS}x{t}>") for n, t in {**inputs, **outputs}.items()]
    loads = "\n".join(f"      %{n}_v = memref.load %{n}[%bx, %tx] : memref<?x{ROWS}x{t}>" for n, t in inputs.items())
    stores = "\n".join(f"      memref.store %{n}_r, %{n}[%bx, %tx] : memref<?x{ROWS}x{t}>" for n, t in outputs.items())
    return kernel_module(f"{loads}\n{ops}\n{stores}", params, name=name)


def normalized(source: str, *inputs: str) -> str:
    """The source with each input's element read at [bx, tx] spelled `NAME_v`, whether it was folded
    into its use (`X[bx * 64 + tx]`) or named (`xv`)."""
    import re

    for name in inputs:
        source = source.replace(f"{name}[bx * 64 + tx]", f"{name}_v")
        source = re.sub(rf"\b{name.lower()}v\b", f"{name}_v", source)
    return source


def emit_text(text: str, **options):
    with make_context():
        return emit(ir.Module.parse(text), **options)


def emitted_cuda(fn, **options):
    """The CUDA source and signature of a kernel function, through the whole pipeline (no GPU needed);
    `options` are emit()'s."""
    from tilemlir import driver

    module = fn.frontend().module()
    with module.context:
        driver.run_stages(module, "final")
        return emit(module, **options)


def compile_ptx(emitted) -> str:
    nvrtc = pytest.importorskip("tilemlir.runtime.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc")
    options = nvrtc.CompileOptions(arch="sm_90a", fmad=emitted.fmad)
    return nvrtc.compile_ptx(emitted.source, emitted.signature.name, options)


def compiles(emitted) -> str:
    """Compile through NVRTC for sm_90a (a real cubin), returning the PTX for inspection."""
    nvrtc = pytest.importorskip("tilemlir.runtime.nvrtc")
    pytest.importorskip("cuda.bindings.nvrtc")
    cubin = nvrtc.compile_cuda(emitted.source, emitted.signature.name, nvrtc.CompileOptions(arch="sm_90a",
                                                                                            fmad=emitted.fmad))
    assert cubin[:4] == b"\x7fELF"
    return compile_ptx(emitted)


def body_of(source: str) -> str:
    return source[source.index('extern "C"'):]


# -- shared layouts, as docs/tensor_cores.md states them (not from the compiler's code) -----------------

def swizzled_element(row: int, col: int, rows: int, swizzle: int, element_bytes: int = 2) -> int:
    """Where logical (row, col) of a [rows, cols] buffer with `tile.swizzle = swizzle` lives (the element index
    of the one-dimensional buffer materialize-shared-layouts makes): the row's bytes in panels of W = swizzle,
    panel p at p * rows * W, within a panel L = r * W + c_bytes, L' = L ^ (((L >> 7) & (W / 16 - 1)) << 4)."""
    panel, within = divmod(col * element_bytes, swizzle)
    offset = row * swizzle + within
    offset ^= ((offset >> 7) & (swizzle // 16 - 1)) << 4
    return (panel * rows * swizzle + offset) // element_bytes


def swizzled(matrix, swizzle: int, element_bytes: int = 2):
    """A [rows, cols] matrix as the one-dimensional swizzled buffer holds it."""
    import numpy as np

    rows, cols = matrix.shape
    flat = np.zeros(rows * cols, dtype=matrix.dtype)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    places = np.vectorize(lambda i, j: swizzled_element(i, j, rows, swizzle, element_bytes))(r, c)
    assert len(np.unique(places)) == rows * cols
    flat[places] = matrix
    return flat


# -- a hand-written CUDA kernel -------------------------------------------------------------------

AXPY_SOURCE = r'''extern "C" __global__ void __launch_bounds__(128) axpy(const float* __restrict__ x, float* __restrict__ y,
                                                     float a, long long N) {
  long long i = (long long)blockIdx.x * 128 + threadIdx.x;
  if (i < N) y[i] = a * x[i] + y[i];
}
'''
AXPY_SIGNATURE = KernelSignature(
    name="axpy",
    params=(TensorParam("x", "float32", ("N",)), TensorParam("y", "float32", ("N",)), ScalarParam("a", "float32")),
    symbols=("N",), grid=("(N + 127) // 128", "1", "1"), block=(128, 1, 1), cuda_params=("x", "y", "a", "N"))


# -- the examples ----------------------------------------------------------------------------------

def example_module(name):
    """The module examples/<name>.py."""
    import importlib
    import sys
    from pathlib import Path

    examples = str(Path(__file__).resolve().parents[2] / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    return importlib.import_module(name)


def run_everywhere(fn, *args) -> list:
    """The kernel's outputs on the CPU target at tile and at thread level, after an NVRTC compile for sm_90a."""
    outputs = [tilemlir.compile(fn, target="cpu", level=level)(*args) for level in ("tile", "thread")]
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(fn, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"
    return outputs


# -- a tensor-core GEMM --------------------------------------------------------------------------------


@tilemlir.jit(out_idx=[1])
def scale_rows(dtype="float32", out_dtype=None):
    """Y = X * alpha, rows of 64 (a 32-thread block per row) for run-time M; Y of `out_dtype` (X's if None).
    The kernel is named 'scaled' (the torch-op tests read the name)."""
    M = T.symbolic("M")
    out_dtype = out_dtype or dtype

    @T.prim_func
    def scaled(X: T.Tensor((M, 64), dtype), Y: T.Tensor((M, 64), out_dtype), alpha: T.float32):
        with T.Kernel(M, threads=32) as row:
            x = T.alloc_fragment((64,), "float32")
            T.copy(X[row, 0], x)
            for i in T.Parallel(64):
                x[i] = x[i] * alpha
            T.copy(x, Y[row, 0])

    return scaled


@tilemlir.jit
def accumulate():
    """Acc += X for run-time M (Acc written in place, no outputs); the kernel is named 'accumulated'."""
    M = T.symbolic("M")

    @T.prim_func
    def accumulated(X: T.Tensor((M,), "float32"), Acc: T.Tensor((M,), "float32")):
        with T.Kernel(M, threads=32) as i:
            Acc[i] = Acc[i] + X[i]

    return accumulated


def tensor_core_gemm(block_M, block_N, block_K, trans_a=False, trans_b=False, dtype="float16", accum="float32",
             threads=128, a_fragment=False, epilogue=False, policy=None, num_stages=2, b_dtype=None):
    """A jit GEMM: C = op(A) @ op(B) (+ bias, then a ReLU with `epilogue`) for run-time M, N, K, pipelined
    `num_stages` deep; B of `b_dtype` where it differs from A's (fp8 kinds); the tensor-core tests compile it."""
    b_dtype = b_dtype or dtype
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (block_K, block_M) if trans_a else (block_M, block_K)
    b_tile = (block_N, block_K) if trans_b else (block_K, block_N)

    @tilemlir.jit(out_idx=[3])
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, b_dtype), bias: T.Tensor((N,), accum),
             C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            if a_fragment:
                A_t = T.alloc_fragment(a_tile, dtype)
            else:
                A_t = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, b_dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_a:
                    T.copy(A[k * block_K, by * block_M], A_t)
                else:
                    T.copy(A[by * block_M, k * block_K], A_t)
                if trans_b:
                    T.copy(B[bx * block_N, k * block_K], B_s)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_t, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b, policy=policy)
            if epilogue:
                for i, j in T.Parallel(block_M, block_N):
                    C_f[i, j] = T.max(C_f[i, j] + bias[bx * block_N + j], 0)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm


def static_gemm(block_M, block_N, block_K, n, k, m=None, trans_a=False, trans_b=False, dtype="bfloat16",
                threads=128, num_stages=3, shared_epilogue=False, c_dtype="float32", disable_tma_out=False):
    """A jit GEMM C = op(A) @ op(B) whose tensors' inner dims are the static n and k (and m when A is stored
    K x M), M run-time otherwise: the strides a tensor map needs known (the TMA tests compile it).
    `shared_epilogue`: C (of `c_dtype`) goes to global memory through a shared tile; `disable_tma_out`: the
    direct copy out says disable_tma=True."""
    M = m if trans_a else T.symbolic("M")
    a_shape = (k, M) if trans_a else (M, k)
    b_shape = (n, k) if trans_b else (k, n)
    a_tile = (block_K, block_M) if trans_a else (block_M, block_K)
    b_tile = (block_N, block_K) if trans_b else (block_K, block_N)

    @tilemlir.jit(out_idx=[2])
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, n), c_dtype)):
        with T.Kernel(T.ceildiv(n, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, block_K), num_stages=num_stages):
                if trans_a:
                    T.copy(A[ko * block_K, by * block_M], A_s)
                else:
                    T.copy(A[by * block_M, ko * block_K], A_s)
                if trans_b:
                    T.copy(B[bx * block_N, ko * block_K], B_s)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            if shared_epilogue:
                C_s = T.alloc_shared((block_M, block_N), c_dtype)
                T.copy(C_f, C_s)
                T.copy(C_s, C[by * block_M, bx * block_N])
            else:
                T.copy(C_f, C[by * block_M, bx * block_N], disable_tma=disable_tma_out)

    return gemm
