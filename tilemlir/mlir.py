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
from torch_mlir._mlir_libs import _mlir

# The bindings look up a Python module for a dialect's namespace whenever they wrap one of its ops, under
# each search prefix, and remember only a lookup that succeeded: for the `tile` dialect (defined in
# tilemlir.dialects.tile, not under torch_mlir.dialects) every wrap was a failed import, thousands a compile
# (0.4 s of a 1.3 s GEMM compile). With tilemlir's prefix the first lookup finds the module and is kept.
_mlir.globals.append_dialect_search_prefix("tilemlir.dialects")

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
