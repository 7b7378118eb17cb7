"""The example kernels the GPU tests run, and how to get each one compiled.

On a machine with the compiler (torch-mlir installed) a case compiles from
examples/; the offline GPU machine has no MLIR, so `build_artifacts.py`
exports every case here first into test/gpu/artifacts/<case>/ and the tests
load them with `tilemlir.runtime.load`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@dataclass(frozen=True)
class ExampleCase:
    """Example `module`'s factory `factory` at `params`, run at `rows` x `n` (n: the inputs' width)."""

    name: str
    module: str
    factory: str
    params: dict = field(default_factory=dict)
    n: int = 4096
    rows: tuple = (16384, 37, 1)
    tolerance: float = 1e-2
    input_kwargs: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)  # tilemlir.compile's


CASES = (
    ExampleCase("add_f16", "elementwise_add", "elementwise_add", {}, n=0, rows=(2**24 + 7, 100_003, 5),
                tolerance=1e-3),
    ExampleCase("softmax_4096", "softmax", "softmax", {"N": 4096}, tolerance=2e-3),
    ExampleCase("softmax_1000", "softmax", "softmax", {"N": 1000, "block_N": 1000}, n=1000, rows=(1000, 1),
                tolerance=2e-3),
    ExampleCase("rmsnorm_4096", "rmsnorm", "rmsnorm", {"N": 4096}),
    ExampleCase("rmsnorm_1000", "rmsnorm", "rmsnorm", {"N": 1000}, n=1000, rows=(1000, 1)),
    ExampleCase("layernorm_4096", "layernorm", "layernorm", {"N": 4096}),
    ExampleCase("layernorm_1000", "layernorm", "layernorm", {"N": 1000}, n=1000, rows=(1000, 1)),
    ExampleCase("row_reduce_8192", "row_reduce", "row_reduce", {"N": 8192}, n=8192, rows=(16384, 29, 1),
                tolerance=1e-5),
    ExampleCase("row_reduce_1000", "row_reduce", "row_reduce", {"N": 1000, "block_N": 1000}, n=1000,
                rows=(1000, 3), tolerance=1e-5),
    ExampleCase("quant_fp8_4096", "quant_fp8", "quant_fp8", {"N": 4096}, tolerance=4e-2),
    ExampleCase("quant_fp8_1000", "quant_fp8", "quant_fp8", {"N": 1000}, n=1000, rows=(1000, 1), tolerance=4e-2),
    ExampleCase("silu_and_mul_11008", "silu_and_mul", "silu_and_mul", {}, n=0, rows=(4096, 13, 1)),
    ExampleCase("gemm_f16_512x256", "gemm", "matmul",
                {"N": 512, "K": 256, "block_M": 64, "block_N": 64, "block_K": 32}, n=0, rows=(1000, 37, 1),
                tolerance=1e-3, input_kwargs={"n": 512, "k": 256}),
)
CASES_BY_NAME = {case.name: case for case in CASES}

# examples/gemm.py at issue 16's benchmark shapes that its smaller case above does not reach: bf16, a ragged N
# (2112 = 16.5 blocks of 128) with K = 7168, and the ragged M = 4095 and 129 (M is symbolic: one artifact).
# Not in CASES: sanitize_examples.py would run them at 5003 rows under compute-sanitizer.
GEMM_CASES = tuple(
    ExampleCase(f"gemm_{short}_2112x7168", "gemm", "matmul", {"N": 2112, "K": 7168, "dtype": dtype}, n=0,
                rows=(4095, 129, 1), tolerance=tolerance, input_kwargs={"n": 2112, "k": 7168, "dtype": dtype})
    for short, dtype, tolerance in (("bf16", "bfloat16", 8e-3), ("f16", "float16", 2e-3))
)

# examples/gemm.py's matmul in T.Pipelined(num_stages=1..4) rings of cp.async copies
# (test_pipelined_gemm_gpu.py): K = 520 and 100 leave a ragged last K tile (rows of 1040 / 200
# bytes: 16- and 8-byte copies), M = 4095 and 129 ragged row blocks; the last case's 4-stage ring
# takes 128 KiB of shared memory (the runtime raises the kernel's limit at load).
_PIPELINE_TILES = {"block_M": 64, "block_N": 64, "block_K": 32}
# the mma.sync ring (its cp.async waits are S - 2 deep; sm_90a takes wgmma by default: mma_cases.py has those)
_MMA_SYNC = {"tensor_cores": "mma_sync"}
PIPELINE_CASES = tuple(
    ExampleCase(f"gemm_stages{stages}_{n}x{k}", "gemm", "matmul", {"N": n, "K": k, **_PIPELINE_TILES,
                                                                   "num_stages": stages},
                n=0, rows=(4095, 1024, 129), tolerance=1e-3, input_kwargs={"n": n, "k": k}, options=_MMA_SYNC)
    for stages in (1, 2, 3, 4) for n, k in ((512, 520), (256, 100))
) + (
    ExampleCase("gemm_stages4_shared128k", "gemm", "matmul",
                {"N": 512, "K": 1024, "block_M": 64, "block_N": 64, "block_K": 128, "num_stages": 4},
                n=0, rows=(1000, 64), tolerance=1e-3, input_kwargs={"n": 512, "k": 1024}, options=_MMA_SYNC),
)
PIPELINE_CASES_BY_NAME = {case.name: case for case in PIPELINE_CASES}

# T.use_swizzle on examples/gemm.py's body (rasterized_gemm.py; test_rasterization_gpu.py): N = 2112 is 17 block
# columns and M = 4095 / 129 are 32 / 2 block rows, so both orders' last panels are ragged (and 3 panel_size 3 ones
# past M = 129's two rows); tensor cores on sm_90a.
RASTER_CASES = tuple(
    ExampleCase(f"gemm_swizzle_{order}{panel}", "rasterized_gemm", "matmul", {"panel": panel, "order": order},
                n=0, rows=(4095, 129), tolerance=1e-3, input_kwargs={"n": 2112, "k": 512})
    for order, panel in (("row", 8), ("row", 3), ("column", 5))
)

# Library kernels at 2**31 elements and more (test_index_width_gpu.py): the elementwise add with 12
# elements a thread (a 1536-element tile: its guards leave int32 at n = 2**31 - 1, so the compiler makes
# it 64-bit), the default int8 add and the bf16 softmax of 131072-wide rows (32-bit: the runtime refuses
# 2**31 elements), and both with index_bits=64.
_ELEMENTWISE, _SOFTMAX = "tilemlir.kernels.elementwise", "tilemlir.kernels.softmax"
_LOGITS = {"N": 131072, "dtype": "bfloat16"}
INDEX_WIDTH_CASES = (
    ExampleCase("add_f16_elements_12", _ELEMENTWISE, "add", {"dtype": "float16", "elements": 12}),
    ExampleCase("add_i8", _ELEMENTWISE, "add", {"dtype": "int8"}),
    ExampleCase("add_i8_index_bits_64", _ELEMENTWISE, "add", {"dtype": "int8"}, options={"index_bits": 64}),
    ExampleCase("softmax_logits", _SOFTMAX, "softmax", _LOGITS),
    ExampleCase("softmax_logits_index_bits_64", _SOFTMAX, "softmax", _LOGITS, options={"index_bits": 64}),
)
INDEX_WIDTH_CASES_BY_NAME = {case.name: case for case in INDEX_WIDTH_CASES}
# A static shape of 2**31 + 4099 elements (static_shape_kernels.py): 64-bit without being asked.
STATIC_SHAPE_CASES = (ExampleCase("add_i8_static_past_2_31", "static_shape_kernels", "add_static"),)

# T.print and T.device_assert (examples/debug_print.py and device_assert.py; test_debug_gpu.py).
DEBUG_CASES = (ExampleCase("debug_scale", "debug_print", "debug_scale"),
               ExampleCase("checked_gather", "device_assert", "checked_gather"))
DEBUG_CASES_BY_NAME = {case.name: case for case in DEBUG_CASES}


def example_module(name: str):
    """The examples/<name>.py module (examples/ goes on sys.path: the examples import their harness),
    or a dotted module of the kernel library."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def compiler_available() -> bool:
    return importlib.util.find_spec("torch_mlir") is not None


def kernel_for(case: ExampleCase):
    """The compiled CUDA kernel of `case`: built here when the compiler is installed, else its artifact."""
    if compiler_available():
        import tilemlir

        factory = getattr(example_module(case.module), case.factory)
        return tilemlir.compile(factory.instantiate(**case.params), target="cuda", **case.options)
    from tilemlir.runtime import load

    if not (ARTIFACTS / case.name / "signature.json").is_file():
        raise FileNotFoundError(f"no compiler here (torch_mlir) and no artifact {ARTIFACTS / case.name}: run "
                                "`python test/gpu/build_artifacts.py` where the compiler is and carry "
                                "test/gpu/artifacts")
    return load(ARTIFACTS / case.name)
