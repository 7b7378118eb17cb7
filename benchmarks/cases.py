"""The memory-bound kernels of issue 8, their tensors, shapes and compulsory bytes.

Pure Python (no torch), shared by `build_artifacts.py` (here, with MLIR),
`bench_memory_bound.py` (on the GPU machine) and the harness tests.

Each `Kernel` fixes the calling convention our compiled kernels follow: the
parameters are the inputs, then the outputs, then the scalars, in the order
listed below (an artifact may mark the outputs `out_idx`, then the caller
passes only the inputs and scalars). Tensor dims are written over the case's
symbols: ``M``, ``N`` (rows, columns), ``n`` (elements of a 1-D case), ``2N``
and ``NB`` (``ceil(N / 128)``, the 1 x 128 blocks of a row).

Semantics (what the float64 references in `torch_impls.py` compute):

- ``add``/``mul``: ``C = A op B``.
- ``cast_fp32_bf16`` / ``cast_bf16_fp8``: round to nearest even; fp8 is e4m3
  (``float8_e4m3fn``), inputs stay far inside its range.
- ``softmax``: along each row, fp32 math.
- ``rmsnorm``: ``Y = X * rsqrt(mean(X^2) + eps) * W``; ``layernorm``:
  ``Y = (X - mean) * rsqrt(var + eps) * W + B`` (biased variance).
- ``add_rmsnorm`` / ``add_layernorm``: ``H = X + R`` (written in bf16) and
  ``Y = norm(H)``; the reference normalizes the exact sum.
- ``row_sum`` / ``row_max``: fp32 over each row.
- ``quant_row``: ``S = amax(|X|, row) / 448``, ``Q = fp8(X / S)``;
  ``quant_block``: the same per 1 x 128 block (DeepSeek-V3's activation
  recipe), ``S`` of shape (M, NB), a last partial block when 128 does not
  divide N.
- ``silu_mul``: ``Y = silu(X[:, :N]) * X[:, N:]`` for X of shape (M, 2N).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3": 1}
SHORT_DTYPE = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float8_e4m3": "fp8"}

# ||out - ref|| / ||ref|| allowed per output dtype: a few times the rounding
# error of storing the exact result in that dtype.
TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 8e-3, "float8_e4m3": 8e-2}

QUANT_BLOCK = 128
FP8_MAX = 448.0


@dataclass(frozen=True)
class Shape:
    """A benchmark shape: (n,) for elementwise cases, (M, N) for row cases."""

    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.dims) not in (1, 2) or not all(isinstance(d, int) and d > 0 for d in self.dims):
            raise ValueError(f"a shape is (n,) or (M, N) of positive ints, got {self.dims!r}")

    @property
    def name(self) -> str:
        return "x".join(str(d) for d in self.dims)

    @property
    def rank(self) -> int:
        return len(self.dims)

    def symbols(self) -> dict[str, int]:
        if self.rank == 1:
            return {"n": self.dims[0]}
        m, n = self.dims
        return {"M": m, "N": n, "2N": 2 * n, "NB": math.ceil(n / QUANT_BLOCK)}


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str
    dims: tuple[str, ...]  # symbols of `Shape.symbols`

    def shape(self, shape: Shape) -> tuple[int, ...]:
        env = shape.symbols()
        try:
            return tuple(env[d] for d in self.dims)
        except KeyError as exc:
            raise ValueError(f"tensor {self.name} has dim {exc.args[0]!r}, which a {shape.rank}-D shape "
                             f"{shape.name} does not define") from None

    def nbytes(self, shape: Shape) -> int:
        return math.prod(self.shape(shape)) * ITEMSIZE[self.dtype]


@dataclass(frozen=True)
class Kernel:
    name: str  # e.g. "softmax_bf16"; artifact directories are "<name>_<shape>"
    family: str  # what `--kernels` selects by, e.g. "softmax"
    kind: str  # "elementwise" (1-D shapes) or "row" (2-D shapes, one row independent of the others)
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    scalars: tuple[tuple[str, float], ...] = ()  # float32 scalars passed after the tensors
    bitwise: bool = False  # outputs compared bit for bit with PyTorch's

    @property
    def rank(self) -> int:
        return 1 if self.kind == "elementwise" else 2

    @property
    def tensors(self) -> tuple[TensorSpec, ...]:
        return self.inputs + self.outputs

    def params(self) -> list[tuple[str, str, str, int]]:
        """(kind, name, dtype, rank) of each parameter, in calling-convention order."""
        tensors = [("tensor", t.name, t.dtype, len(t.dims)) for t in self.tensors]
        return tensors + [("scalar", name, "float32", 0) for name, _ in self.scalars]


@dataclass(frozen=True)
class Case:
    kernel: Kernel
    shape: Shape

    @property
    def id(self) -> str:
        return f"{self.kernel.name}_{self.shape.name}"

    def compulsory_bytes(self) -> int:
        """Each input read once and each output written once."""
        return sum(t.nbytes(self.shape) for t in self.kernel.tensors)


def _t(name: str, dtype: str, *dims: str) -> TensorSpec:
    return TensorSpec(name, dtype, dims)


def _binary(op: str, dtype: str) -> Kernel:
    s = SHORT_DTYPE[dtype]
    return Kernel(f"{op}_{s}", op, "elementwise", (_t("A", dtype, "n"), _t("B", dtype, "n")), (_t("C", dtype, "n"),))


def _cast(src: str, dst: str) -> Kernel:
    return Kernel(f"cast_{SHORT_DTYPE[src]}_{SHORT_DTYPE[dst]}", "cast", "elementwise",
                  (_t("X", src, "n"),), (_t("Y", dst, "n"),), bitwise=True)


def _softmax(dtype: str) -> Kernel:
    return Kernel(f"softmax_{SHORT_DTYPE[dtype]}", "softmax", "row",
                  (_t("X", dtype, "M", "N"),), (_t("Y", dtype, "M", "N"),))


BF16 = "bfloat16"
_X, _R = _t("X", BF16, "M", "N"), _t("R", BF16, "M", "N")
_W, _B = _t("W", BF16, "N"), _t("B", BF16, "N")
_Y, _H = _t("Y", BF16, "M", "N"), _t("H", BF16, "M", "N")

KERNELS: tuple[Kernel, ...] = (
    *(_binary(op, d) for op in ("add", "mul") for d in ("float32", "float16", "bfloat16")),
    _cast("float32", BF16),
    _cast(BF16, "float8_e4m3"),
    _softmax("float16"),
    _softmax(BF16),
    Kernel("rmsnorm_bf16", "rmsnorm", "row", (_X, _W), (_Y,), (("eps", 1e-6),)),
    Kernel("add_rmsnorm_bf16", "rmsnorm", "row", (_X, _R, _W), (_Y, _H), (("eps", 1e-6),)),
    Kernel("layernorm_bf16", "layernorm", "row", (_X, _W, _B), (_Y,), (("eps", 1e-5),)),
    Kernel("add_layernorm_bf16", "layernorm", "row", (_X, _R, _W, _B), (_Y, _H), (("eps", 1e-5),)),
    Kernel("row_sum_fp32", "row_sum", "row", (_t("X", "float32", "M", "N"),), (_t("Y", "float32", "M"),)),
    Kernel("row_max_fp32", "row_max", "row", (_t("X", "float32", "M", "N"),), (_t("Y", "float32", "M"),)),
    Kernel("quant_row_fp8", "quant_row", "row", (_X,),
           (_t("Q", "float8_e4m3", "M", "N"), _t("S", "float32", "M")), bitwise=True),
    Kernel("quant_block_fp8", "quant_block", "row", (_X,),
           (_t("Q", "float8_e4m3", "M", "N"), _t("S", "float32", "M", "NB")), bitwise=True),
    Kernel("silu_mul_bf16", "silu_mul", "row", (_t("X", BF16, "M", "2N"),), (_Y,)),
)
KERNELS_BY_NAME = {k.name: k for k in KERNELS}
FAMILIES = tuple(dict.fromkeys(k.family for k in KERNELS))

ELEMENTWISE_SHAPES = (Shape((2**28,)),)
ROW_SHAPES = (Shape((16384, 4096)), Shape((8192, 8192)), Shape((4001, 7168)), Shape((8001, 576)))
LONG_ROW_SHAPE = Shape((4096, 65536))  # softmax only: a row too long for registers
# the tiny add of the launch-overhead loop
LAUNCH_CASE = Case(KERNELS_BY_NAME["add_fp32"], Shape((1024,)))
# rows of the smaller launches in the batch-invariance check
BATCH_INVARIANCE_ROWS = (1, 37)


def default_shapes(kernel: Kernel) -> tuple[Shape, ...]:
    if kernel.kind == "elementwise":
        return ELEMENTWISE_SHAPES
    if kernel.family == "softmax":
        return ROW_SHAPES + (LONG_ROW_SHAPE,)
    return ROW_SHAPES


def parse_shape(text: str) -> Shape:
    """'8192x8192', '268435456' or '2^28' -> Shape; ValueError otherwise."""
    dims = []
    for part in text.strip().lower().split("x"):
        power = re.fullmatch(r"(\d+)\^(\d+)", part)
        if power:
            dims.append(int(power.group(1)) ** int(power.group(2)))
        elif part.isdigit():
            dims.append(int(part))
        else:
            raise ValueError(f"shape {text!r} is not of the form MxN, n or 2^k")
    return Shape(tuple(dims))


def select_kernels(names: list[str] | None) -> list[Kernel]:
    """Kernels whose name or family is in `names` (all when None), in KERNELS order."""
    if not names:
        return list(KERNELS)
    unknown = [n for n in names if n not in KERNELS_BY_NAME and n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown kernel(s) {', '.join(unknown)}; known families: {', '.join(FAMILIES)}; "
                         f"known kernels: {', '.join(KERNELS_BY_NAME)}")
    return [k for k in KERNELS if k.name in names or k.family in names]


def select_cases(kernel_names: list[str] | None = None, shape_texts: list[str] | None = None) -> list[Case]:
    """The cases to run: each selected kernel at its default shapes, or at the
    given shapes of its rank (1-D shapes go to elementwise kernels, 2-D to row kernels)."""
    kernels = select_kernels(kernel_names)
    shapes = [parse_shape(s) for s in shape_texts] if shape_texts else None
    cases = []
    for kernel in kernels:
        chosen = default_shapes(kernel) if shapes is None else [s for s in shapes if s.rank == kernel.rank]
        cases.extend(Case(kernel, s) for s in chosen)
    if not cases:
        raise ValueError("the selected kernels and shapes give no case (1-D shapes go to elementwise "
                         "kernels, MxN shapes to row kernels)")
    return cases


def split_list(text: str | None) -> list[str] | None:
    """'a, b,,c' -> ['a', 'b', 'c']; None or '' -> None."""
    if not text:
        return None
    items = [item.strip() for item in text.split(",") if item.strip()]
    return items or None
