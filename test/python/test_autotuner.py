"""@tilemlir.autotune on a machine without a GPU: the config space, keys, error isolation, the choice on
disk (reused by a second process), TILEMLIR_AUTOTUNE, and the CPU target. Kernels compile for CUDA (NVRTC
needs no GPU); a stand-in GPU runs each config's CPU-backend twin for the check runs and reports a time
per config."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tilemlir
from autotune_kernels import SCALE_CONFIGS, scale
from tilemlir.autotuner import AutotuneError
from tilemlir.autotuner.space import expand, label
from tilemlir.autotuner.tilelang_style import TileLangAutotuned

HERE = Path(__file__).resolve().parent
TIMES = {"block=128": 3.0, "block=256": 2.0, "block=64, threads=2048": 0.1, "block=64, offset=1.0": 0.5}


@pytest.fixture(autouse=True)
def _private_store(tmp_path, monkeypatch):
    """Each test tunes into its own cache: the choices of one must not answer another."""
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEMLIR_AUTOTUNE", raising=False)


CPU_TWINS = {}


class FakeGPU:
    """`run` computes a config's outputs with its CPU-compiled twin; `bench` calls once and returns the
    config's time from `times`."""

    def __init__(self, times=TIMES):
        self.times = times
        self.benched, self.last = [], None

    def run(self, kernel, args, config):
        self.last = label(config)
        if self.last not in CPU_TWINS:
            CPU_TWINS[self.last] = tilemlir.compile(scale.instantiate(**config), target="cpu")
        return CPU_TWINS[self.last](*args)

    def bench(self, fn):
        fn()
        self.benched.append(self.last)
        return self.times[self.last]


def tuned_scale(gpu, configs=SCALE_CONFIGS, key=("N",), **options):
    return tilemlir.autotune(configs=configs, key=list(key), workers=1, run=gpu.run, do_bench=gpu.bench,
                             **options)(scale)()


def vector(rng, n):
    return rng.standard_normal(n).astype(np.float32)


# -- the config space -----------------------------------------------------------------------------------
def test_configs_from_a_list_a_dict_of_lists_and_a_callable():
    parameters = ["block", "threads", "factor"]
    assert expand([{"block": 64}, {"block": 128, "threads": 256}], parameters, {}, "f") == [
        {"block": 64}, {"block": 128, "threads": 256}]
    assert expand({"block": [64, 128], "threads": [128, 256]}, parameters, {}, "f") == [
        {"block": 64, "threads": 128}, {"block": 64, "threads": 256},
        {"block": 128, "threads": 128}, {"block": 128, "threads": 256}]
    by_factor = lambda factor: {"block": [32 * factor]}  # noqa: E731
    assert expand(by_factor, parameters, {"factor": 2}, "f") == [{"block": 64}]


def test_fixed_arguments_replace_config_values_and_duplicates_go():
    space = expand({"block": [64, 128], "threads": [128, 256]}, ["block", "threads"], {"threads": 128}, "f")
    assert space == [{"block": 64, "threads": 128}, {"block": 128, "threads": 128}]


def test_config_space_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"autotune config \{'blk': 64\} names 'blk', which factory 'f' does not "
                                         r"take \(its parameters: block, threads\)"):
        expand([{"blk": 64}], ["block", "threads"], {}, "f")
    with pytest.raises(ValueError, match="autotune of 'f' has no configs to try"):
        expand([], ["block"], {}, "f")
    with pytest.raises(TypeError, match="'block' needs a non-empty list of values, got 64"):
        expand({"block": 64}, ["block"], {}, "f")


def test_decorator_misuse_is_explained():
    with pytest.raises(TypeError, match=r"needs its configs and key: write @tilemlir.autotune\(configs="):
        tilemlir.autotune(scale)
    assert isinstance(tilemlir.autotune(configs=[{}])(scale), TileLangAutotuned)  # no key=: TileLang's form
    with pytest.raises(TypeError, match="needs key=.*got 'N'"):
        tilemlir.autotune(configs=[{}], key="N")
    with pytest.raises(TypeError, match="@tilemlir.autotune goes above @tilemlir.jit"):
        tilemlir.autotune(configs=[{}], key=[])(scale.fn)
    with pytest.raises(TypeError, match="'scale_kernel' is a kernel"):
        tilemlir.autotune(configs=[{}], key=[])(scale.instantiate())


# -- tuning ---------------------------------------------------------------------------------------------
def test_tuning_keeps_the_fastest_correct_config_and_reports_the_others(rng):
    gpu = FakeGPU()
    kernel = tuned_scale(gpu)
    x = vector(rng, 1000)
    report = kernel.tune(x)
    assert (report.config, report.ms, report.source) == ({"block": 256}, 2.0, "tuned")
    assert report.key == (("N", 1000),)
    trials = {label(t.config): t for t in report.trials}
    assert trials["block=64, threads=2048"].stage == "compile"
    assert "threads must be in 1..1024, got 2048" in trials["block=64, threads=2048"].error
    assert trials["block=64, offset=1.0"].stage == "check"
    assert "wrong result: output Y" in trials["block=64, offset=1.0"].error  # faster, but wrong: discarded
    assert sorted(gpu.benched) == ["block=128", "block=256"]
    assert report.kernel.name == "scale_kernel" and "scale_kernel" in report.kernel.cuda_source()
    np.testing.assert_array_equal(kernel(x), 2 * x)  # the call runs the best kernel (here: its twin)
    assert "block=256, 2.0000 ms (tuned, 4 configs" in str(report)


def test_ref_prog_checks_every_config(rng):
    gpu = FakeGPU()
    kernel = tuned_scale(gpu, ref_prog=lambda x: x.astype(np.float64) * 2 + 1)  # only offset=1.0 is right
    report = kernel.tune(vector(rng, 300))
    assert report.config == {"block": 64, "offset": 1.0}
    assert [t.stage for t in report.trials] == ["check", "check", "compile", None]


def test_the_same_key_is_not_tuned_again_and_a_new_size_only_when_keyed(rng):
    keyed, unkeyed = FakeGPU(), FakeGPU()
    by_size, once = tuned_scale(keyed, key=["N"]), tuned_scale(unkeyed, key=[])
    for kernel in (by_size, once):
        kernel(vector(rng, 512))
        kernel(vector(rng, 512))
    assert len(keyed.benched) == len(unkeyed.benched) == 2
    by_size(vector(rng, 1024))
    once(vector(rng, 1024))
    assert len(keyed.benched) == 4 and len(unkeyed.benched) == 2
    assert by_size.tune(vector(rng, 1024)).key == (("N", 1024),) and once.tune(vector(rng, 7)).key == ()


def test_a_key_can_name_an_argument_and_must_name_something(rng):
    report = tuned_scale(FakeGPU(), key=["X"]).tune(vector(rng, 64))
    assert report.key == (("X", ((64,), "float32")),)
    with pytest.raises(ValueError, match="autotune key names 'Y', an output kernel 'scale' allocates"):
        tuned_scale(FakeGPU(), key=["Y"]).tune(vector(rng, 64))
    with pytest.raises(ValueError, match=r"names 'M', which is neither an argument of kernel 'scale' \(X\) nor a "
                                         r"symbolic dim \(N\)"):
        tuned_scale(FakeGPU(), key=["M"]).tune(vector(rng, 64))


def test_no_config_that_compiles_or_passes_is_an_error_listing_each(rng):
    with pytest.raises(AutotuneError, match=r"(?s)no config of 'scale' compiles:\n  threads=2048: compile failed: "
                                            r"CompileError: .*threads must be in 1\.\.1024, got 2048.*threads=4096"):
        tuned_scale(FakeGPU(), configs={"threads": [2048, 4096]}).tune(vector(rng, 64))
    gpu = FakeGPU(times={"block=64": 1.0, "block=128": 1.0})
    with pytest.raises(AutotuneError, match=r"(?s)no config of 'scale' passed for key N=64:.*block=64: check failed"):
        tuned_scale(gpu, configs={"block": [64, 128]}, ref_prog=lambda x: x).tune(vector(rng, 64))


# -- the choice on disk ---------------------------------------------------------------------------------
SECOND_PROCESS = """
import json, sys
sys.path.insert(0, {here!r})
import numpy as np
import tilemlir
from autotune_kernels import SCALE_CONFIGS, scale

def no_timing(fn):
    raise AssertionError("tuned again")

kernel = tilemlir.autotune(configs=SCALE_CONFIGS, key=["N"], workers=1, do_bench=no_timing)(scale)()
report = kernel.tune(np.ones({n}, np.float32))
print(json.dumps({{"source": report.source, "config": report.config, "ms": report.ms,
                  "compiler_loaded": "tilemlir.mlir" in sys.modules}}))
"""


def second_process(n):
    code = textwrap.dedent(SECOND_PROCESS.format(here=str(HERE), n=n))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_choice_is_stored_and_a_second_process_reuses_it(rng):
    scale._instances.clear()  # compile afresh, into this test's kernel cache, as a first process would
    kernel = tuned_scale(FakeGPU())
    assert kernel.tune(vector(rng, 2048)).config == {"block": 256}
    found = second_process(2048)
    # no timing, and not even the compiler: the best config's kernel came from the kernel cache
    assert found == {"source": "stored", "config": {"block": 256}, "ms": 2.0, "compiler_loaded": False}


def test_force_tunes_again_and_off_does_not_tune(rng, monkeypatch):
    x = vector(rng, 256)
    tuned_scale(FakeGPU()).tune(x)
    again = FakeGPU(times={**TIMES, "block=128": 1.0})
    assert tuned_scale(again).tune(x).source == "stored" and again.benched == []
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", "force")
    report = tuned_scale(again).tune(x)
    assert (report.source, report.config) == ("tuned", {"block": 128}) and len(again.benched) == 2
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", "on")
    assert tuned_scale(FakeGPU()).tune(x).config == {"block": 128}  # force stored its new choice
    monkeypatch.setenv("TILEMLIR_AUTOTUNE", "off")
    off = FakeGPU()
    report = tuned_scale(off).tune(x)
    assert (report.source, report.config, report.ms, off.benched) == ("untuned", {"block": 128}, None, [])


def test_cache_results_false_keeps_nothing_on_disk(rng, tmp_path):
    tuned_scale(FakeGPU(), cache_results=False).tune(vector(rng, 64))
    assert not (tmp_path / "cache" / "autotune").exists()
    tuned_scale(FakeGPU()).tune(vector(rng, 64))
    assert len(list((tmp_path / "cache" / "autotune").rglob("*.json"))) == 2  # the inputs and one choice


# -- the CPU target -------------------------------------------------------------------------------------
def test_the_cpu_target_says_tuning_needs_a_gpu_and_uses_the_first_config_that_compiles(rng):
    on_cpu = tilemlir.jit(out_idx=[1], target="cpu")(scale.fn)
    kernel = tilemlir.autotune(configs=[{"threads": 2048}, {"block": 64, "factor": 3.0}, {"block": 128}],
                               key=["N"])(on_cpu)()
    x = vector(rng, 200)
    with pytest.warns(RuntimeWarning, match=r"autotuning 'scale' needs a GPU \(target='cpu'\): using the first "
                                            r"config that compiles, block=64, factor=3.0"):
        y = kernel(x)
    np.testing.assert_array_equal(y, 3 * x)
    assert kernel.tune(x).trials[0].stage == "compile"


def test_interpret_tunes_nothing_and_runs_the_first_config_on_the_cpu(rng, monkeypatch):
    monkeypatch.setenv("TILEMLIR_INTERPRET", "1")
    kernel = tilemlir.autotune(configs=[{"block": 64, "factor": 3.0}, {"block": 128}], key=["N"])(scale)()
    x = vector(rng, 200)
    with pytest.warns(RuntimeWarning, match=r"autotuning 'scale' needs a GPU \(target='cpu'\): using the first "
                                            r"config that compiles, block=64, factor=3.0"):
        y = kernel(x)
    np.testing.assert_array_equal(y, 3 * x)
    assert kernel.tune(x).kernel.target == "cpu"
