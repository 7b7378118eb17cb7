"""The attention benchmark of issue 19: shapes, FLOP counts, our kernel's variants and artifact names.

Pure Python (no torch), shared by `build_attention_artifacts.py` (here, with MLIR) and `bench_attention.py`
(on the GPU machine). Tensors are (batch, heads, seq, dim) bf16, as F.scaled_dot_product_attention takes
them. Our kernel (examples/flash_attention.py) keeps seq symbolic, so one artifact per (variant, batch,
heads, dim, causal) serves every length.
"""

from __future__ import annotations

from dataclasses import dataclass

# (batch, heads, seq, dim): issue 19's two forward shapes
SHAPES = ((4, 32, 4096, 128), (8, 16, 8192, 128))
# our kernel's variants: factory arguments and compile options
VARIANTS = {
    "mma": ({"block_M": 128, "block_N": 64, "threads": 256, "num_stages": 2}, {"tensor_cores": True}),
    "wgmma": ({"block_M": 128, "block_N": 128, "threads": 256, "num_stages": 2}, {"tensor_cores": "wgmma"}),
}
# ||O - ref|| / ||ref||, ref = SDPA's math backend in float32 on the same bf16 inputs: P and O rounded to bf16
ERROR_BOUND = 1e-2


@dataclass(frozen=True)
class AttentionCase:
    batch: int
    heads: int
    seq: int
    dim: int
    causal: bool

    @property
    def id(self) -> str:
        return f"attn_{self.batch}x{self.heads}x{self.seq}x{self.dim}{'_causal' if self.causal else ''}"

    @property
    def flops(self) -> float:
        """4 B H S^2 D (two matrix products), halved for causal."""
        flops = 4 * self.batch * self.heads * self.seq ** 2 * self.dim
        return flops / 2 if self.causal else flops

    def artifact_id(self, variant: str) -> str:
        return f"fa_{variant}_b{self.batch}h{self.heads}d{self.dim}{'_causal' if self.causal else ''}"

    def factory_kwargs(self, variant: str) -> tuple[dict, dict]:
        """(flash_attention's arguments, tilemlir.compile's options) of our kernel for this case."""
        params, options = VARIANTS[variant]
        return ({"batch": self.batch, "heads": self.heads, "dim": self.dim, "causal": self.causal, **params},
                {"arch": "sm_90a", **options})


def all_cases(shapes=SHAPES) -> list[AttentionCase]:
    return [AttentionCase(b, h, s, d, causal) for b, h, s, d in shapes for causal in (False, True)]


def parse_shape(text: str) -> tuple[int, int, int, int]:
    parts = text.lower().split("x")
    if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"a shape is BxHxSxD of positive ints, got {text!r}")
    return tuple(int(p) for p in parts)
