"""TileLang's T.reshape and T.view (issue 22 item 5): element access through another shape of the
same elements, on global, shared and fragment buffers, on the CPU backend at tile and thread level and
through NVRTC for sm_90a; what is refused is a located error naming it."""

import numpy as np
import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message

LEVELS = ("tile", "thread")

VIEWS = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, N), T.float32), B: T.Tensor((4, 16), T.float32)):
    with T.Kernel(1, threads=64) as bx:
        flat = T.reshape(A, (M * N,))          # a global tensor with symbolic dims
        s = T.alloc_shared((64,), T.float32)
        grid = T.reshape(s, (8, 8))            # a shared buffer
        f = T.alloc_fragment((64,), T.float32)
        square = T.view(f, (8, 8))             # a fragment
        for i in T.Parallel(64):
            s[i] = flat[i] * 2.0
        for i, j in T.Parallel(8, 8):
            grid[i, j] += T.cast(i * 8 + j, T.float32)
        for i, j in T.Parallel(8, 8):
            square[j, i] = grid[i, j]
        out = T.view(B, (64,))
        for i in T.Parallel(64):
            out[i] = f[63 - i]
"""


def test_reshape_and_view(tmp_path, rng):
    fn = load_module(tmp_path, VIEWS).k
    a = rng.standard_normal((4, 16)).astype(np.float32)
    grid = (a.reshape(8, 8) * np.float32(2) + np.arange(64, dtype=np.float32).reshape(8, 8))
    want = grid.T.ravel()[::-1].reshape(4, 16)
    for level in LEVELS:
        assert np.array_equal(tilemlir.compile(fn, target="cpu", level=level)(a), want)
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(fn, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("body, words", [
    ("v = T.reshape(A, @@(8, 9))", "T.reshape: the shape (8, 9) does not hold the (8, 8) elements of 'A'"),
    ("v = T.view(A, (64,), @@T.int32)", "T.view to another dtype (reinterpreting the bits of float32 'A') is not"),
    ("v = T.reshape(A, (64,))\ns = T.alloc_shared((64,), T.float32)\nT.copy(@@v, s)",
     "tile operations take 'A'"),
])
def test_view_errors_are_located(tmp_path, body, words):
    import textwrap
    err = frontend_error(tmp_path, f"""
@tilemlir.jit
def k(A: T.Tensor((8, 8), T.float32)):
    with T.Kernel(1, threads=32) as bx:
{textwrap.indent(body, "        ")}
""")
    assert words in message(err)
