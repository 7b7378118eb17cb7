"""Helpers for the frontend tests: kernels written to real files (the frontend reads source files).

`@@` in a snippet marks where an expected error is located; it is removed
before the file is written.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap
from pathlib import Path

import pytest

import tilemlir
from tilemlir.diagnostics import CompileError

HEADER = "import tilemlir\nimport tilemlir.language as T\n\nM = T.symbolic('M')\nN = T.symbolic('N')\n"
MARK = "@@"
_counter = itertools.count()


def load_module(directory: Path, source: str, header: str = HEADER):
    """Write `header + source` (dedented) to a new file and import it as a module."""
    text = header + textwrap.dedent(source).lstrip("\n")
    name = f"frontend_case_{next(_counter)}"
    path = directory / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def marked(source: str, header: str = HEADER) -> tuple[str, int, int]:
    """The source without its `@@` marker and the 1-based (line, col) the marker was at, in the file."""
    text = header + textwrap.dedent(source).lstrip("\n")
    for number, line in enumerate(text.splitlines(), start=1):
        col = line.find(MARK)
        if col >= 0:
            return textwrap.dedent(source).lstrip("\n").replace(MARK, "", 1), number, col + 1
    raise AssertionError("the snippet has no @@ marker")


def lower(directory: Path, source: str, name: str = "k", **kwargs) -> str:
    return tilemlir.lower(getattr(load_module(directory, source), name), **kwargs)


def frontend_error(directory: Path, source: str, name: str = "k") -> CompileError:
    """Lower kernel `name` of the snippet, expect a CompileError at the `@@` marker, and return it."""
    clean, line, col = marked(source)
    module = load_module(directory, clean)
    with pytest.raises(CompileError) as info:
        tilemlir.lower(getattr(module, name))
    err = info.value
    loc = err.location
    assert loc is not None, str(err)
    assert (Path(loc.file).name, loc.line, loc.col) == (f"{module.__name__}.py", line, col), str(err)
    return err


def message(err: CompileError) -> str:
    return err.diagnostics[0].message


def compile_error(directory: Path, source: str, name: str = "k", **options) -> CompileError:
    """Compile kernel `name` of the snippet with `options`, expect a CompileError at the `@@` marker, and
    return it."""
    clean, line, col = marked(source)
    module = load_module(directory, clean)
    with pytest.raises(CompileError) as info:
        tilemlir.compile(getattr(module, name), **options)
    loc = info.value.location
    assert loc is not None and (loc.file, loc.line, loc.col) == (module.__file__, line, col), str(info.value)
    return info.value
