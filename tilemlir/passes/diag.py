"""How passes report located errors and remarks.

A pass raises `CompileError` (built with `error(op, ...)`) or records a remark
with `remark(op, ...)`. The pass wrapper in `tilemlir.passes` catches the
error, files its diagnostics into the active `DiagnosticSink` and signals
pass failure; tools print the sink, `--verify-diagnostics` matches it.
"""

from __future__ import annotations

import contextvars
import re
from dataclasses import dataclass, field

from tilemlir.errors import CompileError, Diagnostic, SourceLocation
from tilemlir.mlir import ir

_FILE_LINE_COL = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def source_location(loc: ir.Location | ir.Operation | ir.OpView | None) -> SourceLocation | None:
    """The first file:line:col inside an MLIR location (through name, fused and call-site locations)."""
    if loc is None:
        return None
    if not isinstance(loc, ir.Location):
        loc = loc.location
    match = _FILE_LINE_COL.search(str(loc))
    if not match:
        return None
    return SourceLocation(match.group(1), int(match.group(2)), int(match.group(3)))


def note(where, message: str) -> Diagnostic:
    return Diagnostic("note", message, source_location(where))


def error(where, message: str, notes: list[Diagnostic] | tuple = ()) -> CompileError:
    """A CompileError located at `where` (an op or a location); raise it."""
    return CompileError([Diagnostic("error", message, source_location(where), tuple(notes))])


@dataclass
class DiagnosticSink:
    """Diagnostics collected while a pipeline runs, in the order they were reported."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    mlir_locations: dict[int, ir.Location] = field(default_factory=dict)

    def add(self, diag: Diagnostic) -> None:
        self.diagnostics.append(diag)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


_active_sink: contextvars.ContextVar[DiagnosticSink | None] = contextvars.ContextVar("tilemlir_sink", default=None)


def active_sink() -> DiagnosticSink | None:
    return _active_sink.get()


def collecting(sink: DiagnosticSink):
    """Context manager making `sink` receive the diagnostics of passes run inside it."""

    class _Scope:
        def __enter__(self):
            self._token = _active_sink.set(sink)
            return sink

        def __exit__(self, *exc):
            _active_sink.reset(self._token)
            return False

    return _Scope()


def remark(where, message: str) -> None:
    """Record a remark (e.g. an analysis decision a `test-*` pass prints)."""
    sink = active_sink()
    if sink is not None:
        sink.add(Diagnostic("remark", message, source_location(where)))
