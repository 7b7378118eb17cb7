"""T.print and T.device_assert on the CPU target, both levels (backends/cpu/debug_calls.py).

examples/debug_print.py's and device_assert.py's kernels on fresh random inputs: every line printed (scalars
of four kinds, a fragment, a uint16 shared buffer from thread 32, a bf16 local buffer) equals what `expected_lines`
derives from the inputs, and the kernel's output is still exact; a failed assertion raises a located
DeviceAssertionError naming the kernel, block and thread, and a run without a bad index raises none.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.diagnostics import DeviceAssertionError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import debug_print  # noqa: E402
import device_assert  # noqa: E402

LEVELS = ["tile", "thread"]


@pytest.mark.parametrize("level", LEVELS)
def test_every_print_of_a_run_is_the_line_the_inputs_say(level, rng, capsys):
    x = rng.standard_normal((5, 8)).astype(ml_dtypes.bfloat16)
    alpha = float(rng.uniform(0.5, 2.0))
    kernel = tilemlir.compile(debug_print.debug_scale.instantiate(), "cpu", level=level)
    capsys.readouterr()
    y = kernel(x, alpha)
    printed = capsys.readouterr().out.splitlines()
    want = debug_print.expected_lines(x.astype(np.float32), alpha)
    assert printed == [line for row in want for line in row]  # the CPU runs the blocks in order
    assert np.array_equal(y, x.astype(np.float32) * np.float32(alpha))


@pytest.mark.parametrize("level", LEVELS)
def test_a_failed_assertion_is_a_located_error_after_the_run(level, rng):
    kernel = tilemlir.compile(device_assert.checked_gather.instantiate(), "cpu", level=level)
    table = rng.standard_normal(100).astype(np.float32)
    index = rng.integers(0, 100, 300).astype(np.int32)
    assert np.array_equal(kernel(table, index), table[index])
    index[200], index[250] = -3, 100
    with pytest.raises(DeviceAssertionError) as info:
        kernel(table, index)
    error = info.value
    assert error.location.file == device_assert.__file__
    source = Path(device_assert.__file__).read_text().splitlines()
    assert source[error.location.line - 1].strip().startswith("T.device_assert(k >= 0")
    who = "block (1, 0, 0)" + ("" if level == "tile" else ", thread 18")  # 200 - 128 = 72: thread 72 // 4
    assert error.diagnostics[0].message == (f"device assertion failed in kernel 'gather', {who}: negative index "
                                            "(1 more failure(s) in this run)")
    index[200] = 7
    with pytest.raises(DeviceAssertionError) as info:
        kernel(table, index)
    who = "block (1, 0, 0)" + ("" if level == "tile" else ", thread 30")  # 250 - 128 = 122: thread 122 // 4
    assert info.value.diagnostics[0].message == (f"device assertion failed in kernel 'gather', {who}: index past "
                                                 "the end of the table")


N = T.symbolic("N")


@tilemlir.jit
def counted(X: T.Tensor((N,), "int32"), flag: T.bool, u: T.uint64, d: T.float64, h: T.float16):
    with T.Kernel(2, 3, threads=32) as (bx, by):
        for i in T.Parallel(4):
            T.device_assert(X[i] != 7)
        T.print(flag)
        T.print(u, msg="u: 100% unsigned")
        T.print(d)
        T.print(h * 2)
        T.print(bx + by * 10)


@pytest.mark.parametrize("level", LEVELS)
def test_scalars_print_by_their_type_once_per_block(level, capsys):
    kernel = tilemlir.compile(counted, "cpu", level=level)
    capsys.readouterr()
    kernel(np.arange(4, dtype=np.int32), True, 2**64 - 5, 1 / 3, np.float16(0.1))
    lines = capsys.readouterr().out.splitlines()
    want = []
    for by in range(3):
        for bx in range(2):
            head = f"block ({bx}, {by}, 0), thread 0: "
            want += [f"flag: {head}true", f"u: 100% unsigned: {head}18446744073709551611",
                     f"d: {head}0.33333333333333331", f"h * 2: {head}0.199951172",
                     f"bx + by * 10: {head}{bx + by * 10}"]
    assert sorted(lines) == sorted(want) and len(lines) == 30
    with pytest.raises(DeviceAssertionError, match=r"block \(0, 0, 0\).*: X\[i\] != 7"):
        kernel(np.array([1, 7, 3, 4], np.int32), False, 0, 0.0, np.float16(0))


@tilemlir.jit(out_idx=[-1])
def running_sum(X: T.Tensor((N, 4), "float32"), Y: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=8) as bx:
        acc = T.alloc_fragment((4,), "float32")
        T.clear(acc)
        for k in T.serial(N):
            for i in T.Parallel(4):
                acc[i] += X[k, i]
            if k % 2 == 1:
                T.print(acc, msg="after row")
                T.print(k)
        T.copy(acc, Y[0])


@pytest.mark.parametrize("level", LEVELS)
def test_a_fragment_prints_inside_a_loop_and_a_branch_as_it_is_then(level, rng, capsys):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    kernel = tilemlir.compile(running_sum, "cpu", level=level)
    capsys.readouterr()
    y = kernel(x)
    lines = capsys.readouterr().out.splitlines()
    sums = np.cumsum(x, axis=0, dtype=np.float32)
    head = "block (0, 0, 0), thread 0: "
    want = []
    for k in (1, 3):
        want += [f"after row: {head}acc[{i}] = {'%.9g' % sums[k, i]}" for i in range(4)] + [f"k: {head}{k}"]
    assert lines == want
    assert np.array_equal(y, sums[-1])
