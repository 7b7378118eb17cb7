"""Barrier planning (tilemlir/analysis/barriers.py) inside thread code's loops, on the CPU thread-level
simulation (which reports any race on shared memory) against float64 numpy, and through NVRTC for sm_90a:
TileLang's naive GEMV and a neighbour exchange get their barriers inside the loop, where the tile level
(thread after thread) cannot follow them; kernels whose threads touch only their own elements get none; a
barrier needed inside a loop that depends on the thread index is a located error."""

import re

import numpy as np
import pytest

import tilemlir
from frontend_util import compile_error, load_module, message
from tilemlir.testing import relative_error

GEMV = """
@tilemlir.jit
def k(A: T.Tensor((96,), T.float32), B: T.Tensor((N, 96), T.float32), C: T.Tensor((N,), T.float32)):
    with T.Kernel(T.ceildiv(N, 64), threads=64) as bn:
        tn = T.get_thread_binding(0)
        A_shared = T.alloc_shared((32,), T.float32)
        B_shared = T.alloc_shared((64, 32), T.float32)
        C_reg = T.alloc_local((1,), T.float32)
        T.clear(C_reg)
        for bk in T.serial(3):
            for tk in T.serial(32):
                A_shared[tk] = A[bk * 32 + tk]
                B_shared[tn, tk] = B[bn * 64 + tn, bk * 32 + tk]
            for tk in T.serial(32):
                C_reg[0] += A_shared[tk] * B_shared[tn, tk]
        C[bn * 64 + tn] = C_reg[0]
"""

NEIGHBOURS = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 4, 64), T.float32), B: T.Tensor((M, 64), T.float32)):
    with T.Kernel(M, threads=64) as bx:
        tx = T.get_thread_binding()
        s = T.alloc_shared((64,), T.float32)
        acc = T.alloc_local((1,), T.float32)
        T.clear(acc)
        for i in T.serial(4):
            s[tx] = A[bx, i, tx] + acc[0]
            @@SYNC
            acc[0] = s[63 - tx] * 0.5
            @@SYNC
        B[bx, tx] = acc[0]
"""

OWN_ELEMENTS = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 8, 64), T.float32), B: T.Tensor((M, 128), T.float32)):
    with T.Kernel(M, threads=64) as bx:
        tx = T.get_thread_binding()
        s = T.alloc_shared((128,), T.float32)
        s[tx] = 0.0
        s[tx + 64] = 1.0
        for i in T.serial(8):
            s[tx] = s[tx] + A[bx, i, tx]
            s[tx + 64] = s[tx + 64] * 0.5 + s[tx]
        B[bx, tx] = s[tx]
        B[bx, tx + 64] = s[tx + 64]
"""


def cuda_source(fn) -> str:
    pytest.importorskip("cuda.bindings.nvrtc")
    compiled = tilemlir.compile(fn, target="cuda", arch="sm_90a")
    assert compiled.cubin[:4] == b"\x7fELF"
    return compiled.cuda_source()


def poisoned(shape) -> np.ndarray:
    return np.full(shape, np.nan, np.float32)


def test_naive_gemv_gets_barriers_inside_its_loop(tmp_path, rng):
    """TileLang's naive GEMV: a barrier before the read loop and one at the top of the k loop, as TileLang's
    storage-sync puts them; the thread-level simulation runs it without a race, bit for bit the float32 sum
    in its order."""
    fn = load_module(tmp_path, GEMV).k
    a = rng.standard_normal(96).astype(np.float32)
    b = rng.standard_normal((128, 96)).astype(np.float32)
    c = poisoned(128)
    tilemlir.compile(fn, target="cpu", level="thread")(a, b, c)
    assert relative_error(c, b.astype(np.float64) @ a.astype(np.float64)) < 1e-6
    want = np.zeros(128, np.float32)
    for j in range(96):  # the kernel's order: one float32 multiply-add per k
        want = want + a[j] * b[:, j]
    assert np.array_equal(c, want)
    loop = cuda_source(fn).split("for (", 1)[1]
    assert re.match(r"[^{]*\{\s*(//[^\n]*\s*)*__syncthreads\(\);", loop), loop  # at the top of the k loop's body
    assert loop.count("__syncthreads()") == 2, loop


@pytest.mark.parametrize("sync", ["", "T.sync_threads()"], ids=["planned", "written"])
def test_neighbour_exchange_in_a_loop(tmp_path, rng, sync):
    """Threads exchange values through shared memory in every iteration: the planned barriers are the two
    that T.sync_threads() would write (which also works in a uniform loop of thread code, and then at tile
    level too: the frontend splits the thread code at it)."""
    fn = load_module(tmp_path, NEIGHBOURS.replace("@@SYNC", sync or "pass")).k
    a = rng.standard_normal((3, 4, 64)).astype(np.float32)
    want = np.zeros((3, 64))
    for i in range(4):
        want = (a[:, i, ::-1].astype(np.float64) + want[:, ::-1]) * 0.5
    levels = ("tile", "thread") if sync else ("thread",)
    for level in levels:
        b = tilemlir.compile(fn, target="cpu", level=level)(a)
        assert relative_error(b, want) < 1e-6, level
    assert cuda_source(fn).count("__syncthreads()") == 2


def test_own_elements_need_no_barrier(tmp_path, rng):
    """Each thread reads and writes only s[tx] and s[tx + 64], in a loop and around it: no barrier."""
    fn = load_module(tmp_path, OWN_ELEMENTS).k
    a = rng.standard_normal((2, 8, 64)).astype(np.float32)
    low, high = np.zeros((2, 64), np.float32), np.ones((2, 64), np.float32)
    for i in range(8):
        low = low + a[:, i]
        high = high * np.float32(0.5) + low
    for level in ("tile", "thread"):
        b = tilemlir.compile(fn, target="cpu", level=level)(a)
        assert np.array_equal(b, np.concatenate([low, high], 1)), level
    assert "__syncthreads" not in cuda_source(fn)


def test_barrier_inside_a_thread_dependent_loop_is_a_located_error(tmp_path):
    err = compile_error(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((64,), T.float32)
            @@for i in T.serial(tx):
                s[tx] = A[i]
                A[tx] = s[i]
    """, target="cpu", level="thread")
    assert message(err).startswith("shared buffer 's' needs a gpu.barrier inside this loop, which depends on the "
                                   "thread index: not every thread would reach it")
    notes = [(n.message, n.location.line) for n in err.diagnostics[0].notes]
    assert [m for m, _ in notes] == ["this access needs the barrier before it", "after this access of another thread"]
    assert notes[0][1] == notes[1][1] + 1


HISTOGRAM = """
@tilemlir.jit
def k(A: T.Tensor((M,), T.int32), H: T.Tensor((16,), T.int32)):
    with T.Kernel(T.ceildiv(M, 256), threads=128) as bx:
        hist = T.alloc_shared((16,), T.int32)
        for i in T.Parallel(16):
            hist[i] = 0
        for i in T.Parallel(256):
            if bx * 256 + i < M:
                T.atomic_add(hist[A[bx * 256 + i] % 16], 1)
        for i in T.Parallel(16):
            T.atomic_add(H[i], hist[i])
"""


def test_shared_atomic_adds_are_ordered_against_plain_accesses(tmp_path, rng):
    """A block histogram in shared memory: a barrier between the clearing and the atomic adds and one
    between the adds and the reads, none among the adds (the thread simulation would report a race)."""
    fn = load_module(tmp_path, HISTOGRAM).k
    a = rng.integers(0, 1000, 1000).astype(np.int32)
    want = np.bincount(a % 16, minlength=16).astype(np.int32)
    for level in ("tile", "thread"):
        h = np.zeros(16, np.int32)
        tilemlir.compile(fn, target="cpu", level=level)(a, h)
        assert np.array_equal(h, want), level
    source = cuda_source(fn)
    assert source.count("__syncthreads()") == 2
    assert re.search(r"atomicAdd\(&hist\[", source), source


def test_atomic_add_into_a_fragment_is_a_located_error(tmp_path):
    err = compile_error(tmp_path, """
    @tilemlir.jit
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            f = T.alloc_fragment((64,), T.float32)
            for i in T.Parallel(64):
                T.atomic_add(@@f[i], A[i])
    """, target="cpu")
    assert message(err) == "T.atomic_add adds into global tensors and shared buffers; 'f' is a fragment buffer"
