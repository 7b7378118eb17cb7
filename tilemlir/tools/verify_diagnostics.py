"""mlir-opt's `--verify-diagnostics` protocol: match reported diagnostics against `expected-*` comments.

A line holding `expected-<severity>[-re] [@designator] {{text}}` expects a
diagnostic of that severity (error, warning, remark, note) whose message
contains `text` (with `-re`, `{{...}}` groups inside `text` are regular
expressions and the rest literal). The designator says where: none means
this line, `@+N` / `@-N` that many lines below / above, `@above` the last
line before it with no expected-*, `@below` the next such line after it,
`@unknown` a diagnostic without a location. As in MLIR, one expectation
may match several diagnostics; an expectation nothing matched and a
diagnostic no expectation matched are both errors. Notes are checked like
diagnostics of their own; a note without a location has its parent's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilemlir.diagnostics import Diagnostic, SourceLocation

_EXPECTED = re.compile(
    r"expected-(?P<severity>error|note|remark|warning)(?P<re>-re)?"
    r" *(?:@(?P<where>[+-][0-9]+|above|below|unknown))? *\{\{(?P<text>.*)\}\}\s*$"
)


@dataclass
class Expectation:
    severity: str
    line: int | None  # None: a diagnostic without location (@unknown)
    text: str
    pattern: re.Pattern | None  # for expected-*-re
    where: SourceLocation  # of the expected-* comment itself
    matched: bool = False

    def accepts(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


def _regex(text: str) -> re.Pattern:
    """An expected-*-re text: literal except for `{{regex}}` groups."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?:{p})" for i, p in enumerate(parts)))


def parse_expectations(text: str, filename: str, first_line: int = 1) -> tuple[list[Expectation], list[Diagnostic]]:
    """The expectations written in `text` (lines numbered from `first_line`), and problems with them."""
    expectations: list[Expectation] = []
    problems: list[Diagnostic] = []
    last_plain_line = first_line - 1
    waiting_below: list[Expectation] = []
    for index, line_text in enumerate(text.split("\n")):
        line = first_line + index
        match = _EXPECTED.search(line_text)
        if not match:
            for expectation in waiting_below:
                expectation.line = line
            waiting_below.clear()
            last_plain_line = line
            continue
        where = SourceLocation(filename, line, match.start() + 1)
        pattern = None
        if match.group("re"):
            try:
                pattern = _regex(match.group("text"))
            except re.error as err:
                problems.append(Diagnostic("error", f"invalid regular expression in expected-*-re: {err}", where))
                continue
        expectation = Expectation(match.group("severity"), line, match.group("text"), pattern, where)
        designator = match.group("where")
        if designator == "unknown":
            expectation.line = None
        elif designator == "above":
            expectation.line = last_plain_line
        elif designator == "below":
            waiting_below.append(expectation)  # with no line below, it can never match
        elif designator:
            expectation.line = line + int(designator)
        expectations.append(expectation)
    return expectations, problems


def verify_diagnostics(diagnostics: list[Diagnostic], expectations: list[Expectation], filename: str) -> list[Diagnostic]:
    """The errors of matching `diagnostics` against `expectations` (empty when everything matches)."""
    problems: list[Diagnostic] = []
    for diagnostic in _flattened(diagnostics):
        problem = _match(diagnostic, expectations, filename)
        if problem is not None:
            problems.append(problem)
    for expectation in expectations:
        if not expectation.matched:
            message = f'expected {expectation.severity} "{expectation.text}" was not produced'
            problems.append(Diagnostic("error", message, expectation.where))
    return problems


def _flattened(diagnostics: list[Diagnostic]):
    for diagnostic in diagnostics:
        yield diagnostic
        for note in _flattened(list(diagnostic.notes)):
            if note.location is None:
                note = Diagnostic(note.severity, note.message, diagnostic.location, note.notes)
            yield note


def _match(diagnostic: Diagnostic, expectations: list[Expectation], filename: str) -> Diagnostic | None:
    loc = diagnostic.location
    line = None if loc is None else loc.line
    if loc is not None and loc.file != filename:
        return _unexpected(diagnostic)
    near_miss = None
    for expectation in expectations:
        if expectation.line == line and expectation.accepts(diagnostic.message):
            if expectation.severity == diagnostic.severity:
                expectation.matched = True
                return None
            near_miss = expectation
    if near_miss is not None:
        message = f"'{diagnostic.severity}' diagnostic emitted when expecting a '{near_miss.severity}'"
        return Diagnostic("error", message, near_miss.where)
    return _unexpected(diagnostic)


def _unexpected(diagnostic: Diagnostic) -> Diagnostic:
    return Diagnostic("error", f"unexpected {diagnostic.severity}: {diagnostic.message}", diagnostic.location)
