"""The source-level disk cache: a CUDA kernel compiled before loads in a new process without MLIR."""

import subprocess
import sys
import textwrap

import pytest

from tilemlir import source_cache

KERNEL_FILE = textwrap.dedent('''
    import tilemlir
    import tilemlir.language as T

    SCALE = {scale}

    @tilemlir.jit(out_idx=[1])
    def scale(N=256):
        M = T.symbolic("M")

        @T.prim_func
        def scale_kernel(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
            with T.Kernel(M, threads=64) as bx:
                x = T.alloc_fragment((1, N), T.float32)
                T.copy(X[bx, 0], x)
                for i, j in T.Parallel(1, N):
                    x[i, j] = x[i, j] * SCALE
                T.copy(x, Y[bx, 0])

        return scale_kernel
''')

PROBE = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[1])
    import kernels
    k = kernels.scale(N=256)
    print("mlir" if "torch_mlir" in sys.modules else "no-mlir", k.cuda_source().count("2.5f"), k.cuda_source().count("3.0f"))
''')


def _run(tmp_path, env):
    result = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.fixture
def env(tmp_path):
    import os

    return {**os.environ, "TILEMLIR_CACHE_DIR": str(tmp_path / "cache")}


def test_second_process_loads_without_mlir_and_a_changed_constant_recompiles(tmp_path, env):
    (tmp_path / "kernels.py").write_text(KERNEL_FILE.format(scale=2.5))
    assert _run(tmp_path, env) == ["mlir", "1", "0"]
    assert _run(tmp_path, env) == ["no-mlir", "1", "0"]
    (tmp_path / "kernels.py").write_text(KERNEL_FILE.format(scale=3.0))
    assert _run(tmp_path, env) == ["mlir", "0", "1"]


def test_a_value_without_a_faithful_description_makes_the_kernel_uncacheable():
    class Opaque:
        pass

    opaque = Opaque()

    def kernel():
        return opaque

    assert source_cache.kernel_key(kernel, "cuda", {}, None) is None


def test_key_depends_on_closure_values_and_options():
    def make(value):
        def kernel():
            return value
        return kernel

    keys = {source_cache.kernel_key(make(v), "cuda", o, None) for v in (1, 2) for o in ({}, {"fast_math": True})}
    assert len(keys) == 4


def test_key_depends_on_annotations_evaluated_outside_the_closure():
    import tilemlir.language as T

    def make(dtype):
        M = T.symbolic("M")

        def kernel(X: T.Tensor((M, 64), dtype)):
            return X

        return kernel

    assert make("float16").__closure__ is None  # the annotation's dtype is not a free variable
    assert source_cache.kernel_key(make("float16"), "cuda", {}, None) != \
        source_cache.kernel_key(make("bfloat16"), "cuda", {}, None)


def test_override_and_dump_directories_bypass_the_source_cache(tmp_path, env):
    (tmp_path / "kernels.py").write_text(KERNEL_FILE.format(scale=2.5))
    assert _run(tmp_path, env) == ["mlir", "1", "0"]
    for knob in ("TILEMLIR_CUDA_OVERRIDE", "TILEMLIR_DUMP_DIR"):
        assert _run(tmp_path, {**env, knob: str(tmp_path / knob)}) == ["mlir", "1", "0"]
    assert _run(tmp_path, env) == ["no-mlir", "1", "0"]


def test_key_depends_on_the_prover_budget(monkeypatch):
    def kernel():
        return 1

    keys = set()
    for rlimit in ("1000", "2000"):
        monkeypatch.setenv("TILEMLIR_PROVER_RLIMIT", rlimit)
        keys.add(source_cache.kernel_key(kernel, "cuda", {}, None))
    assert len(keys) == 2


def test_the_compiler_fingerprint_covers_the_installed_z3(monkeypatch, tmp_path):
    import importlib.machinery
    import importlib.util

    fake_z3 = tmp_path / "z3"
    (fake_z3 / "lib").mkdir(parents=True)
    (fake_z3 / "__init__.py").write_text("")
    library = fake_z3 / "lib" / "libz3.so"
    find_spec = importlib.util.find_spec

    def finding_the_fake(name, *args):
        if name == "z3":
            return importlib.machinery.ModuleSpec("z3", None, origin=str(fake_z3 / "__init__.py"))
        return find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", finding_the_fake)
    prints = []
    for build in (b"z3 4.13", b"z3 4.14!"):
        library.write_bytes(build)
        source_cache.compiler_fingerprint.cache_clear()
        prints.append(source_cache.compiler_fingerprint())
    source_cache.compiler_fingerprint.cache_clear()
    assert prints[0] != prints[1]
