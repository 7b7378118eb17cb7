"""TileLang's reducers (issue 22 item 5): T.alloc_reducer, T.reducer_init, T.reducer_update,
T.finalize_reducer, on the CPU backend at tile and thread level against float64 numpy and through
NVRTC for sm_90a; what is refused is a located error naming it."""

import numpy as np
import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message
from tilemlir.testing import relative_error

LEVELS = ("tile", "thread")

REDUCERS = """
@tilemlir.jit(out_idx=[-3, -2, -1])
def k(A: T.Tensor((M, 16, 32), T.float32), S: T.Tensor((M, 16), T.float32), X: T.Tensor((M,), T.float32),
      C: T.Tensor((M, 32), T.int32)):
    with T.Kernel(M, threads=64) as bx:
        a = T.alloc_fragment((16, 32), T.float32)
        T.copy(A[bx, 0, 0], a)
        acc = T.alloc_reducer((16,), T.float32, op="sum")
        top = T.alloc_reducer((1,), T.float32, op="max")
        low = T.alloc_reducer((32,), T.int32, op="min")
        T.reducer_init(acc, 1.5)             # combined once per element, not once per thread
        T.reducer_init(top)
        T.reducer_init(low, 7)
        for k in T.serial(2):
            for i, j in T.Parallel(16, 32):
                T.reducer_update(acc[i], a[i, j] * (k + 1))
                T.reducer_update(top[0], a[i, j])
                if a[i, j] > 0:
                    T.reducer_update(low[j], T.cast(a[i, j] * 10, T.int32) + i)
        T.reducer_update(top[0], T.cast(bx == 1, T.float32) * 100.0)  # outside T.Parallel: once
        s = T.alloc_fragment((16,), T.float32)
        m = T.alloc_fragment((1,), T.float32)
        c = T.alloc_fragment((32,), T.int32)
        T.finalize_reducer(acc, s)
        T.finalize_reducer(top, m)
        T.finalize_reducer(low, c)
        T.copy(s, S[bx, 0])
        T.copy(c, C[bx, 0])
        X[bx] = m[0]
"""


def test_reducers(tmp_path, rng):
    fn = load_module(tmp_path, REDUCERS).k
    a = rng.standard_normal((3, 16, 32)).astype(np.float32)
    want_s = 1.5 + 3 * a.astype(np.float64).sum(2)
    want_x = np.maximum(a.max((1, 2)), np.array([0, 100, 0], np.float32))
    contributions = np.where(a > 0, np.trunc(a * np.float32(10)).astype(np.int64) + np.arange(16)[None, :, None], 7)
    want_c = np.minimum(contributions.min(1), 7)
    for level in LEVELS:
        s, x, c = tilemlir.compile(fn, target="cpu", level=level)(a)
        assert relative_error(s, want_s) < 1e-6
        assert np.array_equal(x, want_x)
        assert np.array_equal(c, want_c)
    pytest.importorskip("cuda.bindings.nvrtc")
    assert tilemlir.compile(fn, target="cuda", arch="sm_90a").cubin[:4] == b"\x7fELF"


@pytest.mark.parametrize("body, words", [
    ("x = @@acc[0]", "reducer 'acc' cannot be read or written directly"),
    ("@@T.reducer_update(acc[0], 1.0)", "T.reducer_update: reducer 'acc' is not initialized: call T.reducer_init"),
    ("T.reducer_init(acc)\n@@T.reducer_init(acc)", "T.reducer_init: reducer 'acc' is already initialized"),
    ("T.reducer_init(acc)\n@@T.finalize_reducer(acc)", "T.finalize_reducer: the legacy in-place form is not supported"),
    ("T.reducer_init(acc)\nfor i in T.Parallel(16):\n    T.reducer_update(acc[@@15 - i], 1.0)",
     "the reducer's indices must be the loop's variables"),
    ("d = T.alloc_fragment((8,), T.float32)\nT.reducer_init(acc)\nT.finalize_reducer(acc, @@d)",
     "T.finalize_reducer: dst fragment buffer 'd' (8,) (float32) must have the reducer's shape and dtype"),
])
def test_reducer_misuse_is_located(tmp_path, body, words):
    import textwrap
    err = frontend_error(tmp_path, f"""
@tilemlir.jit
def k(A: T.Tensor((16,), T.float32)):
    with T.Kernel(1, threads=32) as bx:
        acc = T.alloc_reducer((16,), T.float32)
{textwrap.indent(body, "        ")}
""")
    assert words in message(err)


@pytest.mark.parametrize("call, words", [
    ("T.alloc_reducer((16,), T.int32, op=@@'bitxor')", "T.alloc_reducer: op='bitxor' (a bitwise reducer) is not supported"),
    ("T.alloc_reducer((16,), T.float32, replication=@@'all')", "the legacy reducer (replication=) is not supported"),
])
def test_unsupported_reducers_are_located(tmp_path, call, words):
    err = frontend_error(tmp_path, f"""
    @tilemlir.jit
    def k(A: T.Tensor((16,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            acc = {call}
    """)
    assert words in message(err)
