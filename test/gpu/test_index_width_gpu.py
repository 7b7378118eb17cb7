"""Index width on a real device: library kernels at 2**31 - 1 elements and at 2**31 and more.

- add with 12 elements a thread (a 1536-element tile) at n = 2**31 - 1: the last block's guards leave
  int32, so the compiler made the kernel 64-bit; it must compute every element (issue 14's reproducer).
- The default int8 add is 32-bit: at n = 2**31 + 4099 the launch is refused, naming the option; with
  index_bits=64 the same kernel computes every element.
- LLM logits, softmax over 16384 x 131072 bf16 (2**31 elements): refused by the chosen 32-bit kernel,
  computed by the index_bits=64 one.

Fresh random inputs, outputs poisoned before the launch; the adds compared bit for bit with torch (an
fp16 or a wrapping int8 add rounds or wraps once, as torch does), the softmax with a float64 reference
by relative norm error. About 18 GiB of device memory at the peak. Skipped without a GPU.
"""

import math

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import INDEX_WIDTH_CASES_BY_NAME, kernel_for  # noqa: E402
from test_examples_gpu import with_caller_outputs  # noqa: E402

from tilemlir.diagnostics import LaunchError

PAST_2_31 = 2**31 + 4099  # not a multiple of any tile: the last block is partial


def random_tensor(n: int, dtype) -> "torch.Tensor":
    if dtype == torch.int8:
        return torch.randint(-128, 128, (n,), dtype=torch.int8, device="cuda")
    return torch.randn(n, dtype=dtype, device="cuda")


def check_add(name: str, n: int, dtype, bits: int) -> None:
    kernel, out_idx = with_caller_outputs(kernel_for(INDEX_WIDTH_CASES_BY_NAME[name]))
    assert out_idx == (2,) and kernel.signature.index_bits == bits
    a, b = random_tensor(n, dtype), random_tensor(n, dtype)
    c = torch.empty_like(a)
    c.view(torch.uint8).fill_(0xFF)  # NaN in fp16, -1 in int8: both catch an unwritten element below
    kernel(a, b, c)
    want = a + b
    torch.cuda.synchronize()
    mismatched = torch.nonzero(c != want)
    assert mismatched.numel() == 0, (f"{name} at n = {n}: {mismatched.numel()} wrong elements, first at "
                                     f"{mismatched[:5].flatten().tolist()}")
    del a, b, c, want
    torch.cuda.empty_cache()


def test_add_with_12_elements_a_thread_computes_every_element_at_2_31_minus_1():
    check_add("add_f16_elements_12", 2**31 - 1, torch.float16, 64)


def test_the_32_bit_add_refuses_2_31_elements_and_names_the_option():
    kernel = kernel_for(INDEX_WIDTH_CASES_BY_NAME["add_i8"])
    assert kernel.signature.index_bits == 32
    a = b = torch.zeros(PAST_2_31, dtype=torch.int8, device="cuda")
    with pytest.raises(LaunchError, match=rf"argument 'A': {PAST_2_31} elements exceed the kernel's 32-bit indexing "
                                          r"\(at most 2147483647\); compile the kernel with index_bits=64"):
        kernel(a, b)
    del a, b
    torch.cuda.empty_cache()


def test_add_with_index_bits_64_computes_every_element_past_2_31():
    check_add("add_i8_index_bits_64", PAST_2_31, torch.int8, 64)


LOGITS = (16384, 131072)


def test_softmax_over_llm_logits_of_2_31_elements_needs_and_runs_with_index_bits_64():
    x = torch.randn(LOGITS, dtype=torch.bfloat16, device="cuda") * 4
    narrow = kernel_for(INDEX_WIDTH_CASES_BY_NAME["softmax_logits"])
    assert narrow.signature.index_bits == 32
    with pytest.raises(LaunchError, match=r"argument 'X': 2147483648 elements exceed the kernel's 32-bit indexing "
                                          r"\(at most 2147483647\); compile the kernel with index_bits=64"):
        narrow(x)
    kernel, out_idx = with_caller_outputs(kernel_for(INDEX_WIDTH_CASES_BY_NAME["softmax_logits_index_bits_64"]))
    assert out_idx == (1,) and kernel.signature.index_bits == 64
    y = torch.empty_like(x)
    y.view(torch.int16).fill_(-1)  # NaN
    kernel(x, y)
    torch.cuda.synchronize()
    error_sq = want_sq = 0.0
    for rows in range(0, LOGITS[0], 1024):  # a float64 reference a slice at a time (1 GiB each)
        want = torch.softmax(x[rows:rows + 1024].double(), dim=-1)
        got = y[rows:rows + 1024].double()
        assert torch.isfinite(got).all(), f"rows {rows}..{rows + 1023}: unwritten (NaN) elements"
        error_sq += float(torch.sum((got - want) ** 2))
        want_sq += float(torch.sum(want**2))
    error = math.sqrt(error_sq / want_sq)
    assert error <= 4e-3, f"relative error {error:.3e}"


def test_a_static_shape_past_2_31_is_64_bit_without_being_asked():
    """static_shape_kernels.add_static: A, B, C of exactly 2**31 + 4099 int8 elements (a static dim) compile
    64-bit by themselves and every element is computed."""
    from example_cases import STATIC_SHAPE_CASES

    kernel, out_idx = with_caller_outputs(kernel_for(STATIC_SHAPE_CASES[0]))
    assert out_idx == (2,) and kernel.signature.index_bits == 64
    a, b = random_tensor(PAST_2_31, torch.int8), random_tensor(PAST_2_31, torch.int8)
    want = a + b
    c = ~want  # every element poisoned: one the kernel leaves unwritten differs from its sum
    kernel(a, b, c)
    torch.cuda.synchronize()
    mismatched = torch.nonzero(c != want)
    assert mismatched.numel() == 0, f"{mismatched.numel()} wrong elements, first at {mismatched[:5].flatten().tolist()}"
    del a, b, c, want
    torch.cuda.empty_cache()
