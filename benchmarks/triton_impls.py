"""Triton peers: a straightforward Triton kernel per op, as a Triton user writes it.

Elementwise: 1-D programs of `ELEMENTWISE_BLOCK` elements, masked. Row ops:
one program per row, `BLOCK = next_power_of_2(N)`, masked loads, the
tutorial's warp count; softmax rows longer than `SOFTMAX_MAX_BLOCK` loop over
chunks (online max and sum, then a second pass). Per-block quantization: one
program per 1 x 128 block, as in DeepSeek-V3's `act_quant`.

Every launcher takes (inputs, outputs, scalars) with preallocated outputs.
"""

from __future__ import annotations

import triton
import triton.language as tl

from benchmarks.cases import FP8_MAX, QUANT_BLOCK, Case

ELEMENTWISE_BLOCK = 4096
ELEMENTWISE_WARPS = 8
SOFTMAX_MAX_BLOCK = 16384
SOFTMAX_CHUNK = 4096


def row_warps(block: int) -> int:
    """The Triton softmax tutorial's choice."""
    return 16 if block >= 4096 else 8 if block >= 2048 else 4


@triton.jit
def _binary_kernel(A, B, C, n, IS_ADD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(A + offs, mask=mask)
    b = tl.load(B + offs, mask=mask)
    c = a + b if IS_ADD else a * b
    tl.store(C + offs, c, mask=mask)


@triton.jit
def _cast_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, x.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_kernel(X, Y, N, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + base + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(Y + base + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_looped_kernel(X, Y, N, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * N
    # per-lane running max and sum; a finite start keeps exp(m - m_new) defined
    m = tl.full([BLOCK], -1e30, tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(X + base + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + base + cols, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - row_max) / total
        tl.store(Y + base + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_kernel(X, R, W, Y, H, N, eps, HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + base + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        h = (x + tl.load(R + base + cols, mask=mask, other=0.0).to(tl.float32)).to(H.dtype.element_ty)
        tl.store(H + base + cols, h, mask=mask)
        x = h.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + base + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_kernel(X, R, W, B, Y, H, N, eps, HAS_RESIDUAL: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * N
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + base + cols, mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        h = (x + tl.load(R + base + cols, mask=mask, other=0.0).to(tl.float32)).to(H.dtype.element_ty)
        tl.store(H + base + cols, h, mask=mask)
        x = h.to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + base + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def _row_reduce_kernel(X, Y, N, IS_SUM: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    if IS_SUM:
        total = tl.sum(tl.load(X + row * N + cols, mask=mask, other=0.0), axis=0)
    else:
        total = tl.max(tl.load(X + row * N + cols, mask=mask, other=-float("inf")), axis=0)
    tl.store(Y + row, total)


@triton.jit
def _quant_row_kernel(X, Q, S, N, FP8_MAX_VALUE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.max(tl.abs(x), axis=0) / FP8_MAX_VALUE
    tl.store(Q + row * N + cols, (x / s).to(Q.dtype.element_ty), mask=mask)
    tl.store(S + row, s)


@triton.jit
def _quant_block_kernel(X, Q, S, N, NB, FP8_MAX_VALUE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    cols = block * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    s = tl.max(tl.abs(x), axis=0) / FP8_MAX_VALUE
    tl.store(Q + row * N + cols, (x / s).to(Q.dtype.element_ty), mask=mask)
    tl.store(S + row * NB + block, s)


@triton.jit
def _silu_mul_kernel(X, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    a = tl.load(X + row * 2 * N + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(X + row * 2 * N + N + cols, mask=mask, other=0.0).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(Y + row * N + cols, y.to(Y.dtype.element_ty), mask=mask)


def _rows(x) -> int:
    return x.shape[0]


def launcher(case: Case):
    """fn(inputs, outputs, scalars) launching the Triton kernel of `case`'s kernel
    (shapes are read from the tensors, so fewer rows work too)."""
    k = case.kernel
    if k.kind == "elementwise":
        return _elementwise_launcher(k.family)
    n_cols = case.shape.dims[1]
    block = triton.next_power_of_2(n_cols)
    warps = row_warps(block)
    if k.family == "softmax":
        return _softmax_launcher(block, warps, n_cols)
    if k.family in ("rmsnorm", "layernorm"):
        return _norm_launcher(k.family, k.name.startswith("add_"), block, warps, n_cols)
    if k.family in ("row_sum", "row_max"):
        return lambda i, o, s: _row_reduce_kernel[(_rows(i[0]),)](i[0], o[0], n_cols, IS_SUM=k.family == "row_sum",
                                                                  BLOCK=block, num_warps=warps)
    if k.family == "quant_row":
        return lambda i, o, s: _quant_row_kernel[(_rows(i[0]),)](i[0], o[0], o[1], n_cols, FP8_MAX_VALUE=FP8_MAX,
                                                                 BLOCK=block, num_warps=warps)
    if k.family == "quant_block":
        nb = triton.cdiv(n_cols, QUANT_BLOCK)
        return lambda i, o, s: _quant_block_kernel[(_rows(i[0]), nb)](i[0], o[0], o[1], n_cols, nb,
                                                                      FP8_MAX_VALUE=FP8_MAX, BLOCK=QUANT_BLOCK)
    if k.family == "silu_mul":
        return lambda i, o, s: _silu_mul_kernel[(_rows(i[0]),)](i[0], o[0], n_cols, BLOCK=block, num_warps=warps)
    raise KeyError(f"no Triton kernel for {k.name}")


def _elementwise_launcher(family: str):
    def launch(inputs, outputs, scalars):
        n = inputs[0].numel()
        grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
        if family == "cast":
            _cast_kernel[grid](inputs[0], outputs[0], n, BLOCK=ELEMENTWISE_BLOCK, num_warps=ELEMENTWISE_WARPS)
        else:
            _binary_kernel[grid](inputs[0], inputs[1], outputs[0], n, IS_ADD=family == "add",
                                 BLOCK=ELEMENTWISE_BLOCK, num_warps=ELEMENTWISE_WARPS)

    return launch


def _softmax_launcher(block: int, warps: int, n_cols: int):
    if block > SOFTMAX_MAX_BLOCK:
        return lambda i, o, s: _softmax_looped_kernel[(_rows(i[0]),)](i[0], o[0], n_cols, BLOCK=SOFTMAX_CHUNK,
                                                                      num_warps=row_warps(SOFTMAX_CHUNK))
    return lambda i, o, s: _softmax_kernel[(_rows(i[0]),)](i[0], o[0], n_cols, BLOCK=block, num_warps=warps)


def _norm_launcher(family: str, residual: bool, block: int, warps: int, n_cols: int):
    def launch(inputs, outputs, scalars):
        x = inputs[0]
        r = inputs[1] if residual else x
        y = outputs[0]
        h = outputs[1] if residual else y
        w = inputs[2] if residual else inputs[1]
        grid = (_rows(x),)
        if family == "rmsnorm":
            _rmsnorm_kernel[grid](x, r, w, y, h, n_cols, scalars["eps"], HAS_RESIDUAL=residual, BLOCK=block,
                                  num_warps=warps)
        else:
            b = inputs[3] if residual else inputs[2]
            _layernorm_kernel[grid](x, r, w, b, y, h, n_cols, scalars["eps"], HAS_RESIDUAL=residual, BLOCK=block,
                                    num_warps=warps)

    return launch


def tiny_add(a, b):
    """The launch-overhead call: what a Triton user's `add(a, b)` does (allocate, launch, return)."""
    import torch

    c = torch.empty_like(a)
    n = a.numel()
    _binary_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, IS_ADD=True, BLOCK=1024, num_warps=4)
    return c
