"""Run a pass pipeline on a module: the one way every caller (tile-opt, the compiler driver, tests) does it.

Our Python passes and upstream MLIR passes mix in one pipeline. Each
top-level element runs as its own stage so that timing, statistics and IR
printing are per pass for both kinds. Every problem comes back as a
`CompileError` holding all diagnostics of the run in order: our passes'
errors and remarks, MLIR's verifier and pass errors, internal errors.
"""

from __future__ import annotations

import difflib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from tilemlir.config import settings
from tilemlir.diagnostics import CompileError, Diagnostic, SourceLocation, reporting as diag
from tilemlir.mlir import MLIRError, PassManager, ir
from tilemlir.pass_infra.pipeline_text import PipelineElement, PipelineSyntaxError, parse_options, split_pipeline
from tilemlir.pass_infra.registry import PASS_MODULES, PassInfo, is_pass, lookup

PIPELINE_SOURCE = "<pass-pipeline>"


@dataclass(frozen=True)
class Stage:
    """One top-level pipeline element, ready to run."""

    name: str  # the pass name, or the anchor op of a nested upstream pipeline
    text: str  # the element in pipeline syntax (ours with every option spelled out)
    info: PassInfo | None = None  # set for our passes
    options: Any = None
    inner_names: frozenset[str] = frozenset()  # pass names inside a nested pipeline

    @property
    def label(self) -> str:
        """How reports name the stage: our pass by name, an upstream element as written."""
        return self.name if self.info is not None else self.text

    def matches(self, pass_name: str) -> bool:
        return pass_name == self.name or pass_name in self.inner_names


@dataclass(frozen=True)
class IRPrinting:
    """Where and when to print the module around stages (mlir-opt's --mlir-print-ir-* flags)."""

    stream: TextIO
    before: frozenset[str] = frozenset()  # pass names
    after: frozenset[str] = frozenset()
    before_all: bool = False
    after_all: bool = False
    debuginfo: bool = False


@dataclass
class PipelineReport:
    """What a run measured: per-stage wall time, our passes' counters, and non-error diagnostics."""

    timings: list[tuple[str, float]] = field(default_factory=list)  # one row per stage position
    statistics: dict[str, dict[str, diag.Statistic]] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def add_time(self, position: int, label: str, seconds: float) -> None:
        """Account `seconds` to stage `position`; runs of the same pipeline on several modules add up."""
        if position < len(self.timings) and self.timings[position][0] == label:
            self.timings[position] = (label, self.timings[position][1] + seconds)
        else:
            self.timings.append((label, seconds))

    def format_timing(self, extra_before=(), extra_after=()) -> str:
        """An mlir-opt style execution time report; `extra_*` are (name, seconds) rows such as Parser."""
        rows = [*extra_before, *self.timings, *extra_after]
        total = sum(seconds for _, seconds in rows)
        lines = _banner("Execution time report")
        lines += [f"  Total Execution Time: {total:.4f} seconds", "", "  ----Wall Time----  ----Name----"]
        for name, seconds in [*rows, ("Total", total)]:
            share = 100.0 * seconds / total if total else 0.0
            lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {name}")
        return "\n".join(lines) + "\n"

    def format_statistics(self) -> str:
        """An mlir-opt style pass statistics report of our passes' counters."""
        lines = _banner("Pass statistics report")
        for pass_name, counters in self.statistics.items():
            lines.append(pass_name)
            for counter, stat in sorted(counters.items()):
                suffix = f" - {stat.description}" if stat.description else ""
                lines.append(f"  (S) {stat.value} {counter}{suffix}")
        return "\n".join(lines) + "\n"


def _banner(title: str) -> list[str]:
    rule = "===" + "-" * 73 + "==="
    return [rule, f"... {title} ...".center(len(rule)).rstrip(), rule]


PipelineSpec = str | Sequence["str | tuple[str, Any] | Stage"]


def run_pipeline(
    module: ir.Module | ir.Operation,
    pipeline: PipelineSpec,
    *,
    print_ir_after_all: TextIO | None = None,
    print_ir: IRPrinting | None = None,
    after_pass: Callable[[str, ir.Operation], None] | None = None,
    timing: TextIO | None = None,
    statistics: TextIO | None = None,
    report: PipelineReport | None = None,
) -> PipelineReport:
    """Run `pipeline` on `module` in place; raise CompileError with every diagnostic on failure.

    `pipeline` is pipeline text (`"infer-layouts,canonicalize"`, with or
    without `builtin.module(...)`) or a list of elements, each a text element
    or a `(pass name, options dataclass)` pair for our passes, or a Stage
    from `build_stages` (to check a pipeline once and run it on many modules).
    `print_ir_after_all` is a stream that gets the module after every stage;
    `print_ir` selects finer IR printing. `after_pass(stage_name, module_op)`
    is called after each successful stage (e.g. to dump IR to files).
    `timing` / `statistics` are streams that get the reports at the end
    (also after a failure). Pass `report` to have it filled in place; it is
    also returned.
    """
    op = module.operation
    stages = build_stages(pipeline, op.context)
    if print_ir is None and print_ir_after_all is not None:
        print_ir = IRPrinting(print_ir_after_all, after_all=True)
    report = report if report is not None else PipelineReport()
    sink = diag.DiagnosticSink(statistics=report.statistics)
    # Python verifiers and passes need the GIL: MLIR worker threads calling them could deadlock.
    op.context.enable_multithreading(False)
    try:
        with diag.collecting(sink), _mlir_diagnostics_into(sink, op.context):
            for position, stage in enumerate(stages):
                _run_stage(position, stage, op, sink, report, print_ir, after_pass)
    finally:
        report.diagnostics.extend(d for d in sink.diagnostics if d.severity != "error")
        if timing is not None:
            timing.write(report.format_timing())
        if statistics is not None:
            statistics.write(report.format_statistics())
    return report


def _run_stage(position, stage, op, sink, report, print_ir, after_pass) -> None:
    if print_ir and (print_ir.before_all or any(stage.matches(n) for n in print_ir.before)):
        _print_module(print_ir, f"IR Dump Before {stage.label}", op)
    errors_before = len(sink.errors)
    sink.current_pass = stage.name
    start = time.perf_counter()
    try:
        _stage_pass_manager(stage, op.context).run(op)
        failed = False
    except MLIRError as err:
        for info in err.error_diagnostics:
            sink.add(diag.from_mlir(info))
        failed = True
    finally:
        sink.current_pass = None
        report.add_time(position, stage.label, time.perf_counter() - start)
    if failed or len(sink.errors) > errors_before:
        if len(sink.errors) == errors_before:
            sink.add(Diagnostic("error", f"pass '{stage.name}' failed", diag.source_location(op)))
        raise CompileError(list(sink.diagnostics))
    if print_ir and (print_ir.after_all or any(stage.matches(n) for n in print_ir.after)):
        _print_module(print_ir, f"IR Dump After {stage.label}", op)
    if after_pass is not None:
        after_pass(stage.name, op)


def _print_module(print_ir: IRPrinting, title: str, op: ir.Operation) -> None:
    print_ir.stream.write(f"// -----// {title} //----- //\n")
    print_ir.stream.write(op.get_asm(enable_debug_info=print_ir.debuginfo, assume_verified=True))
    print_ir.stream.write("\n")


def _stage_pass_manager(stage: Stage, context: ir.Context) -> PassManager:
    pm = PassManager("builtin.module", context)
    if stage.info is not None:
        pm.add(_as_mlir_pass(stage.info, stage.options), stage.name)
    else:
        pm.add(stage.text)
    return pm


def _as_mlir_pass(info: PassInfo, options: Any) -> Callable:
    """The callable `PassManager.add` takes: runs the pass and turns CompileError into pass failure.

    Any other exception is a bug in the pass; inside a diagnostic scope it is
    reported as an internal compiler error instead of escaping (no traceback
    for the user unless TILEMLIR_TRACEBACK is set).
    """

    def run(op, pass_):
        sink = diag.active_sink()
        try:
            info.run(op, options)
        except CompileError as err:
            if sink is None:
                raise
            for d in err.diagnostics:
                sink.add(d)
            pass_.signal_pass_failure()
        except Exception as exc:
            if sink is None:
                raise
            sink.add(diag.internal_error(info.name, exc, op, with_traceback=settings().traceback))
            pass_.signal_pass_failure()

    return run


@contextmanager
def _mlir_diagnostics_into(sink: diag.DiagnosticSink, context: ir.Context):
    """File MLIR's warnings and remarks into `sink` (errors arrive through MLIRError)."""

    def handler(diagnostic) -> bool:
        if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
            return False
        sink.add(diag.from_mlir(diagnostic))
        return True

    handle = context.attach_diagnostic_handler(handler)
    try:
        yield
    finally:
        handle.detach()


# ----------------------------------------------------------------------------
# Building stages from pipeline text, checking every element before anything runs.


def build_stages(pipeline: PipelineSpec, context: ir.Context) -> list[Stage]:
    """The stages of `pipeline`; an unknown pass, a bad option or bad syntax raises CompileError."""
    if isinstance(pipeline, str):
        items: list = [pipeline]
    else:
        items = list(pipeline)
    stages: list[Stage] = []
    for item in items:
        if isinstance(item, Stage):
            stages.append(item)
            continue
        if isinstance(item, tuple):
            stages.append(_stage_from_options(*item))
            continue
        try:
            elements = split_pipeline(item)
        except PipelineSyntaxError as err:
            raise _pipeline_error(str(err), err.column, item) from None
        stages.extend(_stage(element, item, context) for element in elements)
    return stages


def _stage_from_options(name: str, options: Any) -> Stage:
    info = lookup(name)
    if info is None:
        raise CompileError(f"unknown pass '{name}'{_suggestion(name)}")
    if not isinstance(options, info.options):
        raise CompileError(f"options of pass '{name}' must be a {info.options.__name__}, got {type(options).__name__}")
    return Stage(name, info.format_options(options), info, options)


def _stage(element: PipelineElement, text: str, context: ir.Context) -> Stage:
    info = lookup(element.name)
    if info is not None:
        if element.nested is not None:
            raise _pipeline_error(f"'{element.name}' is a pass, not an op to nest a pipeline under", element.column, text)
        try:
            options = info.parse_options(parse_options(element.options or ""))
        except (ValueError, TypeError) as err:
            raise _pipeline_error(str(err), element.column, text) from None
        return Stage(element.name, info.format_options(options), info, options)
    inner = _inner_names(element, text)
    _check_upstream(element, text, context)
    return Stage(element.name, element.text, inner_names=inner)


def _inner_names(element: PipelineElement, text: str) -> frozenset[str]:
    """Pass names inside a nested pipeline; ours may not appear there (they run on the whole module)."""
    if element.nested is None:
        return frozenset()
    names: set[str] = set()
    base = element.column + element.text.index("(")
    for inner in split_pipeline(element.nested, base):
        if is_pass(inner.name):
            raise _pipeline_error(
                f"pass '{inner.name}' runs on the whole module; it cannot be nested under '{element.name}'",
                inner.column,
                text,
            )
        names.add(inner.name)
        names |= _inner_names(inner, text)
    return frozenset(names)


def _check_upstream(element: PipelineElement, text: str, context: ir.Context) -> None:
    pm = PassManager("builtin.module", context)
    with _native_stderr() as captured:
        try:
            pm.add(element.text)
            return
        except ValueError as err:
            message = str(err)
    if "does not refer to a registered pass" in message and element.nested is None:
        raise _pipeline_error(f"unknown pass '{element.name}'{_suggestion(element.name)}", element.column, text)
    details = [line.strip() for line in (captured.text + "\n" + message).splitlines() if line.strip()]
    details = [line for line in details if not line.startswith(("MLIR Textual PassPipeline Parser", element.text))]
    reason = "; ".join(line.lstrip(": ") for line in details if line != "^") or "rejected by MLIR"
    raise _pipeline_error(f"invalid pass pipeline element '{element.text}': {reason}", element.column, text)


def _suggestion(name: str) -> str:
    close = difflib.get_close_matches(name, list(PASS_MODULES), n=1)
    return f" (did you mean '{close[0]}'?)" if close else " (not a tilemlir pass nor a registered upstream MLIR pass)"


def _pipeline_error(message: str, column: int, text: str) -> CompileError:
    note = Diagnostic("note", f"in pass pipeline '{text}'")
    return CompileError([Diagnostic("error", message, SourceLocation(PIPELINE_SOURCE, 1, column), (note,))])


class _Captured:
    text = ""


@contextmanager
def _native_stderr():
    """Capture what C++ writes to file descriptor 2 (LLVM's option parser prints there)."""
    captured = _Captured()
    try:
        saved = os.dup(2)
    except OSError:
        yield captured
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.text = tmp.read().decode("utf-8", "replace")


__all__ = [
    "IRPrinting",
    "PipelineReport",
    "Stage",
    "build_stages",
    "run_pipeline",
]
