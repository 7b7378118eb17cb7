"""What running an example as a script does: show its frontend IR, then compile, run and check it.

`run_example` prints the kernel's frontend IR, compiles it for `--target`
(cpu by default), launches it on fresh random inputs and compares every
output with a float64 numpy reference by relative norm error. Kernels follow the out_idx convention: they are
called with their inputs and return their outputs; `compile_options` (e.g. tensor_cores) go to
`tilemlir.compile` for either target.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

import numpy as np

import tilemlir
from tilemlir.testing import relative_error


def numpy_dtype(name: str):
    """The numpy dtype of a language dtype name (bfloat16 and fp8 through ml_dtypes)."""
    import ml_dtypes

    special = {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3": ml_dtypes.float8_e4m3fn,
               "float8_e5m2": ml_dtypes.float8_e5m2}
    return np.dtype(special.get(name, name))


def run_example(
    kernel_fn,
    make_inputs: Callable[[np.random.Generator], list],
    reference: Callable[..., list],
    tolerance: float,
    argv: list[str] | None = None,
    compile_options: dict | None = None,
) -> int:
    parser = argparse.ArgumentParser(description="compile, run and check this example kernel")
    parser.add_argument("--target", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--seed", type=int, default=None, help="random seed (fresh by default)")
    args = parser.parse_args(argv)

    print(tilemlir.lower(kernel_fn, stage="frontend"))
    try:
        kernel = tilemlir.compile(kernel_fn, target=args.target, **(compile_options or {}))
    except tilemlir.CompileError as err:
        print(f"cannot run the kernel: {err}", file=sys.stderr)
        return 1
    rng = np.random.default_rng(args.seed)
    inputs = make_inputs(rng)
    outputs = kernel(*inputs)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    wanted = reference(*inputs)
    status = 0
    for index, (got, want) in enumerate(zip(outputs, wanted)):
        error = relative_error(got, want)
        ok = error <= tolerance
        status |= not ok
        print(f"output {index}: relative error {error:.3e} ({'ok' if ok else 'FAILED'}, tolerance {tolerance:g})")
    return status
