"""User-facing exceptions. Imports nothing heavy: the runtime uses it on
machines without MLIR."""

from __future__ import annotations

from dataclasses import dataclass, field


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
        from tilemlir.diagnostics import format_diagnostics

        super().__init__(format_diagnostics(self.diagnostics))

    @property
    def location(self) -> SourceLocation | None:
        return self.diagnostics[0].location if self.diagnostics else None


class ConfigError(CompileError):
    """A TILEMLIR_* environment variable holds a value the compiler cannot use (reported like
    any compile error: by tile-opt and the pass pipelines as a diagnostic)."""


class LaunchError(TilemlirError):
    """A kernel was called with arguments it cannot run on (names the argument, expected vs got)."""
