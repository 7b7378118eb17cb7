"""The GEMM benchmark of issue 16: its shapes, dtypes, FLOP counts, error bounds and artifact names.

Pure Python (no torch), shared by `build_gemm_artifacts.py` (here, with MLIR), `bench_gemm.py`
(on the GPU machine) and the harness tests.

C = A @ B with A (M, K) and B (K, N) row-major, C (M, N) in the inputs' dtype, accumulated in
float32: the layout `examples/gemm.py` takes. Our kernel keeps M symbolic, so one artifact per
(dtype, N, K) serves every M (the ragged M = 4095 and 129 reuse the 4096 x 4096 one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmarks.cases import SHORT_DTYPE, TOLERANCE

DTYPES = ("bfloat16", "float16")

# ||C - ref|| / ||ref||, ref = float32 matmul of the same (rounded) inputs with TF32 off: storing C in
# the dtype alone costs about 2^-p / sqrt(3) (p = 11 for fp16: 2.8e-4; p = 8 for bf16: 2.3e-3); a
# float32 accumulation over K <= 16384 adds about 1e-5. The bounds are cases.TOLERANCE's, a few
# times the storing error.
ERROR_BOUND = {dtype: TOLERANCE[dtype] for dtype in DTYPES}


@dataclass(frozen=True)
class GemmShape:
    m: int
    n: int
    k: int

    def __post_init__(self) -> None:
        if not all(isinstance(d, int) and d > 0 for d in (self.m, self.n, self.k)):
            raise ValueError(f"a GEMM shape is M x N x K of positive ints, got {(self.m, self.n, self.k)!r}")

    @property
    def name(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


@dataclass(frozen=True)
class GemmCase:
    shape: GemmShape
    dtype: str

    @property
    def id(self) -> str:
        return f"gemm_{SHORT_DTYPE[self.dtype]}_{self.shape.name}"

    @property
    def artifact_id(self) -> str:
        """Our kernel's artifact directory: M is symbolic, so N, K and the dtype name it."""
        return artifact_id(self.dtype, self.shape.n, self.shape.k)

    @property
    def error_bound(self) -> float:
        return ERROR_BOUND[self.dtype]


def artifact_id(dtype: str, n: int, k: int) -> str:
    return f"gemm_{SHORT_DTYPE[dtype]}_n{n}_k{k}"


SQUARE_SHAPES = (GemmShape(4096, 4096, 4096), GemmShape(8192, 8192, 8192))
# DeepSeek-V3-style projections at M = 4096 tokens: (N, K) of the weight
DEEPSEEK_SHAPES = tuple(GemmShape(4096, n, k) for n, k in ((7168, 2048), (2112, 7168), (24576, 1536), (7168, 16384)))
# M not a multiple of any block: the last row block is partial
RAGGED_SHAPES = (GemmShape(4095, 4096, 4096), GemmShape(129, 4096, 4096))
SHAPES = SQUARE_SHAPES + DEEPSEEK_SHAPES + RAGGED_SHAPES

_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")


def parse_shape(text: str) -> GemmShape:
    """'4096x7168x2048' (M x N x K) or '4096^3' -> GemmShape; ValueError otherwise."""
    text = text.strip().lower()
    cube = re.fullmatch(r"(\d+)\^3", text)
    if cube:
        d = int(cube.group(1))
        return GemmShape(d, d, d)
    match = _SHAPE.match(text)
    if not match:
        raise ValueError(f"GEMM shape {text!r} is not of the form MxNxK or D^3")
    return GemmShape(*(int(g) for g in match.groups()))


def parse_dtype(text: str) -> str:
    aliases = {**{d: d for d in DTYPES}, **{SHORT_DTYPE[d]: d for d in DTYPES}}
    if text.strip() not in aliases:
        raise ValueError(f"dtype {text!r}: the GEMM benchmark takes {', '.join(sorted(aliases))}")
    return aliases[text.strip()]


def select_cases(dtype_texts: list[str] | None = None, shape_texts: list[str] | None = None) -> list[GemmCase]:
    """Every selected shape in every selected dtype (defaults: SHAPES, DTYPES), shapes first."""
    dtypes = [parse_dtype(t) for t in dtype_texts] if dtype_texts else list(DTYPES)
    shapes = [parse_shape(t) for t in shape_texts] if shape_texts else list(SHAPES)
    return [GemmCase(shape, dtype) for shape in shapes for dtype in dtypes]


def artifact_ids(cases: list[GemmCase]) -> dict[str, tuple[str, int, int]]:
    """artifact id -> (dtype, N, K), once per id, in case order."""
    return {c.artifact_id: (c.dtype, c.shape.n, c.shape.k) for c in cases}


def tflops(flops: int, time_us: float) -> float:
    if not time_us or time_us <= 0:
        raise ValueError(f"time must be positive, got {time_us!r}")
    return flops / (time_us * 1e-6) / 1e12


def matrix_path(opcodes: dict[str, int] | None, cuda_source: str) -> str:
    """Which units the kernel's inner loop runs on, from its SASS opcodes (else its CUDA text)."""
    if opcodes:
        if opcodes.get("HGMMA"):
            return "wgmma"
        return "mma.sync" if opcodes.get("HMMA") else "SIMT"
    return "mma.sync" if "mma.sync" in cuda_source else "SIMT (from the CUDA text; no cuobjdump)"
