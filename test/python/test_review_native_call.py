"""Review findings on the native call plan (launch.c's `CallPlan`), with the fake DLPack
provider and driver of test_runtime_native_call.py."""

import gc
import weakref

import pytest

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.checks import ArgumentBinder
from tilemlir.runtime.fastpath import SLOW
from tilemlir.runtime.kernel import stream_handle
from tilemlir.runtime.native_call import plan_spec
from tilemlir.runtime.signature import KernelSignature, TensorParam

from test_runtime_native_call import Driver, FakeTensor, copy_signature, ext, harness, provider  # noqa: F401


def matmul_shape_signature():
    """c (M, N) from a (M, K) and b (K, N), 32-bit indices: the output's dims come from two inputs."""
    params = (TensorParam("a", "float32", ("M", "K"), written=False),
              TensorParam("b", "float32", ("K", "N"), written=False), TensorParam("c", "float32", ("M", "N")))
    return KernelSignature(name="mm", params=params, symbols=("M", "K", "N"), grid=("1", "1", "1"),
                           block=(32, 1, 1), cuda_params=("a", "b", "c", "M", "K", "N"), out_idx=(2,),
                           index_bits=32)


@pytest.mark.parametrize("M, N", [(2**32, 2**32), (2**31, 2**33), (2**62, 2**40)])
def test_an_output_whose_element_count_overflows_int64_is_not_launched(harness, M, N):
    """Empty inputs bind huge symbols (torch allows a (2**32, 0) tensor); the output's element
    count M * N then overflows int64. The general path rejects it (beyond 32-bit indexing), so
    the plan must hand it back rather than wrap the count below the limit and launch."""
    sig = matmul_shape_signature()
    a, b = FakeTensor((M, 0)), FakeTensor((0, N))
    with pytest.raises(LaunchError, match="beyond the kernel's 32-bit indexing"):
        ArgumentBinder(sig).output_shapes([M, 0, N])  # env: M, K, N
    h = harness(sig)
    h.slow(a, b)


def test_an_input_whose_element_count_overflows_int64_is_not_launched(harness):
    """An input's dims whose product overflows int64 (only an empty torch tensor can have such
    dims, but the plan may not rely on that): the general path compares the true count."""
    sig = KernelSignature(name="total", params=(TensorParam("a", "int8", ("M", "N", "K")),
                                                TensorParam("r", "int64", (2,))),
                          symbols=("M", "N", "K"), grid=("1", "1", "1"), block=(32, 1, 1),
                          cuda_params=("a", "r", "M", "N", "K"), out_idx=(1,), index_bits=32)
    h = harness(sig)
    h.slow(FakeTensor((2**32, 2**32, 1), "int8"))


class _Owner:
    """What CompiledKernel is to its plan: it holds the plan, and the plan holds its bound method."""

    def launch_failed(self, code, grid, shared):
        raise RuntimeError(code)


def test_a_plan_in_a_reference_cycle_is_collected(ext, provider):
    """CompiledKernel -> NativeCall -> CallPlan -> kernel._launch_failed -> CompiledKernel is a cycle;
    the plan must take part in garbage collection, or every kernel with a native plan (and its
    loaded CUDA modules) lives forever."""
    owner = _Owner()
    owner.driver = Driver(copy_signature())
    owner.plan = ext.CallPlan(plan_spec(copy_signature()), FakeTensor.__dlpack_c_exchange_api__, FakeTensor, SLOW,
                              stream_handle, owner.launch_failed, owner.driver.get_context_address,
                              owner.driver.launch_address)
    alive = weakref.ref(owner)
    del owner
    gc.collect()
    assert alive() is None



def test_a_symbol_beyond_32_bits_bound_by_empty_tensors_is_not_launched(harness):
    """M = 2**31 from a (2**31, 0) tensor: every element count is 0, but M itself is a 32-bit
    kernel parameter; the general path refuses it, so the plan hands the call back."""
    sig = KernelSignature(name="rows", params=(TensorParam("a", "float32", ("M", "K"), written=False),
                                               TensorParam("b", "float32", ("M", "K"))),
                          symbols=("M", "K"), grid=("(M + 127) // 128", "1", "1"), block=(128, 1, 1),
                          cuda_params=("a", "b", "M", "K"), index_bits=32)
    h = harness(sig)
    h.slow(FakeTensor((2**31, 0)), FakeTensor((2**31, 0)))
    _, record = h.launch(FakeTensor((2**31 - 1, 0)), FakeTensor((2**31 - 1, 0)))
    assert record["grid"] == ((2**31 - 1 + 127) // 128, 1, 1)
