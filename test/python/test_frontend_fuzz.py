"""Robustness: mutated example kernels end in IR or a located CompileError, never an internal error or traceback.

Names and numbers inside the example sources are replaced by others
(hypothesis picks which and by what). A mutant that is not valid Python,
or whose module-level or factory code fails in plain Python, is not the
frontend's business and is skipped; everything that reaches
`tilemlir.lower` must lower or raise a CompileError with a location.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import sys
import tokenize
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import CompileError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOURCES = sorted(p for p in EXAMPLES.glob("*.py") if p.stem != "harness")
REPLACEMENTS = ["0", "1", "3", "-1", "2.5", "1e9", "M", "N", "bx", "x", "i", "j", "k", "X", "Y", "T", "None", "True",
                "dtype", "m", "s", "eps", "float", "range", "abs", "max", "T.float16", "T.int8", "'bool'"]
KEYWORDS = {"def", "for", "in", "with", "as", "if", "else", "return", "import", "from", "and", "or", "not", "assert"}
_names = itertools.count()
sys.path.insert(0, str(EXAMPLES))


def _mutable_tokens(text: str) -> list:
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    return tokens, [i for i, t in enumerate(tokens)
                    if t.type in (tokenize.NAME, tokenize.NUMBER) and t.string not in KEYWORDS]


def _mutant(text: str, edits: list[tuple[int, str]]) -> str:
    tokens, positions = _mutable_tokens(text)
    replaced = [[t.type, t.string] for t in tokens]
    for where, replacement in edits:
        replaced[positions[where % len(positions)]][1] = replacement
    return tokenize.untokenize([tuple(t) for t in replaced])


@contextlib.contextmanager
def _dsl_restored():
    """Mutants run as plain Python and may rebind the DSL's names: `T.int8 = T.symbolic("M")` is
    a valid mutant of `M = T.symbolic("M")`. Put the modules back, so later tests see the real DSL."""
    saved = [(module, dict(vars(module))) for module in (tilemlir, T)]
    try:
        yield
    finally:
        for module, names in saved:
            vars(module).update(names)  # names added meanwhile (lazily imported submodules) stay


def _kernels_of(directory: Path, text: str) -> list | None:
    name = f"mutant_{next(_names)}"
    path = directory / f"{name}.py"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            compile(text, str(path), "exec")
        except SyntaxError:
            return None
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            jitted = [v for v in vars(module).values() if isinstance(v, tilemlir.api.JitFunction)]
            return [f if f.kind == "kernel" else f.instantiate() for f in jitted]
        except CompileError as err:
            assert "internal compiler error" not in str(err), str(err)
            return []
        except Exception:  # the mutant's own Python fails before the frontend sees a kernel
            return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    source=st.sampled_from(SOURCES),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(REPLACEMENTS)), min_size=1, max_size=3),
)
def test_mutated_examples_lower_or_fail_with_a_located_error(tmp_path, source, edits):
    with _dsl_restored():
        kernels = _kernels_of(tmp_path, _mutant(source.read_text(), edits))
        for kernel in kernels or []:
            try:
                tilemlir.lower(kernel)
            except CompileError as err:
                assert "internal compiler error" not in str(err), str(err)
                assert err.location is not None and err.location.line > 0, str(err)


def test_the_unmutated_examples_lower(tmp_path):
    for source in SOURCES:
        kernels = _kernels_of(tmp_path, source.read_text())
        assert kernels, source
        for kernel in kernels:
            assert '"tile.kernel"' in tilemlir.lower(kernel)


def test_a_mutant_can_fail(tmp_path):
    text = (EXAMPLES / "elementwise_add.py").read_text()
    assert _mutant(text, [(5, "bogus_name")]) != text
    kernels = _kernels_of(tmp_path, text.replace("a[i] = a[i] + b[i]", "a[i] = a[i] + bogus_name"))
    with pytest.raises(CompileError, match="unknown name 'bogus_name'"):
        tilemlir.lower(kernels[0])


def test_a_mutant_rebinding_the_dsl_does_not_outlive_it(tmp_path):
    """This mutant once turned T.int8 into a symbolic dim for every later test in the session."""
    int8 = T.int8
    text = (EXAMPLES / "softmax.py").read_text()
    assert 'M = T.symbolic("M")' in text
    with _dsl_restored():
        _kernels_of(tmp_path, text.replace('M = T.symbolic("M")', 'T.int8 = T.symbolic("M")'))
        assert T.int8 is not int8  # the mutant did rebind it
    assert T.int8 is int8
