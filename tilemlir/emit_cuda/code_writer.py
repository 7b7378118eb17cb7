"""The kernel function's body as lines of text: two spaces a block level, lists wrapped at `MAX_LINE`
columns, and a `// file.py:LINE` comment before the statements of each new Python line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from tilemlir.mlir import ir
from tilemlir.diagnostics.reporting import source_location

MAX_LINE = 110


class CodeWriter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._depth = 1
        self._last_line: tuple[str, int] | None = None

    def line(self, text: str) -> None:
        self.lines.append("  " * self._depth + text)

    def wrapped(self, head: str, items: list[str], tail: str) -> None:
        """`head item, item, ... tail` as one line, or filled over several aligned under the first item."""
        indent = "  " * self._depth
        if len(indent + head) + sum(len(i) + 2 for i in items) + len(tail) <= MAX_LINE:
            self.line(head + ", ".join(items) + tail)
            return
        rows, row = [], []
        for item in items:
            if row and len(indent + head) + sum(len(i) + 2 for i in row) + len(item) > MAX_LINE:
                rows.append(", ".join(row))
                row = []
            row.append(item)
        rows.append(", ".join(row))
        self.line(head + (",\n" + indent + " " * len(head)).join(rows) + tail)

    def source_line(self, op: ir.Operation) -> None:
        """`// file.py:LINE` of `op`'s Python line, when it differs from the last one written (a blank
        line before it in the function's outermost block)."""
        loc = source_location(op.location)
        if loc is None or loc.file in ("", "-"):
            return
        key = (os.path.basename(loc.file), loc.line)
        if key != self._last_line:
            if self._depth == 1 and self.lines and not self.lines[-1].endswith("{"):
                self.lines.append("")
            self.line(f"// {key[0]}:{key[1]}")
            self._last_line = key

    @contextmanager
    def indented(self) -> Iterator[None]:
        """The lines written inside are one block level deeper."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
