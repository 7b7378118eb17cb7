"""Located diagnostics and the exceptions that carry them, at the base of tilemlir.

A diagnostic prints as ``FILE:LINE:COL: error: message``, followed, when the
file is readable, by the source line and a caret under the column, then its
notes in the same shape.

Nothing here imports MLIR: the runtime raises these exceptions on machines
without the bindings. The MLIR half (an op's location as a `SourceLocation`,
`error`/`note`/`remark`/`warning`/`statistic` at an op, the sink a pipeline
collects into) is `tilemlir.diagnostics.reporting`.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

EXCERPT_WIDTH = 160


@dataclass(frozen=True)
class SourceLocation:
    """A position in a source file; line and column are 1-based."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One located message. `severity` is "error", "warning", "remark" or "note"."""

    severity: str
    message: str
    location: SourceLocation | None = None
    notes: tuple["Diagnostic", ...] = field(default_factory=tuple)


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


class TilemlirError(Exception):
    """Base class of every error tilemlir raises on purpose."""


class CompileError(TilemlirError):
    """A mistake in kernel code or IR, with the located diagnostics that describe it."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str, location: SourceLocation | None = None):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic("error", diagnostics, location)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__(format_diagnostics(self.diagnostics))

    @property
    def location(self) -> SourceLocation | None:
        return self.diagnostics[0].location if self.diagnostics else None


class ConfigError(CompileError):
    """A TILEMLIR_* environment variable holds a value the compiler cannot use (reported like
    any compile error: by tile-opt and the pass pipelines as a diagnostic)."""


class LaunchError(TilemlirError):
    """A kernel was called with arguments it cannot run on (names the argument, expected vs got)."""


class DeviceAssertionError(TilemlirError):
    """A `T.device_assert` failed in a CPU run (raised after the run, located at the assertion; on the
    GPU a failed assertion traps and the launch's error reports it)."""

    def __init__(self, diagnostic: Diagnostic):
        self.diagnostics = [diagnostic]
        super().__init__(format_diagnostics(self.diagnostics))

    @property
    def location(self) -> SourceLocation | None:
        return self.diagnostics[0].location
