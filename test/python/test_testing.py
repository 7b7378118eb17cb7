"""tilemlir.testing: assert_close (numpy, ml_dtypes, torch CPU tensors when torch is importable), its
default tolerances, as_numpy, and do_bench's measurement loop with a stand-in timer (the CUDA event
timer itself runs in test/gpu)."""

import ml_dtypes
import numpy as np
import pytest

from tilemlir import testing
from tilemlir.diagnostics import LaunchError
from tilemlir.testing import as_numpy, assert_close, default_tolerances


def _gpu_usable() -> bool:
    from tilemlir.runtime import driver

    try:
        driver.cuda()
        driver.current()
        return True
    except LaunchError:
        return False


no_gpu = pytest.mark.skipif(_gpu_usable(), reason="checks the error on a machine without a GPU")


# -- assert_close --------------------------------------------------------------------------------------
def test_default_tolerances_are_the_loosest_of_the_dtypes():
    assert default_tolerances(np.float16, np.float64) == (1e-3, 1e-5)
    assert default_tolerances(ml_dtypes.bfloat16, np.float32) == (1.6e-2, 1e-5)
    assert default_tolerances(np.float32, np.float32) == (1.3e-6, 1e-5)
    assert default_tolerances(np.float64) == (1e-7, 1e-7)
    assert default_tolerances(ml_dtypes.float8_e4m3fn, np.float64) == (0.125, 2.0**-9)
    assert default_tolerances(np.int32, np.int64) == (0.0, 0.0)


@pytest.mark.parametrize("dtype, inside, outside", [
    (np.float16, 5e-4, 3e-3), (ml_dtypes.bfloat16, 8e-3, 4e-2), (np.float32, 1e-6, 1e-5),
    (ml_dtypes.float8_e4m3fn, 0.1, 0.3)])
def test_the_dtype_decides_the_default_tolerance(rng, dtype, inside, outside):
    """A float64 reference off by `inside` (relative) passes at the output dtype's tolerance, `outside` fails."""
    out = (rng.uniform(1.0, 2.0, 256)).astype(dtype)
    exact = out.astype(np.float64)
    assert_close(out, exact * (1 + inside))
    with pytest.raises(AssertionError, match=r"not close \(rtol="):
        assert_close(out, exact * (1 + outside))


def test_the_message_counts_mismatches_and_names_the_worst_element(rng):
    expected = rng.uniform(1.0, 2.0, (4, 5))
    actual = expected.copy()
    actual[1, 2] += 1e-3
    actual[3, 1] += 0.25
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected, rtol=1e-6, atol=0.0, msg="output Y")
    text = str(info.value)
    assert text.startswith("output Y: not close (rtol=1e-06, atol=0): 2 of 20 elements (10%) differ")
    assert f"worst at (3, 1): actual {float(actual[3, 1])!r}, expected {float(expected[3, 1])!r}" in text
    assert f"|actual - expected| = {0.25:.6g} > allowed {1e-6 * expected[3, 1]:.6g}" in text


def test_nan_matches_nan_only_when_asked():
    nan = np.array([1.0, np.nan])
    with pytest.raises(AssertionError, match=r"worst at \(1,\): actual nan, expected nan"):
        assert_close(nan, nan)
    assert_close(nan, nan, equal_nan=True)
    with pytest.raises(AssertionError, match=r"(?s)1 of 2 elements .*worst at \(1,\): actual nan, expected 2.0"):
        assert_close(nan, np.array([1.0, 2.0]), equal_nan=True)


def test_infinities_match_only_themselves():
    assert_close(np.array([np.inf, -np.inf, 1.0]), np.array([np.inf, -np.inf, 1.0]))
    with pytest.raises(AssertionError, match=r"worst at \(0,\): actual 3e\+38, expected inf"):
        assert_close(np.array([3e38, 1.0]), np.array([np.inf, 1.0]), rtol=0.5, atol=0.0)
    with pytest.raises(AssertionError, match="actual -inf, expected inf"):
        assert_close(np.array([-np.inf]), np.array([np.inf]))


def test_integers_compare_exactly_across_widths():
    assert_close(np.arange(6, dtype=np.int32), np.arange(6, dtype=np.int64))
    with pytest.raises(AssertionError, match=r"(?s)not equal: 1 of 6 elements .*first at \(5,\): actual 5, expected 6"):
        assert_close(np.arange(6, dtype=np.int32), np.array([0, 1, 2, 3, 4, 6]))


def test_shape_dtype_and_tolerance_arguments_are_checked():
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(2, 3\), expected \(3, 2\)"):
        assert_close(np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(AssertionError, match="dtypes differ: actual float32, expected float64"):
        assert_close(np.zeros(3, np.float32), np.zeros(3), check_dtype=True)
    with pytest.raises(ValueError, match=r"give both rtol and atol or neither \(got only rtol\)"):
        assert_close(np.zeros(3), np.zeros(3), rtol=1e-3)


def test_torch_cpu_tensors_compare_including_bfloat16(rng):
    torch = pytest.importorskip("torch")
    values = rng.standard_normal((8, 16))
    tensor = torch.tensor(values, dtype=torch.bfloat16)
    assert as_numpy(tensor).dtype == np.dtype(ml_dtypes.bfloat16)
    assert_close(tensor, values)
    wrong = values.copy()
    wrong[2, 3] += 1.0
    with pytest.raises(AssertionError, match=r"worst at \(2, 3\)"):
        assert_close(tensor, wrong)


class _HostDLPack:
    """An array that only speaks DLPack (as JAX's CPU arrays do)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_as_numpy_takes_numpy_dlpack_and_sequences(rng):
    values = rng.standard_normal(5)
    assert as_numpy(values) is values
    np.testing.assert_array_equal(as_numpy(_HostDLPack(values)), values)
    np.testing.assert_array_equal(as_numpy([1.5, 2.5]), np.array([1.5, 2.5]))


class _DeviceArray:
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (1 << 20, False), "version": 3}


@no_gpu
def test_a_device_array_without_a_gpu_is_a_launch_error():
    with pytest.raises(LaunchError, match="no usable CUDA driver|cuInit failed"):
        as_numpy(_DeviceArray())


# -- do_bench ------------------------------------------------------------------------------------------
@no_gpu
def test_do_bench_without_a_gpu_says_it_needs_one():
    with pytest.raises(LaunchError, match="do_bench times calls on a GPU with CUDA events: "):
        testing.do_bench(lambda: None)


class FakeTimer:
    """A clock that advances as the benchmarked calls and flushes run (flushes cost 100 ms)."""

    def __init__(self, durations, flush_l2=True):
        self.flush_l2 = flush_l2
        self.now = 0.0
        self.durations = iter(durations)
        self.flushes = 0
        self.calls = 0

    def call(self):
        self.calls += 1
        self.now += next(self.durations)

    def record(self):
        return self.now

    def elapsed(self, start, end):
        return end - start

    def flush(self):
        self.flushes += 1
        self.now += 100.0

    def synchronize(self):
        pass


def test_bench_runs_warmup_and_rep_by_the_estimated_time_and_times_each_call_alone():
    # 1 first call, 5 estimating calls of 2 ms, warmup 10 ms -> 5 calls, rep 20 ms -> 10 timed calls
    timed = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    timer = FakeTimer([2.0] * 11 + timed)
    result = testing._bench(timer.call, 10, 20, "all", None, timer)
    assert result == timed  # a flush before each timed call, never inside its interval
    assert (timer.calls, timer.flushes) == (21, 10)


def test_bench_without_the_flush_warms_the_cache_untimed_before_each_timed_call():
    # as above, plus one untimed call of 50 ms after each flush: neither is inside a timed interval
    timed = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    timer = FakeTimer([2.0] * 11 + [d for t in timed for d in (50.0, t)], flush_l2=False)
    assert testing._bench(timer.call, 10, 20, "all", None, timer) == timed
    assert (timer.calls, timer.flushes) == (31, 10)


@pytest.mark.parametrize("mode, expected", [("min", 1.0), ("max", 10.0), ("mean", 5.5), ("median", 5.5)])
def test_bench_return_modes(mode, expected):
    timer = FakeTimer([2.0] * 11 + [float(v) for v in range(1, 11)])
    assert testing._bench(timer.call, 10, 20, mode, None, timer) == expected


def test_bench_quantiles_and_bad_modes():
    timer = FakeTimer([2.0] * 11 + [float(v) for v in range(1, 11)])
    assert testing._bench(timer.call, 10, 20, "median", [0.0, 0.5, 1.0], timer) == [1.0, 5.5, 10.0]
    with pytest.raises(ValueError, match="return_mode must be one of min, max, mean, median, all, got 'p50'"):
        testing.do_bench(lambda: None, return_mode="p50")
    with pytest.raises(ValueError, match=r"quantiles must lie in \[0, 1\]"):
        testing.do_bench(lambda: None, quantiles=[50])


def test_relative_error_is_the_norm_of_the_difference_over_the_norm_of_the_reference(rng):
    want = rng.standard_normal((3, 5))
    got = (want + 1e-3 * rng.standard_normal((3, 5))).astype(np.float32)
    expected = np.sqrt(((got.astype(np.float64) - want) ** 2).sum() / (want**2).sum())
    assert testing.relative_error(got, want) == pytest.approx(expected, rel=1e-12)
    rows = testing.relative_error(got, want, axis=1)
    assert rows.shape == (3,) and rows == pytest.approx(np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1))
    assert testing.relative_error(got, want, scale=2 * want) == pytest.approx(expected / 2, rel=1e-12)
    halves = got.astype(ml_dtypes.bfloat16)
    assert testing.relative_error(halves, want) == pytest.approx(
        np.linalg.norm(halves.astype(np.float64) - want) / np.linalg.norm(want), rel=1e-12)


def test_relative_error_of_a_result_with_a_nan_or_an_infinity_is_infinite(rng):
    want = rng.standard_normal((2, 4))
    for poison in (np.nan, np.inf):
        got = want.copy()
        got[1, 2] = poison
        assert testing.relative_error(got, want) == np.inf
        assert list(testing.relative_error(got, want, axis=1)) == [0.0, np.inf]
