"""The source-level disk cache: a CUDA kernel compiled before loads in a new process without MLIR."""

import logging
import subprocess
import sys
import textwrap

import pytest

import tilemlir
from tilemlir import source_cache
from tilemlir.runtime import cache

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


ARCH_PROBE = textwrap.dedent('''
    import sys
    sys.path.insert(0, sys.argv[1])
    from tilemlir.runtime import driver
    if len(sys.argv) > 2:
        driver.current_arch = lambda: sys.argv[2]  # the GPU of this "machine"
    import kernels
    k = kernels.scale(N=256)
    print("mlir" if "torch_mlir" in sys.modules else "no-mlir", k.arch, k.cubin[:4] == b"\\x7fELF")
''')


def _run(tmp_path, env, probe=PROBE, *args):
    result = subprocess.run([sys.executable, "-c", probe, str(tmp_path), *args], capture_output=True, text=True, env=env,
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


def test_a_kernel_cached_without_a_gpu_is_not_served_to_another_arch(tmp_path, env):
    (tmp_path / "kernels.py").write_text(KERNEL_FILE.format(scale=2.5))
    assert _run(tmp_path, env, ARCH_PROBE) == ["mlir", "sm_90a", "True"]  # no GPU here: sm_90a
    assert _run(tmp_path, env, ARCH_PROBE, "sm_80") == ["mlir", "sm_80", "True"]
    assert _run(tmp_path, env, ARCH_PROBE, "sm_80") == ["no-mlir", "sm_80", "True"]
    assert _run(tmp_path, env, ARCH_PROBE) == ["no-mlir", "sm_90a", "True"]


def test_key_depends_on_the_arch_the_toolchain_and_the_compiler(monkeypatch):
    from tilemlir.runtime import nvrtc, toolchain

    def kernel():
        return 1

    base = source_cache.kernel_key(kernel, "cuda", {}, None)
    assert base == source_cache.kernel_key(kernel, "cuda", {}, None)
    keys = {source_cache.kernel_key(kernel, "cuda", {"arch": "sm_80"}, None)}
    with monkeypatch.context() as patch:
        patch.setattr(nvrtc, "default_arch", lambda: "sm_86")
        keys.add(source_cache.kernel_key(kernel, "cuda", {}, None))
    with monkeypatch.context() as patch:
        patch.setattr(toolchain, "nvrtc_facts", lambda: ("99.0", (80, 90)))
        keys.add(source_cache.kernel_key(kernel, "cuda", {}, None))
    with monkeypatch.context() as patch:
        patch.setattr(tilemlir, "__version__", "9.9.9", raising=False)
        keys.add(source_cache.kernel_key(kernel, "cuda", {}, None))
    with monkeypatch.context() as patch:
        patch.setattr(source_cache, "compiler_fingerprint", lambda: "edited")
        keys.add(source_cache.kernel_key(kernel, "cuda", {}, None))
    assert len(keys) == 5 and base not in keys


def test_an_entry_for_another_arch_under_the_key_is_discarded(scale_factory, caplog):
    cold, key = _fresh(scale_factory)
    assert source_cache.lookup(key, {}).arch == "sm_90a"
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        assert source_cache.lookup(key, {"arch": "sm_80"}) is None
    assert any("built for sm_90a, not sm_80" in r.message for r in caplog.records)


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


def test_a_jit_function_the_kernel_names_is_described_by_its_python_function():
    def make(scale):
        @tilemlir.jit
        def helper(x):
            return x * scale

        def kernel():
            return helper

        return kernel

    first, second = (source_cache.kernel_key(make(scale), "cuda", {}, None) for scale in (2.0, 3.0))
    assert first is not None and second is not None
    assert first != second  # the helper's closure is part of the key


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


@pytest.fixture
def scale_factory(tmp_path, monkeypatch):
    """KERNEL_FILE's factory, imported in this process, compiling into a cache of this test's own."""
    from frontend_util import load_module

    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    return load_module(tmp_path, KERNEL_FILE.format(scale=2.0), header="").scale.fn


def _fresh(factory):
    """The kernel compiled by a new JitFunction (whose in-memory cache is empty), and its source-level key."""
    instance = tilemlir.jit(out_idx=[1])(factory).instantiate(N=256)
    return instance.compile(), source_cache.kernel_key(instance.fn, "cuda", {}, [1])


def _truncate(path):
    path.write_bytes(path.read_bytes()[:-7])


DAMAGE = {
    "truncated cubin": ("scale_kernel.cubin", _truncate),
    "garbage cubin": ("scale_kernel.cubin", lambda p: p.write_bytes(b"\x7fELF" + bytes(300))),
    "missing cubin": ("scale_kernel.cubin", lambda p: p.unlink()),
    "non-UTF-8 signature": ("signature.json", lambda p: p.write_bytes(b"\xff" + p.read_bytes())),
    "signature of another shape": ("signature.json", lambda p: p.write_text(p.read_text().replace("64", "32"))),
    "truncated manifest": ("manifest.json", _truncate),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_source_level_entry_is_discarded_and_the_kernel_compiled_again(damage, caplog, scale_factory):
    cold, key = _fresh(scale_factory)
    assert "final" in cold.stage_ir  # compiled through the frontend and the passes
    name, corrupt = DAMAGE[damage]
    corrupt(cache.entry_dir(key) / name)
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        again, _ = _fresh(scale_factory)
    assert "final" in again.stage_ir
    assert again.cubin == cold.cubin and again.cuda_source() == cold.cuda_source()
    assert again.signature == cold.signature and again.signature.params[0].shape == ("M", 256)
    assert any("discarding the damaged cache entry" in r.message for r in caplog.records)
    warm, _ = _fresh(scale_factory)
    assert warm.stage_ir == {} and warm.cubin == cold.cubin  # stored whole again


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
