"""Testing helpers: `do_bench` times a GPU call, `assert_close` compares arrays of any framework,
`relative_error` measures one against a float64 reference.

Imports no MLIR (they run on a GPU machine without the compiler) and no
torch: torch tensors, CuPy arrays, any ``__cuda_array_interface__`` or
``__dlpack__`` array and numpy arrays all work.

`assert_close(actual, expected)` checks ``|actual - expected| <= atol +
rtol * |expected|`` element by element, in float64. Without `rtol` and
`atol` the tolerances are the loosest of the two arrays' dtypes:

    dtype         rtol     atol     (torch.testing.assert_close)
    float16       1e-3     1e-5     same
    bfloat16      1.6e-2   1e-5     same
    float32       1.3e-6   1e-5     same
    float64       1e-7     1e-7     same
    float8_e4m3   0.125    2**-9    none: torch compares float8 exactly
    float8_e5m2   0.25     2**-16   none: torch compares float8 exactly
    ints, bool    0        0        same

The float8 rows allow one unit in the last place at 1.0 (2**-3 and 2**-2)
and, near zero, the smallest subnormal. So a bfloat16 kernel output against
a float64 reference is judged at bfloat16's tolerances. Infinities match
only themselves; NaNs match nothing unless `equal_nan`.

`relative_error(got, want)` is ``||got - want|| / ||want||`` (Frobenius
norms, in float64; `scale` replaces the denominator's array, `axis` gives
one error per row or column); infinite when `got` has a NaN or an
infinity, so an unwritten (poisoned) output element never passes a bound.
"""

from __future__ import annotations

import math
import statistics
import sys
from typing import Any, Callable, Sequence

import numpy as np

from tilemlir.diagnostics import LaunchError

RETURN_MODES = ("min", "max", "mean", "median", "all")
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "float8_e4m3fn": (2.0**-3, 2.0**-9),
    "float8_e5m2": (2.0**-2, 2.0**-16),
}
_CUDA_DLPACK_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged
_TORCH_BIT_VIEWS = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}
_FLUSH_MIN_BYTES = 256 * 2**20
_ESTIMATE_CALLS = 5
_SHORTEST_MS = 1e-3  # an estimate below a microsecond (a call that launches nothing) counts as one


# -- arrays on the host ---------------------------------------------------------------------------------
def as_numpy(array: Any) -> np.ndarray:
    """A numpy view or copy of `array`: numpy as is, torch tensors (any device; bfloat16 and float8
    as ml_dtypes arrays), CUDA arrays (CuPy, ``__cuda_array_interface__``, CUDA ``__dlpack__``)
    copied from the device, host ``__dlpack__`` arrays, and anything `numpy.asarray` takes."""
    if isinstance(array, np.ndarray):
        return array
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array, torch.Tensor):
        return _torch_to_numpy(array)
    if _on_cuda(array):
        from tilemlir.runtime.memory import to_host

        return to_host(array)
    if hasattr(array, "__dlpack__") and not hasattr(array, "__array_interface__"):
        return np.from_dlpack(array)
    return np.asarray(array)


def relative_error(got: Any, want: Any, scale: Any = None, *, axis: int | None = None) -> Any:
    """``||got - want|| / ||scale||`` in float64 (`scale` defaults to `want`); inf where `got` is not finite."""
    got64 = _float64(got)
    want64 = _float64(want)
    scale64 = want64 if scale is None else _float64(scale)
    error = np.linalg.norm(got64 - want64, axis=axis) / np.linalg.norm(scale64, axis=axis)
    finite = np.isfinite(got64).all(axis=axis)
    if axis is None:
        return float(error) if finite else math.inf
    return np.where(finite, error, math.inf)


def _float64(array: Any) -> np.ndarray:
    values = as_numpy(array)
    return values if values.dtype == np.float64 else values.astype(np.float64)


def _on_cuda(array: Any) -> bool:
    if hasattr(array, "__cuda_array_interface__"):
        return True
    device = getattr(array, "__dlpack_device__", None)
    return device is not None and device()[0] in _CUDA_DLPACK_DEVICES


def _torch_to_numpy(tensor: Any) -> np.ndarray:
    from tilemlir.runtime.memory import numpy_dtype

    host = tensor.detach().cpu()
    name = str(host.dtype).removeprefix("torch.")
    view = _TORCH_BIT_VIEWS.get(name)
    if view is None:
        return host.numpy()
    bits = host.contiguous().view(getattr(sys.modules["torch"], view)).numpy()
    return bits.view(numpy_dtype("float8_e4m3" if name == "float8_e4m3fn" else name))


# -- assert_close ---------------------------------------------------------------------------------------
def default_tolerances(*dtypes: Any) -> tuple[float, float]:
    """(rtol, atol): the loosest defaults of `dtypes` (numpy dtypes or their names; see the module docstring)."""
    found = [_TOLERANCES.get(np.dtype(d).name, (0.0, 0.0)) for d in dtypes]
    return max(r for r, _ in found), max(a for _, a in found)


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, check_dtype: bool = False, msg: str | None = None) -> None:
    """Raise AssertionError unless `actual` and `expected` have the same shape and every element is
    within ``atol + rtol * |expected|``. The message counts the mismatches and names the worst one
    (its index, both values, its error and what was allowed). `rtol` and `atol` go together: both or
    neither (then the dtype defaults of the module docstring apply)."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"give both rtol and atol or neither (got only {'rtol' if atol is None else 'atol'})")
    got, want = as_numpy(actual), as_numpy(expected)
    prefix = f"{msg}: " if msg else ""
    if got.shape != want.shape:
        raise AssertionError(f"{prefix}shapes differ: actual {got.shape}, expected {want.shape}")
    if check_dtype and got.dtype != want.dtype:
        raise AssertionError(f"{prefix}dtypes differ: actual {got.dtype}, expected {want.dtype}")
    if rtol is None:
        rtol, atol = default_tolerances(got.dtype, want.dtype)
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if _exact_integers(got, want, rtol, atol):
        close = np.equal(got, want)
        diff = allowed = None
    else:
        a, e = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(a - e)
            allowed = atol + rtol * np.abs(e)
            # Infinities (and values whose difference overflows) are close only to themselves.
            close = np.where(np.isfinite(diff) & np.isfinite(allowed), diff <= allowed, a == e)
        if equal_nan:
            close |= np.isnan(a) & np.isnan(e)
    if close.all():
        return
    raise AssertionError(prefix + _mismatch_report(got, want, ~close, diff, allowed, rtol, atol))


def _exact_integers(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    return rtol == 0 and atol == 0 and all(x.dtype.kind in "biu" for x in (got, want))


def _mismatch_report(got: np.ndarray, want: np.ndarray, bad: np.ndarray, diff: np.ndarray | None,
                     allowed: np.ndarray | None, rtol: float, atol: float) -> str:
    count, total = int(bad.sum()), bad.size
    what = "equal" if rtol == 0 and atol == 0 else f"close (rtol={rtol:g}, atol={atol:g})"
    lines = [f"not {what}: {count} of {total} elements ({100.0 * count / total:.3g}%) differ "
             f"({got.dtype} vs {want.dtype}, shape {got.shape})"]
    if diff is None:
        index = _index(int(np.flatnonzero(bad)[0]), bad.shape)
        lines.append(f"first at {index}: actual {got[index].item()!r}, expected {want[index].item()!r}")
        return "\n".join(lines)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.where(bad, diff / allowed, -1.0)
    excess = np.where(bad & ~np.isfinite(excess), np.inf, excess)  # NaN, infinity, zero allowance: worst
    index = _index(int(np.argmax(excess)), bad.shape)
    a, e = float(got[index]), float(want[index])
    worst = f"worst at {index}: actual {a!r}, expected {e!r}"
    if math.isfinite(a) and math.isfinite(e):
        relative = f"{abs(a - e) / abs(e):.3g}" if e else "inf"
        worst += (f", |actual - expected| = {abs(a - e):.6g} > allowed {float(allowed[index]):.6g} "
                  f"(relative error {relative})")
    lines.append(worst)
    return "\n".join(lines)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


# -- do_bench -------------------------------------------------------------------------------------------
def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, return_mode: str = "median", *,
             quantiles: Sequence[float] | None = None, flush_l2: bool = True, stream: Any = None
             ) -> float | list[float]:
    """Milliseconds one call of `fn` takes on the GPU, timed with CUDA events.

    Like `triton.testing.do_bench`: `fn` is first called about `warmup` ms worth of times, then
    timed about `rep` ms worth of times, one call per event pair; before each timed call the L2
    cache is flushed by writing a buffer four times its size (at least 256 MiB), outside the
    timed interval. With `flush_l2=False` the buffer is written all the same and then `fn` is
    called once untimed, so its data is back in L2: the write keeps the GPU busy while the host
    enqueues the timed call, which therefore measures the GPU's time and not the launch gap. `return_mode` is "min", "max", "mean", "median" (the default; Triton's is
    "mean") or "all" (every call's time); `quantiles` (e.g. [0.5, 0.2, 0.8]) returns those
    instead. Events are recorded on `stream` (an int handle, a torch or CuPy stream, a CUstream;
    default the legacy default stream, which orders with torch's and CuPy's default streams).
    Raises LaunchError without a usable GPU."""
    _check_mode(return_mode, quantiles)
    return _bench(fn, warmup, rep, return_mode, quantiles, _EventTimer(stream, flush_l2))


def _check_mode(return_mode: str, quantiles: Sequence[float] | None) -> None:
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(RETURN_MODES)}, got {return_mode!r}")
    if quantiles is not None and not all(0.0 <= q <= 1.0 for q in quantiles):
        raise ValueError(f"quantiles must lie in [0, 1], got {list(quantiles)}")


def _bench(fn: Callable[[], Any], warmup: float, rep: float, return_mode: str,
           quantiles: Sequence[float] | None, timer: Any) -> float | list[float]:
    """The measurement, with `timer` (record() -> mark, elapsed(a, b) -> ms, flush(), synchronize(), and
    flush_l2: whether the timed calls start with a cold L2)."""
    fn()
    timer.synchronize()
    start = timer.record()
    for _ in range(_ESTIMATE_CALLS):
        fn()
    end = timer.record()
    timer.synchronize()
    estimate = max(timer.elapsed(start, end) / _ESTIMATE_CALLS, _SHORTEST_MS)
    for _ in range(max(1, int(warmup / estimate))):
        fn()
    marks = []
    for _ in range(max(1, int(rep / estimate))):
        timer.flush()
        if not timer.flush_l2:
            fn()
        begin = timer.record()
        fn()
        marks.append((begin, timer.record()))
    timer.synchronize()
    times = [timer.elapsed(a, b) for a, b in marks]
    if quantiles is not None:
        return [float(q) for q in np.quantile(np.asarray(times), list(quantiles))]
    if return_mode == "all":
        return times
    return float({"min": min, "max": max, "mean": statistics.fmean, "median": statistics.median}[return_mode](times))


class _EventTimer:
    """CUDA events on one stream and an L2-sized buffer to overwrite, in the current context."""

    def __init__(self, stream: Any, flush_l2: bool):
        from tilemlir.runtime import driver
        from tilemlir.runtime.kernel import stream_handle

        try:
            self._cu = driver.cuda()
            _, device = driver.current()
        except LaunchError as exc:
            raise LaunchError(f"do_bench times calls on a GPU with CUDA events: {exc}") from None
        self._check = driver.check
        self._stream = driver.stream_object(stream_handle(stream) if stream is not None else 0)
        self.flush_l2 = flush_l2
        l2 = driver.device_attribute(device, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE")
        self._flush_bytes = max(_FLUSH_MIN_BYTES, 4 * l2)
        self._buffer = self._check(self._cu.cuMemAlloc(self._flush_bytes), "cuMemAlloc (L2 flush buffer)")
        self._events: list[Any] = []

    def record(self) -> Any:
        event = self._check(self._cu.cuEventCreate(self._cu.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")
        self._events.append(event)
        self._check(self._cu.cuEventRecord(event, self._stream), "cuEventRecord")
        return event

    def elapsed(self, start: Any, end: Any) -> float:
        return float(self._check(self._cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))

    def flush(self) -> None:
        self._check(self._cu.cuMemsetD32Async(self._buffer, 0, self._flush_bytes // 4, self._stream),
                        "cuMemsetD32Async (L2 flush)")

    def synchronize(self) -> None:
        self._check(self._cu.cuStreamSynchronize(self._stream), "cuStreamSynchronize")

    def __del__(self) -> None:
        cu = getattr(self, "_cu", None)
        if cu is None:
            return
        for event in getattr(self, "_events", ()):
            cu.cuEventDestroy(event)
        if getattr(self, "_buffer", None) is not None:
            cu.cuMemFree(self._buffer)
