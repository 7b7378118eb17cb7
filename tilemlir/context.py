"""MLIR contexts for tilemlir: every upstream dialect available and `tile` loaded.

Contexts are made and the `tile` dialect loaded under one lock: the
dialect's Python definition keeps per-load state on its classes, and two
threads loading it at once crash the bindings. Everything else a compile
does stays in its own context and runs on any thread.
"""

from __future__ import annotations

import threading

from tilemlir.dialects import tensor_core_ops  # noqa: F401  (defines its ops on Tile before Tile.load())
from tilemlir.dialects import async_copy  # noqa: F401  (defines the cp.async ops on Tile before it loads)
from tilemlir.dialects import warpgroup  # noqa: F401  (defines the wgmma ops on Tile before it loads)
from tilemlir.dialects import bulk_copy  # noqa: F401  (defines the TMA and mbarrier ops on Tile before it loads)
from tilemlir.dialects import debug_ops  # noqa: F401  (defines tile.print and tile.device_assert before it loads)
from tilemlir.dialects.tile import Tile
from tilemlir.mlir import ir

_CONTEXT_LOCK = threading.RLock()


def load_tile_dialect(context: ir.Context) -> None:
    """Load the `tile` dialect into `context`; a second call is a no-op."""
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
