"""The block-scaled fp8 GEMM benchmark of issue 20: its shapes and artifact names. Pure Python (no torch), shared by
`build_fp8_gemm_artifacts.py` (here, with MLIR) and `bench_fp8_gemm.py` (on the GPU machine).

C (bf16, M x N) = (A * sa) @ (B * sb)^T, A e4m3 M x K with a scale per (row, 128-wide K group), B e4m3 N x K with a
scale per 128 x 128 block: `examples/fp8_gemm.py`. M is symbolic there, so one artifact per (N, K) serves every M.
"""

from __future__ import annotations

from benchmarks.gemm_cases import GemmShape, parse_shape

# DeepSeek-V3 projections (N, K) of issue 20, at M = 4096 tokens, a ragged 4095 and a small 128
WEIGHTS = ((7168, 2048), (2112, 7168), (24576, 1536), (7168, 16384), (4096, 7168))
ROWS = (4096, 4095, 128)
SHAPES = tuple(GemmShape(m, n, k) for n, k in WEIGHTS for m in ROWS)
# the square product the fp8 peak is read at (torch._scaled_mm, per-tensor scales)
PEAK_SHAPE = GemmShape(8192, 8192, 8192)
# bf16 output of a float32 sum: about bf16's storing error (2^-8 / sqrt(3)), a few times over
ERROR_BOUND = 8e-3


def artifact_id(n: int, k: int) -> str:
    return f"fp8_gemm_n{n}_k{k}"


def select_shapes(shape_texts: list[str] | None) -> list[GemmShape]:
    shapes = [parse_shape(t) for t in shape_texts] if shape_texts else list(SHAPES)
    for shape in shapes:
        if shape.k % 128:
            raise ValueError(f"{shape.name}: K must be a multiple of the 128-wide scale groups")
    return shapes
