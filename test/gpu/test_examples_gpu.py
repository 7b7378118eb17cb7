"""Every example kernel on the GPU: fresh random inputs, poisoned outputs, float64 references.

Shapes: the example's own width at 16384 rows (or a large flat length), a few
rows, one row, and a non-divisible 1000 x 1000 variant; rows are a symbolic
dim, so one compiled kernel serves every row count. Skipped without a GPU.
"""

import dataclasses
import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import CASES, GEMM_CASES, example_module, kernel_for  # noqa: E402
from tilemlir.testing import relative_error  # noqa: E402

TORCH_VIEWS = {"bfloat16": (np.int16, torch.bfloat16), "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
               "float8_e5m2": (np.uint8, torch.float8_e5m2)}
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                "float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "int32": torch.int32}


def to_device(array):
    if not isinstance(array, np.ndarray):
        return array
    array = np.ascontiguousarray(array)
    view = TORCH_VIEWS.get(array.dtype.name)
    if view is None:
        return torch.from_numpy(array).cuda()
    return torch.from_numpy(array.view(view[0])).cuda().view(view[1])


def with_caller_outputs(kernel):
    """The same cubin and checks, but outputs passed by the caller (so the test can poison them)."""
    from tilemlir.runtime.kernel import CompiledKernel

    signature = dataclasses.replace(kernel.signature, out_idx=())
    return CompiledKernel(signature, kernel.cuda_source(), kernel.cubin, kernel.options), kernel.signature.out_idx


def poisoned_outputs(signature, out_idx, inputs_by_name):
    """NaN-filled (all-ones bytes) outputs of the shapes the symbols bound by the inputs imply."""
    bound = {}
    for param in signature.params:
        value = inputs_by_name.get(param.name)
        if isinstance(value, torch.Tensor):
            for dim, size in zip(param.shape, value.shape):
                if isinstance(dim, str):
                    bound.setdefault(dim, size)
    outputs = []
    for index in out_idx:
        param = signature.params[index]
        shape = [bound[d] if isinstance(d, str) else d for d in param.shape]
        out = torch.empty(shape, dtype=TORCH_DTYPES[param.dtype], device="cuda")
        out.view(torch.uint8).fill_(0xFF)
        outputs.append(out)
    return outputs


def make_inputs(module, case, rows, rng):
    params = inspect.signature(module.make_inputs).parameters
    kwargs = dict(case.input_kwargs)
    if "rows" in params:
        kwargs["rows"] = rows
        if "n" in params and case.n:
            kwargs["n"] = case.n
    elif "m" in params:  # a GEMM: rows are A's and C's
        kwargs["m"] = rows
    elif "n" in params:
        kwargs["n"] = rows
    return module.make_inputs(rng, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_example_on_gpu(case):
    check_example(case, case.rows)


@pytest.mark.parametrize("case", GEMM_CASES, ids=lambda c: c.name)
def test_gemm_at_benchmark_shapes_on_gpu(case):
    if case.params.get("dtype") == "bfloat16":
        pytest.importorskip("ml_dtypes")  # numpy's bfloat16, for the example's make_inputs
    check_example(case, case.rows)


def check_example(case, row_counts):
    """Run `case` at each row count on fresh inputs into poisoned outputs; assert against float64."""
    module = example_module(case.module)
    kernel, out_idx = with_caller_outputs(kernel_for(case))
    names = [p.name for i, p in enumerate(kernel.signature.params) if i not in out_idx]
    rng = np.random.default_rng()
    for rows in row_counts:
        inputs = make_inputs(module, case, rows, rng)
        wanted = module.reference(*inputs)
        device_inputs = [to_device(a) for a in inputs]
        outputs = poisoned_outputs(kernel.signature, out_idx, dict(zip(names, device_inputs)))
        args, given, produced = [], iter(device_inputs), iter(outputs)
        for index in range(len(kernel.signature.params)):
            args.append(next(produced) if index in out_idx else next(given))
        kernel(*args)
        torch.cuda.synchronize()
        for index, (got, want) in enumerate(zip(outputs, wanted)):
            got_host = got.float().cpu().numpy()
            assert np.isfinite(got_host).all(), f"{case.name} rows={rows}: output {index} has unwritten/NaN elements"
            error = relative_error(got, want)
            assert error <= case.tolerance, f"{case.name} rows={rows}: output {index} relative error {error:.3e}"
