"""`tilemlir.jit`, `compile`, `lower` and `Kernel`: kinds, factory caching, stages, and routing to the driver."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import tilemlir
from frontend_util import load_module
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.driver import CompileResult
from tilemlir.mlir import ir
from tilemlir.options import CpuOptions, CudaOptions

KERNELS = """
    calls = []

    @tilemlir.jit(out_idx=[-2])
    def scale(X: T.Tensor((M,), T.float32), Y: T.Tensor((M,), T.float32), alpha: T.float32):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            x = T.alloc_fragment((128,), T.float32)
            T.copy(X[bx * 128], x)
            for i in T.Parallel(128):
                x[i] = x[i] * alpha
            T.copy(x, Y[bx * 128])

    @tilemlir.jit(out_idx=[1])
    def make_scale(block=128, dtype="float32"):
        calls.append((block, dtype))

        @T.prim_func
        def scale_kernel(X: T.Tensor((M,), dtype), Y: T.Tensor((M,), dtype)):
            with T.Kernel(T.ceildiv(M, block), threads=block) as bx:
                x = T.alloc_fragment((block,), dtype)
                T.copy(X[bx * block], x)
                T.copy(x, Y[bx * block])

        return scale_kernel

    def plain(X: T.Tensor((M,), T.float32)):
        with T.Kernel(4, threads=32) as bx:
            pass
"""


class FakeDriver(types.ModuleType):
    """Stands in for tilemlir.driver: records what the API hands over."""

    def __init__(self):
        super().__init__("tilemlir.driver")
        self.compiled = []
        self.lowered = []

    def compile_module(self, module, info, options):
        assert isinstance(module, ir.Module)
        target = "cuda" if isinstance(options, CudaOptions) else "cpu"
        self.compiled.append((info, target, options))
        kernel = types.SimpleNamespace(source=f"// {info.name} for {target}", signature=types.SimpleNamespace(
            name=info.name))
        return CompileResult(kernel, {}, {})

    def lower_module(self, module, stage, options):
        self.lowered.append((stage, options))
        return f"// {stage} of {module.body.operations[0].operation.name}"


@pytest.fixture
def kernels(tmp_path):
    return load_module(tmp_path, KERNELS)


@pytest.fixture
def driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setitem(sys.modules, "tilemlir.driver", fake)
    return fake


def test_kinds(kernels):
    assert kernels.scale.kind == "kernel" and kernels.make_scale.kind == "factory"
    assert tilemlir.jit(kernels.plain).kind == "kernel"
    assert repr(kernels.scale) == "<tilemlir.jit kernel 'scale'>"


def test_lower_frontend_parses_and_debuginfo_adds_locations(kernels):
    text = tilemlir.lower(kernels.scale)
    located = tilemlir.lower(kernels.scale, "frontend", debuginfo=True)
    assert "loc(" not in text and 'loc("' in located
    context = make_context()
    plain = ir.Module.parse(text, context)
    with_locations = ir.Module.parse(located, context)
    assert str(plain) == str(with_locations)
    assert str(plain).count('"tile.copy"') == 2


def test_lower_accepts_undecorated_functions(kernels):
    assert '"tile.kernel"' in tilemlir.lower(kernels.plain)


def test_factory_instances_are_cached_per_distinct_values(kernels):
    first = kernels.make_scale.instantiate(256)
    assert kernels.make_scale.instantiate(256) is first
    assert kernels.make_scale.instantiate(block=256, dtype="float32") is first
    other = kernels.make_scale.instantiate(64, "float16")
    assert other is not first
    assert kernels.calls == [(256, "float32"), (64, "float16")]
    assert "memref<?xf16>" in tilemlir.lower(other) and "{threads = 256 : i64}" in tilemlir.lower(first)


def test_factory_arguments_must_be_hashable(kernels):
    with pytest.raises(CompileError, match="must be hashable compile-time values"):
        kernels.make_scale.instantiate([128])


def test_calling_a_factory_compiles_once_per_values(kernels, driver):
    first = kernels.make_scale(128)
    assert kernels.make_scale(128) is first
    assert isinstance(first, tilemlir.api.Kernel)
    assert kernels.make_scale(64) is not first
    assert [(info.name, target) for info, target, _ in driver.compiled] == [
        ("scale_kernel", "cuda"), ("scale_kernel", "cuda")]
    assert driver.compiled[0][0].out_idx == (1,)


def test_compile_hands_module_info_target_and_options_to_the_driver(kernels, driver):
    kernel = tilemlir.compile(kernels.scale, target="cpu", fast_math=True)
    info, target, options = driver.compiled[0]
    assert (target, options) == ("cpu", CpuOptions(fast_math=True))
    assert info.out_idx == (1,) and [p.name for p in info.params] == ["X", "Y", "alpha"]
    assert kernel.compiled.source == "// scale for cpu"  # the driver's kernel is the Kernel's `compiled`
    assert kernel.target == "cpu" and kernel.options == CpuOptions(fast_math=True)
    assert tilemlir.compile(kernels.scale, target="cpu", fast_math=True) is kernel
    assert kernel.ir("frontend") == tilemlir.lower(kernels.scale)
    assert kernel.ir("thread") == "// thread of func.func"
    assert driver.lowered == [("thread", CpuOptions(fast_math=True))]  # the kernel's own options
    assert tilemlir.lower(kernels.scale, "final") == "// final of func.func"
    assert tilemlir.lower(kernels.scale, "thread", target="cpu", tma=True) == "// thread of func.func"
    assert driver.lowered[1:] == [("final", CudaOptions()), ("thread", CpuOptions(tma=True))]


def test_lower_refuses_an_option_compile_refuses(kernels, driver):
    with pytest.raises(CompileError, match="unknown option"):
        tilemlir.lower(kernels.scale, "thread", tensor_core=True)


@pytest.mark.parametrize("target, options, message", [
    ("cuda", {"fast_math": "yes"}, "option fast_math for target 'cuda' must be True or False, got 'yes'"),
    ("cuda", {"fmad": 1}, "option fmad for target 'cuda' must be True or False, got 1"),
    ("cuda", {"arch": 90}, "option arch for target 'cuda' must be a string such as 'sm_90a'"),
    ("cuda", {"level": "thread"}, r"unknown option\(s\) for target 'cuda': level \(known: fast_math, fmad, arch, "
                                  r"use_cache, index_bits, tensor_cores, tma, warp_specialize, persistent\)"),
    ("cpu", {"level": "warp"}, "CPU option level must be one of tile, thread, got 'warp'"),
    ("cpu", {"index_bits": 32}, "option index_bits for target 'cpu' must be 64, or None"),
    ("tpu", {}, r"unknown target 'tpu' \(known targets: cuda, cpu\)"),
])
def test_bad_options_are_refused_before_the_frontend_runs(kernels, driver, target, options, message):
    with pytest.raises(CompileError, match=message):
        tilemlir.compile(kernels.scale, target=target, **options)
    assert kernels.scale._frontend is None and driver.compiled == []


def test_equal_options_are_one_compile(kernels, driver):
    kernel = tilemlir.compile(kernels.scale, target="cpu")
    assert tilemlir.compile(kernels.scale, target="cpu", level="tile", fast_math=False) is kernel
    assert len(driver.compiled) == 1 and driver.compiled[0][2] == CpuOptions()


def test_unknown_stage_lists_the_known_ones(kernels, driver):
    with pytest.raises(CompileError, match=r"unknown stage 'llvm' \(known stages: frontend, thread, final\)"):
        tilemlir.lower(kernels.scale, stage="llvm")


@pytest.mark.parametrize("out_idx, message", [
    ([5], "out_idx 5 is out of range for kernel 'k' with 2 parameters"),
    ([1], "out_idx 1 names the scalar parameter 'alpha': outputs must be tensors"),
])
def test_out_idx_is_checked(tmp_path, out_idx, message):
    module = load_module(tmp_path, f"""
        @tilemlir.jit(out_idx={out_idx})
        def k(X: T.Tensor((M,), T.float32), alpha: T.float32):
            with T.Kernel(4, threads=32) as bx:
                pass
    """)
    with pytest.raises(CompileError, match=message):
        tilemlir.lower(module.k)


def test_factory_must_return_a_kernel(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def make(n=4):
            return n
    """)
    with pytest.raises(CompileError, match="factory 'make' must return a kernel function, got int"):
        module.make.instantiate()


SCALED = """
    @tilemlir.jit(out_idx=[1])
    def scaled(factor=2.0, block=128):
        @T.prim_func
        def kernel(X: T.Tensor((M,), T.float32), Y: T.Tensor((M,), T.float32)):
            with T.Kernel(T.ceildiv(M, block), threads=block) as bx:
                x = T.alloc_fragment((block,), T.float32)
                T.copy(X[bx * block], x)
                for i in T.Parallel(block):
                    x[i] = x[i] * factor
                T.copy(x, Y[bx * block])

        return kernel
"""


def test_an_override_applies_to_its_own_kernel_only_though_all_are_named_kernel(tmp_path, monkeypatch):
    module = load_module(tmp_path, SCALED)
    twice, thrice, wide = module.scaled(2.0), module.scaled(3.0), module.scaled(2.0, 256)
    assert twice.name == thrice.name == wide.name == "kernel"
    assert thrice.signature == twice.signature  # the same parameters: only the body differs
    names = {k.override_file for k in (twice, thrice, wide)}
    assert len(names) == 3 and all(n.startswith("kernel-") for n in names)
    override = tmp_path / "override"
    override.mkdir()
    edited = twice.cuda_source().replace("2.0f", "2.5f")
    assert edited != twice.cuda_source()
    (override / twice.override_file).write_text(edited)
    monkeypatch.setenv("TILEMLIR_CUDA_OVERRIDE", str(override))
    scaled = tilemlir.jit(out_idx=[1])(module.scaled.fn)  # a new jit function: nothing compiled in memory yet
    assert scaled(2.0).cuda_source() == edited
    assert scaled(3.0).cuda_source() == thrice.cuda_source() and scaled(2.0, 256).cuda_source() == wide.cuda_source()


@pytest.mark.parametrize("body", ["for i in range(3):\n                X[0, 0] = 1.0", "X[0, 0] = 1.0"])
def test_tensor_parameters_without_a_kernel_block_are_a_located_error(tmp_path, body, rng):
    """Taken as a factory, calling it ran the body as Python on the caller's array (or said its arguments were
    unhashable); compiling it said it was a factory."""
    module = load_module(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), n: T.int32):
            {body}
    """)
    x = rng.standard_normal((4, 128)).astype(np.float32)
    before = x.copy()
    for attempt in (lambda: module.k(x, 3), lambda: tilemlir.compile(module.k, target="cpu"),
                    lambda: tilemlir.lower(module.k)):
        with pytest.raises(CompileError) as info:
            attempt()
        err = info.value
        assert err.diagnostics[0].message == (
            "'k' has tensor parameters ('X') but no `with T.Kernel(...)` block at the top level of its body: a "
            "kernel's body is one `with T.Kernel(grid, threads=...) as bx:` block (a factory instead takes "
            "compile-time values and returns a kernel function)")
        assert (err.location.file, err.location.line) == (module.__file__, module.k.fn.__code__.co_firstlineno)
    assert np.array_equal(x, before)


def test_a_factory_with_annotated_compile_time_parameters_is_still_a_factory(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def make(n: int = 4, dtype: str = "float32"):
            @T.prim_func
            def k(X: T.Tensor((M, n), dtype)):
                with T.Kernel(M, threads=32) as bx:
                    X[bx, 0] = 1.0
            return k
    """)
    assert module.make.kind == "factory"
    assert "memref<?x4xf32>" in tilemlir.lower(module.make.instantiate(n=4))


def test_calling_a_factory_with_an_array_says_it_is_a_factory(kernels, rng):
    x = rng.standard_normal(256).astype(np.float32)
    with pytest.raises(CompileError) as info:
        kernels.make_scale(x)
    text = info.value.diagnostics[0].message
    assert text.startswith("'make_scale' is a kernel factory: its parameters are compile-time values")
    assert "parameter 'block' got an array (numpy.ndarray of shape (256,))" in text
    assert "then call the kernel with the arrays: `kernel = make_scale(...)`, `kernel(x, ...)`" in text


def _frames(exc: BaseException) -> list[str]:
    import traceback

    return [frame.filename for frame in traceback.extract_tb(exc.__traceback__)]


def test_a_located_error_comes_without_the_compilers_frames(tmp_path, monkeypatch):
    """The traceback of a kernel's mistake holds the caller's frame and the API's one re-raise, not the
    frontend's dozens; TILEMLIR_TRACEBACK=1 keeps them."""
    module = load_module(tmp_path, """
        @tilemlir.jit
        def broken(X: T.Tensor((M,), T.float32)):
            with T.Kernel(4, threads=32) as bx:
                for i in T.Parallel(32):
                    X[bx * 32 + i] = undefined_name
    """)
    monkeypatch.delenv("TILEMLIR_TRACEBACK", raising=False)
    with pytest.raises(CompileError, match="unknown name 'undefined_name'") as info:
        tilemlir.lower(module.broken)
    frames = _frames(info.value)
    assert frames[0] == __file__ and [f for f in frames[1:]] == [tilemlir.api.__file__]
    monkeypatch.setenv("TILEMLIR_TRACEBACK", "1")
    with pytest.raises(CompileError) as info:
        tilemlir.lower(module.broken.fn)
    assert any(f.endswith("frontend/builder.py") for f in _frames(info.value))


def test_a_launch_error_comes_without_the_runtimes_frames(kernels, rng, monkeypatch):
    monkeypatch.delenv("TILEMLIR_TRACEBACK", raising=False)
    kernel = kernels.scale.compile("cpu")
    with pytest.raises(tilemlir.diagnostics.LaunchError, match="expected dtype float32, got float64") as info:
        kernel(rng.standard_normal(256), np.float32(2.0))
    assert _frames(info.value) == [__file__, tilemlir.api.__file__]


def test_one_info_line_per_compile_with_the_knob(kernels, caplog, monkeypatch):
    import logging

    monkeypatch.setenv("TILEMLIR_LOG_COMPILES", "1")
    with caplog.at_level(logging.INFO, logger="tilemlir.compile"):
        kernels.scale.compile("cpu")
        kernels.scale.compile("cpu")  # in memory: not a compile
        kernels.scale.compile("cpu", level="thread")
    lines = [r.getMessage() for r in caplog.records if r.name == "tilemlir.compile"]
    assert len(lines) == 2 and all(r.levelno == logging.INFO for r in caplog.records if r.name == "tilemlir.compile")
    import re

    stage = r"\d+\.\d ms"
    assert re.fullmatch(rf"compiled kernel 'scale' for cpu \(tile level\): no source cache, {stage} "
                        rf"\(python {stage}, frontend {stage}, llvm {stage}\)", lines[0]), lines[0]
    assert re.fullmatch(rf"compiled kernel 'scale' for cpu \(thread level\): no source cache, {stage} "
                        rf"\(python {stage}, frontend {stage}, thread {stage}, final {stage}, llvm {stage}\)",
                        lines[1]), lines[1]


def test_the_compile_line_says_whether_the_source_cache_hit(tmp_path, caplog, monkeypatch):
    import logging

    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEMLIR_DISABLE_CACHE", raising=False)
    module = load_module(tmp_path, KERNELS)
    with caplog.at_level(logging.INFO, logger="tilemlir.compile"):
        module.scale.compile("cuda", arch="sm_90a")
        # a new jit function of the same source finds the first one's entry on disk
        tilemlir.api.JitFunction(module.scale.fn, module.scale.out_idx).compile("cuda", arch="sm_90a")
    lines = [r.getMessage() for r in caplog.records if r.name == "tilemlir.compile"]
    assert len(lines) == 2
    assert lines[0].startswith("compiled kernel 'scale' for cuda sm_90a: source cache miss, ")
    assert "nvrtc" in lines[0] and "emit" in lines[0]
    assert lines[1].startswith("compiled kernel 'scale' for cuda sm_90a: source cache hit, ")


def test_no_gpu_warns_once_that_cuda_compiles_for_sm_90a(caplog, monkeypatch):
    import logging

    from tilemlir.runtime import driver as runtime_driver, nvrtc

    def no_gpu():
        raise RuntimeError("no CUDA device")

    monkeypatch.setattr(runtime_driver, "current_arch", no_gpu)
    nvrtc._warn_fallback.cache_clear()
    with caplog.at_level(logging.WARNING, logger="tilemlir.runtime"):
        assert nvrtc.resolve_arch(None) == "sm_90a" and nvrtc.resolve_arch(None) == "sm_90a"
        assert nvrtc.resolve_arch("sm_80") == "sm_80"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "no usable GPU (RuntimeError: no CUDA device): compiling CUDA for sm_90a (Hopper); pass arch='sm_XX' to "
        "compile for another GPU"]


def test_a_failed_device_assertion_comes_without_the_backends_frames(tmp_path, monkeypatch):
    monkeypatch.delenv("TILEMLIR_TRACEBACK", raising=False)
    module = load_module(tmp_path, """
        @tilemlir.jit(target="cpu")
        def checked(X: T.Tensor((M,), T.float32)):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(32):
                    T.device_assert(X[i] >= 0.0)
    """)
    with pytest.raises(tilemlir.DeviceAssertionError, match="device assertion failed in kernel 'checked'") as info:
        module.checked(-np.ones(32, np.float32))
    assert _frames(info.value) == [__file__, tilemlir.api.__file__]


# -- TILEMLIR_INTERPRET ------------------------------------------------------------------------------------------


def test_interpret_compiles_every_kernel_for_the_cpu_target(kernels, driver, monkeypatch):
    """Whatever target a script asks for: the jit default, target="cuda" with CUDA-only options (arch, fmad,
    use_cache, 32-bit index math dropped; fast_math kept), a factory's call; the knob's level, unless a CPU
    compile names its own."""
    monkeypatch.setenv("TILEMLIR_INTERPRET", "1")
    assert kernels.scale.compile().target == "cpu"
    tilemlir.compile(kernels.scale, target="cuda", arch="sm_80", fmad=False, use_cache=False, index_bits=32,
                     fast_math=True)
    kernels.make_scale(64)
    monkeypatch.setenv("TILEMLIR_INTERPRET", "thread")
    tilemlir.compile(kernels.scale, target="cuda")
    tilemlir.compile(kernels.scale, target="cpu", level="tile", fast_math=True)  # compiled before: no new compile
    assert [(info.name, target, options) for info, target, options in driver.compiled] == [
        ("scale", "cpu", CpuOptions()),
        ("scale", "cpu", CpuOptions(fast_math=True)),
        ("scale_kernel", "cpu", CpuOptions()),
        ("scale", "cpu", CpuOptions(level="thread")),
    ]


def test_interpret_still_refuses_options_the_requested_target_does_not_know(kernels, driver, monkeypatch):
    monkeypatch.setenv("TILEMLIR_INTERPRET", "1")
    with pytest.raises(CompileError, match=r"unknown option\(s\) for target 'cuda': tile_size"):
        tilemlir.compile(kernels.scale, target="cuda", tile_size=4)
    monkeypatch.setenv("TILEMLIR_INTERPRET", "gpu")
    with pytest.raises(tilemlir.diagnostics.ConfigError,
                       match="TILEMLIR_INTERPRET must be 1 \\(or tile\\), thread, or 0, got 'gpu'"):
        tilemlir.compile(kernels.scale)
    assert driver.compiled == []


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_an_interpreted_cuda_kernel_runs_on_numpy_arrays(tmp_path, monkeypatch, level, rng):
    """A script written for the GPU (target="cuda" in its decorator, stream= at the call) runs unchanged."""
    module = load_module(tmp_path, KERNELS.replace("@tilemlir.jit(out_idx=[-2])", "@tilemlir.jit(out_idx=[-2], "
                                                                                   "target='cuda', arch='sm_90a')"))
    monkeypatch.setenv("TILEMLIR_INTERPRET", level)
    x = rng.standard_normal(300).astype(np.float32)
    y = module.scale(x, 2.5, stream=None)
    assert module.scale.compile().level == level
    assert np.array_equal(y, x * np.float32(2.5))


def test_a_jit_option_no_target_knows_is_located_at_the_decorated_function():
    """A keyword of @tilemlir.jit that is no option of any target (a typo for out_idx here) fails where the
    kernel is defined, not later inside lower or compile."""
    def factory(block=128):
        return None

    line = factory.__code__.co_firstlineno
    with pytest.raises(CompileError, match=r"unknown option\(s\) for tilemlir.jit: M \(known: out_idx, target, "
                                           r"pass_configs, arch, ") as info:
        tilemlir.jit(M=[-1])(factory)
    assert info.value.location.file == __file__ and info.value.location.line == line
