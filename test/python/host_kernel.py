"""Run one block of an emitted CUDA kernel on the host, built by the system C++ compiler under UBSan.

For kernels whose threads are independent (no barriers, shared memory or
warp shuffles) over plain C element types (float, double, integers): the
block's threads run one after another. Each tensor is a window: only its
elements [lo, lo + len(data)) have memory behind them and the kernel gets
`window - lo` as its pointer, so the last block of a 2**31-element tensor
runs in kilobytes. Signed overflow (or any other undefined behaviour UBSan
sees) stops the run, which `run_block` reports as a test failure; so does a
crash (an index that went astray lands outside every window).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tilemlir.runtime.signature import KernelSignature, TensorParam

_C_TYPES = {"float32": "float", "float64": "double", "int8": "signed char", "uint8": "unsigned char",
            "int16": "short", "int32": "int", "int64": "long long", "bool": "bool"}

# What CUDA gives a kernel, for the host compiler.
_SHIM = """#include <cstdio>
#include <cstdlib>
#define __global__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
struct tl_dim3 { unsigned x, y, z; };
static tl_dim3 blockIdx, threadIdx;
"""

_IO = """
static void* tl_read(const char* path, long bytes) {
  void* data = malloc(bytes ? bytes : 1);
  FILE* f = fopen(path, "rb");
  if (!f || fread(data, 1, bytes, f) != (size_t)bytes) { perror(path); exit(2); }
  fclose(f);
  return data;
}
static void tl_write(const char* path, const void* data, long bytes) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, bytes, f) != (size_t)bytes) { perror(path); exit(2); }
  fclose(f);
}
"""


@dataclass(frozen=True)
class Window:
    """Elements [lo, lo + data.size) of a flat tensor."""

    lo: int
    data: np.ndarray


def host_compiler() -> str:
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler: the kernel cannot be run on the host")
    return compiler


def run_block(source: str, signature: KernelSignature, block: tuple[int, int, int], symbols: dict[str, int],
              windows: dict[str, Window], directory: Path) -> dict[str, np.ndarray]:
    """Run block `block` of the kernel with these symbol values; returns each written tensor's window."""
    if "#include" in source:
        pytest.skip("the kernel needs CUDA headers (16-bit or 8-bit floats): it cannot run on the host")
    tensors = [p for p in signature.params if isinstance(p, TensorParam)]
    for param in tensors:
        windows[param.name].data.tofile(directory / f"{param.name}.in")
    program = directory / "block.cpp"
    program.write_text(_SHIM + source + _IO + _main(signature, tensors, block, symbols, windows))
    binary = directory / "block"
    command = [host_compiler(), "-std=c++17", "-O1", "-w", str(program), "-o", str(binary)]
    sanitized = command + ["-fsanitize=undefined", "-fno-sanitize-recover=undefined"]
    built = subprocess.run(sanitized, capture_output=True, text=True)
    if built.returncode != 0:  # no UBSan runtime here: the results still count
        built = subprocess.run(command, capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(binary)], capture_output=True, text=True, cwd=directory)
    assert ran.returncode == 0 and "runtime error" not in ran.stderr, (ran.returncode, ran.stderr[-2000:])
    return {p.name: np.fromfile(directory / f"{p.name}.out", windows[p.name].data.dtype)
            for p in tensors if p.written}


def _main(signature: KernelSignature, tensors: list[TensorParam], block: tuple[int, int, int],
          symbols: dict[str, int], windows: dict[str, Window]) -> str:
    lines = ["int main() {", "  blockIdx = {%du, %du, %du};" % block]
    for p in tensors:
        ctype, window = _C_TYPES[p.dtype], windows[p.name]
        lines.append(f'  {ctype}* w_{p.name} = ({ctype}*)tl_read("{p.name}.in", {window.data.nbytes}L);')
    args = [f"w_{name} - {windows[name].lo}LL" if name in windows else f"{symbols[name]}LL"
            for name in signature.cuda_params]
    x, y, z = signature.block
    lines += [f"  for (unsigned z = 0; z < {z}u; ++z)", f"    for (unsigned y = 0; y < {y}u; ++y)",
              f"      for (unsigned x = 0; x < {x}u; ++x) {{", "        threadIdx = {x, y, z};",
              f"        {signature.name}({', '.join(args)});", "      }"]
    lines += [f'  tl_write("{p.name}.out", w_{p.name}, {windows[p.name].data.nbytes}L);' for p in tensors if p.written]
    return "\n".join(lines + ["  return 0;", "}", ""])
