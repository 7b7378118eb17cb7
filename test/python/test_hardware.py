"""Hardware limits at compile time (tilemlir/hardware.py): each is a CompileError at the kernel's Python line
naming the limit and the amount, before any NVRTC run (a (1, 2**20) fragment used to take NVRTC 89 s, a
32 GiB shared buffer 77 s, and then fail at launch or not at all).

Grid extents, a thread's registers (fragments) and storage (local buffers) are checked by the dialect's
verifiers, the same on every arch; shared memory against the target arch's per-block limit when the
CUDA source is emitted. A run-time grid is checked at launch (test_runtime_checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tilemlir
from frontend_util import frontend_error, load_module, marked, message
from tilemlir import hardware
from tilemlir.diagnostics import CompileError


def compile_error(directory: Path, source: str, **options) -> CompileError:
    """Compile kernel `k` of the snippet for CUDA, expect a CompileError at the `@@` marker, and return it."""
    clean, line, col = marked(source)
    module = load_module(directory, clean)
    with pytest.raises(CompileError) as info:
        tilemlir.compile(module.k, target="cuda", **options)
    loc = info.value.location
    assert loc is not None and (Path(loc.file).name, loc.line, loc.col) == (f"{module.__name__}.py", line, col), \
        str(info.value)
    return info.value


def test_the_shared_memory_table_and_byte_counts():
    assert hardware.max_shared_bytes("sm_90a") == 227 * 1024 == 232448
    assert hardware.max_shared_bytes("sm_86") == hardware.max_shared_bytes("89") == 99 * 1024
    assert hardware.max_shared_bytes("compute_80") == 163 * 1024
    assert hardware.max_shared_bytes("sm_88") is None and hardware.max_shared_bytes("nonsense") is None
    assert hardware.format_bytes(1000) == "1000 bytes"
    assert hardware.format_bytes(245760) == "245760 bytes (240 KiB)"
    assert hardware.format_bytes(525308) == "525308 bytes (513 KiB)"
    assert hardware.format_bytes(2**35) == "34359738368 bytes (32 GiB)"


# -- per thread: a fragment's registers, a local buffer's bytes ---------------------------------------------------

def test_a_fragment_beyond_the_registers_of_a_thread(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 2**20), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                x = @@T.alloc_fragment((1, 2**20), T.float32)
                T.copy(X[bx, 0], x)
                T.copy(x, X[bx, 0])
    """)
    assert message(err) == (
        "'tile.alloc_fragment' op needs at least 8192 32-bit registers in each of the block's 128 threads (8192 of "
        "its f32 elements a thread), more than the 255 a thread has: make the tile smaller and loop over the rest, "
        "or use more threads"
    )


@pytest.mark.parametrize("shape, dtype, fits", [
    ("(1, 255 * 128)", "float32", True),
    ("(1, 256 * 128)", "float32", False),
    ("(4, 255 * 128)", "float8_e4m3", True),  # 4 fp8 elements a register: 1020 a thread
    ("(4, 255 * 128 + 1)", "float8_e4m3", False),
    ("(128 * 127 + 1,)", "float64", False),  # 128 float64 a thread: 256 registers
])
def test_the_register_bound_is_exact(tmp_path, shape, dtype, fits):
    source = f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 4), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                x = @@T.alloc_fragment({shape}, T.{dtype})
                T.clear(x)
    """
    if fits:
        clean, _, _ = marked(source)
        assert "tile.alloc_fragment" in tilemlir.lower(load_module(tmp_path, clean).k)
    else:
        assert "more than the 255 a thread has" in message(frontend_error(tmp_path, source))


def test_a_local_buffer_beyond_a_thread(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 2**20), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                s = @@T.alloc_local((2**20,), T.float32)
                T.copy(X[bx, 0], s)
    """)
    assert message(err) == (
        "'tile.alloc_local' op needs 4194304 bytes (4 MiB) in each thread, more than a thread can hold (525308 "
        "bytes: 255 32-bit registers and 512 KiB of local memory)"
    )


def test_the_buffers_of_a_thread_are_summed(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 4), T.float32)):
            @@with T.Kernel(M, threads=128) as bx:
                a = T.alloc_local((65536,), T.float32)
                b = T.alloc_local((65536,), T.float32)
                c = T.alloc_local((256,), T.int32)
    """)
    assert message(err) == (
        "'tile.kernel' op the block's fragments and local buffers need at least 525312 bytes (513 KiB) in each "
        "thread ('a' 262144 bytes, 'b' 262144 bytes, 'c' 1024 bytes), more than a thread can hold (525308 bytes: "
        "255 32-bit registers and 512 KiB of local memory)"
    )


# -- grid extents --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("grid, expected", [
    ("2**40", "grid extent #0 is 1099511627776, more than the 2147483647 blocks a grid has along x"),
    ("4, 70000", "grid extent #1 is 70000, more than the 65535 blocks a grid has along y"),
    ("1, 1, 65536", "grid extent #2 is 65536, more than the 65535 blocks a grid has along z"),
])
def test_a_constant_grid_beyond_the_hardware(tmp_path, grid, expected):
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 4), T.float32)):
            @@with T.Kernel({grid}, threads=128):
                X[0, 0] = 1.0
    """)
    assert message(err) == f"'tile.kernel' op {expected}"


def test_the_largest_grid_compiles(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 4), T.float32)):
            with T.Kernel(2**31 - 1, 65535, 65535, threads=32):
                X[0, 0] = 1.0
    """)
    assert "2147483647" in tilemlir.lower(module.k)


# -- shared memory per block, on the target arch --------------------------------------------------------------

SHARED = """
    @tilemlir.jit
    def k(X: T.Tensor((M, {cols}), T.float32)):
        with T.Kernel(M, threads=128) as bx:
            s = {a}T.alloc_shared(({cols},), T.float32)
            t = {b}T.alloc_shared(({cols},), T.float32)
            T.copy(X[bx, 0], s)
            T.copy(s, t)
            T.copy(t, X[bx, 0])
"""


def test_two_shared_buffers_past_the_limit_are_an_error_at_the_second(tmp_path):
    err = compile_error(tmp_path, SHARED.format(cols=120 * 256, a="", b="@@"), arch="sm_90a")
    assert message(err) == (
        "the block needs 245760 bytes (240 KiB) of shared memory ('s' 122880 bytes at offset 0, 't' 122880 bytes "
        "at offset 122880), more than the 232448 bytes (227 KiB) one block may use on sm_90a"
    )


@pytest.mark.parametrize("count, shown", [(64 * 1024, "262144 bytes (256 KiB)"), (2**33, "34359738368 bytes (32 GiB)")])
def test_one_shared_buffer_past_the_limit(tmp_path, count, shown):
    err = compile_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, {count}), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                s = @@T.alloc_shared(({count},), T.float32)
                T.copy(X[bx, 0], s)
                T.copy(s, X[bx, 0])
    """, arch="sm_90a")
    assert message(err) == (f"the block needs {shown} of shared memory ('s' {count * 4} bytes at offset 0), more "
                            "than the 232448 bytes (227 KiB) one block may use on sm_90a")


def test_the_shared_limit_is_the_target_archs(tmp_path):
    """100 KiB of shared memory: more than sm_86's 99 KiB, within sm_90a's 227 KiB (which compiles, with
    NVRTC, and records the bytes the runtime opts in for)."""
    source = SHARED.format(cols=50 * 256, a="", b="@@")
    err = compile_error(tmp_path, source, arch="sm_86")
    assert message(err).endswith("more than the 101376 bytes (99 KiB) one block may use on sm_86")
    clean, _, _ = marked(source)
    kernel = tilemlir.compile(load_module(tmp_path, clean).k, target="cuda", arch="sm_90a")
    assert kernel.signature.shared_bytes == 102400 and kernel.cubin[:4] == b"\x7fELF"
