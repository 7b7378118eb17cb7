"""`test-diagnostics`: reports what ops ask for, to test the pass infrastructure itself.

Takes any module and leaves it unchanged, except with `break-ir`. For every
op, in walk order, the discardable attributes `test.remark`, `test.warning`
(strings) become a remark / warning at the op, `test.statistic` (a string)
adds 1 to that counter, and `test.error` (a string) makes the pass fail with
that error at the op after the walk, with a note at the op when it also
carries `test.note`. Options: `fail-fast` raises at the first
`test.error`; `crash` raises a Python exception (an internal compiler error);
`break-ir` appends a `tile.yield` to the module body so that the verifier
run after the pass fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.diagnostics import CompileError, reporting as diag
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass


@dataclass(frozen=True)
class TestDiagnosticsOptions:
    fail_fast: bool = False
    crash: bool = False
    break_ir: bool = False


def _string_attr(op: ir.Operation, name: str) -> str | None:
    attrs = op.attributes
    if name not in attrs or not isinstance(attrs[name], ir.StringAttr):
        return None
    return attrs[name].value


@register_pass("test-diagnostics", "Report test.remark/test.warning/test.error/test.statistic attributes (infrastructure tests)",
               TestDiagnosticsOptions)
def run(module: ir.Operation, options: TestDiagnosticsOptions) -> None:
    if options.crash:
        raise RuntimeError("test-diagnostics was asked to crash")
    errors = []

    def visit(op):
        op = op.operation
        if (text := _string_attr(op, "test.remark")) is not None:
            diag.remark(op, text)
        if (text := _string_attr(op, "test.warning")) is not None:
            diag.warning(op, text)
        if (text := _string_attr(op, "test.statistic")) is not None:
            diag.statistic(text, 1, "ops carrying this test.statistic")
        if (text := _string_attr(op, "test.error")) is not None:
            note = _string_attr(op, "test.note")
            err = diag.error(op, text, [diag.note(op, note)] if note is not None else [])
            if options.fail_fast:
                raise err
            errors.extend(err.diagnostics)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if errors:
        raise CompileError(errors)
    if options.break_ir:
        from tilemlir.dialects import tile

        with ir.InsertionPoint(module.operation.regions[0].blocks[0]), module.location:
            tile.yield_()
