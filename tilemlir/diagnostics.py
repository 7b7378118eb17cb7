"""Formatting of source-located diagnostics, shared by the frontend, passes and tools.

A diagnostic prints as ``FILE:LINE:COL: error: message``, followed, when the
file is readable, by the source line and a caret under the column, then its
notes in the same shape. Nothing here imports MLIR; `tilemlir.passes.diag`
converts MLIR locations.
"""

from __future__ import annotations

import linecache

from tilemlir.errors import Diagnostic, SourceLocation


def source_excerpt(loc: SourceLocation) -> str:
    """The source line at `loc` with a caret under its column, or "" when unreadable."""
    text = linecache.getline(loc.file, loc.line)
    if not text:
        return ""
    text = text.rstrip("\n")
    caret = " " * (max(loc.col, 1) - 1) + "^"
    return f"{text}\n{caret}"


def format_diagnostic(diag: Diagnostic, with_source: bool = True) -> str:
    head = f"{diag.location}: " if diag.location else ""
    lines = [f"{head}{diag.severity}: {diag.message}"]
    if with_source and diag.location:
        excerpt = source_excerpt(diag.location)
        if excerpt:
            lines.append(excerpt)
    for note in diag.notes:
        lines.append(format_diagnostic(note, with_source))
    return "\n".join(lines)


def format_diagnostics(diags: list[Diagnostic], with_source: bool = True) -> str:
    return "\n".join(format_diagnostic(d, with_source) for d in diags)
