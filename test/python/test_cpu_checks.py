"""Run-time checks of CPU runs on kernels written in Python: an on-chip index out of its buffer
and a read of an on-chip element never written are errors naming the buffer, the index and the
Python line, at the tile level (the reference, which used to crash or answer with garbage) and
at the thread level (which used to read NaN)."""

import re

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.backends.cpu.kernel import SimulationError
from tilemlir.diagnostics import CompileError

LEVELS = ("tile", "thread")


def line_of(text: str) -> str:
    """`file:line:` of the kernel line of this file holding comment `text`."""
    with open(__file__) as f:
        lines = [n for n, line in enumerate(f, start=1) if text in line and "line_of(" not in line]
    assert len(lines) == 1, (text, lines)
    return f"{__file__}:{lines[0]}:"


def run_error(kernel_fn, level: str, *args) -> str:
    kernel = tilemlir.compile(kernel_fn, target="cpu", level=level)
    with pytest.raises(SimulationError) as info:
        kernel(*args)
    return str(info.value)


@tilemlir.jit(out_idx=[1])
def local_at_run_time_index():
    @T.prim_func
    def pick(X: T.Tensor((4,), T.float32), Y: T.Tensor((1,), T.float32), k: T.int32):
        with T.Kernel(1, threads=32) as bx:
            r = T.alloc_local((4,), T.float32)
            for i in T.serial(4):
                r[i] = X[i]
            Y[0] = r[k]  # picked at run time

    return pick


def test_tile_level_local_index_out_of_range_is_an_error(rng):
    x = rng.standard_normal(4).astype(np.float32)
    kernel = tilemlir.compile(local_at_run_time_index.instantiate(), target="cpu", level="tile")
    assert kernel(x, 2)[0] == x[2]
    for k in (4, -1, 1000000):
        with pytest.raises(SimulationError) as info:
            kernel(x, k)
        assert str(info.value) == (f"kernel 'pick': out-of-range read of local buffer 'r' (4) at "
                                   f"{line_of('# picked at run time')}20: block 0 used index {k} on dim 0")


@tilemlir.jit(out_idx=[1])
def shared_shifted_write():
    @T.prim_func
    def shift(X: T.Tensor((8,), T.float32), Y: T.Tensor((8,), T.float32), off: T.int32):
        with T.Kernel(2, threads=32) as bx:
            s = T.alloc_shared((8,), T.float32)
            for i in T.Parallel(8):
                s[(i + off) % 16] = X[i]  # shifted store
            for i in T.Parallel(8):
                Y[i] = s[i]

    return shift


def test_tile_level_shared_write_out_of_range_is_an_error(rng):
    x = rng.standard_normal(8).astype(np.float32)
    kernel = tilemlir.compile(shared_shifted_write.instantiate(), target="cpu", level="tile")
    assert np.array_equal(kernel(x, 0), x)
    message = run_error(shared_shifted_write.instantiate(), "tile", x, 1)
    assert message == (f"kernel 'shift': out-of-range write of shared buffer 's' (8) at "
                       f"{line_of('# shifted store')}17: block 0 used index 8 on dim 0 (3 more error(s) after this one)")


@tilemlir.jit(out_idx=[1])
def parallel_past_fragment(extent):
    @T.prim_func
    def widen(X: T.Tensor((4, 4), T.float32), Y: T.Tensor((4, 8), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            x = T.alloc_fragment((4, 4), T.float32)
            T.copy(X[0, 0], x)
            for i, j in T.Parallel(4, extent):
                Y[i, j] = x[i, j] * 2  # extent vs fragment

    return widen


def test_tile_level_parallel_extent_past_its_fragment_is_an_error(rng):
    x = rng.standard_normal((4, 4)).astype(np.float32)
    y = tilemlir.compile(parallel_past_fragment.instantiate(extent=4), target="cpu", level="tile")(x)
    assert np.array_equal(y[:, :4], 2 * x)
    message = run_error(parallel_past_fragment.instantiate(extent=8), "tile", x)
    assert message == (f"kernel 'widen': out-of-range read of fragment buffer 'x' (4x4) at "
                       f"{line_of('# extent vs fragment')}27: block 0 used index 4 on dim 1 "
                       "(15 more error(s) after this one)")


@tilemlir.jit(out_idx=[1])
def partly_written(written):
    @T.prim_func
    def partial(X: T.Tensor((64,), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            x = T.alloc_fragment((64,), T.float32)
            for i in T.Parallel(64):
                if i < written:
                    x[i] = X[i]
            for i in T.Parallel(64):
                Y[i] = x[i] + 1  # reads every element

    return partial


@pytest.mark.parametrize("level", LEVELS)
def test_reading_a_never_written_fragment_element_is_an_error(level, rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = tilemlir.compile(partly_written.instantiate(written=64), target="cpu", level=level)(x)
    assert np.array_equal(y, x + 1)
    message = run_error(partly_written.instantiate(written=40), level, x)
    where = f"at {line_of('# reads every element')}24 by"
    if level == "tile":
        assert message == (f"kernel 'partial': read of never-written element [40] of fragment buffer 'x' (64) {where} "
                           "block 0: the block had not stored to it (23 more error(s) after this one)")
    else:  # the fragment is each thread's registers: thread t holds some of x's elements
        assert re.fullmatch(rf"kernel 'partial': read of never-written element \[\d+\] of local buffer 'x' \(\d+\) "
                            rf"{re.escape(where)} thread \d+ of block 0: the thread had not stored to it "
                            r"\(23 more error\(s\) after this one\)", message), message


@tilemlir.jit(out_idx=[1])
def shared_half_filled():
    @T.prim_func
    def half(X: T.Tensor((64,), T.float32), Y: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), T.float32)
            for i in T.Parallel(32):
                s[i] = X[i]
            for i in T.Parallel(64):
                Y[i] = s[63 - i]  # reversed read

    return half


@pytest.mark.parametrize("level", LEVELS)
def test_reading_a_never_written_shared_element_is_an_error(level, rng):
    x = rng.standard_normal(64).astype(np.float32)
    message = run_error(shared_half_filled.instantiate(), level, x)
    # the tile level names the lowest such element the block read, the thread level the first read
    element, reader = ("[32]", "block 0: the block had not") if level == "tile" else \
        ("[63]", "thread 0 of block 0: no thread of the block had")
    assert message == (f"kernel 'half': read of never-written element {element} of shared buffer 's' (64) at "
                       f"{line_of('# reversed read')}24 by {reader} stored to it (31 more error(s) after this one)")


@tilemlir.jit(out_idx=[1])
def rows_below(block_M=4):
    M = T.symbolic("M")

    @T.prim_func
    def below(X: T.Tensor((M, 16), T.float32), Y: T.Tensor((M, 16), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            y = T.alloc_fragment((block_M, 16), T.float32)
            for i, j in T.Parallel(block_M, 16):
                if bx * block_M + i < M:
                    y[i, j] = X[bx * block_M + i, j] * 3
            T.copy(y, Y[bx * block_M, 0])

    return below


@pytest.mark.parametrize("level", LEVELS)
def test_a_copy_does_not_read_the_elements_whose_stores_it_drops(level, rng):
    """Rows past M are never computed: the copy into Y drops them, so it does not read them."""
    x = rng.standard_normal((7, 16)).astype(np.float32)
    y = tilemlir.compile(rows_below.instantiate(), target="cpu", level=level)(x)
    assert np.array_equal(y, x * 3)


@tilemlir.jit(out_idx=[1])
def huge_fragment():
    @T.prim_func
    def huge(X: T.Tensor((4,), T.int8), Y: T.Tensor((4,), T.int8)):
        with T.Kernel(1, threads=32) as bx:
            h = T.alloc_fragment((1 << 15, 1 << 15), T.int8)  # 2**30 elements
            for i in T.Parallel(4):
                h[0, i] = X[i]
            for i in T.Parallel(4):
                Y[i] = h[0, i]

    return huge


def test_a_tile_level_buffer_too_large_for_the_checks_is_refused_at_its_line():
    # The register budget refuses it before the checks' own 2**30-element limit can be reached.
    with pytest.raises(CompileError) as info:
        tilemlir.compile(huge_fragment.instantiate(), target="cpu", level="tile")
    assert str(info.value).startswith(f"{line_of('# 2**30 elements')}17: error: 'tile.alloc_fragment' op needs at "
                                      "least 8388608 32-bit registers in each of the block's 32 threads"), str(info.value)