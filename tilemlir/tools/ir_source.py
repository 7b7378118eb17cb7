"""Text IR in: decode, screen, parse and locate, so that no input can take the process down.

MLIR's parser recurses on nesting and runs in super-linear time on huge
integer literals; in-process that means a segmentation fault (about 20,000
nested brackets, 100,000 unary minus signs) or a hang (a 20,000-digit
integer takes seconds, longer ones minutes). `check_source` refuses such
input up front, with a located error, at limits far beyond any real IR.
`parse_source` then parses and gives every location the real file name
(MLIR names a parsed string "-").
"""

from __future__ import annotations

import re

from tilemlir.diagnostics import CompileError, Diagnostic, SourceLocation, reporting as diag
from tilemlir.mlir import MLIRError, ir

MAX_NESTING = 256
MAX_DIGITS = 1000
MAX_SIGN_RUN = 64

def decode_source(data: bytes, filename: str) -> str:
    """`data` as UTF-8 text; a located error at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        message = f"input is not valid UTF-8: byte 0x{data[err.start]:02x} cannot start or continue a character"
        raise CompileError(message, SourceLocation(filename, line, col)) from None


# Strings and comments are opaque; `->` is an arrow, not a closing bracket.
_TOKENS = re.compile(
    r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|->|(?P<open>[(\[{<])|(?P<close>[)\]}>])'
    rf"|(?P<signs>(?:-\s*){{{MAX_SIGN_RUN + 1},}})|(?P<number>\d\w{{{MAX_DIGITS},}})"
)


def check_source(text: str, filename: str, first_line: int = 1) -> None:
    """Refuse input that would crash or hang MLIR's parser (see the module docstring)."""
    depth = 0
    for match in _TOKENS.finditer(text):
        kind = match.lastgroup
        if kind == "open":
            depth += 1
            if depth > MAX_NESTING:
                raise _located(f"input nests brackets more than {MAX_NESTING} levels deep", text, match, filename, first_line)
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "signs":
            raise _located(f"more than {MAX_SIGN_RUN} minus signs in a row", text, match, filename, first_line)
        elif kind == "number":
            raise _located(f"number literal longer than {MAX_DIGITS} digits", text, match, filename, first_line)


def _located(message: str, text: str, match: re.Match, filename: str, first_line: int) -> CompileError:
    pos = match.start()
    line = first_line + text.count("\n", 0, pos)
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return CompileError(message, SourceLocation(filename, line, col))


def parse_source(text: str, filename: str, context: ir.Context, first_line: int = 1) -> ir.Module:
    """Parse and verify `text` (which starts at line `first_line` of `filename`).

    Raises CompileError with MLIR's located diagnostics; all locations of the
    module name `filename` and the line numbers of the whole file.
    """
    check_source(text, filename, first_line)
    try:
        module = ir.Module.parse("\n" * (first_line - 1) + text, context)
    except MLIRError as err:
        raise CompileError([_renamed(diag.from_mlir(d), filename) for d in err.error_diagnostics]) from None
    _relocate(module, filename)
    return module


def _renamed(d: Diagnostic, filename: str) -> Diagnostic:
    loc = d.location
    if loc is not None and loc.file == "-":
        loc = SourceLocation(filename, loc.line, loc.col)
    return Diagnostic(d.severity, d.message, loc, tuple(_renamed(n, filename) for n in d.notes))


def _relocate(module: ir.Module, filename: str) -> None:
    """Replace the parser's "-" file name by `filename` in op and block-argument locations."""
    context = module.context

    def renamed(loc: ir.Location) -> ir.Location | None:
        if isinstance(loc, ir.FileLineColLoc) and loc.filename == "-":
            return ir.Location.file(filename, loc.start_line, loc.start_col, context=context)
        return None

    def visit(op):
        op = op.operation
        if (loc := renamed(op.location)) is not None:
            op.location = loc
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    if (loc := renamed(arg.location)) is not None:
                        arg.set_location(loc)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
