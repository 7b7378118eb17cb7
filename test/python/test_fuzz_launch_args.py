"""Launch-arguments fuzzer (issue 14): compiled CPU kernels called with mistaken arguments raise LaunchError,
never another exception, never a crash, never a silently wrong result.

A case (one seed) takes the right arguments of one of four library kernels (outputs passed by the caller, so
they can be wrong too) and applies one or two mistakes: wrong count, dtype, rank, a static or a symbolic dim,
non-contiguous or transposed or zero-stride views (one of 2**31 rows over a few bytes), byte-swapped, read-only,
`bytes`-backed or read-only-mmap outputs, misaligned data, an output aliasing an input, objects that are not
arrays, and scalars of the wrong kind. Each mistake says whether the call must fail ("bad"), must succeed
("fine": the result is then checked against numpy) or may do either ("either"); a call of one bad mistake
must raise LaunchError.

The kernels run in a worker process (one per test session, restarted after a crash), so a segfault fails the
case that caused it with its seed instead of killing the test session.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import traceback

import pytest

from fuzz_support import Worker, fuzz_seeds



def test_the_worker_answers_the_right_arguments_with_right_results(launch_worker):
    for name in KERNEL_NAMES:
        reply = launch_worker.ask({"kernel": name, "mistakes": []})
        assert reply["outcome"] == "ok", reply


@pytest.mark.parametrize("seed", fuzz_seeds("launch_args", 160))
def test_mistaken_arguments_raise_launch_error(launch_worker, seed):
    rng = random.Random(seed)
    kernel = rng.choice(KERNEL_NAMES)
    mistakes = [rng.choice(sorted(MISTAKES)) for _ in range(rng.choice([1, 1, 2]))]
    case = {"kernel": kernel, "mistakes": mistakes, "seed": seed}
    reply = launch_worker.ask(case)
    context = f"seed {seed}: {json.dumps(case)}\nreply: {json.dumps(reply)[:4000]}"
    assert reply["outcome"] in ("ok", "launch_error"), context
    verdicts = {MISTAKES[m] for m in reply["applied"]}
    if verdicts <= {"fine"}:
        assert reply["outcome"] == "ok", context
    elif "bad" in verdicts and (len(reply["applied"]) == 1 or {MISTAKES[m] for m in reply["applied"]
                                                                  if m not in REPLACING} == {"bad", "fine"}):
        assert reply["outcome"] == "launch_error", context
    if reply["outcome"] == "launch_error":
        assert reply["message"], context


# --- the worker ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def launch_worker():
    worker = Worker("test_fuzz_launch_args")
    yield worker
    worker.close()


KERNEL_NAMES = ["add", "quant_row_fp8", "rmsnorm", "softmax_allocated"]

# mistake -> "bad" (must raise LaunchError), "fine" (must compute the right result) or "either".
MISTAKES = {
    "drop_arg": "bad", "extra_arg": "bad", "dtype": "bad", "rank_up": "bad", "rank_down": "bad",
    "static_dim": "bad", "symbol_mismatch": "bad", "strided": "bad", "transposed": "bad", "zero_stride_huge": "bad",
    "byteswapped": "either", "read_only_output": "bad", "bytes_output": "bad", "mmap_output": "bad",
    "read_only_input": "fine", "misaligned": "either", "alias_output": "bad", "none": "bad", "string": "bad",
    "python_list": "either", "object_array": "bad", "scalar_array": "either", "scalar_string": "bad",
    "scalar_none": "bad", "scalar_complex": "bad", "scalar_float64": "fine", "zero_rows": "either",
    "more_rows": "fine", "fortran_order_1d": "fine", "offset_view": "fine",
}
# "fine" mistakes that replace an argument, and with it another mistake's doing.
REPLACING = {"offset_view", "scalar_float64"}


def _kernels():
    import ml_dtypes
    import numpy as np

    import tilemlir
    from tilemlir.kernels import elementwise, norm, quant, softmax

    bf16, fp8 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn

    def caller_outputs(factory, **kwargs):
        jitted = factory.instantiate(**kwargs)
        jitted = tilemlir.api.JitFunction(jitted.fn, [], jitted.target, jitted.options)
        return tilemlir.compile(jitted, target="cpu")

    def add_args(rng, rows):
        n = 37 * rows
        a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        return [a, b, np.full(n, np.nan, np.float32)], [2], None

    def add_check(args, result):
        a, b, c = args
        assert np.array_equal(c, a + b)

    def quant_args(rng, rows):
        x = (rng.standard_normal((rows, 32)) * 3).astype(bf16)
        return [x, np.full((rows, 32), np.nan, fp8), np.full(rows, np.nan, np.float32)], [1, 2], None

    def quant_check(args, result):
        x, q, s = args
        xf = x.astype(np.float32)
        want_s = np.abs(xf).max(1) * np.float32(1 / 448.0)
        assert np.array_equal(s, want_s)
        assert np.array_equal(q.view(np.uint8), (xf / want_s[:, None]).astype(fp8).view(np.uint8))

    def rmsnorm_args(rng, rows):
        x = rng.standard_normal((rows, 64)).astype(bf16)
        w = (1 + 0.1 * rng.standard_normal(64)).astype(bf16)
        return [x, w, np.full((rows, 64), np.nan, bf16), np.float32(1e-6)], [2], 3

    def rmsnorm_check(args, result):
        x, w, y, eps = args
        xd = x.astype(np.float64)
        want = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-6) * w.astype(np.float64)
        got = y.astype(np.float64)
        assert np.isfinite(got).all() and np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2

    def softmax_args(rng, rows):
        return [(3 * rng.standard_normal((rows, 48))).astype(np.float32)], [], None

    def softmax_check(args, result):
        xd = args[0].astype(np.float64)
        e = np.exp(xd - xd.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
        assert np.linalg.norm(result.astype(np.float64) - want) / np.linalg.norm(want) < 1e-6

    return {
        "add": (caller_outputs(elementwise.add), add_args, add_check),
        "quant_row_fp8": (caller_outputs(quant.quant_row_fp8, N=32), quant_args, quant_check),
        "rmsnorm": (caller_outputs(norm.rmsnorm, N=64), rmsnorm_args, rmsnorm_check),
        "softmax_allocated": (tilemlir.compile(softmax.softmax.instantiate(N=48, dtype="float32"), target="cpu"),
                              softmax_args, softmax_check),
    }


def _apply(mistake, args, outputs, scalar, rng, np, scratch):
    """Apply `mistake` to `args` in place; False where it does not apply to this kernel."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim > 0 and a.dtype != object]
    if not tensors:  # an earlier mistake replaced the arrays
        return False
    pick = rng.choice(tensors)
    outputs = [i for i in outputs if i in tensors]
    out = rng.choice(outputs) if outputs else None
    two_d = [i for i in tensors if args[i].ndim == 2]
    if mistake == "drop_arg":
        args.pop(rng.randrange(len(args)))
    elif mistake == "extra_arg":
        args.append(args[pick])
    elif mistake == "dtype":
        other = {np.dtype(np.float32): np.float16}.get(args[pick].dtype, np.float32)
        args[pick] = args[pick].astype(other)
    elif mistake == "rank_up":
        args[pick] = args[pick][None]
    elif mistake == "rank_down":
        if args[pick].size == 0:
            return False
        args[pick] = args[pick].reshape(-1)[:1].reshape(()) if args[pick].ndim == 1 else args[pick].reshape(-1)
    elif mistake == "static_dim" and two_d:
        i = rng.choice(two_d)
        args[i] = np.ascontiguousarray(np.concatenate([args[i], args[i][:, :1]], axis=1))
    elif mistake == "symbol_mismatch" and len(tensors) > 1:  # every tensor's dim 0 is a multiple of the rows
        args[pick] = np.ascontiguousarray(np.concatenate([args[pick], args[pick][:1]], axis=0))
    elif mistake == "strided":
        wide = np.repeat(args[pick], 2, axis=-1)
        args[pick] = wide[..., ::2]
    elif mistake == "transposed" and two_d:
        i = rng.choice(two_d)
        if args[i].shape[0] == args[i].shape[1] or args[i].shape[0] == 1:
            return False
        args[i] = np.ascontiguousarray(args[i].reshape(args[i].shape[::-1])).T
    elif mistake == "zero_stride_huge":
        a = args[pick]
        args[pick] = np.lib.stride_tricks.as_strided(a, (2**31,) + a.shape[1:], (0,) + a.strides[1:])
    elif mistake == "byteswapped":
        if args[pick].dtype.itemsize == 1 or args[pick].dtype.kind == "V":
            return False
        args[pick] = args[pick].astype(args[pick].dtype.newbyteorder())
    elif mistake == "read_only_output" and out is not None:
        args[out].setflags(write=False)
    elif mistake == "bytes_output" and out is not None:
        args[out] = np.frombuffer(args[out].tobytes(), args[out].dtype).reshape(args[out].shape)
    elif mistake == "mmap_output" and out is not None and args[out].size:
        path = os.path.join(scratch, f"out{rng.randrange(10**9)}.bin")
        args[out].tofile(path)
        args[out] = np.memmap(path, args[out].dtype, "r", shape=args[out].shape)
    elif mistake == "read_only_input":
        inputs = [i for i in tensors if i not in outputs]
        if not inputs:
            return False
        args[rng.choice(inputs)].setflags(write=False)
    elif mistake == "misaligned":
        a = args[pick]
        raw = np.zeros(a.nbytes + 1, np.uint8)
        view = raw[1:].view(a.dtype).reshape(a.shape) if a.dtype.itemsize == 1 else None
        if view is None:
            return False
        view[...] = a
        args[pick] = view
    elif mistake == "alias_output" and out is not None:
        same = [i for i in tensors if i != out and args[i].shape == args[out].shape
                and args[i].dtype == args[out].dtype]
        if not same:
            return False
        args[out] = args[rng.choice(same)]
    elif mistake == "none":
        args[pick] = None
    elif mistake == "string":
        args[pick] = "X"
    elif mistake == "python_list":
        args[pick] = args[pick].tolist()
    elif mistake == "object_array":
        args[pick] = args[pick].astype(object)
    elif mistake.startswith("scalar_") and scalar is not None:
        args[scalar] = {"scalar_array": np.array([1e-6], np.float32), "scalar_string": "1e-6", "scalar_none": None,
                        "scalar_complex": 1e-6 + 1j, "scalar_float64": np.float64(1e-6)}[mistake]
    elif mistake in ("zero_rows", "more_rows", "fortran_order_1d", "offset_view"):
        return _reshape_mistake(mistake, args, tensors, rng, np)
    else:
        return False
    return True


def _reshape_mistake(mistake, args, tensors, rng, np):
    if mistake == "fortran_order_1d":
        one_d = [i for i in tensors if args[i].ndim == 1]
        if not one_d:
            return False
        i = rng.choice(one_d)
        args[i] = np.asfortranarray(args[i])
        return True
    if mistake == "offset_view":  # a contiguous view that starts one row in: its own base pointer
        i = rng.choice(tensors)
        bigger = np.concatenate([args[i][:1], args[i]], axis=0)
        args[i] = bigger[1:]
        return True
    return False  # zero_rows, more_rows: the rows are chosen before the arguments are made


def _case(kernels, case, np, scratch) -> dict:
    kernel, make_args, check = kernels[case["kernel"]]
    rng = random.Random(case.get("seed", 0))
    nrng = np.random.default_rng(case.get("seed", 0))
    mistakes = case["mistakes"]
    rows = 0 if "zero_rows" in mistakes else rng.randint(9, 40) if "more_rows" in mistakes else rng.randint(1, 6)
    args, outputs, scalar = make_args(nrng, rows)
    # Mistakes that change the argument list or make an array too big to copy come last.
    mistakes = sorted(mistakes, key=lambda m: m in ("zero_stride_huge", "drop_arg", "extra_arg"))
    applied = [m for m in mistakes if m in ("zero_rows", "more_rows")
               or _apply(m, args, outputs, scalar, rng, np, scratch)]
    for other in rng.sample(sorted(MISTAKES), len(MISTAKES)) if mistakes and not applied else ():
        if _apply(other, args, outputs, scalar, rng, np, scratch):  # none applied to this kernel: another one
            applied.append(other)
            break
    described = [type(a).__name__ if not isinstance(a, np.ndarray) else f"{a.dtype}{list(a.shape)}"
                 f"{'' if a.flags.c_contiguous else ' strided'}{'' if a.flags.writeable else ' read-only'}"
                 for a in args]
    reply = {"applied": applied, "args": described}
    import tilemlir

    try:
        result = kernel(*args)
    except tilemlir.LaunchError as err:
        return {**reply, "outcome": "launch_error", "message": str(err)}
    except Exception as exc:  # noqa: BLE001 - any other exception type is a finding
        return {**reply, "outcome": f"{type(exc).__name__}", "message": "".join(traceback.format_exception(exc))}
    try:
        if rows and set(applied) <= {m for m, v in MISTAKES.items() if v == "fine"}:
            check(args, result)
    except AssertionError as exc:
        return {**reply, "outcome": "wrong result", "message": "".join(traceback.format_exception(exc))}
    return {**reply, "outcome": "ok"}


def serve() -> None:
    """The worker: one JSON case a line on stdin, one JSON reply a line on stdout."""
    import numpy as np

    kernels = _kernels()
    with tempfile.TemporaryDirectory() as scratch:
        for line in sys.stdin:
            reply = _case(kernels, json.loads(line), np, scratch)
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
