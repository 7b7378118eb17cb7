"""The expected-* protocol of --verify-diagnostics, on its own (tile-opt's use is in test/lit/tools)."""

from tilemlir.diagnostics import Diagnostic, SourceLocation
from tilemlir.tools.verify_diagnostics import parse_expectations, verify_diagnostics

TEXT = """first plain line
  // expected-error @above {{above}}
second plain line // expected-remark {{same line}}
  // expected-warning @below {{below}}
  // expected-note @+2 {{two down}}
third plain line
fourth plain line
  // expected-error @-1 {{one up}}
  // expected-error @unknown {{nowhere}}
  // expected-error-re {{value #{{[0-9]+}} is bad}}
"""


def located(severity, message, line, notes=()):
    return Diagnostic(severity, message, SourceLocation("f.mlir", line, 1), tuple(notes))


def test_designators_resolve_to_lines_numbered_from_first_line():
    expectations, problems = parse_expectations(TEXT, "f.mlir", first_line=10)
    assert problems == []
    lines = {e.text: e.line for e in expectations}
    assert lines == {"above": 10, "same line": 12, "below": 15, "two down": 16, "one up": 16, "nowhere": None,
                     "value #{{[0-9]+}} is bad": 19}
    assert expectations[0].where == SourceLocation("f.mlir", 11, 6)


def test_everything_matched():
    expectations, _ = parse_expectations(TEXT, "f.mlir", first_line=10)
    diagnostics = [
        located("error", "it is above", 10),
        located("remark", "on the same line here", 12),
        located("warning", "below", 15),
        located("error", "one up", 16, [Diagnostic("note", "two down")]),  # a note inherits its parent's line
        Diagnostic("error", "nowhere"),
        located("error", "value #12 is bad", 19),
        located("error", "value #3 is bad", 19),  # one expectation may match several diagnostics
    ]
    assert verify_diagnostics(diagnostics, expectations, "f.mlir") == []


def test_mismatches():
    expectations, _ = parse_expectations(TEXT, "f.mlir")
    diagnostics = [
        located("remark", "above", 1),  # wrong severity
        located("error", "surprise", 7),  # nothing expected
        Diagnostic("error", "other file", SourceLocation("g.mlir", 1, 1)),
        located("error", "value #x is bad", 10),  # the regex wants digits
    ]
    problems = [(p.message, p.location.line if p.location else None) for p in verify_diagnostics(
        diagnostics, expectations, "f.mlir")]
    assert ("'remark' diagnostic emitted when expecting a 'error'", 2) in problems
    assert ("unexpected error: surprise", 7) in problems
    assert ("unexpected error: other file", 1) in problems
    assert ("unexpected error: value #x is bad", 10) in problems
    not_produced = [m for m, _ in problems if m.endswith("was not produced")]
    assert len(not_produced) == 7


def test_bad_regex_is_reported():
    _, problems = parse_expectations("// expected-error-re {{a {{[}} b}}\n", "f.mlir")
    assert len(problems) == 1 and problems[0].message.startswith("invalid regular expression")
