"""The example kernels end to end on the CPU target: frontend, pipeline, CPU backend, against float64 numpy.

Each example is instantiated with parameters other than its defaults (so
the factory really is parameterised), run on fresh random inputs, and
compared with its own float64 reference by relative norm error.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import tilemlir
from tilemlir.testing import relative_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

# (module, factory arguments, make_inputs arguments, tolerance)
CASES = [
    ("debug_print", dict(block=16, threads=96), dict(rows=3, block=16), 1e-6),
    ("device_assert", dict(block=64, threads=64), dict(n=77, m=1001), 0.0),
    ("elementwise_add", dict(block_N=256, dtype="float32"), dict(n=1001, dtype="float32"), 1e-7),
    ("elementwise_add", dict(block_N=512, dtype="bfloat16"), dict(n=777, dtype="bfloat16"), 1e-2),
    ("softmax", dict(N=1024, block_M=2, block_N=256), dict(rows=5, n=1024), 2e-3),
    ("rmsnorm", dict(N=512, block_M=2, dtype="float16"), dict(rows=7, n=512, dtype="float16"), 2e-3),
    ("layernorm", dict(N=384, block_M=2, dtype="bfloat16"), dict(rows=5, n=384, dtype="bfloat16"), 1e-2),
    ("row_reduce", dict(N=1024, block_M=2, block_N=256), dict(rows=9, n=1024), 1e-5),
    ("quant_fp8", dict(N=256, block_M=2, dtype="float16"), dict(rows=6, n=256, dtype="float16"), 4e-2),
    ("silu_and_mul", dict(D=300, block_M=2, block_D=128), dict(rows=5, d=300), 1e-2),
    ("fp8_gemm", dict(N=128, K=256, block_M=64, block_N=64, threads=128), dict(m=70, n=128, k=256), 5e-3),
    ("flash_attention", dict(heads=2, kv_heads=1, dim=32, block_M=32, block_N=32, threads=64),
     dict(heads=2, kv_heads=1, seq=45, dim=32), 1e-2),
    ("gemm", dict(N=128, K=96, block_M=32, block_N=64, block_K=32, num_stages=2), dict(m=50, n=128, k=96), 2e-3),
    ("gemm", dict(N=320, K=64, block_M=32, block_N=64, block_K=32, enable_rasterization=True, panel_size=2),
     dict(m=100, n=320, k=64), 2e-3),
]


@pytest.mark.parametrize("name, factory_args, input_args, tolerance", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_example_matches_its_reference(name, factory_args, input_args, tolerance):
    example = importlib.import_module(name)
    factory = next(v for v in vars(example).values() if isinstance(v, tilemlir.api.JitFunction))
    kernel = tilemlir.compile(factory.instantiate(**factory_args), target="cpu")
    inputs = example.make_inputs(np.random.default_rng(), **input_args)
    outputs = kernel(*inputs)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    references = example.reference(*inputs)
    assert len(outputs) == len(references)
    for got, want in zip(outputs, references):
        assert np.asarray(got).shape == np.asarray(want).shape
        assert np.all(np.isfinite(np.asarray(got, dtype=np.float64)))
        assert relative_error(got, want) <= tolerance


def test_every_example_is_covered():
    names = {p.stem for p in EXAMPLES.glob("*.py")} - {"harness"}
    assert names == {c[0] for c in CASES}
