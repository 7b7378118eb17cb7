"""tile-opt never falls over: mutated lit inputs end in exit 0 or a located error.

Token- and byte-level mutations of every .mlir file under test/lit (globbed,
so files added later are covered) go through tile-opt in-process, with a
time limit, and a sample through the console script in a subprocess, where a
crash of the MLIR bindings would show as a signal. Never a traceback, an
internal error, a hang or a crash.
"""

import io
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilemlir.tools.tile_opt import main

LIT_ROOT = Path(__file__).resolve().parents[1] / "lit"
LIT_INPUTS = sorted(p for p in LIT_ROOT.rglob("*.mlir") if "Output" not in p.parts)
LIT_TEXTS = [p.read_bytes() for p in LIT_INPUTS]  # read once: hypothesis replays need the same data
TIME_LIMIT_S = 20

# MLIR-ish tokens to splice in: structure, types, attributes, extreme numbers, the tile dialect.
SPLICE_TOKENS = [
    "{", "}", "(", ")", "[", "]", "<", ">", ":", ",", "=", "->", "^bb0", "^bb1:", "%0", "%arg0", "@f",
    '"tile.kernel"', '"tile.yield"() : () -> ()', '"tile.copy"', '"tile.parallel"', "tile.layout", "#tile.layout<",
    'memref<4x?xf32, "fragment">', 'memref<*xf32>', "memref<0xf32>", "tensor<4xf32>", "index", "i1", "f16", "i64",
    "0", "-1", "1.5", "0x7FC00000", "9223372036854775808", "99999999999999999999999", "-0", "1e400",
    "affine_map<(d0)[s0] -> (d0 floordiv s0)>", "affine_map<() -> ()>", "dense<1.0> : tensor<2xf32>",
    'loc("x.py":1:2)', "loc(unknown)", '"\\00"', '"\\ff"', "unit", "true", "#map", "!tile.x", "#foo.bar<1>",
    "{-#", "#-}", "// expected-error {{x}}", "// -----", "\n", " ",
]
SPECIAL_BYTES = [b"\x00", b"\xff", b"\xc3", b"\xe2\x82", b'"', b"\\", b"{", b"<", b"%", b"^", b"#", b"\n", b"9"]

_TOKEN = re.compile(rb'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[%^@#!]?[\w.$-]+|->|\s+|.', re.S)
_LOCATED_ERROR = re.compile(r"^\S.*:\d+:\d+: error: ", re.M)


@contextmanager
def time_limit(seconds):
    def expire(signum, frame):
        raise TimeoutError(f"tile-opt ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_in_process(data: bytes, args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with time_limit(TIME_LIMIT_S):
        status = main(["-", *args], stdin=io.BytesIO(data), stdout=out, stderr=err)
    return status, err.getvalue()


_PYTHON_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.MULTILINE)
# The head line of a diagnostic reporting a bug of ours, with or without a location: the source
# excerpt under a diagnostic quotes the input, and a lit input's comment may name these words.
_INTERNAL_ERROR = re.compile(r"^(?:.*:\d+:\d+: )?error: internal (?:compiler|verifier) error", re.MULTILINE)


def check_outcome(status: int, err: str, data: bytes) -> None:
    context = f"input was {data[:2000]!r}\nstderr was:\n{err[:3000]}"
    assert status in (0, 1), context
    # The header every Python traceback starts with: error messages quote the input's line, and
    # lit inputs (test/lit/emit_cuda/errors.mlir) contain "// CHECK-NOT: Traceback" themselves.
    assert not _PYTHON_TRACEBACK.search(err), context
    assert not _INTERNAL_ERROR.search(err), context
    assert "tile-opt: internal error" not in err, context
    if status == 1:
        assert _LOCATED_ERROR.search(err), context


@st.composite
def byte_mutations(draw):
    data = bytearray(draw(st.sampled_from(LIT_TEXTS)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "duplicate", "special"]))
        if kind == "flip":
            if at < len(data):
                data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
        else:
            data[at:at] = draw(st.sampled_from(SPECIAL_BYTES))
    return bytes(data)


@st.composite
def token_mutations(draw):
    source = draw(st.sampled_from(LIT_TEXTS))
    tokens = _TOKEN.findall(source)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, max(len(tokens) - 1, 0)))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "splice"]))
        if not tokens:
            tokens = [draw(st.sampled_from(SPLICE_TOKENS)).encode()]
        elif kind == "delete":
            del tokens[at]
        elif kind == "duplicate":
            tokens.insert(at, tokens[at])
        elif kind == "swap":
            other = draw(st.integers(0, len(tokens) - 1))
            tokens[at], tokens[other] = tokens[other], tokens[at]
        elif kind == "replace":
            tokens[at] = tokens[draw(st.integers(0, len(tokens) - 1))]
        else:
            tokens.insert(at, draw(st.sampled_from(SPLICE_TOKENS)).encode())
    return b"".join(tokens)


MODES = st.sampled_from([[], ["--split-input-file", "--verify-diagnostics"], ["--split-input-file"],
                         ["-p", "canonicalize,cse"], ["--mlir-print-op-generic", "--mlir-print-debuginfo"]])
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_there_are_lit_inputs_to_mutate():
    assert len(LIT_INPUTS) >= 2 and any(p.name == "ops.mlir" for p in LIT_INPUTS)


@FUZZ
@given(data=byte_mutations(), args=MODES)
def test_byte_mutations(data, args):
    check_outcome(*run_in_process(data, args), data)


@FUZZ
@given(data=token_mutations(), args=MODES)
def test_token_mutations(data, args):
    check_outcome(*run_in_process(data, args), data)


@pytest.mark.parametrize("input_path", LIT_INPUTS, ids=lambda p: str(p.relative_to(LIT_ROOT)))
def test_every_lit_input_unmutated(input_path):
    data = input_path.read_bytes()
    check_outcome(*run_in_process(data, ["--split-input-file", "--verify-diagnostics"]), data)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(byte_mutations(), token_mutations()))
def test_mutations_in_a_subprocess_end_without_a_signal(data):
    script = os.path.join(os.path.dirname(sys.executable), "tile-opt")
    command = [script] if os.path.exists(script) else [sys.executable, "-m", "tilemlir.tools.tile_opt"]
    result = subprocess.run([*command, "--split-input-file"], input=data, capture_output=True, timeout=60)
    check_outcome(result.returncode, result.stderr.decode("utf-8", "replace"), data)
