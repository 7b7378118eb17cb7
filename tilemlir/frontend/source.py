"""A kernel function's source: its AST with real file positions, and the names it can see.

Positions: AST lines are mapped back to lines of the real file and AST
columns (UTF-8 byte offsets, 0-based) to 1-based character columns, so a
diagnostic's caret lands under the right character of the user's file.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from tilemlir.diagnostics import CompileError, Diagnostic, SourceLocation
from tilemlir.python_ast import parse


class KernelError(Exception):
    """A mistake in kernel code found below the statement/expression visitors.

    It carries no position: the innermost visitor that sees it turns it into
    a CompileError at the node it is visiting (or at `node` when given).
    """

    def __init__(self, message: str, node: ast.AST | None = None, notes: tuple[Diagnostic, ...] = ()):
        super().__init__(message)
        self.message = message
        self.node = node
        self.notes = notes


_UNBOUND = object()


@dataclass
class KernelSource:
    """The parsed source of one Python function and the namespaces it closes over."""

    fn: Callable
    file: str
    tree: ast.FunctionDef
    line_offset: int  # file line = AST line + line_offset
    lines: list[str]  # the function's source lines as they are in the file
    first_line: int  # file line of lines[0]
    closure: dict[str, Any] = field(default_factory=dict)
    node_ids: set[int] | None = None

    @property
    def name(self) -> str:
        return self.tree.name

    @property
    def globals(self) -> dict[str, Any]:
        return getattr(self.fn, "__globals__", {})

    def location(self, node: ast.AST) -> SourceLocation:
        line = getattr(node, "lineno", self.tree.lineno) + self.line_offset
        col_bytes = getattr(node, "col_offset", 0)
        text = self._line_text(line)
        col = len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore")) if text else col_bytes
        return SourceLocation(self.file, line, col + 1)

    def _line_text(self, line: int) -> str:
        index = line - self.first_line
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def error(self, node: ast.AST, message: str, notes: tuple[Diagnostic, ...] = ()) -> CompileError:
        return CompileError([Diagnostic("error", message, self.location(node), tuple(notes))])

    def note(self, node: ast.AST, message: str) -> Diagnostic:
        return Diagnostic("note", message, self.location(node))

    def owns(self, node: ast.AST) -> bool:
        """Whether `node` is part of this function's AST."""
        if self.node_ids is None:
            self.node_ids = {id(n) for n in ast.walk(self.tree)}
        return id(node) in self.node_ids

    def resolve_free(self, name: str) -> Any:
        """The value of a name the function does not assign: closure, then globals, then builtins."""
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _UNBOUND)

    def visible_names(self) -> list[str]:
        return [*self.closure, *self.globals]


def is_unbound(value: Any) -> bool:
    return value is _UNBOUND


def load_source(fn: Callable) -> KernelSource:
    """Parse `fn`'s source; a CompileError when it cannot be read or is not a `def`."""
    name = getattr(fn, "__name__", repr(fn))
    try:
        file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise CompileError(
            f"cannot read the source of kernel '{name}' ({exc}): tilemlir compiles a kernel from its "
            "source file, so define it with `def` in a .py file"
        ) from None
    # An indented function (a method, a kernel defined inside a factory) is
    # parsed as the body of an `if`, which keeps its columns the file's columns
    # at the cost of one extra line.
    indented = lines[0][:1].isspace()
    text = ("if 1:\n" if indented else "") + "".join(lines)
    line_offset = first_line - (2 if indented else 1)
    try:
        module = parse(text, filename=file)
    except SyntaxError as exc:
        loc = SourceLocation(file, (exc.lineno or 1) + line_offset, exc.offset or 1)
        raise CompileError(f"cannot parse kernel '{name}': {exc.msg}", loc) from None
    tree = module.body[0].body[0] if indented else module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        loc = SourceLocation(file, first_line, 1)
        raise CompileError(f"'{name}' is not a `def` function: a kernel must be written with `def`", loc)
    return KernelSource(
        fn=fn,
        file=file,
        tree=tree,
        line_offset=line_offset,
        lines=lines,
        first_line=first_line,
        closure=_closure_values(fn),
    )


def _closure_values(fn: Callable) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    values = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # a cell not yet assigned
            continue
    return values
