"""The MLIR half of the diagnostics: located errors, remarks and statistics from code working on IR.

The frontend, the analyses, the passes and the backends raise `CompileError`
(built with `error(op, ...)`), a pass records a remark with `remark(op, ...)`
or a warning with `warning(op, ...)`, and counts what it did with
`statistic("guards-proved", n)`. The pass wrapper in `tilemlir.pass_infra.runner`
catches the error, files its diagnostics into the active `DiagnosticSink`
and signals pass failure; tools print the sink, `--verify-diagnostics`
matches it and `--pass-statistics` prints the counters.
"""

from __future__ import annotations

import contextvars
import re
import traceback
from dataclasses import dataclass, field

from tilemlir.diagnostics import CompileError, Diagnostic, SourceLocation
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


def internal_error(pass_name: str, exc: BaseException, where=None, *, with_traceback: bool) -> Diagnostic:
    """The diagnostic of a Python exception raised inside pass `pass_name` (a bug in the pass);
    `with_traceback` (TILEMLIR_TRACEBACK=1, for the caller to read) adds the traceback as a note."""
    notes = ()
    if with_traceback:
        text = "".join(traceback.format_exception(exc)).rstrip()
        notes = (Diagnostic("note", f"Python traceback:\n{text}"),)
    message = f"internal compiler error in pass '{pass_name}': {type(exc).__name__}: {exc}"
    return Diagnostic("error", message, source_location(where) if where is not None else None, notes)


_SEVERITIES = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.REMARK: "remark",
    ir.DiagnosticSeverity.NOTE: "note",
}


def from_mlir(diagnostic) -> Diagnostic:
    """A tilemlir Diagnostic from an MLIR one (an `ir.Diagnostic` or an MLIRError's `DiagnosticInfo`)."""
    return Diagnostic(
        _SEVERITIES.get(diagnostic.severity, "error"),
        diagnostic.message,
        source_location(diagnostic.location),
        tuple(from_mlir(n) for n in diagnostic.notes),
    )


@dataclass
class Statistic:
    value: int = 0
    description: str = ""


@dataclass
class DiagnosticSink:
    """Diagnostics collected while a pipeline runs, in the order they were reported,
    and the statistics of each pass (`statistics[pass name][counter name]`)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    mlir_locations: dict[int, ir.Location] = field(default_factory=dict)
    statistics: dict[str, dict[str, Statistic]] = field(default_factory=dict)
    current_pass: str | None = None

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


def warning(where, message: str) -> None:
    """Record a warning: something the user should know that does not stop compilation."""
    sink = active_sink()
    if sink is not None:
        sink.add(Diagnostic("warning", message, source_location(where)))


def statistic(name: str, value: int = 1, description: str = "") -> None:
    """Add `value` to the counter `name` of the pass now running (shown by `--pass-statistics`).

    Counters start at 0 and accumulate across calls within one pipeline run;
    outside a run (no active sink) this does nothing.
    """
    sink = active_sink()
    if sink is None:
        return
    counters = sink.statistics.setdefault(sink.current_pass or "<no pass>", {})
    stat = counters.setdefault(name, Statistic())
    stat.value += value
    if description:
        stat.description = description
