"""The Python DSL frontend: a kernel function's AST becomes tile-level IR (docs/ir.md, "Tile level").

`build_module(fn)` parses `fn`'s source and returns `(module, info)`: an
`ir.Module` with one `func.func` marked `tile.entry`, every op located at
the Python `file:line:col` it came from, and the `KernelInfo` of its
signature. Mistakes in kernel code raise `tilemlir.CompileError`.
`python -m tilemlir.frontend FILE.py` prints the IR of every kernel in a file.
"""

from __future__ import annotations

from typing import Callable

from tilemlir.frontend.info import KernelInfo, ParamInfo, SymbolInfo


def build_module(fn: Callable, context=None, eager=None):
    """(ir.Module, KernelInfo) of kernel function `fn`, built in `context` (a new one by default);
    `eager` is the EagerSpec of one specialization of an eager function (frontend/eager.py)."""
    from tilemlir.context import make_context
    from tilemlir.frontend.builder import KernelBuilder
    from tilemlir.frontend.source import load_source

    source = load_source(fn)
    return KernelBuilder(source, context or make_context(), eager).build()


__all__ = ["build_module", "KernelInfo", "ParamInfo", "SymbolInfo"]
