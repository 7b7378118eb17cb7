"""TileLang's `@autotune(configs=...)` without key= (tilemlir/autotuner/tilelang_style.py): calls that pass a
tunable argument are the jit function's own; others take the first config that compiles on the CPU target and
are a located error where TileLang would tune on the GPU."""

from pathlib import Path

import numpy as np
import pytest

import tilemlir
from frontend_util import load_module
from tilemlir.diagnostics import CompileError

SOURCE = """
def configs():
    return [{"block": 4096, "threads": 64}, {"block": 64, "threads": 32}, {"block": 128, "threads": 64}]


@tilemlir.autotune(configs=configs(), warmup=3, rep=20, timeout=10, skip_check=True)
@tilemlir.jit
def scale(X, factor: float, block=32, threads=32):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    Y = T.empty((N,), T.float32)
    with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
        x = T.alloc_fragment((block,), T.float32)
        T.copy(X[bx * block], x)
        for i in T.Parallel(block):
            x[i] = x[i] * factor
        T.copy(x, Y[bx * block])
    return Y


@tilemlir.autotune(configs={"block": [64, 128]})
@tilemlir.jit(out_idx=[-1])
def double(N, block=32):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                Y[bx * block + i] = X[bx * block + i] * 2
    return main
"""


@pytest.fixture
def module(tmp_path):
    return load_module(tmp_path, SOURCE)


def test_a_tunable_argument_given_means_no_tuning(module, rng, monkeypatch, recwarn):
    monkeypatch.setenv("TILEMLIR_INTERPRET", "1")
    x = rng.standard_normal(300).astype(np.float32)
    assert np.array_equal(module.scale(x, 3.0, block=128), x * np.float32(3))
    assert np.array_equal(module.scale(x, 3.0, 256), x * np.float32(3))  # positionally too
    kernel = module.scale.compile(N=300, factor=3.0, block=64, target="cpu")
    assert np.array_equal(kernel(x), x * np.float32(3))
    assert np.array_equal(module.double.compile(300, block=64)(x), x * 2)  # a factory
    assert not [w for w in recwarn if "autotuning" in str(w.message)]


def test_untuned_on_the_cpu_takes_the_first_config_that_compiles(module, rng, monkeypatch):
    monkeypatch.setenv("TILEMLIR_INTERPRET", "thread")
    x = rng.standard_normal(300).astype(np.float32)
    with pytest.warns(RuntimeWarning, match=r"using the first config that compiles, block=64, threads=32"):
        y = module.scale(x, 0.5)  # a 4096 box does not fit the 300 elements: it does not compile
    assert np.array_equal(y, x * np.float32(0.5))


def test_tilelang_tuning_on_the_gpu_is_a_located_error(module, rng):
    x = rng.standard_normal(300).astype(np.float32)
    with pytest.raises(CompileError) as info:
        module.scale(x, 0.5)
    assert "pass the tunable arguments (block, threads)" in str(info.value)
    location = info.value.location
    assert Path(location.file).read_text().splitlines()[location.line - 1].startswith("@tilemlir.autotune(configs=c")


def test_unknown_keywords_are_refused():
    with pytest.raises(TypeError, match="unexpected keyword argument.*grid"):
        tilemlir.autotune(configs=[{"block": 64}], grid=3)
    with pytest.raises(TypeError, match="unexpected keyword argument.*timeout"):
        tilemlir.autotune(configs=[{"block": 64}], key=["N"], timeout=3)
