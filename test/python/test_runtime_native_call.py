"""The native call plan (launch.c's `CallPlan`, native_call.py) without torch or a GPU.

A fake DLPack exchange API provider (`fake_dlpack.c`, compiled here with the
runtime's own `native._compile`) reads `FakeTensor`s and allocates outputs
through a Python factory; the driver entry points are ctypes callbacks that
record every launch with its decoded parameter values. The plan must launch
exactly what the signature says for the plain case (fastpath.py's module
docstring) and answer `SLOW`, with no launch, allocation or pending error,
for everything else.
"""

import ast
import ctypes
import datetime
import gc
import importlib.machinery
import importlib.util
import itertools
import operator
import sys
import sysconfig
import types
import weakref
from array import array
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime import native
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.expr import Expr, wrap, wrapu
from tilemlir.runtime.fastpath import SLOW, FastCall
from tilemlir.runtime.kernel import stream_handle
from tilemlir.runtime.native_call import KDL_CUDA, NativeCall, _program, exchange_api, plan_spec
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

import test_runtime_fastpath as torch_fakes  # the fake torch and driver of the Python fast path's tests
from test_runtime_fastpath import FakeTensor as TorchLikeTensor
from test_runtime_fastpath import add_signature, fake, launcher  # noqa: F401  (fixtures used below)

CONTEXT, OTHER_CONTEXT = 0xC0, 0xC1
FUNCTION, OTHER_FUNCTION = 0xF00D, 0xBEEF
STREAM = 0x5151
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# -- the fake provider and the extension ---------------------------------------------------------
@pytest.fixture(scope="session")
def ext():
    extension = native.load()
    if extension is None:
        pytest.skip("no C compiler or Python.h here: the native launcher cannot be built")
    return extension


@pytest.fixture(scope="session")
def provider(tmp_path_factory):
    """The fake DLPack provider module; its exchange API is set on `FakeTensor`."""
    source = (Path(__file__).parent / "fake_dlpack.c").read_text()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    library = tmp_path_factory.mktemp("fake_dlpack") / f"fake_dlpack{suffix}"
    error = native._compile(library, sysconfig.get_paths()["include"], source)
    if error is not None:
        pytest.skip(f"the fake DLPack provider cannot be built: {error}")
    loader = importlib.machinery.ExtensionFileLoader("fake_dlpack", str(library))
    spec = importlib.util.spec_from_file_location("fake_dlpack", library, loader=loader)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    FakeTensor.__dlpack_c_exchange_api__ = module.exchange_api()
    return module


CONTIGUOUS = object()


class FakeTensor:
    """A tensor as the fake provider reads it (`_dlpack_view`). `dtype`: our dtype name or (code, bits)."""

    addresses = itertools.count(0x100000000000, 1 << 40)

    def __init__(self, shape, dtype="float32", device=(KDL_CUDA, 0), data=None, strides=CONTIGUOUS, byte_offset=0,
                 lanes=1):
        self.shape = tuple(shape)
        self.code, self.bits = DTYPES[dtype].dlpack if isinstance(dtype, str) else dtype
        self.lanes, self.device, self.byte_offset = lanes, tuple(device), byte_offset
        self.data = next(FakeTensor.addresses) if data is None else data
        self.strides = contiguous_strides(self.shape) if strides is CONTIGUOUS else strides

    @property
    def pointer(self):
        return self.data + self.byte_offset

    def _dlpack_view(self):
        return self.data, self.shape, self.strides, (self.code, self.bits, self.lanes), self.device, self.byte_offset


def contiguous_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


class Allocator:
    """The provider's output factory: records each request; `fail_after` requests, it raises."""

    def __init__(self):
        self.calls, self.made, self.fail_after = [], [], None

    def __call__(self, shape, dtype, device):
        self.calls.append((shape, dtype, device))
        if self.fail_after is not None and len(self.calls) > self.fail_after:
            raise MemoryError("the fake device is full")
        tensor = FakeTensor(shape, dtype[:2], device, lanes=dtype[2])
        self.made.append(weakref.ref(tensor))
        return tensor


# -- the fake driver ---------------------------------------------------------------------------------
GET_CONTEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


def param_ctypes(sig):
    """(name, ctypes type) per CUDA parameter: the kernel ABI of signature.py."""
    params = {p.name: p for p in sig.params}
    symbol = ctypes.c_int32 if sig.index_bits == 32 else ctypes.c_int64
    return [(name, ctypes.c_uint64 if isinstance(params.get(name), TensorParam)
             else DTYPES[params[name].dtype].scalar_ctype if isinstance(params.get(name), ScalarParam) else symbol)
            for name in sig.cuda_params]


class Driver:
    """cuCtxGetCurrent and cuLaunchKernel as C callbacks that record what they are given."""

    def __init__(self, sig):
        self.types = param_ctypes(sig)
        self.context, self.context_code, self.code = CONTEXT, 0, 0
        self.launches = []
        self._get_context, self._launch = GET_CONTEXT(self.get_context), LAUNCH(self.launch)
        self.get_context_address = ctypes.cast(self._get_context, ctypes.c_void_p).value
        self.launch_address = ctypes.cast(self._launch, ctypes.c_void_p).value

    def get_context(self, out):
        out[0] = self.context
        return self.context_code

    def launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        values = {name: ctype.from_address(params[i]).value for i, (name, ctype) in enumerate(self.types)}
        self.launches.append(dict(function=function, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                  stream=stream or 0, params=values, extra=extra))
        return self.code


class LaunchFailed(Exception):
    pass


class Harness:
    """One signature's plan with a fresh fake driver and allocator, registered in CONTEXT."""

    def __init__(self, ext, provider, sig, max_shared, device, launch_failed):
        self.provider, self.sig = provider, sig
        self.driver, self.allocator, self.failures = Driver(sig), Allocator(), []
        provider.configure(factory=self.allocator, stream=STREAM)
        provider.stream_queries()
        provider.allocation_errors()
        spec = plan_spec(sig)
        assert spec is not None
        self.plan = ext.CallPlan(spec, FakeTensor.__dlpack_c_exchange_api__, FakeTensor, SLOW, stream_handle,
                                 launch_failed or self.launch_failed, self.driver.get_context_address,
                                 self.driver.launch_address)
        self.plan.register(CONTEXT, FUNCTION, device, max_shared)

    def launch_failed(self, code, grid, shared):
        self.failures.append((code, grid, shared))
        raise LaunchFailed(f"code {code}")

    def launch(self, *args, stream=None):
        """The result of a call that must launch, and its launch record."""
        count = len(self.driver.launches)
        result = self.plan.call(tuple(args), stream)
        assert result is not SLOW
        assert len(self.driver.launches) == count + 1
        return result, self.driver.launches[-1]

    def slow(self, *args, stream=None):
        """A call that must answer SLOW with no side effect."""
        count, allocations = len(self.driver.launches), len(self.allocator.calls)
        assert self.plan.call(tuple(args), stream) is SLOW
        assert len(self.driver.launches) == count and len(self.allocator.calls) == allocations
        assert self.provider.live_managed() == 0


@pytest.fixture
def harness(ext, provider):
    def make(sig, max_shared=48 * 1024, device=0, launch_failed=None):
        return Harness(ext, provider, sig, max_shared, device, launch_failed)

    yield make
    provider.configure()  # drop the factory, and what it made
    provider.stream_queries()
    provider.allocation_errors()
    assert provider.live_managed() == 0


# -- signatures ----------------------------------------------------------------------------------------
def scale_signature(**changes):
    fields = dict(
        name="scale",
        params=(TensorParam("X", "bfloat16", ("M", "N"), 16, written=False),
                TensorParam("W", "float32", (2, "N"), 4, written=False),
                ScalarParam("eps", "float32"), ScalarParam("k", "int32"),
                TensorParam("Y", "bfloat16", ("M", "N"), 16)),
        symbols=("M", "N"),
        grid=("(M + 3) // 4", "N // 128", "k"),
        block=(128, 2, 1),
        shared_bytes="k * 1024",
        assumes=("N % 128 == 0", "M // k >= 1"),
        cuda_params=("N", "X", "eps", "W", "Y", "k", "M"),
        out_idx=(4,),
    )
    fields.update(changes)
    return KernelSignature(**fields)


def scale_args(M=10, N=384, k=3, eps=1e-6, **replace):
    args = dict(X=FakeTensor((M, N), "bfloat16"), W=FakeTensor((2, N), "float32"), eps=eps, k=k)
    args.update(replace)
    return list(args.values())


def copy_signature(index_bits=64):
    params = (TensorParam("X", "float32", ("M", "N"), written=False), TensorParam("Y", "float32", ("M", "N")))
    return KernelSignature(name="copy", params=params, symbols=("M", "N"), grid=("1", "1", "1"), block=(32, 1, 1),
                           cuda_params=("X", "Y", "M", "N"), out_idx=(1,), index_bits=index_bits)


def outer_signature(index_bits):
    params = (TensorParam("a", "float32", ("M",)), TensorParam("b", "float32", ("N",)),
              TensorParam("c", "float32", ("M", "N")))
    return KernelSignature(name="outer", params=params, symbols=("M", "N"), grid=("1", "1", "1"), block=(32, 1, 1),
                           cuda_params=("a", "b", "c", "M", "N"), out_idx=(2,), index_bits=index_bits)


def in_place_signature():
    """Y (passed in, written) = f(X, W) over n elements, plus an allocated output C."""
    params = (TensorParam("X", "float32", ("n",), 16, written=False),
              TensorParam("W", "float32", (64,), 16, written=False),
              TensorParam("Y", "float32", ("n",), 16), TensorParam("C", "float32", ("n",), 16))
    return KernelSignature(name="in_place", params=params, symbols=("n",), grid=("4", "1", "1"), block=(64, 1, 1),
                           cuda_params=("X", "W", "Y", "C", "n"), out_idx=(3,))


def launch_config_signature():
    """Grid and shared bytes straight from int64 scalars."""
    params = (TensorParam("t", "float32", ("n",)), *(ScalarParam(s, "int64") for s in ("gx", "gy", "gz", "s")))
    return KernelSignature(name="config", params=params, symbols=("n",), grid=("gx", "gy", "gz"), block=(32, 1, 1),
                           shared_bytes="s", cuda_params=("t", "gx", "gy", "gz", "s", "n"))


# -- the plain case ------------------------------------------------------------------------------------
def test_plain_launch_has_every_value_of_the_signature(harness, provider):
    h = harness(scale_signature())
    x, w = FakeTensor((10, 384), "bfloat16"), FakeTensor((2, 384), "float32")
    y, launch = h.launch(x, w, 1e-6, 3)
    assert launch == dict(function=FUNCTION, grid=(3, 3, 3), block=(128, 2, 1), shared=3072, stream=STREAM,
                          params=dict(N=384, X=x.data, eps=ctypes.c_float(1e-6).value, W=w.data, Y=y.pointer, k=3,
                                      M=10), extra=None)
    assert provider.stream_queries() == [(KDL_CUDA, 0)]
    assert h.allocator.calls == [((10, 384), (4, 16, 1), (KDL_CUDA, 0))]
    assert y is h.allocator.made[0]()
    assert (y.shape, y.code, y.bits, y.device) == ((10, 384), 4, 16, (KDL_CUDA, 0))
    assert provider.live_managed() == 0  # the managed tensor went into the returned object


def test_each_call_gets_a_fresh_output_and_the_bound_values_of_its_arguments(harness):
    h = harness(scale_signature())
    first, one = h.launch(*scale_args(M=5, N=128, k=1))
    second, two = h.launch(*scale_args(M=40, N=256, k=5, eps=2))
    assert first.data != second.data
    assert one["grid"] == (2, 1, 1) and one["shared"] == 1024
    assert (one["params"]["M"], one["params"]["N"], one["params"]["k"]) == (5, 128, 1)
    assert two["grid"] == (10, 2, 5) and two["shared"] == 5120
    assert (two["params"]["M"], two["params"]["N"], two["params"]["eps"]) == (40, 256, 2.0)
    assert second.shape == (40, 256)


def test_streams_from_the_provider_an_int_or_a_stream_object(harness, provider):
    h = harness(scale_signature())
    args = scale_args()
    assert h.launch(*args, stream=0x77)[1]["stream"] == 0x77
    assert h.launch(*args, stream=0)[1]["stream"] == 0
    assert h.launch(*args, stream=types.SimpleNamespace(ptr=0x99))[1]["stream"] == 0x99  # a CuPy stream
    assert h.launch(*args, stream=types.SimpleNamespace(cuda_stream=0x98))[1]["stream"] == 0x98  # a torch stream
    assert provider.stream_queries() == []  # an explicit stream is not looked up
    assert h.launch(*args)[1]["stream"] == STREAM
    assert provider.stream_queries() == [(KDL_CUDA, 0)]
    launched = len(h.driver.launches)
    with pytest.raises(LaunchError, match="stream= must be a CUDA stream .* got str"):
        h.plan.call(tuple(args), "fast")
    assert len(h.driver.launches) == launched and provider.live_managed() == 0
    assert len(h.allocator.calls) == launched  # the stream is judged before anything is allocated


def test_a_second_context_launches_its_own_function_on_its_device(harness, provider):
    h = harness(scale_signature())
    on_1 = scale_args(X=FakeTensor((10, 384), "bfloat16", (KDL_CUDA, 1)), W=FakeTensor((2, 384), device=(KDL_CUDA, 1)))
    h.driver.context = OTHER_CONTEXT
    assert not h.plan.registered(OTHER_CONTEXT)
    h.slow(*on_1)
    h.plan.register(OTHER_CONTEXT, OTHER_FUNCTION, 1, 4096)
    assert h.plan.registered(OTHER_CONTEXT) and h.plan.registered(CONTEXT)
    y, launch = h.launch(*on_1)
    assert launch["function"] == OTHER_FUNCTION and y.device == (KDL_CUDA, 1)
    assert provider.stream_queries() == [(KDL_CUDA, 1)]
    h.slow(*scale_args())  # tensors on device 0 in device 1's context
    h.slow(*scale_args(X=on_1[0], W=on_1[1], k=5))  # 5120 shared bytes; this context allows 4096
    h.driver.context = CONTEXT
    assert h.launch(*scale_args(k=5))[1]["function"] == FUNCTION  # CONTEXT allows 48 KiB


def test_registering_a_context_again_replaces_its_function(harness):
    h = harness(scale_signature())
    h.plan.register(CONTEXT, OTHER_FUNCTION, 0, 2048)
    assert h.launch(*scale_args(k=2))[1]["function"] == OTHER_FUNCTION
    h.slow(*scale_args(k=3))  # 3072 > 2048 now
    for context in range(1, 16):  # CONTEXT and 15 more: the most a plan serves
        h.plan.register(context, FUNCTION, 0, 0)
    with pytest.raises(RuntimeError, match="at most 16 CUDA contexts"):
        h.plan.register(99, FUNCTION, 0, 0)
    assert not h.plan.registered(99)


def test_symbols_bind_across_tensors_and_reach_outputs_and_parameters(harness):
    sig = KernelSignature(
        name="bind", params=(TensorParam("A", "float32", ("M", "K")), TensorParam("B", "float32", ("K", "N")),
                             TensorParam("bias", "float32", ("N",)), TensorParam("C", "float32", ("N", "M", 2))),
        symbols=("M", "K", "N"), grid=("M", "N", "K"), block=(32, 1, 1), cuda_params=("C", "K", "N", "M", "A", "B",
                                                                                     "bias"), out_idx=(3,))
    h = harness(sig)
    a, b, bias = FakeTensor((3, 5)), FakeTensor((5, 7)), FakeTensor((7,))
    c, launch = h.launch(a, b, bias)
    assert launch["grid"] == (3, 7, 5) and c.shape == (7, 3, 2)
    assert launch["params"] == dict(C=c.pointer, K=5, N=7, M=3, A=a.data, B=b.data, bias=bias.data)
    h.slow(a, FakeTensor((4, 7)), bias)  # K: 5 from A, 4 from B
    h.slow(a, b, FakeTensor((6,)))  # N: 7 from B, 6 from bias


SCALARS = {"bool": True, "int8": -7, "int16": -300, "int32": -70000, "int64": -(2**40), "uint8": 250, "uint16": 65000,
           "uint32": 2**32 - 5, "uint64": 2**63 + 5 - 10, "float32": 0.1, "float64": 1e300}


def test_every_scalar_kind_reaches_the_kernel_with_its_value(harness):
    names = {dtype: f"s_{dtype}" for dtype in SCALARS}
    sig = KernelSignature(name="scalars", params=(TensorParam("x", "int8", ("n",)),)
                          + tuple(ScalarParam(names[d], d) for d in SCALARS), symbols=("n",),
                          grid=("n", "1", "1"), block=(32, 1, 1), cuda_params=("n", *reversed(names.values()), "x"),
                          index_bits=32)
    h = harness(sig)
    x = FakeTensor((3,), "int8")
    result, launch = h.launch(x, *SCALARS.values())
    assert result is None
    expected = {names[d]: ctypes.c_float(v).value if d == "float32" else v for d, v in SCALARS.items()}
    assert launch["params"] == dict(expected, n=3, x=x.data)
    ints = dict(SCALARS, float32=2, float64=-3)  # ints convert to the float kinds
    assert h.launch(x, *ints.values())[1]["params"]["s_float64"] == -3.0
    limits = {"int8": (-128, 127), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
              "int64": (INT64_MIN, INT64_MAX), "uint8": (0, 255), "uint16": (0, 65535), "uint32": (0, 2**32 - 1)}
    for dtype, (low, high) in limits.items():
        for value in (low, high):
            assert h.launch(x, *dict(SCALARS, **{dtype: value}).values())[1]["params"][names[dtype]] == value
        for value in (low - 1, high + 1):
            h.slow(x, *dict(SCALARS, **{dtype: value}).values())
    assert h.launch(x, *dict(SCALARS, uint64=0).values())[1]["params"]["s_uint64"] == 0
    wrong = {"bool": [1, 0, None], "int32": [2.0, "3", None, 3j], "uint64": [2**64, -1],
             "float32": ["1.5", None, True, 1e39, -1e39, 10**400], "float64": [10**400, "x"]}
    for dtype, values in wrong.items():
        for value in values:
            h.slow(x, *dict(SCALARS, **{dtype: value}).values())
    special = h.launch(x, *dict(SCALARS, float32=float("inf"), float64=float("-inf")).values())[1]["params"]
    assert special["s_float32"] == float("inf") and special["s_float64"] == float("-inf")


def test_a_scalar_in_an_expression_reads_its_own_environment_slot(harness):
    sig = KernelSignature(name="slots", params=(ScalarParam("f", "float64"), TensorParam("t", "int32", ("n",)),
                                                ScalarParam("u", "uint8"), ScalarParam("flag", "bool"),
                                                ScalarParam("v", "int16")),
                          symbols=("n",), grid=("v - u", "u", "n + flag"), block=(1, 1, 1), shared_bytes="n * v",
                          assumes=("flag or v > 100",), cuda_params=("t", "f", "u", "flag", "v", "n"))
    h = harness(sig)
    t = FakeTensor((6,), "int32")
    assert h.launch(2.5, t, 3, True, 10)[1]["grid"] == (7, 3, 7)
    _, launch = h.launch(2.5, t, 4, False, 200)
    assert launch["grid"] == (196, 4, 6) and launch["shared"] == 1200
    h.slow(2.5, t, 4, False, 50)  # the assume
    h.slow(2.5, t, 10, True, 10)  # grid x = 0


# -- every call that is not the plain case answers SLOW ------------------------------------------------------
class Raising(FakeTensor):
    def _dlpack_view(self):
        raise RuntimeError("this tensor cannot be described")


SCALE_SLOW = {
    "two arguments": lambda: scale_args()[:2],
    "five arguments": lambda: scale_args() + [1],
    "no arguments": lambda: [],
    "a list for X": lambda: scale_args(X=[[1.0] * 384] * 10),
    "a look-alike, not the tensor type": lambda: scale_args(X=types.SimpleNamespace(
        _dlpack_view=FakeTensor((10, 384), "bfloat16")._dlpack_view)),
    "a tensor the provider cannot describe": lambda: scale_args(X=Raising((10, 384), "bfloat16")),
    "X on the CPU": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", (1, 0))),
    "X on device 1": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", (KDL_CUDA, 1))),
    "X of another type code": lambda: scale_args(X=FakeTensor((10, 384), "float16")),
    "X of other bits": lambda: scale_args(X=FakeTensor((10, 384), (4, 32))),
    "X with two lanes": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", lanes=2)),
    "X of rank 3": lambda: scale_args(X=FakeTensor((10, 384, 1), "bfloat16")),
    "X of rank 1": lambda: scale_args(X=FakeTensor((3840,), "bfloat16")),
    "W's static dim": lambda: scale_args(W=FakeTensor((3, 384))),
    "N bound twice differently": lambda: scale_args(W=FakeTensor((2, 256))),
    "X transposed": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", strides=(1, 10))),
    "X with padded rows": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", strides=(512, 1))),
    "X with a step": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", strides=(768, 2))),
    "X misaligned": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", data=0x7000008)),
    "X misaligned by its byte offset": lambda: scale_args(X=FakeTensor((10, 384), "bfloat16", data=0x7000000,
                                                                       byte_offset=2)),
    "W misaligned": lambda: scale_args(W=FakeTensor((2, 384), data=0x7000002)),
    "assume N % 128 == 0 false": lambda: scale_args(N=200),
    "assume M // k >= 1 false": lambda: scale_args(M=8, k=9),
    "assume M // k divides by zero": lambda: scale_args(k=0),
    "grid y 65536": lambda: scale_args(N=128 * 65536, k=1),
    "shared bytes over the maximum": lambda: scale_args(M=100, k=49),
    "eps a string": lambda: scale_args(eps="1e-6"),
    "eps overflows float32": lambda: scale_args(eps=3.5e38),
    "k a float": lambda: scale_args(k=3.0),
    "k out of int32": lambda: scale_args(k=2**31),
}


@pytest.mark.parametrize("case", SCALE_SLOW)
def test_a_call_outside_the_plain_case_answers_slow(harness, provider, case):
    h = harness(scale_signature())
    h.launch(*scale_args())  # the same plan does launch the plain call
    h.slow(*SCALE_SLOW[case]())
    assert h.launch(*scale_args())[1]["grid"] == (3, 3, 3)  # and nothing of the slow call lingers


def test_the_context_answers_slow_when_unknown_or_unreadable(harness):
    h = harness(scale_signature())
    h.launch(*scale_args())
    h.driver.context = OTHER_CONTEXT
    h.slow(*scale_args())
    h.driver.context, h.driver.context_code = CONTEXT, 201  # CUDA_ERROR_INVALID_CONTEXT
    h.slow(*scale_args())
    h.driver.context_code = 0
    h.launch(*scale_args())


def test_a_subclass_of_the_tensor_type_takes_the_plain_path(harness):
    class Parameter(FakeTensor):
        pass

    h = harness(scale_signature())
    x = Parameter((10, 384), "bfloat16")
    assert h.launch(*scale_args(X=x))[1]["params"]["X"] == x.data


@pytest.mark.parametrize("shape, strides", [
    ((1, 5), (77, 1)), ((5, 1), (1, 3)), ((1, 1), (0, 0)), ((3, 4), None), ((3, 4), (4, 1)),
    ((0, 5), (3, 9)), ((4, 0), (1, 1)), ((0, 0), (-1, 5)), ((1, 4), (-8, 1)),
])
def test_contiguous_by_torchs_rule(harness, shape, strides):
    h = harness(copy_signature())
    x = FakeTensor(shape, strides=strides)
    y, launch = h.launch(x)
    assert launch["params"] == dict(X=x.data, Y=y.pointer, M=shape[0], N=shape[1])
    assert y.shape == shape


def cube_signature():
    return KernelSignature(name="cube", params=(TensorParam("X", "float32", ("A", "B", "C"), written=False),),
                           symbols=("A", "B", "C"), grid=("1", "1", "1"), block=(32, 1, 1),
                           cuda_params=("X", "A", "B", "C"))


@pytest.mark.parametrize("shape, strides", [((3, 4), (1, 3)), ((3, 4), (8, 1)), ((3, 4), (4, 2)), ((2, 3), (3, -1)),
                                            ((3, 1), (2, 5)), ((1, 3), (3, 0)), ((2, 2, 1), (1, 2, 1)),
                                            ((2, 1, 3), (3, 3, 2))])
def test_not_contiguous(harness, shape, strides):
    h = harness(copy_signature() if len(shape) == 2 else cube_signature())
    h.launch(FakeTensor(shape))  # the same shape, contiguous, launches
    h.slow(FakeTensor(shape, strides=strides))


def test_the_address_is_data_plus_byte_offset(harness):
    h = harness(scale_signature())
    x = FakeTensor((10, 384), "bfloat16", data=0x7000008, byte_offset=8)
    w = FakeTensor((2, 384), data=0x7100000, byte_offset=4)
    params = h.launch(x, w, 1e-6, 3)[1]["params"]
    assert (params["X"], params["W"]) == (0x7000010, 0x7100004)


def test_32_bit_element_limit_of_inputs_and_outputs(harness):
    h = harness(outer_signature(32))
    assert h.launch(FakeTensor((2**31 - 1,)), FakeTensor((1,)))[1]["params"]["M"] == 2**31 - 1
    h.slow(FakeTensor((2**31,)), FakeTensor((1,)))
    h.slow(FakeTensor((1,)), FakeTensor((2**31 + 7,)))
    c, launch = h.launch(FakeTensor((65536,)), FakeTensor((32767,)))
    assert c.shape == (65536, 32767) and launch["params"]["N"] == 32767
    h.slow(FakeTensor((65536,)), FakeTensor((32768,)))  # c would have 2**31 elements
    wide = harness(outer_signature(64))
    c, launch = wide.launch(FakeTensor((2**33,)), FakeTensor((65536,)))
    assert launch["params"]["M"] == 2**33 and c.shape == (2**33, 65536)


def test_32_bit_element_limit_of_an_input_alone(harness):
    sig = KernelSignature(name="total", params=(TensorParam("a", "int8", ("M", "N")), TensorParam("r", "int64", (2,))),
                          symbols=("M", "N"), grid=("1", "1", "1"), block=(32, 1, 1), cuda_params=("a", "r", "M", "N"),
                          out_idx=(1,), index_bits=32)
    h = harness(sig)
    assert h.launch(FakeTensor((2**16, 2**15 - 1), "int8"))[0].shape == (2,)
    h.slow(FakeTensor((2**16, 2**15), "int8"))
    h.slow(FakeTensor((2**31, 1), "int8"))


OVERLAPPING = {
    "Y is X": lambda base, w: (FakeTensor((256,), data=base), FakeTensor((256,), data=base)),
    "Y's start inside X": lambda base, w: (FakeTensor((256,), data=base), FakeTensor((256,), data=base + 1008)),
    "X's start inside Y": lambda base, w: (FakeTensor((256,), data=base + 1008), FakeTensor((256,), data=base)),
    "Y is X through its byte offset": lambda base, w: (FakeTensor((256,), data=base),
                                                       FakeTensor((256,), data=base - 4096, byte_offset=4096)),
    "Y ends inside W": lambda base, w: (FakeTensor((256,), data=base), FakeTensor((256,), data=w.data - 1008)),
    "Y inside W": lambda base, w: (FakeTensor((16,), data=base), FakeTensor((16,), data=w.data + 64)),
}
DISJOINT = {
    "Y right after X": lambda base, w: (FakeTensor((256,), data=base), FakeTensor((256,), data=base + 1024)),
    "Y right before X": lambda base, w: (FakeTensor((256,), data=base), FakeTensor((256,), data=base - 1024)),
    "Y right after W": lambda base, w: (FakeTensor((256,), data=base), FakeTensor((256,), data=w.data + 256)),
    "X is W (both read-only)": lambda base, w: (FakeTensor((64,), data=w.data), FakeTensor((64,), data=base)),
    "empty X and Y inside W": lambda base, w: (FakeTensor((0,), data=w.data + 16), FakeTensor((0,), data=w.data + 16)),
}


@pytest.mark.parametrize("case", [*OVERLAPPING, *DISJOINT])
def test_a_written_tensor_may_not_overlap_another(harness, case):
    h = harness(in_place_signature())
    base, w = 0x7E0000000000, FakeTensor((64,), data=0x7D0000000000)
    x, y = (OVERLAPPING.get(case) or DISJOINT[case])(base, w)
    if case in OVERLAPPING:
        h.slow(x, w, y)
    else:
        c, launch = h.launch(x, w, y)
        assert launch["params"] == dict(X=x.pointer, W=w.data, Y=y.pointer, C=c.pointer, n=x.shape[0])


@pytest.mark.parametrize("gx, gy, gz, s, launches", [
    (2**31 - 1, 65535, 65535, 4096, True), (1, 1, 1, 0, True),
    (0, 1, 1, 0, False), (-1, 1, 1, 0, False), (2**31, 1, 1, 0, False),
    (1, 0, 1, 0, False), (1, 65536, 1, 0, False), (1, 1, 0, 0, False), (1, 1, 65536, 0, False),
    (1, 1, 1, -1, False), (1, 1, 1, 4097, False),
])
def test_grid_extents_and_shared_bytes_in_range(harness, gx, gy, gz, s, launches):
    h = harness(launch_config_signature(), max_shared=4096)
    t = FakeTensor((9,))
    if launches:
        launch = h.launch(t, gx, gy, gz, s)[1]
        assert (launch["grid"], launch["shared"]) == ((gx, gy, gz), s)
        assert launch["params"] == dict(t=t.data, gx=gx, gy=gy, gz=gz, s=s, n=9)
    else:
        h.slow(t, gx, gy, gz, s)


def test_an_expression_that_overflows_int64_answers_slow(harness):
    sig = KernelSignature(name="big", params=(TensorParam("t", "float32", ("n",)), ScalarParam("a", "int64")),
                          symbols=("n",), grid=("a * a // (4 * a)", "1", "1"), block=(1, 1, 1),
                          cuda_params=("t", "a", "n"))
    h = harness(sig)
    assert h.launch(FakeTensor((1,)), 1000)[1]["grid"] == (250, 1, 1)
    h.slow(FakeTensor((1,)), 3037000500)  # a * a leaves int64, though Python's grid, 759250125, would fit


# -- allocation, stream and launch failures ------------------------------------------------------------------
def two_output_signature(out_idx=(1, 2)):
    params = (TensorParam("X", "float32", ("n",), written=False), TensorParam("C", "float16", ("n", 2)),
              TensorParam("R", "int64", (3, "n")))
    return KernelSignature(name="two", params=params, symbols=("n",), grid=("n", "1", "1"), block=(32, 1, 1),
                           cuda_params=("R", "X", "C", "n"), out_idx=out_idx)


def test_outputs_come_back_as_a_tuple_in_out_idx_order(harness):
    h = harness(two_output_signature((2, 1)))
    x = FakeTensor((5,))
    (r, c), launch = h.launch(x)
    assert (r.shape, r.code, r.bits) == ((3, 5), 0, 64) and (c.shape, c.code, c.bits) == ((5, 2), 2, 16)
    assert [call[0] for call in h.allocator.calls] == [(3, 5), (5, 2)]
    assert launch["params"] == dict(R=r.pointer, X=x.data, C=c.pointer, n=5)
    h = harness(two_output_signature((1, 2)))
    (c, r), _ = h.launch(x)
    assert (c.shape, r.shape) == ((5, 2), (3, 5))
    h = harness(two_output_signature(()))
    c, r = FakeTensor((5, 2), "float16"), FakeTensor((3, 5), "int64")
    assert h.launch(x, c, r) == (None, h.driver.launches[-1])
    assert h.allocator.calls == []


@pytest.mark.parametrize("fail_after", [0, 1])
def test_an_allocation_failure_answers_slow_and_frees_the_outputs_made(harness, provider, fail_after):
    h = harness(two_output_signature())
    h.allocator.fail_after = fail_after
    assert h.plan.call((FakeTensor((5,)),), None) is SLOW
    assert len(h.allocator.calls) == fail_after + 1 and h.driver.launches == []
    assert provider.live_managed() == 0
    assert all(ref() is None for ref in h.allocator.made)  # the first output, when made, is gone
    assert provider.allocation_errors() == [("MemoryError", "the fake allocator failed")]
    h.allocator.fail_after = None
    assert len(h.launch(FakeTensor((5,)))[0]) == 2


def test_a_factory_answering_none_is_an_allocation_failure(harness, provider):
    h = harness(copy_signature())
    provider.configure(factory=lambda shape, dtype, device: None, stream=STREAM)
    assert h.plan.call((FakeTensor((2, 2)),), None) is SLOW
    assert h.driver.launches == [] and provider.live_managed() == 0


def test_a_failing_conversion_to_a_python_object_raises_and_leaks_nothing(harness, provider):
    h = harness(two_output_signature())
    provider.configure(factory=h.allocator, stream=STREAM, to_py_fails=True)
    with pytest.raises(RuntimeError, match="fake managed_tensor_to_py_object_no_sync failure"):
        h.plan.call((FakeTensor((5,)),), None)
    assert h.driver.launches == [] and provider.live_managed() == 0
    assert len(h.allocator.made) == 1 and h.allocator.made[0]() is None


def test_a_failing_current_stream_answers_slow(harness, provider):
    h = harness(copy_signature())
    provider.configure(factory=h.allocator, stream=STREAM, stream_fails=True)
    h.slow(FakeTensor((2, 2)))
    assert provider.stream_queries() == [(KDL_CUDA, 0)]
    assert h.launch(FakeTensor((2, 2)), stream=0x10)[1]["stream"] == 0x10  # an explicit stream needs no query


def test_a_launch_failure_reports_through_launch_failed_and_leaks_nothing(harness, provider):
    h = harness(scale_signature())
    x, w = FakeTensor((10, 384), "bfloat16"), FakeTensor((2, 384))
    references = sys.getrefcount(x), sys.getrefcount(w)
    h.driver.code = 719
    with pytest.raises(LaunchFailed, match="code 719"):
        h.plan.call((x, w, 1e-6, 3), None)
    assert h.failures == [(719, (3, 3, 3), 3072)]
    assert len(h.driver.launches) == 1 and h.driver.launches[0]["grid"] == (3, 3, 3)
    assert h.allocator.made[0]() is None and provider.live_managed() == 0
    assert (sys.getrefcount(x), sys.getrefcount(w)) == references


def test_a_launch_failed_that_returns_is_an_error_too(harness):
    h = harness(two_output_signature(), launch_failed=lambda code, grid, shared: None)
    h.driver.code = 1
    with pytest.raises(RuntimeError, match="launch_failed returned instead of raising"):
        h.plan.call((FakeTensor((5,)),), None)
    assert all(ref() is None for ref in h.allocator.made) and len(h.allocator.made) == 2


def test_many_calls_leak_no_references(harness, provider):
    h = harness(scale_signature())
    args = tuple(scale_args())
    slow_args = tuple(scale_args(k=0))
    h.plan.call(args, None)
    # Other tests' garbage also refers to SLOW (generated fast paths): collect it first, and keep the
    # collector from running inside the loop, so only the plan's own references can move the counts.
    gc.collect()
    gc.disable()
    try:
        before = [sys.getrefcount(a) for a in args[:2]], sys.getrefcount(SLOW), sys.getrefcount(stream_handle)
        for _ in range(200):
            h.plan.call(args, None)
            h.plan.call(slow_args, None)
            h.plan.call(args, 0x10)
            h.plan.call(args, types.SimpleNamespace(ptr=0x20))
        after = [sys.getrefcount(a) for a in args[:2]], sys.getrefcount(SLOW), sys.getrefcount(stream_handle)
    finally:
        gc.enable()
    assert after == before
    assert all(ref() is None for ref in h.allocator.made) and len(h.allocator.made) == 601
    assert provider.live_managed() == 0


# -- the plan's construction and its spec --------------------------------------------------------------------------
def make_plan(ext, spec, capsule=None, tensor_type=FakeTensor, get_context=None, launch=None):
    driver = Driver(copy_signature())
    return ext.CallPlan(spec, capsule if capsule is not None else FakeTensor.__dlpack_c_exchange_api__, tensor_type,
                        SLOW, stream_handle, None, driver.get_context_address if get_context is None else get_context,
                        driver.launch_address if launch is None else launch)


def constant_spec():
    """A spec whose programs are the last 12 words: grid 1, 1, 1 and 0 shared bytes."""
    words = list(array("q", plan_spec(copy_signature())))
    assert words[-12:] == [2, 0, 1] * 3 + [2, 0, 0]  # (length, CONST, value) each
    return words


def packed(words):
    return array("q", words).tobytes()


def test_read_spec_rejects_truncated_specs_and_trailing_words(ext, provider):
    words = constant_spec()
    make_plan(ext, packed(words))
    for length in range(len(words)):
        with pytest.raises(ValueError, match="call plan spec"):
            make_plan(ext, packed(words[:length]))
    with pytest.raises(ValueError, match="trailing words"):
        make_plan(ext, packed(words + [0]))
    with pytest.raises(ValueError, match="whole number of int64 words"):
        make_plan(ext, packed(words) + b"\0")


@pytest.mark.parametrize("index, value", [
    (0, 1), (0, 3),  # spec version
    (1, 0),  # device type
    (5, 65),  # symbols
    (6, 16),  # symbol bits
    (11, 3),  # programs: grid and shared at least
    (12, 0), (13, 1025),  # block
    (16, 5),  # the input's tensor index
    (23, -3),  # X's dim 0 naming symbol 2 of 2
])
def test_read_spec_rejects_values_out_of_range(ext, provider, index, value):
    words = constant_spec()
    words[index] = value
    with pytest.raises(ValueError, match=f"value {value} is outside"):
        make_plan(ext, packed(words))


BAD_PROGRAMS = {
    "a binary op on an empty stack": [1, 2],
    "two values left": [4, 0, 1, 0, 2],
    "an unknown op": [3, 0, 1, 99],
    "a load past the environment": [2, 1, 64],
    "a negative load": [2, 1, -1],
    "a constant without its value": [1, 0],
    "min of none": [4, 0, 1, 8, 0],
    "min of more than the stack": [6, 0, 1, 0, 2, 8, 3],
    "a stack deeper than 32": [98, *[0, 1] * 33, *[2] * 32],
    "a wrap to 0 bits": [4, 0, 1, 19, 0],
    "a wrap to 65 bits": [4, 0, 1, 20, 65],
    "a wrap without its width": [3, 0, 1, 19],
    "a wrap of an empty stack": [2, 19, 8],
}


@pytest.mark.parametrize("case", BAD_PROGRAMS)
def test_read_spec_rejects_malformed_programs(ext, provider, case):
    words = constant_spec()
    with pytest.raises(ValueError, match="call plan program 0 is malformed"):
        make_plan(ext, packed(words[:-12] + BAD_PROGRAMS[case] + words[-9:]))
    with pytest.raises(ValueError, match="not a valid program"):
        ext.evaluate_program(packed(BAD_PROGRAMS[case]), (1, 2, 3))


def test_read_spec_rejects_program_lengths_outside_the_spec(ext, provider):
    words = constant_spec()
    for program in ([0], [50, 0, 1]):
        with pytest.raises(ValueError, match="is outside"):
            make_plan(ext, packed(words[:-12] + program + words[-9:]))


@pytest.mark.parametrize("kwargs, problem", [
    (dict(major=1, minor=1), "DLPack exchange API 1.1 lacks"),
    (dict(major=2, minor=2), "DLPack exchange API 2.2 lacks"),
    (dict(without="managed_tensor_allocator"), "lacks what the call plan needs"),
    (dict(without="managed_tensor_to_py_object_no_sync"), "lacks what the call plan needs"),
    (dict(without="dltensor_from_py_object_no_sync"), "lacks what the call plan needs"),
    (dict(without="current_work_stream"), "lacks what the call plan needs"),
])
def test_an_exchange_api_without_what_the_plan_needs_is_refused(ext, provider, kwargs, problem):
    with pytest.raises(ValueError, match=problem):
        make_plan(ext, plan_spec(copy_signature()), provider.exchange_api(**kwargs))


def test_construction_takes_a_later_minor_version_and_refuses_bad_objects(ext, provider):
    spec = plan_spec(copy_signature())
    make_plan(ext, spec, provider.exchange_api(minor=3))
    make_plan(ext, spec, provider.exchange_api(without="managed_tensor_from_py_object_no_sync"))  # not needed
    with pytest.raises(ValueError, match="PyCapsule_GetPointer called with incorrect name"):
        make_plan(ext, spec, datetime.datetime_CAPI)  # a capsule of another name
    with pytest.raises(TypeError, match="CallPlan's tensor_type must be a type"):
        make_plan(ext, spec, tensor_type=FakeTensor((1,)))
    with pytest.raises(ValueError, match="driver entry point"):
        make_plan(ext, spec, get_context=0)
    with pytest.raises(ValueError, match="driver entry point"):
        make_plan(ext, spec, launch=0)


def test_a_plan_is_initialized_once_and_not_used_before(ext, provider):
    plan = ext.CallPlan.__new__(ext.CallPlan)
    with pytest.raises(TypeError, match="not initialized"):
        plan.call((), None)
    ready = make_plan(ext, plan_spec(copy_signature()))
    with pytest.raises(TypeError, match="initialized once"):
        ready.__init__(plan_spec(copy_signature()), FakeTensor.__dlpack_c_exchange_api__, FakeTensor, SLOW,
                       stream_handle, None, 1, 1)
    broken = ext.CallPlan.__new__(ext.CallPlan)
    words = constant_spec()
    with pytest.raises(ValueError, match="malformed"):
        broken.__init__(packed(words[:-12] + [1, 2] + words[-9:]), FakeTensor.__dlpack_c_exchange_api__,
                        FakeTensor, SLOW, stream_handle, None, 1, 1)
    with pytest.raises(TypeError, match="not initialized"):
        broken.call((FakeTensor((1, 1)),), None)


def test_call_takes_an_argument_tuple_and_a_stream(harness):
    h = harness(copy_signature())
    with pytest.raises(TypeError, match=r"takes \(args: tuple, stream\)"):
        h.plan.call([FakeTensor((1, 1))], None)
    with pytest.raises(TypeError, match=r"takes \(args: tuple, stream\)"):
        h.plan.call((FakeTensor((1, 1)),))


# -- plan_spec: what the plan cannot express keeps the Python fast path ---------------------------------------------
def one_tensor_signature(*scalars, **changes):
    params = (TensorParam("t", "float32", ("n",)), *scalars)
    fields = dict(name="k", params=params, symbols=("n",), grid=("n", "1", "1"), block=(1, 1, 1),
                  cuda_params=tuple(p.name for p in params))
    fields.update(changes)
    return KernelSignature(**fields)


def test_plan_spec_is_none_for_what_the_plan_cannot_express():
    assert plan_spec(scale_signature()) is not None and plan_spec(one_tensor_signature()) is not None
    for dtype in ("float16", "bfloat16"):
        assert plan_spec(one_tensor_signature(ScalarParam("h", dtype))) is None, dtype
    deep = "max(" + ", ".join(["n"] * 33) + ")"  # 33 values on the stack
    for grid in ("n * 1.0", "n // 2.0", "max(n, 0.5)", "n > 0", str(2**63), deep):
        assert plan_spec(one_tensor_signature(grid=(grid, "1", "1"))) is None, grid
    assert plan_spec(one_tensor_signature(shared_bytes="n * 0.5")) is None
    assert plan_spec(one_tensor_signature(assumes=("n > 0.5",))) is None
    in_float = one_tensor_signature(ScalarParam("f", "float32"), grid=("f", "1", "1"))
    assert plan_spec(in_float) is None  # a float scalar has no integer slot
    many = tuple(TensorParam(f"t{i}", "float32", ("n",)) for i in range(33))
    assert plan_spec(one_tensor_signature(params=many, cuda_params=tuple(p.name for p in many))) is None
    rank_9 = TensorParam("t", "float32", ("n",) + (1,) * 8)
    assert plan_spec(one_tensor_signature(params=(rank_9,))) is None


def test_plan_spec_is_none_for_a_symbol_no_input_binds():
    """KernelSignature itself refuses such a signature; plan_spec does not rely on that."""
    sig = KernelSignature(name="k", params=(TensorParam("a", "float32", ("n",)), TensorParam("b", "float32", ("m",))),
                          symbols=("n", "m"), grid=("1", "1", "1"), block=(1, 1, 1), cuda_params=("a", "b"))
    assert plan_spec(sig) is not None
    object.__setattr__(sig, "out_idx", (1,))  # m now only in an output's shape
    assert plan_spec(sig) is None


def test_a_stack_of_32_is_the_deepest_program(harness):
    deep = "max(" + ", ".join(["n"] * 32) + ") + 1"  # 32 values on the stack at once
    sig = KernelSignature(name="deep", params=(TensorParam("t", "float32", ("n",)),), symbols=("n",),
                          grid=(deep, "1", "1"), block=(1, 1, 1), cuda_params=("t",))
    assert harness(sig).launch(FakeTensor((4,)))[1]["grid"] == (5, 1, 1)


# -- NativeCall and the kernel's choice of fast path -------------------------------------------------------------------
def test_native_call_create_and_its_interface(ext, provider):
    sig = copy_signature()
    driver = Driver(sig)
    raw = types.SimpleNamespace(get_context=driver._get_context, launch=driver._launch)
    torch = types.SimpleNamespace(Tensor=FakeTensor)
    assert exchange_api(torch) is FakeTensor.__dlpack_c_exchange_api__
    assert exchange_api(types.SimpleNamespace()) is None and exchange_api(None) is None
    call = NativeCall.create(sig, torch, raw, stream_handle, None, ext)
    assert isinstance(call, NativeCall)
    provider.configure(factory=Allocator(), stream=STREAM)
    assert call.call((FakeTensor((2, 3)),), None) is SLOW  # no context registered yet
    call.register(CONTEXT, ctypes.c_void_p(FUNCTION), 0, 0)
    assert call.registered(CONTEXT) and not call.registered(OTHER_CONTEXT)
    x = FakeTensor((2, 3))
    y = call.call((x,), None)
    assert y.shape == (2, 3)
    assert driver.launches[-1]["function"] == FUNCTION
    assert driver.launches[-1]["params"] == dict(X=x.data, Y=y.pointer, M=2, N=3)
    call.register(OTHER_CONTEXT, ctypes.c_void_p(None), 0, 0)  # a null handle registers as 0
    driver.context = OTHER_CONTEXT
    call.call((x,), None)
    assert driver.launches[-1]["function"] is None
    provider.configure()


def test_native_call_create_declines_what_it_cannot_serve(ext, provider):
    sig = copy_signature()
    driver = Driver(sig)
    raw = types.SimpleNamespace(get_context=driver._get_context, launch=driver._launch)
    torch = types.SimpleNamespace(Tensor=FakeTensor)
    assert NativeCall.create(sig, torch, raw, stream_handle, None, None) is None  # no extension
    assert NativeCall.create(sig, types.SimpleNamespace(Tensor=object), raw, stream_handle, None, ext) is None
    half = KernelSignature(name="h", params=(TensorParam("t", "float32", ("n",)), ScalarParam("h", "float16")),
                           symbols=("n",), grid=("n", "1", "1"), block=(1, 1, 1), cuda_params=("t", "h"))
    assert NativeCall.create(half, torch, raw, stream_handle, None, ext) is None
    old = type("OldTensor", (), {"__dlpack_c_exchange_api__": provider.exchange_api(minor=1)})
    assert NativeCall.create(sig, types.SimpleNamespace(Tensor=old), raw, stream_handle, None, ext) is None


def torch_like_view(tensor):
    """The DLPack view of the Python fast path's fake torch tensor."""
    code, bits = {d.torch_name: d.dlpack for d in DTYPES.values()}[tensor.dtype.name]
    return tensor.data_ptr(), tensor.shape, tensor.stride(), (code, bits, 1), (KDL_CUDA, tensor.get_device()), 0


def torch_like_allocator(torch, made):
    """The provider's factory making the fake torch's tensors, each appended to `made`."""
    names = {d.dlpack: d.torch_name for d in DTYPES.values()}

    def allocate(shape, dtype, device):
        made.append(TorchLikeTensor(shape, getattr(torch, names[dtype[:2]]), device[1]))
        return made[-1]

    return allocate


def publish(provider, monkeypatch, exchange_api=True):
    """The fake torch tensor readable by the fake provider; its exchange API published if asked."""
    if exchange_api:
        monkeypatch.setattr(TorchLikeTensor, "__dlpack_c_exchange_api__", provider.exchange_api(), raising=False)
    monkeypatch.setattr(TorchLikeTensor, "_dlpack_view", torch_like_view, raising=False)


@pytest.mark.parametrize("published", [True, False])
def test_the_kernel_takes_the_native_plan_when_torch_publishes_the_exchange_api(fake, launcher, provider, monkeypatch,
                                                                             published):
    publish(provider, monkeypatch, published)
    kernel, fake_driver, torch = fake(add_signature())
    made = []
    provider.configure(factory=torch_like_allocator(torch, made), stream=0x5000)  # the fake torch's stream
    a, b = TorchLikeTensor((5000,), torch.float32), TorchLikeTensor((5000,), torch.float32)
    first = kernel(a, b)
    native_plan = published and launcher is not None
    assert type(kernel._fast) is (NativeCall if native_plan else FastCall)
    second = kernel(a, b)
    general, fast = fake_driver.launches
    assert fast == dict(general, params=dict(general["params"], C=second.data_ptr()))
    assert general["params"]["C"] == first.data_ptr() and general["stream"] == 0x5000
    assert (made == [second]) == native_plan and second.shape == (5000,)
    provider.configure()


def test_the_native_plan_launches_what_the_general_path_does_and_hands_back_every_bad_call(fake, launcher, provider,
                                                                                         monkeypatch):
    """The Python fast path's own scale kernel and bad calls (alpha a float32: the plan takes no bfloat16 scalar)."""
    if launcher is None:
        pytest.skip("without the extension there is no call plan")
    publish(provider, monkeypatch)
    base = torch_fakes.scale_signature()
    params = tuple(ScalarParam("alpha", "float32") if p.name == "alpha" else p for p in base.params)
    kernel, fake_driver, torch = fake(torch_fakes.scale_signature(params=params), max_dynamic_shared=4096)
    made = []
    provider.configure(factory=torch_like_allocator(torch, made), stream=0x5000)
    (_, _), (c, r) = torch_fakes.launch_twice(kernel, fake_driver, torch_fakes.scale_args(torch))
    assert type(kernel._fast) is NativeCall and made == [c, r]
    general, native_launch = fake_driver.launches
    assert torch_fakes.without_output_pointers(native_launch, "CR") == \
        torch_fakes.without_output_pointers(general, "CR")
    assert (native_launch["params"]["C"], native_launch["params"]["R"]) == (c.data_ptr(), r.data_ptr())
    assert (c.shape, c.dtype, r.shape, r.dtype) == ((8, 256), torch.bfloat16, (8,), torch.float32)
    for args, message in torch_fakes.bad_scale_calls(torch):
        assert kernel._fast.call(tuple(args), None) is SLOW, message
        with pytest.raises(LaunchError) as info:
            kernel(*args)
        assert message.replace("bfloat16 scalar", "float32 scalar").replace("overflows bfloat16", "overflows float32") \
            in str(info.value)
    assert len(fake_driver.launches) == 2 and len(made) == 2
    provider.configure()


# -- the expression programs against Python ------------------------------------------------------------------------
NAMES = ("M", "N", "K")
SLOTS = {name: slot for slot, name in enumerate(NAMES)}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
               ast.Mod: operator.mod}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


class Unrepresentable(Exception):
    pass


def int64(value):
    if not INT64_MIN <= value <= INT64_MAX:
        raise Unrepresentable(value)
    return value


def eager(node, env):
    """What the postfix program computes: every operand evaluated (no short circuit), each an int64,
    truth values as 0 or 1; Unrepresentable for a division by zero or a value outside int64."""
    if isinstance(node, ast.Constant):
        return int64(int(node.value))
    if isinstance(node, ast.Name):
        return env[SLOTS[node.id]]
    if isinstance(node, ast.BinOp):
        left, right = eager(node.left, env), eager(node.right, env)
        if right == 0 and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            raise Unrepresentable("division by zero")
        return int64(_ARITHMETIC[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        value = eager(node.operand, env)
        return int(not value) if isinstance(node.op, ast.Not) else int64(-value) if isinstance(node.op, ast.USub) \
            else value
    if isinstance(node, ast.Compare):
        operands = [eager(n, env) for n in (node.left, *node.comparators)]
        return int(all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, operands, operands[1:])))
    if isinstance(node, ast.BoolOp):
        values = [eager(v, env) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if node.func.id in ("wrap", "wrapu"):
        return int64({"wrap": wrap, "wrapu": wrapu}[node.func.id](eager(node.args[0], env), node.args[1].value))
    return {"min": min, "max": max}[node.func.id](eager(a, env) for a in node.args)


_constants = st.one_of(st.integers(-9, 9), st.integers(INT64_MIN + 1, INT64_MAX),
                       st.sampled_from([2**31, 2**32, 2**62, INT64_MAX]))
_leaves = st.one_of(st.sampled_from(NAMES), _constants.map(lambda c: f"({c})"))


def _int_extend(inner):
    return st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%"]), inner).map(" ".join).map("({})".format),
        inner.map("(-{})".format), inner.map("(+{})".format),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(inner, min_size=2, max_size=3))
        .map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(st.sampled_from(["wrap", "wrapu"]), inner, st.sampled_from([1, 8, 16, 32, 63, 64]))
        .map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
    )


INT_EXPRS = st.recursive(_leaves, _int_extend, max_leaves=10)
_comparisons = st.tuples(INT_EXPRS, st.lists(st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), INT_EXPRS),
                                             min_size=1, max_size=3)) \
    .map(lambda t: "(" + " ".join([t[0], *(f"{op} {e}" for op, e in t[1])]) + ")")


def _bool_extend(inner):
    operand = st.one_of(inner, INT_EXPRS)
    return st.one_of(
        st.tuples(st.sampled_from([" and ", " or "]), st.lists(operand, min_size=2, max_size=3))
        .map(lambda t: "(" + t[0].join(t[1]) + ")"),
        operand.map("(not {})".format),
    )


BOOL_EXPRS = st.recursive(st.one_of(_comparisons, st.sampled_from(["True", "False"])), _bool_extend, max_leaves=5)
ENV_VALUES = st.one_of(st.integers(-6, 6), st.integers(INT64_MIN, INT64_MAX),
                       st.sampled_from([INT64_MIN, INT64_MAX, INT64_MIN + 1, -1, 0, 2**32]))
EXPR_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_program(ext, text, env, boolean):
    expr = Expr(text)
    assert expr.to_postfix(SLOTS, boolean) is not None, text
    words = _program(expr, SLOTS, boolean)
    assume(words is not None)  # deeper than the plan's stack
    value = ext.evaluate_program(packed([len(words), *words]), env)
    try:
        expected = eager(ast.parse(text, mode="eval").body, env)
    except Unrepresentable:
        expected = None
    assert value == expected, text
    try:
        python = expr.closure(SLOTS)(env)
    except ZeroDivisionError:
        assert value is None, text
        return
    if boolean:
        assert value is None or bool(value) == bool(python), text
    elif not INT64_MIN <= python <= INT64_MAX:
        assert value is None, text
    else:
        assert value is None or value == python, text


@EXPR_SETTINGS
@given(text=INT_EXPRS, env=st.tuples(ENV_VALUES, ENV_VALUES, ENV_VALUES))
def test_integer_programs_compute_what_python_computes(ext, text, env):
    check_program(ext, text, env, boolean=False)


@EXPR_SETTINGS
@given(text=st.one_of(BOOL_EXPRS, INT_EXPRS), env=st.tuples(ENV_VALUES, ENV_VALUES, ENV_VALUES))
def test_truth_programs_compute_what_python_computes(ext, text, env):
    check_program(ext, text, env, boolean=True)


@pytest.mark.parametrize("text, env, value", [
    ("M // N", (7, 0, 0), None), ("M % N", (7, 0, 0), None),
    ("M // N", (INT64_MIN, -1, 0), None), ("M % N", (INT64_MIN, -1, 0), 0),
    ("-M", (INT64_MIN, 0, 0), None), ("M + N", (INT64_MAX, 1, 0), None), ("M - N", (INT64_MIN, 1, 0), None),
    ("M * N", (2**32, 2**31, 0), None), ("M * N", (2**32, 2**30, 0), 2**62),
    ("M // N", (-7, 2, 0), -4), ("M % N", (-7, 2, 0), 1), ("M % N", (7, -2, 0), -1), ("M // N", (7, -2, 0), -4),
    ("min(M, N, K)", (3, -2, 1), -2), ("max(M, N, K)", (3, -2, 1), 3),
    ("wrap(M, 32)", (2**31, 0, 0), -(2**31)), ("wrap(M, 32)", (-(2**31) - 1, 0, 0), 2**31 - 1),
    ("wrap(M, 8)", (300, 0, 0), 44), ("wrapu(M, 8)", (-56, 0, 0), 200), ("wrap(M, 1)", (INT64_MAX, 0, 0), -1),
    ("wrap(M, 63)", (2**62, 0, 0), -(2**62)), ("wrapu(M, 63)", (-1, 0, 0), 2**63 - 1),
    ("wrap(M, 64)", (INT64_MIN, 0, 0), INT64_MIN), ("wrapu(M, 64)", (INT64_MAX, 0, 0), INT64_MAX),
    ("wrapu(M, 64)", (-1, 0, 0), None),  # 2**64 - 1 is no int64: the general path computes it
    ("wrap(M * N, 32)", (2**32, 2**31, 0), None),  # the product overflows int64 before the wrap
    ("-(-wrap(M * 4, 32) // 128)", (2**30 + 100, 0, 0), 4),
])
def test_program_edge_values(ext, text, env, value):
    words = _program(Expr(text), SLOTS, False)
    assert ext.evaluate_program(packed([len(words), *words]), env) == value


def test_evaluate_program_checks_its_arguments(ext):
    load_k = packed([2, 1, 2])
    assert ext.evaluate_program(load_k, (1, 2, 3)) == 3
    with pytest.raises(ValueError, match="loads past the env"):
        ext.evaluate_program(load_k, (1, 2))
    with pytest.raises(ValueError, match="not a valid program"):
        ext.evaluate_program(packed([3, 1, 2]), (1, 2, 3))  # the length word disagrees
    with pytest.raises(ValueError, match="not a valid program"):
        ext.evaluate_program(load_k + b"\0", (1, 2, 3))
    with pytest.raises(ValueError, match="too many env values"):
        ext.evaluate_program(load_k, tuple(range(65)))
    with pytest.raises(OverflowError, match="int too big to convert"):
        ext.evaluate_program(load_k, (1, 2, 2**63))
