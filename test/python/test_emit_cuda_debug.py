"""tile.print and tile.device_assert in CUDA (emit_cuda/debug.py), compiled by NVRTC (no GPU needed).

The statements are checked as text (the printf format is the CPU backend's line, the value converted
by its type and signedness; __assertfail carries the message, the Python file and line and the
kernel), and every kernel here compiles to a cubin."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.emit_cuda.debug import c_string

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import debug_print  # noqa: E402
import device_assert  # noqa: E402


def cuda(fn):
    kernel = tilemlir.compile(fn, "cuda", arch="sm_90a", use_cache=False)
    assert kernel.cubin  # NVRTC compiled it
    return kernel.cuda_source()


def _line(source: str, needle: str) -> str:
    """The statement of `source` whose first line contains `needle`, its wrapped lines joined."""
    lines = source.splitlines()
    starts = [n for n, line in enumerate(lines) if needle in line]
    assert len(starts) == 1, starts
    statement = [lines[starts[0]].strip()]
    n = starts[0]
    while not statement[-1].endswith(";"):
        n += 1
        statement.append(lines[n].strip())
    return " ".join(statement)


def test_debug_scale_prints_each_kind_from_its_thread():
    source = cuda(debug_print.debug_scale.instantiate())
    assert _line(source, '"row id') == ('if (tx == 0) printf("row id: block (%lld, %lld, %lld), thread 0: %lld\\n", '
                                        '(long long)bx, 0LL, 0LL, (long long)(bx * 10 + 1));')
    alpha = _line(source, '"alpha')
    assert alpha.startswith('if (tx == 0) printf("alpha: block (%lld, %lld, %lld), thread 0: %.9g\\n", ')
    assert alpha.endswith(", (double)alpha);")
    assert '"even row: block (%lld, %lld, %lld), thread 0: %s\\n"' in source and '? "true" : "false");' in source
    scaled = _line(source, '"scaled')
    assert scaled.startswith('if (tx == 0) printf("scaled: block (%lld, %lld, %lld), thread 0: x[%lld] = %.9g\\n", ')
    left = _line(source, '"left')
    assert left.startswith('if (tx == 32) printf("left: block (%lld, %lld, %lld), thread 32: left[%lld, %lld] = '
                           '%llu\\n", ')
    assert "(unsigned long long)(unsigned short)" in left
    # the shared copy of the fragment is read after a barrier
    assert "__syncthreads();" in source.split('"scaled')[0].rsplit("x_printed[", 1)[1]


def test_an_assertion_is_an_assertfail_with_the_python_line():
    source = cuda(device_assert.checked_gather.instantiate())
    lines = Path(device_assert.__file__).read_text().splitlines()
    numbers = [n for n, text in enumerate(lines, start=1) if "T.device_assert(" in text]
    assert len(numbers) == 2
    assert re.search(rf'if \(!\(.+ >= 0\)\) __assertfail\("negative index", "device_assert.py", {numbers[0]}u, '
                     r'"gather", sizeof\(char\)\);', source)
    condition = re.search(r"bool (\w+) = \w+ < N;", source).group(1)  # shared with the gather's guard
    assert re.search(rf'if \(!{condition}\) __assertfail\("index past the end of the table", "device_assert.py", '
                     rf'{numbers[1]}u, "gather", sizeof\(char\)\);', source)


M = T.symbolic("M")


@tilemlir.jit
def odd_messages(X: T.Tensor((M,), "int8"), u: T.uint32, d: T.float64, flag: T.bool):
    with T.Kernel(M, threads=32) as bx:
        T.print(X[bx], msg='100% "quoted" \\ café')
        T.print(u)
        T.print(d)
        T.device_assert(flag, 'it is "false" \\ 100%')


def test_messages_are_escaped_and_each_type_converts():
    source = cuda(odd_messages)
    assert '"100%% \\"quoted\\" \\\\ caf\\303\\251: block (%lld, %lld, %lld), thread 0: %lld\\n"' in source
    assert "(long long)(signed char)" in source
    assert _line(source, '"u: ').endswith(", (unsigned long long)(unsigned int)u);")
    assert _line(source, '"d: ').startswith('if (tx == 0) printf("d: block (%lld, %lld, %lld), thread 0: %.17g\\n", ')
    assert '__assertfail("it is \\"false\\" \\\\ 100%", "test_emit_cuda_debug.py"' in source


@pytest.mark.parametrize("text, literal", [("plain", '"plain"'), ('a"b', '"a\\"b"'), ("a\\b", '"a\\\\b"'),
                                           ("tab\there", '"tab\\011here"'), ("é", '"\\303\\251"')])
def test_c_strings(text, literal):
    assert c_string(text) == literal
