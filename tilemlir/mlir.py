"""The one module that imports the MLIR Python bindings provider.

Everything else in tilemlir imports `ir`, `passmanager`, `rewrite` and the
upstream dialect modules from here, so the provider (today the torch-mlir
wheel, which ships upstream MLIR's bindings with the Python-defined dialect
DSL) can be swapped in one place. It imports nothing of tilemlir: contexts with
the `tile` dialect loaded come from `tilemlir.context`.
"""

from __future__ import annotations

from torch_mlir import ir, passmanager, rewrite
from torch_mlir.dialects import (
    affine,
    arith,
    builtin,
    cf,
    ext,
    func,
    gpu,
    llvm,
    math,
    memref,
    nvgpu,
    scf,
    vector,
)
from torch_mlir.dialects.llvm import translate_module_to_llvmir

PassManager = passmanager.PassManager
MLIRError = ir.MLIRError

__all__ = [
    "ir",
    "passmanager",
    "rewrite",
    "PassManager",
    "MLIRError",
    "affine",
    "arith",
    "builtin",
    "cf",
    "ext",
    "func",
    "gpu",
    "llvm",
    "math",
    "memref",
    "nvgpu",
    "scf",
    "vector",
    "translate_module_to_llvmir",
]
