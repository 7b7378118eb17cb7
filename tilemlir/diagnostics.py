"""Formatting of source-located diagnostics, shared by the frontend, passes and tools.

A diagnostic prints as ``FILE:LINE:COL: error: message``, followed, when the
file is readable, by the source line and a caret under the column, then its
notes in the same shape. Nothing here imports MLIR; `tilemlir.passes.diag`
converts MLIR locations.
"""

from __future__ import annotations

import linecache

from tilemlir.errors import Diagnostic, SourceLocation


EXCERPT_WIDTH = 160


def source_excerpt(loc: SourceLocation) -> str:
    """The source line at `loc` with a caret under its column, or "" when unreadable.

    A line longer than EXCERPT_WIDTH is cut to a window around the column."""
    text = linecache.getline(loc.file, loc.line)
    if not text:
        return ""
    text = text.rstrip("\n")
    col = max(loc.col, 1) - 1
    if len(text) > EXCERPT_WIDTH:
        start = max(0, min(col - EXCERPT_WIDTH // 2, len(text) - EXCERPT_WIDTH))
        head = "..." if start else ""
        tail = "..." if start + EXCERPT_WIDTH < len(text) else ""
        text = head + text[start : start + EXCERPT_WIDTH] + tail
        col = col - start + len(head)
    return f"{text}\n{' ' * col}^"


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
