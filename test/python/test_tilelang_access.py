"""TileLang's fragment access rules (issue 22 item 6): fragment elements read and written outside
T.Parallel (compile-time and serial-loop indices), fragments indexed inside T.Parallel by expressions
of its loop variables (and of other loops' variables), allocation under a compile-time `if`. Each on
the CPU backend at tile and thread level against float64 numpy, and through NVRTC for sm_90a."""

import numpy as np
import pytest

import tilemlir
from frontend_util import compile_error, frontend_error, load_module, marked, message
from tilemlir.diagnostics import CompileError
from support import run_everywhere
from tilemlir.testing import relative_error

OUTSIDE_PARALLEL = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 64), T.float32), B: T.Tensor((M, 64), T.float32)):
    with T.Kernel(M, threads=32) as bx:
        f = T.alloc_fragment((64,), T.float32)
        T.copy(A[bx, 0], f)
        f[3] = f[5] * 2.0 + f[0]            # compile-time indices, outside T.Parallel
        for k in T.serial(1, 64):           # a running sum along a serial loop's index
            f[k] = f[k] + f[k - 1]
        for i in T.Parallel(64):
            f[i] = f[i] - f[63]
        T.copy(f, B[bx, 0])
"""


def outside_parallel_reference(a):
    f = a.astype(np.float64).copy()
    f[:, 3] = f[:, 5] * 2 + f[:, 0]
    f = np.cumsum(f, axis=1)
    return f - f[:, 63:64]


def test_fragment_elements_outside_parallel(tmp_path, rng):
    a = rng.standard_normal((3, 64)).astype(np.float32)
    for b in run_everywhere(load_module(tmp_path, OUTSIDE_PARALLEL).k, a):
        assert relative_error(b, outside_parallel_reference(a)) < 1e-6


FLOATING_CONDITION = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 128), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 4), threads=64) as bx:
        x = T.alloc_fragment((4, 128), T.float32)
        s = T.alloc_fragment((4,), T.float32)
        T.copy(A[bx * 4, 0], x)
        T.reduce_sum(x, s, dim=1)
        for r in T.serial(4):
            if bx * 4 + r < M:
                if s[r] > 0:                # a fragment element in a run-time condition
                    B[bx * 4 + r] = s[r]
                else:
                    B[bx * 4 + r] = -2.0 * s[r]
"""


def test_fragment_element_in_a_condition(tmp_path, rng):
    a = rng.standard_normal((10, 128)).astype(np.float32)
    s = a.astype(np.float64).sum(1)
    for b in run_everywhere(load_module(tmp_path, FLOATING_CONDITION).k, a):
        assert relative_error(b, np.where(s > 0, s, -2 * s)) < 1e-5


GATHERS = """
@tilemlir.jit(out_idx=[-2, -1])
def k(A: T.Tensor((M, 64), T.float32), B: T.Tensor((M, 64), T.float32), C: T.Tensor((M, 64), T.float32)):
    with T.Kernel(M, threads=32) as bx:
        f = T.alloc_fragment((64,), T.float32)
        h = T.alloc_fragment((32,), T.float32)
        g = T.alloc_fragment((64,), T.float32)
        w = T.alloc_fragment((64,), T.float32)
        T.copy(A[bx, 0], f)
        T.copy(A[bx, 0:32], h)
        for i in T.Parallel(64):
            g[i] = f[63 - i] + h[i // 2] * 2.0 + f[(i + 5) % 64]
        for i in T.Parallel(64):
            w[63 - i] = f[i] * 3.0          # a written gather
        T.copy(g, B[bx, 0])
        T.copy(w, C[bx, 0])
"""


def test_parallel_indices_are_expressions(tmp_path, rng):
    a = rng.standard_normal((3, 64)).astype(np.float32)
    ad = a.astype(np.float64)
    i = np.arange(64)
    for b, c in run_everywhere(load_module(tmp_path, GATHERS).k, a):
        assert relative_error(b, ad[:, 63 - i] + ad[:, i // 2] * 2 + ad[:, (i + 5) % 64]) < 1e-6
        assert relative_error(c, ad[:, ::-1] * 3) < 1e-6


SERIAL_INDEX_IN_PARALLEL = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 16, 8), T.float32), B: T.Tensor((M, 16), T.float32)):
    with T.Kernel(M, threads=16) as bx:
        f = T.alloc_fragment((16, 8), T.float32)
        s = T.alloc_fragment((16,), T.float32)
        T.copy(A[bx, 0, 0], f)
        T.clear(s)
        for k in T.serial(8):
            for i in T.Parallel(16):
                s[i] = s[i] + f[i, k] * (k + 1)
        T.copy(s, B[bx, 0])
"""


def test_parallel_index_by_a_serial_loop_variable(tmp_path, rng):
    a = rng.standard_normal((2, 16, 8)).astype(np.float32)
    want = (a.astype(np.float64) * np.arange(1, 9)).sum(2)
    for b in run_everywhere(load_module(tmp_path, SERIAL_INDEX_IN_PARALLEL).k, a):
        assert relative_error(b, want) < 1e-6


def test_gathers_keep_plain_layouts_where_they_fit(tmp_path, rng):
    """`f[i - i % 2]` reads an element the thread running `i` holds (4 consecutive elements a thread):
    no replication is needed, and none is made."""
    source = """
    @tilemlir.jit(out_idx=[-1])
    def k(A: T.Tensor((M, 128), T.float32), B: T.Tensor((M, 128), T.float32)):
        with T.Kernel(M, threads=32) as bx:
            f = T.alloc_fragment((128,), T.float32)
            g = T.alloc_fragment((128,), T.float32)
            T.copy(A[bx, 0], f)
            for i in T.Parallel(128):
                g[i] = f[i] + f[i - i % 2]
            T.copy(g, B[bx, 0])
    """
    fn = load_module(tmp_path, source).k
    a = rng.standard_normal((2, 128)).astype(np.float32)
    for b in run_everywhere(fn, a):
        assert np.array_equal(b, a + a[:, 0::2].repeat(2, axis=1))
    assert "replicated" not in tilemlir.compile(fn, target="cuda", arch="sm_90a").cuda_source()


CONDITIONAL_ALLOCATION = """
def make(wide):
    @tilemlir.jit(out_idx=[-1])
    def k(A: T.Tensor((M, 64), T.float32), B: T.Tensor((M, 64), T.float32)):
        with T.Kernel(M, threads=32) as bx:
            if wide:
                f = T.alloc_fragment((64,), T.float32)
                T.copy(A[bx, 0], f)
            else:
                f = T.alloc_fragment((64,), T.float64)
                T.copy(A[bx, 0], f)
                for i in T.Parallel(64):
                    f[i] = f[i] * 2.0
            T.copy(f, B[bx, 0])
    return k
"""


@pytest.mark.parametrize("wide, scale", [(True, 1), (False, 2)])
def test_allocation_under_a_compile_time_if(tmp_path, rng, wide, scale):
    a = rng.standard_normal((3, 64)).astype(np.float32)
    for b in run_everywhere(load_module(tmp_path, CONDITIONAL_ALLOCATION).make(wide), a):
        assert np.array_equal(b, a * np.float32(scale))


DIM_ARITHMETIC = """
def make(block):
    M = T.symbolic("M")
    N = T.symbolic("N")
    total = M * N                      # arithmetic on dynamic dims in the factory
    blocks = tilemlir.cdiv(total, block)
    last = total - 1

    @tilemlir.jit(out_idx=[-1])
    def k(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(blocks, threads=block) as bx:
            for i in T.Parallel(block):
                g = bx * block + i
                if g <= last:
                    B[g // N, g % N] = A[(last - g) // N, (last - g) % N] + T.cast(T.ceildiv(M, 2) + N % 3, T.float32)
    return k
"""


def test_arithmetic_on_dynamic_dims_in_the_factory(tmp_path, rng):
    fn = load_module(tmp_path, DIM_ARITHMETIC).make(64)
    a = rng.standard_normal((7, 31)).astype(np.float32)
    want = a.ravel()[::-1].reshape(7, 31) + np.float32(4 + 1)
    for b in run_everywhere(fn, a):
        assert np.array_equal(b, want)
    assert fn.frontend().info.grid == ("(-(-(M * N) // 64))",)


@pytest.mark.parametrize("annotation, words", [
    ("@@T.Tensor((M * 2,), T.float32)", "arithmetic on dims is not supported in a tensor shape ((M * 2))"),
    ("T.Tensor((@@M / 2,), T.float32)", "'/' on dims is not supported: dims are integers, use '//' or T.ceildiv"),
])
def test_arithmetic_on_dims_in_a_shape_is_a_located_error(tmp_path, annotation, words):
    clean, line, col = marked(f"""
    @tilemlir.jit
    def k(A: {annotation}):
        with T.Kernel(1, threads=32) as bx:
            pass
    """)
    with pytest.raises(CompileError) as info:
        load_module(tmp_path, clean)
    assert words in str(info.value)
    assert (info.value.location.line, info.value.location.col) == (line, col)


FRAGMENT_LAYOUT = """
@tilemlir.jit(out_idx=[-2, -1])
def k(A: T.Tensor((16, 8), T.float32), B: T.Tensor((16, 8), T.float32), C: T.Tensor((16, 8), T.float32)):
    with T.Kernel(1, threads=32) as bx:
        f = T.alloc_fragment((16, 8), T.float32)
        g = T.alloc_fragment((16, 8), T.float32)
        T.annotate_layout({
            f: T.Fragment((16, 8), forward_thread_fn=lambda i, j: (i % 8) * 4 + j // 2,
                          forward_index_fn=lambda i, j: (i // 8) * 2 + j % 2),
            g: T.Fragment((16, 8), forward_fn=lambda i, j, rep: (rep * 16 + i, j), replicate=2),
        })
        T.copy(A, f)
        T.copy(A, g)
        for i, j in T.Parallel(16, 8):
            f[i, j] = f[i, j] * 3.0
        for i, j in T.Parallel(16, 8):
            g[i, j] = g[i, j] - 1.0
        T.copy(f, B)
        T.copy(g, C)
"""


def test_fragment_layouts(tmp_path, rng):
    fn = load_module(tmp_path, FRAGMENT_LAYOUT).k
    a = rng.standard_normal((16, 8)).astype(np.float32)
    for b, c in run_everywhere(fn, a):
        assert np.array_equal(b, a * np.float32(3))
        assert np.array_equal(c, a - np.float32(1))
    cuda = tilemlir.compile(fn, target="cuda", arch="sm_90a").cuda_source()
    assert "thread (d0, d1) -> (d1 floordiv 2 + (d0 mod 8) * 4), register (d0, d1) -> (d1 mod 2 + (d0 floordiv 8) * 2)" \
        in cuda
    assert "replicated x2" in cuda


@pytest.mark.parametrize("statement, words", [
    ("T.annotate_layout({f: @@T.Fragment((16, 8), forward_thread_fn=lambda i, j: i)})",
     "T.Fragment without forward_index_fn"),
    ("@@T.annotate_layout({f: T.Fragment((8, 8), forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)})",
     "T.annotate_layout: T.Fragment((8, 8), replicate=1) describes shape (8, 8), but fragment buffer 'f'"),
    ("@@T.annotate_layout({f: T.Fragment((16, 8), forward_fn=lambda i, j: i)})",
     "T.Fragment's forward_fn must return (thread, index), got d0"),
    ("T.annotate_layout({f: @@T.Layout((16, 8), lambda i, j: i * 8 + j)})",
     "T.Layout(shape, forward_fn) (TileLang's shared-memory layout) is not supported"),
])
def test_bad_fragment_layouts_are_located(tmp_path, statement, words):
    err = frontend_error(tmp_path, f"""
    @tilemlir.jit
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            f = T.alloc_fragment((16, 8), T.float32)
            {statement}
    """)
    assert words in message(err)


def test_written_gather_beside_shared_read_modify_write_is_refused(tmp_path):
    err = compile_error(tmp_path, target="cpu", level="thread", source="""
    @tilemlir.jit
    def k(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((64,), T.float32)
            f = T.alloc_fragment((64,), T.float32)
            T.copy(A, s)
            for i in T.Parallel(64):
                s[i] = s[i] + 1.0
                @@f[63 - i] = s[i]
            T.copy(f, A)
    """)
    assert err.diagnostics[0].message.startswith("fragment 'f' is written at an index other than the T.Parallel loop variables, "
                                   "so every thread runs every point of this loop, but the loop also reads and writes")


REPLICATED_READ_MODIFY_WRITE = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((64,), T.float32), B: T.Tensor((64,), T.float32)):
    with T.Kernel(1, threads=32) as bx:
        f = T.alloc_fragment((64,), T.float32)
        s = T.alloc_shared((64,), T.float32)
        T.copy(A, f)
        T.copy(A, s)
        f[0] = 5.0                      # f is replicated, and so is the loop that reads it
        for i in T.Parallel(64):
            s[i] = s[i] * 2.0 + f[i]    # a shared read-modify-write: one replica runs it
        T.copy(s, B)
"""


def test_replicated_loop_updating_shared_memory(tmp_path, rng):
    a = rng.standard_normal(64).astype(np.float32)
    f = a.copy()
    f[0] = 5
    for b in run_everywhere(load_module(tmp_path, REPLICATED_READ_MODIFY_WRITE).k, a):
        assert np.array_equal(b, a * np.float32(2) + f)


VARIABLES = """
@tilemlir.jit(out_idx=[-1])
def k(A: T.Tensor((M, 8), T.float32), B: T.Tensor((M,), T.float32)):
    with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
        scale = T.alloc_var(T.float32, 0.5)
        count = T.alloc_var(T.int32)
        for j in T.serial(8):
            count += 1                      # TileLang's variables used as scalars
        scale = scale * count
        for i in T.Parallel(32):
            total = 0.0
            for j in T.serial(8):
                total = total + A[bx * 32 + i, j] * scale
            if bx * 32 + i < M:
                B[bx * 32 + i] = total
"""


def test_alloc_var_as_a_scalar(tmp_path, rng):
    a = rng.standard_normal((40, 8)).astype(np.float32)
    want = a.astype(np.float64).sum(1) * 4
    for b in run_everywhere(load_module(tmp_path, VARIABLES).k, a):
        assert relative_error(b, want) < 1e-6
