"""run_pipeline: the API every caller uses to run passes (ours and upstream) on a module."""

import io

import pytest

from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError, SourceLocation, reporting as diag
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import lookup
from tilemlir.pass_infra.runner import IRPrinting, PipelineReport, build_stages, run_pipeline
from tilemlir.passes.testing.diagnostics import TestDiagnosticsOptions as DiagnosticsOptions
from tilemlir.tools.ir_source import parse_source

SOURCE = """func.func @f() -> i32 attributes {test.statistic = "functions", test.remark = "saw f"} {
  %0 = arith.constant {test.statistic = "constants"} 2 : i32
  %1 = arith.constant {test.statistic = "constants", test.warning = "odd"} 3 : i32
  %2 = arith.addi %0, %1 : i32
  return %2 : i32
}
"""


@pytest.fixture
def module():
    context = make_context()
    with context:
        yield parse_source(SOURCE, "kernel.mlir", context)


def test_our_and_upstream_passes_mix(module):
    report = run_pipeline(module, "test-diagnostics,canonicalize,cse")
    body = str(module)
    assert "arith.constant 5 : i32" in body and "arith.addi" not in body
    assert [name for name, _ in report.timings] == ["test-diagnostics", "canonicalize", "cse"]
    assert all(seconds >= 0 for _, seconds in report.timings)


def test_pipeline_as_a_list_with_options_objects(module):
    options = DiagnosticsOptions(fail_fast=True)
    report = run_pipeline(module, [("test-diagnostics", options), "builtin.module(func.func(canonicalize))"])
    assert [name for name, _ in report.timings] == ["test-diagnostics", "func.func(canonicalize)"]
    stages = build_stages([("test-diagnostics", options)], module.context)
    assert stages[0].text == "test-diagnostics{fail-fast=true crash=false break-ir=false}"
    assert lookup("test-diagnostics").parse_options({"fail-fast": "true"}) == options


def test_remarks_warnings_and_statistics_of_a_successful_run(module):
    report = run_pipeline(module, "test-diagnostics")
    seen = [(d.severity, d.message, d.location) for d in report.diagnostics]
    assert seen == [("warning", "odd", SourceLocation("kernel.mlir", 3, 8)),
                    ("remark", "saw f", SourceLocation("kernel.mlir", 1, 1))]
    counters = report.statistics["test-diagnostics"]
    assert (counters["constants"].value, counters["functions"].value) == (2, 1)
    assert "(S) 2 constants - ops carrying this test.statistic" in report.format_statistics()


def test_statistics_accumulate_over_runs_into_one_report(module):
    report = PipelineReport()
    run_pipeline(module, "test-diagnostics", report=report)
    run_pipeline(module, "test-diagnostics", report=report)
    assert report.statistics["test-diagnostics"]["constants"].value == 4
    assert len(report.timings) == 1  # same stage position, time added up


def test_statistic_outside_a_run_is_a_no_op():
    diag.statistic("nothing", 3)  # must not raise


def test_pass_error_raises_compile_error_with_every_diagnostic_in_order(module):
    op = module.body.operations[0].regions[0].blocks[0].operations[1]
    op.attributes["test.error"] = ir.StringAttr.get("too odd")
    op.attributes["test.note"] = ir.StringAttr.get("look here")
    with pytest.raises(CompileError) as info:
        run_pipeline(module, "cse,test-diagnostics")
    severities = [d.severity for d in info.value.diagnostics]
    assert severities == ["warning", "remark", "error"]
    error = info.value.diagnostics[-1]
    assert (error.message, error.location) == ("too odd", SourceLocation("kernel.mlir", 3, 8))
    assert [(n.message, n.location) for n in error.notes] == [("look here", SourceLocation("kernel.mlir", 3, 8))]
    assert str(info.value).startswith("kernel.mlir:3:8: warning: odd")


def test_internal_error_in_a_pass_becomes_a_diagnostic(module):
    with pytest.raises(CompileError) as info:
        run_pipeline(module, "test-diagnostics{crash=true}")
    [error] = info.value.diagnostics
    assert error.message == ("internal compiler error in pass 'test-diagnostics': "
                             "RuntimeError: test-diagnostics was asked to crash")


def test_upstream_pass_failure_is_a_compile_error(module):
    with pytest.raises(CompileError) as info:
        run_pipeline(module, "func.func(symbol-dce)")
    assert "was scheduled to run under SymbolDCE, but does not define a symbol table" in info.value.diagnostics[0].message


def test_pass_breaking_the_ir_is_caught_by_the_verifier(module):
    with pytest.raises(CompileError) as info:
        run_pipeline(module, "test-diagnostics{break-ir=true},canonicalize")
    assert info.value.diagnostics[-1].message.startswith("'tile.yield' op must terminate a tile.kernel")


@pytest.mark.parametrize("pipeline, message", [
    ("no-such-pass", "unknown pass 'no-such-pass'"),
    ("test-diagnostics{crash=sometimes}", "expects true or false, got 'sometimes'"),
    ("canonicalize{bogus=1}", "invalid pass pipeline element 'canonicalize{bogus=1}'"),
    ("func.func(test-diagnostics)", "cannot be nested under 'func.func'"),
])
def test_bad_pipelines_fail_before_any_pass_runs(module, pipeline, message):
    before = str(module)
    with pytest.raises(CompileError) as info:
        run_pipeline(module, "canonicalize," + pipeline)
    assert message in info.value.diagnostics[0].message
    assert info.value.diagnostics[0].location.file == "<pass-pipeline>"
    assert str(module) == before


def test_options_object_of_the_wrong_type(module):
    with pytest.raises(CompileError, match="options of pass 'test-diagnostics' must be a TestDiagnosticsOptions"):
        run_pipeline(module, [("test-diagnostics", object())])


def test_ir_printing_and_after_pass_hook(module):
    stream = io.StringIO()
    seen = []
    run_pipeline(module, "test-diagnostics,canonicalize", print_ir_after_all=stream,
                 after_pass=lambda name, op: seen.append((name, "arith.addi" in str(op))))
    text = stream.getvalue()
    assert text.index("// -----// IR Dump After test-diagnostics //----- //") < text.index(
        "// -----// IR Dump After canonicalize //----- //")
    assert seen == [("test-diagnostics", True), ("canonicalize", False)]


def test_ir_printing_before_a_named_nested_pass_with_debuginfo(module):
    stream = io.StringIO()
    printing = IRPrinting(stream, before=frozenset({"cse"}), debuginfo=True)
    run_pipeline(module, "test-diagnostics,func.func(canonicalize,cse)", print_ir=printing)
    text = stream.getvalue()
    assert text.count("IR Dump") == 1
    assert "// -----// IR Dump Before func.func(canonicalize,cse) //----- //" in text
    assert 'loc("kernel.mlir":4:8)' in text


def test_timing_and_statistics_streams(module):
    timing, statistics = io.StringIO(), io.StringIO()
    run_pipeline(module, "test-diagnostics,cse", timing=timing, statistics=statistics)
    assert "Execution time report" in timing.getvalue()
    assert timing.getvalue().splitlines()[-1].endswith("Total")
    assert "(S) 1 functions - ops carrying this test.statistic" in statistics.getvalue()
