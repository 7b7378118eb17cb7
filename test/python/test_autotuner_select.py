"""autotuner.select: check runs against a reference, the 0xFF fills that expose unwritten elements,
restore_value, error isolation per stage, and the choice; with stand-in kernels on numpy arrays."""

import numpy as np
import pytest

from tilemlir.autotuner.select import POISON_BYTE, Candidate, Trial, best, select
from tilemlir.runtime.signature import KernelSignature, TensorParam


def signature(out_idx=()):
    return KernelSignature(name="double", params=(TensorParam("X", "float32", ("N",), written=False),
                                                  TensorParam("Y", "float32", ("N",))),
                           symbols=("N",), grid=("1", "1", "1"), block=(32, 1, 1), cuda_params=("X", "Y", "N"),
                           out_idx=out_idx)


class Double:
    """Y = 2 X into the caller's Y, over the first `cover` elements (None: all), plus `bias`."""

    def __init__(self, cover=None, bias=0.0, fail=None):
        self.signature = signature()
        self.cover, self.bias, self.fail = cover, bias, fail

    def __call__(self, x, y):
        if self.fail:
            raise RuntimeError(self.fail)
        end = len(x) if self.cover is None else self.cover
        y[:end] = 2 * x[:end] + self.bias


class DoubleReturning:
    """Y = 2 X into an array it allocates (out_idx), kept so a test can see what became of it."""

    signature = signature(out_idx=(1,))

    def __init__(self):
        self.returned = []

    def __call__(self, x):
        self.returned.append(2 * x)
        return self.returned[-1]


def timer(times):
    """do_bench's stand-in: each candidate's time by the order it is timed in."""
    order = iter(times)
    return lambda fn: (fn(), next(order))[1]


def test_a_candidate_that_leaves_elements_unwritten_is_rejected(rng):
    x, y = rng.standard_normal(64).astype(np.float32), np.zeros(64, np.float32)
    trials = select([Candidate({"v": 0}, Double()), Candidate({"v": 1}, Double(cover=32))], (x, y),
                    bench=timer([2.0, 1.0]))
    # without the fill, the second would find the first one's results in y[32:] and pass
    assert trials[0].ok and trials[0].ms == 2.0
    assert (trials[1].stage, trials[1].ms) == ("check", None)
    assert "wrong result: output Y: not close" in trials[1].error and "32 of 64 elements" in trials[1].error
    assert best(trials) is trials[0]


def test_ref_prog_is_the_reference_and_can_reject_the_first_candidate(rng):
    x, y = rng.standard_normal(16).astype(np.float32), np.empty(16, np.float32)
    candidates = [Candidate({"v": 0}, Double(bias=1.0)), Candidate({"v": 1}, Double())]
    trials = select(candidates, (x, y), bench=timer([1.0]), ref_prog=lambda x, y: 2.0 * x.astype(np.float64))
    assert trials[0].stage == "check" and "16 of 16 elements" in trials[0].error
    assert trials[1].ok
    with pytest.raises(ValueError, match=r"ref_prog returned 2 arrays; the kernel writes 1 \(Y\)"):
        select(candidates, (x, y), bench=timer([]), ref_prog=lambda x, y: (x, x))


def test_the_arguments_hold_their_values_again_after_selection(rng):
    x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    original = y.copy()
    select([Candidate({"v": 0}, Double()), Candidate({"v": 1}, Double())], (x, y), bench=timer([1.0, 2.0]))
    np.testing.assert_array_equal(y, original)


def test_returned_outputs_are_filled_before_they_are_freed(rng):
    x = rng.standard_normal(8).astype(np.float32)
    kernel = DoubleReturning()
    trials = select([Candidate({"v": 0}, kernel)], (x,), bench=timer([1.0]))
    assert trials[0].ok
    assert (kernel.returned[0].view(np.uint8) == POISON_BYTE).all()  # the checked run's output
    np.testing.assert_array_equal(kernel.returned[-1], 2 * x)  # a timed run's output is left alone


class Accumulate:
    """Y += X: reads what it writes."""

    signature = signature()

    def __call__(self, x, y):
        y += x


def test_restore_value_copies_an_in_out_argument_back_before_each_run(rng):
    x, y = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    original = y.copy()
    seen = []

    def run(kernel, args, config):
        kernel(*args)
        seen.append(args[1].copy())

    trials = select([Candidate({"v": 0}, Accumulate()), Candidate({"v": 1}, Accumulate())], (x, y), run=run,
                    bench=lambda fn: (fn(), fn(), 1.0)[2], restore_value=["Y"])
    assert all(t.ok for t in trials)
    # check runs, then two timed calls per candidate: each candidate's first call of each starts from the caller's Y
    for run_index in (0, 1, 2, 4):
        np.testing.assert_array_equal(seen[run_index], original + x)
    np.testing.assert_array_equal(seen[3], (original + x) + x)
    np.testing.assert_array_equal(y, original)
    with pytest.raises(ValueError, match="restore_value names 'Z', which is not a tensor argument of kernel 'double'"):
        select([Candidate({}, Accumulate())], (x, y), bench=timer([1.0]), restore_value=["Z"])


def test_failures_are_the_candidates_own_and_name_their_stage(rng):
    x, y = rng.standard_normal(8).astype(np.float32), np.empty(8, np.float32)
    ran = []

    def run(kernel, args, config):
        ran.append(config["v"])
        return kernel(*args)

    def bench(fn):
        fn()
        if ran[-1] == 3:
            raise RuntimeError("the clock broke")
        return 1.0

    candidates = [Candidate({"v": 0}, Double()), Candidate({"v": 1}, Double(fail="no resources")),
                  Candidate({"v": 2}, Double()), Candidate({"v": 3}, Double())]
    trials = select(candidates, (x, y), run=run, bench=bench)
    assert [(t.stage, t.error, t.ms) for t in trials] == [
        (None, None, 1.0), ("run", "RuntimeError: no resources", None), (None, None, 1.0),
        ("time", "RuntimeError: the clock broke", None)]


def test_best_is_the_fastest_passing_trial_and_the_first_on_a_tie():
    trials = [Trial({"v": 0}, ms=2.0), Trial({"v": 1}, error="x", stage="run"), Trial({"v": 2}, ms=1.0),
              Trial({"v": 3}, ms=1.0)]
    assert best(trials) is trials[2]
    assert best([Trial({"v": 0}, error="x", stage="compile")]) is None


def test_configs_with_the_same_kernel_run_once(rng):
    x, y = rng.standard_normal(8).astype(np.float32), np.empty(8, np.float32)
    same, other = Double(), Double()
    same.cubin, other.cubin = b"kernel A", b"kernel B"
    twin = Double(bias=5.0)  # would fail its check if it ran
    twin.cubin = b"kernel A"
    ran = []

    def run(kernel, args, config):
        ran.append(config["v"])
        return kernel(*args)

    trials = select([Candidate({"v": 0}, same), Candidate({"v": 1}, other), Candidate({"v": 2}, twin)], (x, y),
                    run=run, bench=lambda fn: (fn(), 1.5)[1])
    assert ran == [0, 1, 0, 1]  # check runs, then timed calls: v=2 never ran
    assert (trials[2].config, trials[2].ms, trials[2].same_as) == ({"v": 2}, 1.5, {"v": 0})
    assert trials[2].describe() == "v=2: 1.5000 ms (the kernel of v=0)"


def test_a_check_function_replaces_assert_close(rng):
    x, y = rng.standard_normal(8).astype(np.float32), np.empty(8, np.float32)
    seen = []

    def check(name, actual, expected):
        seen.append((name, actual.dtype, expected.dtype))
        if np.max(np.abs(actual - expected)) > 1.0:  # an absolute bound: x's draw cannot move the verdicts
            raise AssertionError("off by more than one")

    trials = select([Candidate({"v": 0}, Double()), Candidate({"v": 1}, Double(bias=0.01)),
                     Candidate({"v": 2}, Double(bias=100.0))], (x, y), bench=timer([1.0, 2.0]), check=check,
                    ref_prog=lambda x, y: 2.0 * x.astype(np.float64))
    assert [t.ok for t in trials] == [True, True, False]
    assert trials[2].error == "wrong result: off by more than one"
    assert seen[0] == ("Y", np.float32, np.float64)
