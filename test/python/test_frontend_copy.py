"""T.copy's tile arguments and conversions (frontend/tileops.py, docs/language.md "Tile operations").

A slice's extent is a compile-time constant, or it runs to the end of its dim and the other side gives
it; any other run-time extent, and any step but 1, is a located error, never a box of the other side's
extent. A copy into a bool buffer from another dtype is a located error (numpy's astype(bool) is != 0,
a 1-bit truncation keeps the low bit); from a bool it gives 0 / 1, as T.cast does. The accepted forms
run on the CPU backend at tile and thread level against numpy on fresh inputs, outputs poisoned first.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message

LEVELS = ("tile", "thread")

RUNTIME_EXTENT = ("has a run-time extent, but a tile's extent must be a compile-time constant (such as "
                  "`k * 64:(k + 1) * 64` or `i:i + 64`): copy a tile of constant extent, and select the elements "
                  "to keep by index in T.Parallel (`T.if_then_else(j < n, ...)`)")

SLICES_REFUSED = [
    ("T.copy(X[row, @@0:n], x)", f"the slice 0:n of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.copy(X[row, @@n:127], x)", f"the slice n:127 of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.copy(X[row, @@:n + 1], x)", f"the slice :n + 1 of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.copy(X[row, @@0:2 * n], x)", f"the slice 0:2 * n of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.copy(W[row, @@0:K - 1], x)", f"the slice 0:K - 1 of dim 1 of 'W' {RUNTIME_EXTENT}"),
    ("T.copy(X[row, @@0:K], x)", f"the slice 0:K of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.copy(x, X[row, @@n:2 * n])", f"the slice n:2 * n of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.atomic_add(X[row, @@0:n], x)", f"the slice 0:n of dim 1 of 'X' {RUNTIME_EXTENT}"),
    ("T.copy(X[row, @@0:128:2], x)", "strided slices are not supported in tile arguments (the slice 0:128:2 has "
                                     "step 2): a tile is a contiguous box; read strided elements by index in "
                                     "T.Parallel"),
    ("T.copy(X[row, @@::n], x)", "strided slices are not supported in tile arguments (the slice ::n has a "
                                 "run-time step): a tile is a contiguous box; read strided elements by index in "
                                 "T.Parallel"),
]


@pytest.mark.parametrize("statement, expected", SLICES_REFUSED, ids=[s for s, _ in SLICES_REFUSED])
def test_a_slice_of_run_time_extent_is_a_located_error(tmp_path, statement, expected):
    """With n = 5 the first case used to copy all 128 columns: the fragment's extent silently won."""
    err = frontend_error(tmp_path, f"""
        K = T.symbolic("K")

        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), W: T.Tensor((M, K), T.float32), n: T.int32):
            with T.Kernel(M, threads=128) as row:
                x = T.alloc_fragment((128,), T.float32)
                T.clear(x)
                {statement}
    """)
    assert message(err) == expected


def slices_kernel(tmp_path):
    """Every accepted slice form: a constant extent at a run-time start (n:n + 64), a step of 1, a slice up
    to the dim's symbolic size (0:K, the same as :), and a run-time start to the end of a static dim (n:128)."""
    return load_module(tmp_path, """
        K = T.symbolic("K")

        @tilemlir.jit
        def slices(X: T.Tensor((M, 128), T.float32), W: T.Tensor((M, K), T.float32), n: T.int32,
                   A: T.Tensor((M, 64), T.float32), B: T.Tensor((M, 128), T.float32),
                   C: T.Tensor((M, 128), T.float32), D: T.Tensor((M, 32), T.float32)):
            with T.Kernel(M, threads=128) as row:
                a = T.alloc_fragment((64,), T.float32)
                T.copy(X[row, n:n + 64], a)
                T.copy(a, A[row, 0:64:1])
                b = T.alloc_shared((128,), T.float32)
                T.copy(W[row, 0:K], b)
                T.copy(b, B[row, :])
                c = T.alloc_fragment((128,), T.float32)
                T.copy(X[row, ::1], c)
                T.copy(c, C[row, 0:128])
                d = T.alloc_fragment((32,), T.float32)
                T.copy(X[row, n:128], d)
                T.copy(d, D[row, :])
    """).slices


@pytest.mark.parametrize("level", LEVELS)
def test_accepted_slice_forms_copy_what_they_say(tmp_path, rng, level):
    rows, n, width = 3, int(rng.integers(1, 64)), 100
    x = rng.standard_normal((rows, 128)).astype(np.float32)
    w = rng.standard_normal((rows, width)).astype(np.float32)
    outputs = [np.full((rows, size), np.nan, np.float32) for size in (64, 128, 128, 32)]
    tilemlir.compile(slices_kernel(tmp_path), target="cpu", level=level)(x, w, n, *outputs)
    a, b, c, d = outputs
    assert np.array_equal(a, x[:, n:n + 64])
    assert np.array_equal(b[:, :width], w)  # the 28 columns past K = 100 are outside W: not read, padded with 0
    assert np.array_equal(b[:, width:], np.zeros((rows, 128 - width), np.float32))
    assert np.array_equal(c, x)
    assert np.array_equal(d, x[:, n:n + 32])


COPIES_INTO_BOOL = [
    ("int32", "int32 'X' into bool 'f'"),
    ("float32", "float32 'X' into bool 'f'"),
    ("uint8", "uint8 'X' into bool 'f'"),
]


@pytest.mark.parametrize("dtype, what", COPIES_INTO_BOOL, ids=[d for d, _ in COPIES_INTO_BOOL])
def test_a_copy_into_bool_from_another_dtype_is_a_located_error(tmp_path, dtype, what):
    """T.copy of int32 2 used to keep the low bit (False); T.cast(2, T.bool) and numpy say True."""
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.{dtype}), O: T.Tensor((M, 128), T.bool)):
            with T.Kernel(M, threads=128) as row:
                f = T.alloc_fragment((128,), T.bool)
                @@T.copy(X[row, 0], f)
                T.copy(f, O[row, 0])
    """)
    assert message(err) == (
        f"T.copy cannot convert {what} implicitly (numpy's astype(bool) is `!= 0`, a 1-bit truncation keeps the "
        "low bit): convert in T.Parallel with T.cast(value, T.bool), which is `!= 0`"
    )


def test_a_copy_out_of_an_int_shared_tile_into_bool_is_refused_too(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.int32), O: T.Tensor((M, 128), T.bool)):
            with T.Kernel(M, threads=128) as row:
                s = T.alloc_shared((128,), T.int32)
                T.copy(X[row, 0], s)
                @@T.copy(s, O[row, 0])
    """)
    assert message(err).startswith("T.copy cannot convert int32 's' into bool 'O' implicitly")


def bools_kernel(tmp_path):
    """int32 -> bool with T.cast in T.Parallel (the refused copy's replacement), then bool -> int32 / float32
    copies, which give 0 and 1."""
    return load_module(tmp_path, """
        @tilemlir.jit
        def bools(X: T.Tensor((M, 128), T.int32), B: T.Tensor((M, 128), T.bool), I: T.Tensor((M, 128), T.int32),
                  F: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as row:
                f = T.alloc_fragment((128,), T.bool)
                for j in T.Parallel(128):
                    f[j] = T.cast(X[row, j], T.bool)
                T.copy(f, B[row, 0])
                T.copy(f, I[row, 0])
                T.copy(f, F[row, 0])
    """).bools


@pytest.mark.parametrize("level", LEVELS)
def test_cast_to_bool_is_nonzero_and_bools_copy_out_as_zero_and_one(tmp_path, rng, level):
    x = rng.integers(-3, 4, (4, 128)).astype(np.int32)
    x[0, :4] = [2, -2, 0, 1]  # even nonzero values: the ones a low-bit truncation got wrong
    b, i, f = np.zeros((4, 128), bool) | (x == 0), np.full((4, 128), 7, np.int32), np.full((4, 128), np.nan, np.float32)
    tilemlir.compile(bools_kernel(tmp_path), target="cpu", level=level)(x, b, i, f)
    assert np.array_equal(b, x.astype(bool))
    assert np.array_equal(i, x.astype(bool).astype(np.int32))
    assert np.array_equal(f, x.astype(bool).astype(np.float32))
