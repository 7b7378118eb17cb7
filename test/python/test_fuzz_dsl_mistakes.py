"""DSL-mistakes fuzzer (issue 14): valid kernels with one to three mistakes a user makes; each compile (the
frontend, every pass and the CUDA emitter, where the arch's shared-memory limit is checked) succeeds or raises
a CompileError located at a line of the kernel's own file. A quarter of those that compile also run on the CPU
backend at tile and at thread level on the same fresh inputs: each run returns or raises a TilemlirError (an
out-of-range or never-written access is a SimulationError), and where both return, they agree. Never another
exception type, never a crash.

A kernel is a template whose slots (dims, dtypes, grid, threads, buffer shapes, parallel extents, indices,
values) hold valid defaults; a case (one seed, fuzz_support) replaces some slots by mistakes drawn from each
slot's list: wrong shapes, dtypes and extents, unknown dtype strings, float and non-positive dims, indices
out of range or of the wrong type, hardware limits exceeded, T.Kernel left out. Module-level Python stays
valid (every name a mistake uses exists), so an exception is the compiler's.
"""

from __future__ import annotations

import math
import random
import re
import textwrap

import numpy as np
import pytest

import tilemlir
from fuzz_support import (assert_located_in, compile_to_cuda_source, fuzz_seeds, import_kernel_file, unexpected,
                          write_kernel_file)
from tilemlir.backends.cpu.kernel import NUMPY_DTYPES
from tilemlir.diagnostics import CompileError, TilemlirError

DTYPES = ['"flaot32"', '"float64"', "T.int8", "T.bool", '"bool"', "T.float16", "T.bfloat16", "T.int32", "3",
          "None", '"e4m3"', "T.float8_e4m3", "T.float64", "T.uint8", '"uint8"', "T.uint32"]
DIMS = ["0", "-3", "2.5", "64.0", "2**40", "True", '"64"', "None", "T.symbolic('K')", "M", "3", "2**31", "(4, 4)"]
EXTENTS = ["0", "-1", "1", "3", "65", "2**20", "2.5", "M", "bx", "None", "2**31"]
INDICES = ["i + 1", "5", "-1", "2", "100", "j", "bx", "i * 2.0", "i // 0", "M", "2**40", "True", "None", "i, j"]
VALUES = ["2", "T.int8(3)", "None", "x", "X", "1e40", "True", "T.cast(1.5, T.int32)", "T.infinity(T.float32)",
          "bx", "1 / 0", "T.max(1.0)", "X[0, 0]", "(1.0, 2.0)"]
GRIDS = ["0", "-1", "2**40", "2.5", "M", "T.ceildiv(M, 0)", "bx", "4, 70000", "1, 1, 65536", "None", "M * M * M"]
THREADS = ["0", "1", "33", "1024", "2048", "M", "2.5", "-32", "None", "T.symbolic('t')"]
SHAPES = ["(2**20,)", "(1, 2**20)", "(2**16, 2**16)", "(60 * 1024,)", "(0,)", "(-1, 4)", "(M, 4)", "(2.5,)",
          "()", "(4, 4, 4)"]

MAX_RUN_ELEMENTS = 1 << 20  # a tensor of a kernel run on the CPU (a mistaken dim can be 2**31)
CPU_SHARE = 0.25  # of the kernels that compile to CUDA, those also run on the CPU at both levels (LLVM: slow)

# Each template is (source, {slot: (default, mistakes)}). The defaults compile.
TEMPLATES = {
    "rows": ("""
        @tilemlir.jit(out_idx=[-1])
        def k(X: T.Tensor((M, {N}), {dtype_x}), Y: T.Tensor((M, {N}), {dtype_y})):
            with T.Kernel({grid}, threads={threads}) as bx:
                x = T.alloc_fragment(({bm}, {bn}), {dtype_frag})
                T.copy(X[bx * {bm}, 0], x)
                for i, j in T.Parallel({pe0}, {pe1}):
                    x[{ii}, {jj}] = x[i, j] * {value}
                T.copy(x, Y[bx * {bm}, 0])
    """, {
        "N": ("64", DIMS), "dtype_x": ("T.float32", DTYPES), "dtype_y": ("T.float32", DTYPES),
        "grid": ("T.ceildiv(M, 2)", GRIDS), "threads": ("64", THREADS), "bm": ("2", EXTENTS),
        "bn": ("64", EXTENTS), "dtype_frag": ("T.float32", DTYPES), "pe0": ("2", EXTENTS), "pe1": ("64", EXTENTS),
        "ii": ("i", INDICES), "jj": ("j", INDICES), "value": ("2.0", VALUES),
    }),
    "shared_reduce": ("""
        @tilemlir.jit(out_idx=[-1])
        def k(X: T.Tensor((M, {N}), {dtype_x}), Y: T.Tensor((M,), {dtype_y})):
            with T.Kernel(M, threads={threads}) as bx:
                s = T.alloc_shared({shared_shape}, {dtype_s})
                x = T.alloc_fragment((1, {N}), T.float32)
                y = T.alloc_fragment(({rn},), {dtype_r})
                T.copy(X[bx, 0], s)
                T.copy(s, x)
                T.reduce_{reduce}(x, y, dim={dim})
                for i in T.Parallel({pe0}):
                    y[{ii}] = y[i] + {value}
                T.copy(y, Y[bx])
    """, {
        "N": ("128", DIMS), "dtype_x": ("T.float16", DTYPES), "dtype_y": ("T.float32", DTYPES),
        "threads": ("128", THREADS), "shared_shape": ("(1, 128)", SHAPES), "dtype_s": ("T.float16", DTYPES),
        "rn": ("1", EXTENTS), "dtype_r": ("T.float32", DTYPES), "reduce": ("sum", ["max", "min", "prod", "abs"]),
        "dim": ("1", ["0", "2", "-1", "1.0", "None", "bx"]), "pe0": ("1", EXTENTS), "ii": ("i", INDICES),
        "value": ("1.0", VALUES),
    }),
    "gemm": ("""
        @tilemlir.jit(out_idx=[-1])
        def k(A: T.Tensor((M, {K}), {dtype_a}), B: T.Tensor(({K}, 64), {dtype_b}), C: T.Tensor((M, 64), {dtype_c})):
            with T.Kernel(1, T.ceildiv(M, {bm}), threads={threads}) as (bx, by):
                A_s = T.alloc_shared(({bm}, {bk}), {dtype_a})
                B_s = T.alloc_shared(({bk}, 64), {dtype_b})
                C_f = T.alloc_fragment(({bm}, 64), {dtype_acc})
                T.clear(C_f)
                for k in T.Pipelined(T.ceildiv({K}, {bk}), num_stages={stages}):
                    T.copy(A[by * {bm}, k * {bk}], A_s)
                    T.copy(B[k * {bk}, 0], B_s)
                    T.gemm(A_s, B_s, C_f{transpose})
                T.copy(C_f, C[by * {bm}, 0])
    """, {
        "K": ("64", DIMS), "dtype_a": ("T.float16", DTYPES), "dtype_b": ("T.float16", DTYPES),
        "dtype_c": ("T.float16", DTYPES), "dtype_acc": ("T.float32", DTYPES), "bm": ("32", EXTENTS),
        "bk": ("32", EXTENTS), "threads": ("128", THREADS), "stages": ("2", ["0", "-1", "1", "9", "2.5", "M"]),
        "transpose": ("", [", transpose_A=True", ", transpose_B=True", ", transpose_A=1.5", ", 3"]),
    }),
    "slices_atomics": ("""
        @tilemlir.jit
        def k(X: T.Tensor((M, {N}), {dtype_x}), Y: T.Tensor(({ny},), {dtype_y}), n: T.int32):
            with T.Kernel(M, threads={threads}) as bx:
                x = T.alloc_fragment(({fn},), {dtype_f})
                T.fill(x, {fill})
                T.copy(X[bx, {lo}:{hi}], x)
                for j in T.Parallel({fn}):
                    x[j] = T.if_then_else(j < n, T.cast(x[j], {cast_to}), {other})
                    T.atomic_add(Y[{yi}], x[{xi}])
    """, {
        "N": ("64", DIMS), "dtype_x": ("T.float32", DTYPES), "ny": ("4", DIMS), "dtype_y": ("T.float32", DTYPES),
        "threads": ("64", THREADS), "fn": ("16", EXTENTS), "dtype_f": ("T.float32", DTYPES),
        "fill": ("0.5", VALUES), "lo": ("0", ["n", "-1", "64", "2.5", "bx", "8"]),
        "hi": ("16", ["n", "65", "15", "2**40", "0", "bx + 16"]), "cast_to": ("T.float32", DTYPES),
        "other": ("0.0", VALUES), "yi": ("bx % 4", INDICES + ["4", "bx"]), "xi": ("j", INDICES),
    }),
    "local_loop": ("""
        @tilemlir.jit
        def k(X: T.Tensor(({n},), {dtype_x}), n: {dtype_n}):
            with T.Kernel(T.ceildiv({n}, 128), threads={threads}) as bx:
                acc = T.alloc_local({local_shape}, {dtype_l})
                for t in T.serial({trips}):
                    acc[{li}] = {value}
                for i in T.Parallel({pe0}):
                    if bx * 128 + i < n:
                        X[bx * 128 + {ii}] = acc[{li2}] + X[bx * 128 + i]
    """, {
        "n": ("M", DIMS), "dtype_x": ("T.float32", DTYPES), "dtype_n": ("T.int32", DTYPES),
        "threads": ("128", THREADS), "local_shape": ("(4,)", SHAPES), "dtype_l": ("T.float32", DTYPES),
        "trips": ("4", EXTENTS), "li": ("t", ["t + 1", "4", "-1", "t * 2", "n", "t, t", "2.5", "bx"]),
        "value": ("T.cast(t, T.float32)", VALUES), "pe0": ("128", EXTENTS), "ii": ("i", INDICES),
        "li2": ("3", ["4", "-1", "i", "n", "2**40"]),
    }),
}


def _mutant(rng: random.Random) -> tuple[str, str, dict]:
    name = rng.choice(sorted(TEMPLATES))
    source, slots = TEMPLATES[name]
    values = {slot: default for slot, (default, _) in slots.items()}
    for slot in rng.sample(sorted(slots), rng.choice([1, 1, 1, 2, 3])):
        values[slot] = rng.choice(slots[slot][1])
    text = textwrap.dedent(source).format(**values)
    mistakes = {k: v for k, v in values.items() if v != slots[k][0]}
    if rng.random() < 0.04:
        text = re.sub(r"with T\.Kernel\(.*\) as bx:", "if True:\n        bx = 0", text)
        mistakes["T.Kernel"] = "left out"
    return name, text, mistakes


def _compile(tmp_path, text: str, context: str, cpu_rng: random.Random | None = None) -> str:
    """'ok', 'error: ...' (a CompileError located in the kernel's file) or 'ran: ...'; anything else fails the
    test. With `cpu_rng`, a kernel that compiles to CUDA is compiled for the CPU at both levels and run on
    inputs drawn from it."""
    path = write_kernel_file(tmp_path, text)
    try:
        fn = import_kernel_file(path).k  # the decorator and the T.Tensor annotations run here
        if fn.kind != "kernel":  # taken as a factory (T.Kernel left out)
            fn = fn.instantiate()
        compile_to_cuda_source(fn)
        if cpu_rng is not None:
            levels = [tilemlir.compile(fn, target="cpu", level=level) for level in ("tile", "thread")]
            return _run_both_levels(levels, cpu_rng, context)
        return "ok"
    except CompileError as err:
        assert_located_in(err, path, context)
        return f"error: {err.diagnostics[0].message[:150]}"
    except AssertionError:  # the levels disagreed (_run_both_levels)
        raise
    except Exception as exc:  # noqa: BLE001 - any other exception type is the finding
        pytest.fail(unexpected(exc, context))


def _arguments(info, rng: random.Random) -> list:
    symbols = {s.name: rng.randint(1, 300) for s in info.symbols}
    args = []
    for index, p in enumerate(info.params):
        shape = tuple(symbols[d] if isinstance(d, str) else d for d in p.shape)
        if math.prod(shape) > MAX_RUN_ELEMENTS:  # outputs the runtime allocates included
            return None
        if index in info.out_idx:
            continue
        dtype = NUMPY_DTYPES[p.dtype]
        if not p.is_tensor:
            args.append(rng.randint(0, 300) if np.dtype(dtype).kind in "iub" else rng.uniform(-2, 2))
            continue
        values = np.random.default_rng(rng.getrandbits(32)).standard_normal(shape) * 4
        args.append(values.astype(dtype) if np.dtype(dtype).kind != "b" else values > 0)
    return args


def _run_both_levels(levels, rng: random.Random, context: str) -> str:
    """Run the kernel at tile and at thread level on the same fresh inputs: each returns or raises a
    TilemlirError (a LaunchError, a SimulationError naming the access), and where both return, they agree."""
    args = _arguments(levels[0].info, rng)
    if args is None:
        return "ok (too large to run here)"
    results = []
    for kernel in levels:
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            out = kernel(*copies)
        except TilemlirError as err:
            results.append(f"{type(err).__name__}: {str(err)[:200]}")
            continue
        except Exception as exc:  # noqa: BLE001 - any other exception type is the finding
            pytest.fail(unexpected(exc, f"{context}\nrunning at {kernel.level} level"))
        outs = out if isinstance(out, tuple) else () if out is None else (out,)
        results.append([np.asarray(a, np.float64) for a in (*copies, *outs) if isinstance(a, np.ndarray)])
    tile, thread = results
    if isinstance(tile, list) and isinstance(thread, list):
        for got_tile, got_thread in zip(tile, thread):
            finite = np.isfinite(got_tile)
            assert np.array_equal(got_tile[~finite], got_thread[~finite], equal_nan=True) and \
                np.isfinite(got_thread[finite]).all(), f"NaN or inf elements differ by level\n{context}"
            scale = max(float(np.abs(got_tile[finite]).max(initial=0)), 1.0)
            assert np.allclose(got_tile[finite], got_thread[finite], rtol=1e-2, atol=1e-2 * scale), \
                f"the tile and thread levels disagree\n{context}"
    return f"ran: {'ok' if isinstance(tile, list) else tile} / {'ok' if isinstance(thread, list) else thread}"


@pytest.mark.parametrize("seed", fuzz_seeds("dsl_mistakes", 90))
def test_a_mistaken_kernel_compiles_or_fails_at_its_line(tmp_path, seed):
    rng = random.Random(seed)
    name, text, mistakes = _mutant(rng)
    cpu_rng = rng if rng.random() < CPU_SHARE else None
    outcome = _compile(tmp_path, text, f"seed {seed}, template {name}, mistakes {mistakes}\nkernel:\n{text}", cpu_rng)
    print(f"seed {seed} {name} {mistakes}: {outcome}")


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_template_compiles_unmutated(tmp_path, name):
    source, slots = TEMPLATES[name]
    text = textwrap.dedent(source).format(**{slot: d for slot, (d, _) in slots.items()})
    assert _compile(tmp_path, text, text, random.Random(name)) == "ran: ok / ok"


def test_a_mistake_is_caught_at_its_line(tmp_path):
    """The fuzzer can fail: a constant index out of range is an error located in the kernel's file."""
    source, slots = TEMPLATES["rows"]
    values = {slot: d for slot, (d, _) in slots.items()}
    text = textwrap.dedent(source).format(**{**values, "ii": "5"})
    path = write_kernel_file(tmp_path, text)
    with pytest.raises(CompileError) as info:
        compile_to_cuda_source(import_kernel_file(path).k)
    assert_located_in(info.value, path, text)
    line = path.read_text().splitlines().index("            x[5, j] = x[i, j] * 2.0") + 1
    assert (info.value.location.line, info.value.location.col) == (line, 15)
    assert "index 5 is out of range for dim 0 of fragment buffer 'x' (2, 64)" in str(info.value)
