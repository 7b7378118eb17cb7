"""PyTorch side of the benchmark: random inputs, float64 references, the eager
peer (what a PyTorch user writes), and PyTorch's bit patterns for casts and
quantization, with the rounding variants a kernel may legitimately use.

Works on any device, so the CPU can check the references and the Triton
kernels (under TRITON_INTERPRET=1) without a GPU.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from benchmarks.cases import FP8_MAX, QUANT_BLOCK, Case, Kernel

TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
               "float8_e4m3": torch.float8_e4m3fn}
FP8 = torch.float8_e4m3fn


def make_inputs(case: Case, device: str, generator: torch.Generator) -> list[torch.Tensor]:
    """Fresh standard-normal inputs (never zeros), in each input's dtype."""
    return [torch.randn(t.shape(case.shape), generator=generator, device=device, dtype=torch.float32)
            .to(TORCH_DTYPE[t.dtype]) for t in case.kernel.inputs]


def scalars_of(kernel: Kernel) -> dict[str, float]:
    return dict(kernel.scalars)


def empty_outputs(case: Case, device: str) -> list[torch.Tensor]:
    return [torch.empty(t.shape(case.shape), device=device, dtype=TORCH_DTYPE[t.dtype]) for t in case.kernel.outputs]


def poison(tensor: torch.Tensor) -> torch.Tensor:
    """NaN everywhere; 0x7F (NaN) bytes for fp8."""
    if tensor.dtype == FP8:
        tensor.view(torch.uint8).fill_(0x7F)
    else:
        tensor.fill_(float("nan"))
    return tensor


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps) * w


def _blocks(x: torch.Tensor) -> torch.Tensor:
    """(M, N) -> (M, NB, 128), zero-padded (zeros do not change an absolute max)."""
    m, n = x.shape
    pad = -n % QUANT_BLOCK
    return F.pad(x, (0, pad)).view(m, -1, QUANT_BLOCK)


def reference(kernel: Kernel, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The float64 result of every output of `kernel`, in output order."""
    x = [t.double() for t in inputs]
    eps = scalars_of(kernel).get("eps", 0.0)
    family, fused = kernel.family, kernel.name.startswith("add_")
    if family == "add":
        return [x[0] + x[1]]
    if family == "mul":
        return [x[0] * x[1]]
    if family == "cast":
        return [x[0]]
    if family == "softmax":
        return [torch.softmax(x[0], dim=-1)]
    if family in ("rmsnorm", "layernorm"):
        h = x[0] + x[1] if fused else x[0]
        w = x[2] if fused else x[1]
        if family == "rmsnorm":
            y = _rms(h, w, eps)
        else:
            y = F.layer_norm(h, (h.shape[-1],), w, x[3] if fused else x[2], eps)
        return [y, h] if fused else [y]
    if family == "row_sum":
        return [x[0].sum(dim=-1)]
    if family == "row_max":
        return [x[0].amax(dim=-1)]
    if family == "quant_row":
        s = x[0].abs().amax(dim=-1, keepdim=True) / FP8_MAX
        return [x[0] / s, s.squeeze(-1)]
    if family == "quant_block":
        blocks = _blocks(x[0])
        s = blocks.abs().amax(dim=-1, keepdim=True) / FP8_MAX
        return [(blocks / s).flatten(1)[:, :x[0].shape[1]], s.squeeze(-1)]
    if family == "silu_mul":
        n = x[0].shape[1] // 2
        a, b = x[0][:, :n], x[0][:, n:]
        return [a * torch.sigmoid(a) * b]
    raise KeyError(f"no reference for {kernel.name}")


def eager(kernel: Kernel):
    """fn(inputs, scalars) -> tuple of outputs: the PyTorch eager peer."""
    family, fused = kernel.family, kernel.name.startswith("add_")
    out_dtype = TORCH_DTYPE[kernel.outputs[0].dtype]
    if family == "add":
        return lambda i, s: (i[0] + i[1],)
    if family == "mul":
        return lambda i, s: (i[0] * i[1],)
    if family == "cast":
        return lambda i, s: (i[0].to(out_dtype),)
    if family == "softmax":
        return lambda i, s: (torch.softmax(i[0], dim=-1),)
    if family == "rmsnorm":
        if fused:
            return lambda i, s: _eager_fused(i, lambda h: F.rms_norm(h, (h.shape[-1],), i[2], s["eps"]))
        return lambda i, s: (F.rms_norm(i[0], (i[0].shape[-1],), i[1], s["eps"]),)
    if family == "layernorm":
        if fused:
            return lambda i, s: _eager_fused(i, lambda h: F.layer_norm(h, (h.shape[-1],), i[2], i[3], s["eps"]))
        return lambda i, s: (F.layer_norm(i[0], (i[0].shape[-1],), i[1], i[2], s["eps"]),)
    if family == "row_sum":
        return lambda i, s: (i[0].sum(dim=-1),)
    if family == "row_max":
        return lambda i, s: (i[0].amax(dim=-1),)
    if family == "quant_row":
        return lambda i, s: quant_row(i[0])
    if family == "quant_block":
        return lambda i, s: quant_block(i[0])
    if family == "silu_mul":
        return lambda i, s: (_silu_mul(i[0]),)
    raise KeyError(f"no eager implementation of {kernel.name}")


def _eager_fused(inputs: list[torch.Tensor], norm) -> tuple[torch.Tensor, torch.Tensor]:
    h = inputs[0] + inputs[1]
    return norm(h), h


def _silu_mul(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[1] // 2
    return F.silu(x[:, :n]) * x[:, n:]


# Ways to compute x / s before rounding to fp8; each rounds differently in the last fp8 bit.
QUANT_VARIANTS = ("x / s", "x * (1/s)", "x * (448/amax)")


def _scaled(x: torch.Tensor, amax: torch.Tensor, variant: str) -> torch.Tensor:
    s = amax / FP8_MAX
    if variant == "x / s":
        return x / s
    if variant == "x * (1/s)":
        return x * (1.0 / s)
    if variant == "x * (448/amax)":
        return x * (FP8_MAX / amax)
    raise KeyError(f"unknown quantization variant {variant!r}")


def quant_row(x: torch.Tensor, variant: str = "x / s") -> tuple[torch.Tensor, torch.Tensor]:
    xf = x.float()
    amax = xf.abs().amax(dim=-1, keepdim=True)
    return _scaled(xf, amax, variant).to(FP8), (amax / FP8_MAX).squeeze(-1)


def quant_block(x: torch.Tensor, variant: str = "x / s") -> tuple[torch.Tensor, torch.Tensor]:
    blocks = _blocks(x.float())
    amax = blocks.abs().amax(dim=-1, keepdim=True)
    q = _scaled(blocks, amax, variant).to(FP8).flatten(1)[:, :x.shape[1]].contiguous()
    return q, (amax / FP8_MAX).squeeze(-1)


def bit_variants(kernel: Kernel, inputs: list[torch.Tensor]) -> dict[str, list[torch.Tensor]]:
    """PyTorch's outputs of a bitwise-checked kernel, by rounding variant (the first is PyTorch's own)."""
    if kernel.family == "cast":
        return {"torch .to()": [inputs[0].to(TORCH_DTYPE[kernel.outputs[0].dtype])]}
    quant = quant_row if kernel.family == "quant_row" else quant_block
    return {variant: list(quant(inputs[0], variant)) for variant in QUANT_VARIANTS}


def bits(tensor: torch.Tensor) -> torch.Tensor:
    """The raw bits of a tensor, as integers of its width."""
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.contiguous().view(width)


def mismatches(a: torch.Tensor, b: torch.Tensor) -> int:
    """Elements whose bit patterns differ (shapes must agree)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"cannot compare bits of {tuple(a.shape)} {a.dtype} and {tuple(b.shape)} {b.dtype}")
    return int((bits(a) != bits(b)).sum().item())


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 (NaN or inf when out holds NaN or inf)."""
    diff = out.to(torch.float32).double() - ref
    return float(torch.linalg.vector_norm(diff) / torch.linalg.vector_norm(ref))
