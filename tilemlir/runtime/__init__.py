"""The GPU runtime: NVRTC compile, disk cache, argument checks and launch.

Imports no MLIR, and nothing from CUDA until a kernel is compiled or
launched, so artifacts load on a GPU machine without the compiler::

    kernel = tilemlir.runtime.build(cuda_source, signature)   # or load(directory)
    y = kernel(x, w, 1e-6)             # torch / CuPy / DLPack arrays
    kernel.export("out/")              # .cu, .cubin, signature.json, standalone host launcher

The submodules load on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "KernelSignature": "tilemlir.runtime.signature",
    "TensorParam": "tilemlir.runtime.signature",
    "ScalarParam": "tilemlir.runtime.signature",
    "TensorMapParam": "tilemlir.runtime.signature",
    "SignatureError": "tilemlir.runtime.signature",
    "CompiledKernel": "tilemlir.runtime.kernel",
    "build": "tilemlir.runtime.builder",
    "load": "tilemlir.runtime.builder",
    "CompileOptions": "tilemlir.runtime.nvrtc",
    "compile_cuda": "tilemlir.runtime.nvrtc",
    "ArgumentBinder": "tilemlir.runtime.checks",
    "ArrayDesc": "tilemlir.runtime.checks",
    "HOST": "tilemlir.runtime.checks",
    "describe": "tilemlir.runtime.arrays",
    "describe_host": "tilemlir.runtime.arrays",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'tilemlir.runtime' has no attribute '{name}'")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


__all__ = sorted(_EXPORTS)
