"""Thread-level code inside a kernel (issue 22 item 7): `T.get_thread_binding()`, `T.sync_threads()`,
2-D/3-D `threads=`, per-thread `T.alloc_local` / `T.alloc_var`, mixed with tile operations. Each on the
CPU backend at tile and thread level against float64 numpy, and through NVRTC for sm_90a; the
constructs it refuses are located errors."""

import textwrap

import numpy as np
import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message
from support import run_everywhere
from tilemlir.testing import relative_error

SHARED_REVERSE = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
        tx = T.get_thread_binding()
        s = T.alloc_shared((128,), T.float32)
        s[tx] = A[bx * 128 + tx]
        T.sync_threads()
        acc = T.alloc_local((1,), T.float32)
        acc[0] = s[127 - tx] * 2.0
        for k in T.serial(3):
            acc[0] = acc[0] + s[(tx + k) % 128]
        if bx * 128 + tx < M:
            B[bx * 128 + tx] = acc[0]
"""


def shared_reverse_reference(a):
    blocks = -(-len(a) // 128)
    s = np.zeros(blocks * 128)
    s[:len(a)] = a  # past M a block's shared row holds the padding (0) of the out-of-range reads
    s = s.reshape(blocks, 128)
    t = np.arange(128)
    out = s[:, 127 - t] * 2 + sum(s[:, (t + k) % 128] for k in range(3))
    return out.reshape(-1)[:len(a)]


def test_shared_memory_exchange_between_threads(tmp_path, rng):
    a = rng.standard_normal(300).astype(np.float32)
    want = shared_reverse_reference(a.astype(np.float64))
    for b in run_everywhere(load_module(tmp_path, SHARED_REVERSE).k, a):
        assert relative_error(b, want) < 1e-6


TWO_D = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 32), T.float32), B: T.Tensor((M, 32), T.float32)):
    with T.Kernel(T.ceildiv(M, 8), threads=(32, 8)) as bx:
        tx = T.get_thread_binding(0)
        ty = T.get_thread_binding(1)
        row = T.get_block_binding(0) * T.get_thread_extent(1) + ty
        if row < M:
            B[row, tx] = A[row, tx] * T.get_thread_extent(0) + ty * 1000 + tx
"""


def test_two_dim_threads(tmp_path, rng):
    a = rng.standard_normal((20, 32)).astype(np.float32)
    rows, cols = np.meshgrid(np.arange(20), np.arange(32), indexing="ij")
    want = a.astype(np.float64) * 32 + (rows % 8) * 1000 + cols
    for b in run_everywhere(load_module(tmp_path, TWO_D).k, a):
        assert relative_error(b, want) < 1e-7


THREE_D = """
@tilemlir.jit(out_idx=[-1])
def k(B: T.Tensor((2, 4, 8), T.int32)):
    with T.Kernel(1, threads=[8, 4, 2]) as bx:
        tx, ty, tz = T.get_thread_bindings()
        x, y, z = T.get_thread_extents()
        B[tz, ty, tx] = ((tz * y + ty) * x + tx) * 10 + T.get_block_extent(1)
"""


def test_three_dim_threads_number_x_fastest(tmp_path):
    for b in run_everywhere(load_module(tmp_path, THREE_D).k):
        assert np.array_equal(b, np.arange(64).reshape(2, 4, 8) * 10 + 1)


MIXED = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 64), T.float32), B: T.Tensor((M, 64), T.float32)):
    with T.Kernel(M, threads=64) as bx:
        tx = T.get_thread_binding()
        total = T.alloc_var(T.float32)
        for j in T.serial(64):
            total[0] = total[0] + A[bx, j] * (tx + 1)
        s = T.alloc_shared((64,), T.float32)
        s[tx] = total[0]
        f = T.alloc_fragment((64,), T.float32)
        T.copy(s, f)                          # a tile operation between two runs of thread code
        for i in T.Parallel(64):
            f[i] = f[i] + 1.0
        T.copy(f, s)
        B[bx, 63 - tx] = s[tx] * 2.0
"""


def test_thread_code_around_tile_operations(tmp_path, rng):
    a = rng.standard_normal((3, 64)).astype(np.float32)
    t = np.arange(64)
    row = a.astype(np.float64).sum(1, keepdims=True)
    want = ((row * (t + 1) + 1) * 2)[:, ::-1]
    for b in run_everywhere(load_module(tmp_path, MIXED).k, a):
        assert relative_error(b, want) < 1e-5


@pytest.mark.parametrize("body, words", [
    ("""
        if @@tx < 32:
            T.sync_threads()
    """, "T.get_thread_binding(0) is used outside thread code"),
    ("""
        v = A[tx] * 2.0
        T.sync_threads()
        A[tx] = @@v
    """, "'v' is not defined here: it was assigned inside the thread code starting at line 10, which has ended "
         "(per-thread values and T.alloc_local buffers end with their thread code"),
    ("""
        for i in T.Parallel(64):
            A[i] = A[@@tx]
    """, "T.get_thread_binding(0) is used outside thread code"),
    ("""
        T.sync_threads(barrier_id=@@1)
    """, "T.sync_threads: barrier_id= (named barriers) is not supported"),
    ("""
        t = T.get_thread_binding(dim=@@3)
    """, "T.get_thread_binding: dim must be 0, 1 or 2, got 3"),
])
def test_thread_code_errors_are_located(tmp_path, body, words):
    indented = textwrap.indent(textwrap.dedent(body).strip("\n"), "        ")
    err = frontend_error(tmp_path, f"""
@tilemlir.jit
def k(A: T.Tensor((64,), T.float32)):
    with T.Kernel(1, threads=64) as bx:
        tx = T.get_thread_binding()
{indented}
""")
    assert words in message(err)


def test_threads_tuple_is_checked(tmp_path):
    err = frontend_error(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=@@(64, 32)) as bx:
            pass
    """)
    assert message(err) == "threads must be in 1..1024, got (64, 32) (2048 in all)"


PER_THREAD_ACROSS_BARRIERS = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 128), T.float32), B: T.Tensor((M, 128), T.float32)):
    with T.Kernel(M, threads=32) as bx:
        tx = T.get_thread_binding()
        vals = T.alloc_local((4,), T.float32)          # per thread, alive across T.sync_threads()
        total = T.alloc_var(T.float32, A[bx, 0])       # TileLang's variable, with a run-time init
        s = T.alloc_shared((128,), T.float32)
        for k in T.serial(4):
            vals[k] = A[bx, tx * 4 + k]
            s[tx * 4 + k] = vals[k]
        T.sync_threads()
        for k in T.serial(4):
            total[0] = total[0] + s[127 - (tx * 4 + k)] * vals[3 - k]
        T.sync_threads()
        for k in T.serial(4):
            B[bx, tx * 4 + k] = total[0] + vals[k] * 1000.0
"""


def test_per_thread_buffers_live_across_barriers(tmp_path, rng):
    a = rng.standard_normal((3, 128)).astype(np.float32)
    ad = a.astype(np.float64)
    t = np.arange(32)
    want = np.empty((3, 128))
    for row in range(3):
        total = ad[row, 0] + sum(ad[row, 127 - (t * 4 + k)] * ad[row, t * 4 + 3 - k] for k in range(4))
        for k in range(4):
            want[row, t * 4 + k] = total + ad[row, t * 4 + k] * 1000
    for b in run_everywhere(load_module(tmp_path, PER_THREAD_ACROSS_BARRIERS).k, a):
        assert relative_error(b, want) < 1e-6


SCALAR_VARIABLES = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 64), T.int32), starts: T.Tensor((M,), T.int32), B: T.Tensor((M, 64), T.int32)):
    with T.Kernel(M, threads=64) as bx:
        tx = T.get_thread_binding()
        start = T.alloc_var(T.int32)
        count = T.alloc_var(T.int32, 0)
        start = starts[bx]                   # TileLang's scalar variables: assignment stores
        s = T.alloc_shared((64,), T.int32)
        s[tx] = A[bx, tx]
        T.sync_threads()
        for j in T.serial(64):
            if s[j] >= start:
                count += 1
        T.sync_threads()
        if s[tx] >= start:
            count = count * 100 + tx
        B[bx, tx] = count
"""


def test_alloc_var_as_a_scalar_variable(tmp_path, rng):
    a = rng.integers(-50, 50, (3, 64)).astype(np.int32)
    starts = rng.integers(-30, 30, 3).astype(np.int32)
    count = (a >= starts[:, None]).sum(1, keepdims=True)
    t = np.arange(64)
    want = np.where(a >= starts[:, None], count * 100 + t, count).astype(np.int32)
    for b in run_everywhere(load_module(tmp_path, SCALAR_VARIABLES).k, a, starts):
        assert np.array_equal(b, want)


def test_tile_operations_under_a_thread_condition_are_refused(tmp_path):
    err = frontend_error(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), T.float32)
            if @@T.get_thread_binding() < 32:
                T.copy(A, s)
    """)
    assert "tile operations on a range of threads, TileLang's `if tx < 32:` around them, are not supported" \
        in message(err)


INLINE_BINDING = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
    with T.Kernel(1, threads=64) as bx:
        if T.get_thread_binding() < 32:
            B[T.get_thread_binding()] = A[T.get_thread_binding()] * 2.0
        else:
            B[T.get_thread_binding()] = -1.0
"""


def test_inline_thread_binding(tmp_path, rng):
    a = rng.standard_normal(64).astype(np.float32)
    want = np.where(np.arange(64) < 32, a * np.float32(2), np.float32(-1))
    for b in run_everywhere(load_module(tmp_path, INLINE_BINDING).k, a):
        assert np.array_equal(b, want)
