"""Every example in examples/ on the CPU backend, against its float64 numpy reference.

Three levels: the tile-level reference (`lower-tile-to-loops`), the thread
level right after partition-threads (simulated, out-of-range global
accesses padded as guards would), and the final IR after guards and
vectorization (simulated with every out-of-range access, race and
misaligned vector an error: this is what checks those passes). Each at a
shape whose dynamic dim divides the block and one where it does not, on
fresh random inputs.
"""

import functools
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from tilemlir.backends.cpu.kernel import build
from tilemlir.backends.cpu.simulate_threads import SimulateOptions
from tilemlir.diagnostics import CompileError
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import passes_until

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# example -> (factory arguments, make_inputs arguments at a dividing / a non-dividing dynamic dim, tolerance).
# Compile-time sizes are cut down so each CPU run takes well under a second.
CASES = {
    "debug_print": ({"block": 16}, {"rows": 4, "block": 16}, {"rows": 3, "block": 16}, 1e-6),
    "device_assert": ({"block": 128}, {"n": 100, "m": 512}, {"n": 100, "m": 300}, 0.0),
    "elementwise_add": ({}, {"n": 4096}, {"n": 3001}, 1e-3),
    "fp8_gemm": ({"N": 128, "K": 256, "block_M": 64, "block_N": 64, "threads": 128},
                 {"m": 128, "n": 128, "k": 256}, {"m": 77, "n": 128, "k": 256}, 5e-3),
    "flash_attention": ({"heads": 2, "kv_heads": 1, "dim": 32, "block_M": 32, "block_N": 32, "threads": 64},
                        {"heads": 2, "kv_heads": 1, "seq": 64, "dim": 32},
                        {"heads": 2, "kv_heads": 1, "seq": 50, "dim": 32}, 1e-2),
    "gemm": ({"N": 192, "K": 96, "block_M": 64, "block_N": 64, "block_K": 32},
             {"m": 128, "n": 192, "k": 96}, {"m": 77, "n": 192, "k": 96}, 1e-3),
    "layernorm": ({"N": 1024, "block_M": 4}, {"rows": 8, "n": 1024}, {"rows": 7, "n": 1024}, 2e-3),
    "quant_fp8": ({"N": 1024, "block_M": 4}, {"rows": 8, "n": 1024}, {"rows": 7, "n": 1024}, 4e-2),
    "rmsnorm": ({"N": 1024, "block_M": 4}, {"rows": 8, "n": 1024}, {"rows": 7, "n": 1024}, 1e-2),
    "row_reduce": ({"N": 2048, "block_M": 4, "block_N": 1024}, {"rows": 8, "n": 2048}, {"rows": 7, "n": 2048}, 1e-5),
    "silu_and_mul": ({"D": 1024, "block_M": 4, "block_D": 256}, {"rows": 8, "d": 1024}, {"rows": 7, "d": 1024}, 1e-2),
    "softmax": ({"N": 2048, "block_M": 2, "block_N": 1024}, {"rows": 8, "n": 2048}, {"rows": 7, "n": 2048}, 2e-3),
}
# level -> (pipeline stage before the CPU backend, backend level, simulation options)
LEVELS = {
    "tile": ("frontend", "tile", SimulateOptions()),
    "thread": ("thread", "thread", SimulateOptions(out_of_range="pad")),
    "final": ("final", "thread", SimulateOptions()),
}


def example_module(name: str):
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # examples import their harness
    return importlib.import_module(name)


def test_every_example_is_covered():
    found = {p.stem for p in EXAMPLES.glob("*.py") if p.stem != "harness"}
    assert found == set(CASES), f"examples without a CPU test case: {sorted(found - set(CASES))}"


@functools.cache
def compiled(name: str, level: str):
    module = example_module(name)
    factory = next(v for v in vars(module).values() if hasattr(v, "instantiate"))
    frontend = factory.instantiate(**CASES[name][0]).frontend()
    stage, backend_level, options = LEVELS[level]
    ir_module = frontend.module()
    with ir_module.context:
        run_pipeline(ir_module, passes_until(stage))
    return build(ir_module, frontend.info, backend_level, simulate=options)


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("divides", [True, False], ids=["divisible", "remainder"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_example(name, divides, level):
    try:
        kernel = compiled(name, level)
    except CompileError as err:
        if "not implemented yet" in str(err):
            pytest.xfail(f"{name} does not lower to level {level} yet: {err}")
        raise
    module = example_module(name)
    _, dividing, remainder, tolerance = CASES[name]
    inputs = module.make_inputs(np.random.default_rng(), **(dividing if divides else remainder))
    outputs = kernel(*inputs)
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    wanted = module.reference(*inputs)
    assert len(outputs) == len(wanted)
    for index, (got, want) in enumerate(zip(outputs, wanted)):
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        assert got64.shape == want64.shape
        assert np.isfinite(got64).all(), f"output {index} has non-finite elements"
        error = np.linalg.norm(got64 - want64) / np.linalg.norm(want64)
        assert error <= tolerance, f"output {index}: relative error {error:.3e} > {tolerance}"
