"""The textual pass-pipeline syntax, split into its top-level elements.

`builtin.module(infer-layouts, canonicalize{max-iterations=3}, func.func(cse))`
or the same without the `builtin.module(...)` wrapper. An element is a pass
`name`, a pass with options `name{key=value other="a b"}`, or a nested
pipeline `anchor(elements)` that MLIR runs on every `anchor` op. Nothing here
imports MLIR: the runner decides which elements are ours and which upstream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_CLOSING = {"(": ")", "{": "}", "[": "]"}


class PipelineSyntaxError(ValueError):
    """A malformed pipeline; `column` is 1-based in the text that was parsed."""

    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.column = column


@dataclass(frozen=True)
class PipelineElement:
    name: str
    options: str | None  # the text between the braces, when there are braces
    nested: str | None  # the text between the parentheses of a nested pipeline
    text: str  # the element as written
    column: int  # 1-based column of the element in the pipeline text


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _balanced_end(text: str, start: int) -> int:
    """The index just past the bracket group opening at `start`; quotes are opaque."""
    stack: list[str] = []
    pos = start
    while pos < len(text):
        char = text[pos]
        if char == '"':
            close = text.find('"', pos + 1)
            if close < 0:
                raise PipelineSyntaxError("unterminated string", pos + 1)
            pos = close + 1
            continue
        if char in _CLOSING:
            stack.append(_CLOSING[char])
        elif char in ")}]":
            if not stack or stack.pop() != char:
                raise PipelineSyntaxError(f"unbalanced '{char}'", pos + 1)
            if not stack:
                return pos + 1
        pos += 1
    raise PipelineSyntaxError(f"missing '{stack[-1]}' to close '{text[start]}'", start + 1)


def _parse_element(text: str, pos: int, base: int) -> tuple[PipelineElement, int]:
    match = _NAME.match(text, pos)
    if not match:
        what = f"'{text[pos]}'" if pos < len(text) else "the end of the pipeline"
        raise PipelineSyntaxError(f"expected a pass name, found {what}", base + pos + 1)
    name, after = match.group(), _skip_space(text, match.end())
    options = nested = None
    if after < len(text) and text[after] in "{(":
        try:
            end = _balanced_end(text, after)
        except PipelineSyntaxError as err:
            raise PipelineSyntaxError(str(err), base + err.column) from None
        inner = text[after + 1 : end - 1]
        if text[after] == "{":
            options = inner
        else:
            nested = inner
        after = end
    element = PipelineElement(name, options, nested, text[pos:after].strip(), base + pos + 1)
    return element, _skip_space(text, after)


def split_pipeline(text: str, base: int = 0) -> list[PipelineElement]:
    """The top-level elements of `text`; a single `builtin.module(...)` wrapper is looked through.

    `base` is the column offset of `text` in a larger pipeline, for error columns.
    """
    elements: list[PipelineElement] = []
    pos = _skip_space(text, 0)
    while pos < len(text):
        element, pos = _parse_element(text, pos, base)
        elements.append(element)
        if pos < len(text):
            if text[pos] != ",":
                raise PipelineSyntaxError(f"expected ',' between passes, found '{text[pos]}'", base + pos + 1)
            pos = _skip_space(text, pos + 1)
            if pos == len(text):
                raise PipelineSyntaxError("expected a pass name after ','", base + pos + 1)
    if len(elements) == 1 and elements[0].name == "builtin.module" and elements[0].nested is not None:
        open_paren = text.index("(", elements[0].column - 1 - base)
        return split_pipeline(elements[0].nested, base + open_paren + 1)
    return elements


def parse_options(text: str) -> dict[str, str]:
    """`key=value` pairs of a pass's option text; a bare `key` means `key=true`.

    Values may be quoted ("a b") or braced ({a b}); the quotes and braces are removed.
    """
    options: dict[str, str] = {}
    pos = _skip_space(text, 0)
    while pos < len(text):
        match = _NAME.match(text, pos)
        if not match:
            raise PipelineSyntaxError(f"expected an option name, found '{text[pos]}'", pos + 1)
        key, pos = match.group(), match.end()
        value = "true"
        if pos < len(text) and text[pos] == "=":
            value, pos = _option_value(text, pos + 1)
        if key in options:
            raise PipelineSyntaxError(f"option '{key}' given twice", match.start() + 1)
        options[key] = value
        if pos < len(text) and not text[pos].isspace():
            raise PipelineSyntaxError(f"expected a space between options, found '{text[pos]}'", pos + 1)
        pos = _skip_space(text, pos)
    return options


def _option_value(text: str, pos: int) -> tuple[str, int]:
    if pos < len(text) and text[pos] in '"{':
        end = _balanced_end(text, pos) if text[pos] == "{" else _quoted_end(text, pos)
        return text[pos + 1 : end - 1], end
    end = pos
    while end < len(text) and not text[end].isspace():
        if text[end] in "{([":
            end = _balanced_end(text, end)
        else:
            end += 1
    if end == pos:
        raise PipelineSyntaxError("expected a value after '='", pos + 1)
    return text[pos:end], end


def _quoted_end(text: str, pos: int) -> int:
    close = text.find('"', pos + 1)
    if close < 0:
        raise PipelineSyntaxError("unterminated string", pos + 1)
    return close + 1
