"""`ast.parse` for code that runs on many threads at once.

CPython 3.11 keeps the AST constructor's recursion count in per-interpreter
state: when a thread switch lands inside `ast.parse` (a finalizer run by the
cycle collector is enough) and another thread parses meanwhile, one of them
fails with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). tilemlir parses kernel sources and runtime
expressions only through `parse`, one at a time.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, **kwargs) -> ast.AST:
    """`ast.parse(source, **kwargs)`, never concurrently with another `parse`."""
    with _LOCK:
        return ast.parse(source, **kwargs)
