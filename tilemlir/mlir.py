"""The one module that imports the MLIR Python bindings provider.

Everything else in tilemlir imports `ir`, `passmanager`, `rewrite` and the
upstream dialect modules from here, so the provider (today the torch-mlir
wheel, which ships upstream MLIR's bindings with the Python-defined dialect
DSL) can be swapped in one place.

Contexts are made and the `tile` dialect loaded under one lock: the
dialect's Python definition keeps per-load state on its classes, and two
threads loading it at once crash the bindings. Everything else a compile
does stays in its own context and runs on any thread.
"""

from __future__ import annotations

import threading

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
    "make_context",
    "load_tile_dialect",
]


_CONTEXT_LOCK = threading.RLock()


def load_tile_dialect(context: ir.Context) -> None:
    """Load the `tile` dialect into `context`; a second call is a no-op."""
    from tilemlir.dialects.tile import Tile

    with _CONTEXT_LOCK:
        if context.is_dialect_loaded(Tile.DIALECT_NAMESPACE):
            return
        with context:
            Tile.load()


def make_context() -> ir.Context:
    """A new context with every upstream dialect available and `tile` loaded."""
    with _CONTEXT_LOCK:
        context = ir.Context()
        # MLIR worker threads would call back into our Python verifiers and passes,
        # which need the GIL the calling thread holds: keep everything on one thread.
        context.enable_multithreading(False)
        context.load_all_available_dialects()
        load_tile_dialect(context)
        return context
