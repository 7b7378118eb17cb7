"""Kernel-library numerics fuzzer (issue 14): random small shapes of the library kernels (tilemlir.kernels:
softmax, norms, fp8 quantization, casts, elementwise, row reductions) on the CPU backend, at tile level and
(for a third of the cases) thread level, against float64 numpy references.

A case (one seed) picks a kernel, its compile-time arguments (the row width N, mostly narrow, sometimes wide
enough to stream, and a dtype) and a row count; inputs are drawn from the seed, never zeros; the outputs are
passed in by the test, poisoned with NaN, so an element the kernel does not write fails. Results are compared
bit for bit where the math allows (fp8 quantization, casts, elementwise, row max), else by relative norm error
with the bounds of test_kernels.py. Kernels compile and run in a worker process (fuzz_support.Worker), so an
abort inside LLVM fails the case with its seed.
"""

from __future__ import annotations

import json
import random
import sys
import traceback

import pytest

from fuzz_support import Worker, fuzz_seeds, poisoned
from tilemlir.testing import relative_error

LEVEL_THREAD_SHARE = 1 / 3


def _draw(rng: random.Random) -> dict:
    kernel = rng.choice(sorted(CASES))
    N = rng.randint(1, 160) if rng.random() < 0.85 else rng.randint(1000, 9000)
    level = "thread" if rng.random() < LEVEL_THREAD_SHARE else "tile"
    return {"kernel": kernel, "N": N, "level": level, "rows": rng.randint(1, 7),
            "dtype": rng.choice(CASES[kernel])}


@pytest.fixture(scope="module")
def numerics_worker():
    worker = Worker("test_fuzz_kernel_numerics")
    yield worker
    worker.close()


@pytest.mark.parametrize("seed", fuzz_seeds("kernel_numerics", 20))
def test_a_library_kernel_at_a_random_shape_matches_numpy(numerics_worker, seed):
    case = {**_draw(random.Random(seed)), "seed": seed}
    reply = numerics_worker.ask(case)
    assert reply["outcome"] == "ok", f"seed {seed}: {json.dumps(case)}\n{reply.get('message', '')}" \
                                     f"{reply.get('stderr', '')}"


# --- the worker ------------------------------------------------------------------------------------------------

def _softmax(np, x):
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _compile(factory, level, **kwargs):
    import tilemlir

    jitted = factory.instantiate(**kwargs)
    caller_outputs = tilemlir.api.JitFunction(jitted.fn, [], jitted.target, jitted.options)
    return tilemlir.compile(caller_outputs, target="cpu", level=level)


def _run_case(case: dict) -> None:
    import ml_dtypes as ml
    import numpy as np

    from tilemlir.kernels import elementwise, norm, quant, reduce, softmax

    rng = np.random.default_rng(case["seed"])
    N, rows, level, dtype = case["N"], case["rows"], case["level"], case["dtype"]
    npdt = {"float32": np.float32, "float16": np.float16, "bfloat16": ml.bfloat16}.get(dtype)
    bf16, fp8 = ml.bfloat16, ml.float8_e4m3fn
    name = case["kernel"]
    if name == "softmax":
        x = (3 * rng.standard_normal((rows, N))).astype(npdt)
        y = poisoned((rows, N), npdt)
        _compile(softmax.softmax, level, N=N, dtype=dtype)(x, y)
        bound = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
        assert relative_error(y, _softmax(np, x)) < bound
    elif name in ("rmsnorm", "layernorm"):
        x = rng.standard_normal((rows, N)).astype(npdt)
        w = (1 + 0.1 * rng.standard_normal(N)).astype(npdt)
        xd, wd = x.astype(np.float64), w.astype(np.float64)
        y = poisoned((rows, N), npdt)
        if name == "rmsnorm":
            _compile(norm.rmsnorm, level, N=N, dtype=dtype)(x, w, y, 1e-6)
            want = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-6) * wd
        else:
            b = (0.1 * rng.standard_normal(N)).astype(npdt)
            _compile(norm.layernorm, level, N=N, dtype=dtype)(x, w, b, y, 1e-5)
            mean = xd.mean(1, keepdims=True)
            want = (xd - mean) / np.sqrt(((xd - mean) ** 2).mean(1, keepdims=True) + 1e-5) * wd + b
        assert relative_error(y, want) < {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    elif name == "quant_row_fp8":
        x = (rng.standard_normal((rows, N)) * rng.uniform(0.01, 100, (rows, 1))).astype(npdt)
        q, s = poisoned((rows, N), fp8), poisoned(rows, np.float32)
        _compile(quant.quant_row_fp8, level, N=N, dtype=dtype)(x, q, s)
        xf = x.astype(np.float32)
        want_s = np.abs(xf).max(1) * np.float32(1 / 448.0)
        assert np.array_equal(s, want_s)
        assert np.array_equal(q.view(np.uint8), (xf / want_s[:, None]).astype(fp8).view(np.uint8))
    elif name == "quant_block_fp8":
        groups = -(-N // 128)
        x = (rng.standard_normal((rows, N)) * 5).astype(npdt)
        q, s = poisoned((rows, N), fp8), poisoned((rows, groups), np.float32)
        _compile(quant.quant_block_fp8, level, N=N, dtype=dtype)(x, q, s)
        xf = x.astype(np.float32)
        for g in range(groups):
            block = xf[:, g * 128:(g + 1) * 128]
            want_s = np.abs(block).max(1) * np.float32(1 / 448.0)
            assert np.array_equal(s[:, g], want_s), f"scales of group {g}"
            want_q = (block / want_s[:, None]).astype(fp8)
            assert np.array_equal(q[:, g * 128:(g + 1) * 128].view(np.uint8), want_q.view(np.uint8)), g
    elif name in ("cast_to_fp8", "cast_to_bf16"):
        n = rows * N
        x = (rng.standard_normal(n) * 50).astype(npdt)
        dst = fp8 if name == "cast_to_fp8" else bf16
        y = poisoned(n, dst)
        _compile(elementwise.cast, level, src=dtype, dst="float8_e4m3" if dst is fp8 else "bfloat16")(x, y)
        assert np.array_equal(y.view(np.uint8), x.astype(np.float32).astype(dst).view(np.uint8))
    elif name in ("add", "mul"):
        n = rows * N
        a, b = (rng.standard_normal(n).astype(npdt) for _ in range(2))
        c = poisoned(n, npdt)
        _compile(getattr(elementwise, name), level, dtype=dtype)(a, b, c)
        af, bf = a.astype(np.float32), b.astype(np.float32)
        want = (af + bf) if name == "add" else (af * bf)
        assert np.array_equal(c.astype(np.float32), want.astype(npdt).astype(np.float32))
    elif name in ("row_sum", "row_max"):
        x = rng.standard_normal((rows, N)).astype(np.float32)
        y = poisoned(rows, np.float32)
        _compile(getattr(reduce, name), level, N=N)(x, y)
        if name == "row_max":
            assert np.array_equal(y, x.max(1))
        else:
            assert relative_error(y, x.astype(np.float64).sum(1)) < 1e-5
    else:
        raise AssertionError(f"no case {name}")


# kernel -> the dtypes it is fuzzed in
CASES = {
    "softmax": ["float16", "float32", "bfloat16"], "rmsnorm": ["bfloat16", "float16", "float32"],
    "layernorm": ["bfloat16", "float16"], "quant_row_fp8": ["bfloat16", "float16"],
    "quant_block_fp8": ["bfloat16"], "cast_to_fp8": ["bfloat16", "float32"], "cast_to_bf16": ["float32"],
    "add": ["float32", "bfloat16", "float16"], "mul": ["float32", "bfloat16"], "row_sum": ["float32"],
    "row_max": ["float32"],
}


def serve() -> None:
    for line in sys.stdin:
        case = json.loads(line)
        try:
            _run_case(case)
            reply = {"outcome": "ok"}
        except Exception as exc:  # noqa: BLE001 - reported to the test with the case
            reply = {"outcome": type(exc).__name__, "message": "".join(traceback.format_exception(exc))[-4000:]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
