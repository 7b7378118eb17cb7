"""autotuner.parallel.compile_many: configs compiled in worker processes give the CUDA of serial compiles;
a failing or crashing config is reported with its message and the others compile; factories workers
cannot import compile in-process; a factory in the script being run is found by the workers."""

import os
import subprocess
import sys
import textwrap

import pytest

import tilemlir
import tilemlir.language as T
from autotune_kernels import crashing, scale
from tilemlir.autotuner import compile_many

ARCH = "sm_90a"


@pytest.fixture(scope="module")
def compiled():
    """One pool of two workers for four configs: two good, one that does not compile, one that crashes."""
    configs = [{"block": 128}, {"block": 256}, {"block": 64, "crash": True}, {"block": 256, "threads": 2048}]
    return compile_many(crashing, configs, workers=2, arch=ARCH)


def test_workers_compile_the_cuda_a_serial_compile_gives(compiled):
    for result, block in zip(compiled[:2], (128, 256)):
        assert result.ok and result.pid != os.getpid()
        serial = crashing.instantiate(block=block).compile("cuda", arch=ARCH, use_cache=False)
        assert result.kernel.cuda_source() == serial.cuda_source()
        assert result.kernel.cubin == serial.cubin
        assert result.kernel.signature == serial.signature
        assert (result.kernel.name, result.kernel.target) == ("scale_kernel", "cuda")


def test_a_worker_compiled_kernel_exports_and_loads_as_a_serial_one(compiled, tmp_path):
    """benchmarks/tune.py exports the kernels workers compiled: the artifact loads back to the same kernel."""
    from tilemlir.runtime import load

    kernel = compiled[0].kernel
    directory = kernel.export(tmp_path / "scale")
    loaded = load(directory)
    assert loaded.cubin == kernel.cubin and loaded.signature == kernel.signature
    assert loaded.cuda_source() == kernel.cuda_source()


def test_a_config_that_does_not_compile_is_reported_with_its_message(compiled):
    failed = compiled[3]
    assert failed.config == {"block": 256, "threads": 2048} and failed.kernel is None
    assert failed.error.startswith("CompileError: ") and "threads must be in 1..1024, got 2048" in failed.error
    assert "autotune_kernels.py:" in failed.error  # located in the kernel's source


def test_a_crashing_config_fails_alone(compiled):
    crashed = compiled[2]
    assert crashed.kernel is None and crashed.config == {"block": 64, "crash": True}
    assert crashed.error.startswith("the compiler process died while compiling this config (exit status 3")
    assert all(r.ok for r in compiled[:2])


def test_a_factory_workers_cannot_import_compiles_in_process():
    @tilemlir.jit(out_idx=[1])
    def local_copy(block=128):
        N = T.symbolic("N")

        @T.prim_func
        def copy_kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                x = T.alloc_fragment((block,), "float32")
                T.copy(X[bx * block], x)
                T.copy(x, Y[bx * block])

        return copy_kernel

    results = compile_many(local_copy, [{"block": 128}, {"block": 256}], workers=2, arch=ARCH)
    assert [(r.ok, r.pid) for r in results] == [(True, os.getpid())] * 2


def test_bad_arguments():
    with pytest.raises(TypeError, match="compile_many compiles a @tilemlir.jit factory"):
        compile_many(scale.instantiate(), [{}])
    with pytest.raises(ValueError, match="workers must be a positive int, got 0"):
        compile_many(scale, [{}], workers=0)


SCRIPT = """
import os
import sys

import tilemlir
import tilemlir.language as T

print("top level ran in", os.getpid())


@tilemlir.jit(out_idx=[1])
def negate(block=128):
    N = T.symbolic("N")

    @T.prim_func
    def negate_kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            x = T.alloc_fragment((block,), "float32")
            T.copy(X[bx * block], x)
            for i in T.Parallel(block):
                x[i] = -x[i]
            T.copy(x, Y[bx * block])

    return negate_kernel


if __name__ == "__main__":
    results = tilemlir.compile_many(negate, [{"block": 128}, {"block": 256}], workers=2, arch="sm_90a")
    for r in results:
        print("result", r.ok, r.pid != os.getpid(), r.error)
"""


def test_a_factory_in_the_script_being_run_compiles_in_workers(tmp_path):
    script = tmp_path / "negate_script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("result True True None") == 2
    # the workers ran the script's top level (to find the factory) but not its main block
    assert done.stdout.count("top level ran in") == 1 and done.stderr.count("top level ran in") == 2
