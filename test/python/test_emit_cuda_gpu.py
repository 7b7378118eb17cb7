"""Emitted CUDA on a real GPU: the IR's exact semantics, checked against PyTorch and Python.

Skipped without torch and a CUDA device. Each check takes a built kernel, so
the same checks also run where MLIR is missing (the H200 image) on kernels
emitted elsewhere: `emit_case(name)` gives the (source, signature, fmad)
to carry there.

- conversions to fp8 / bf16 / f16 compare bit for bit with `torch.Tensor.to`;
- `maximumf` / `minimumf` propagate NaN and order -0 below +0;
- integer division and remainder (signed, unsigned, floor, ceil) match Python;
- the softmax and RMSNorm lit kernels match float64 references at a dynamic M.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import pytest

from tilemlir.testing import relative_error

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

LIT_DIR = Path(__file__).resolve().parents[1] / "lit" / "emit_cuda"
COLS = 64

_TORCH_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
                 "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "i32": "int32", "i1": "bool"}

INT_OPS = ["arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi", "arith.divui", "arith.remui",
           "arith.ceildivui", "arith.shrui", "arith.shrsi", "arith.minui", "arith.maxui"]
MAXMIN_OPS = ["arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"]


def _cast_ir(src: str, dst: str, op: str) -> str:
    from support import elementwise_module

    return elementwise_module({"X": src}, {"Y": dst}, f"      %Y_r = {op} %X_v : {src} to {dst}")


def _case_ir(name: str) -> str:
    from support import elementwise_module

    if name.startswith("truncf_"):
        return _cast_ir("f32", name.split("_", 1)[1], "arith.truncf")
    if name.startswith("extf_"):
        return _cast_ir(name.split("_", 1)[1], "f32", "arith.extf")
    if name == "maxmin":
        ops = "\n".join(f"      %R{i}_r = {op} %X_v, %Z_v : f32" for i, op in enumerate(MAXMIN_OPS))
        ops += "\n      %B_r = arith.maximumf %XB_v, %ZB_v : bf16"
        outputs = {**{f"R{i}": "f32" for i in range(len(MAXMIN_OPS))}, "B": "bf16"}
        return elementwise_module({"X": "f32", "Z": "f32", "XB": "bf16", "ZB": "bf16"}, outputs, ops)
    if name == "intdiv":
        ops = "\n".join(f"      %R{i}_r = {op} %X_v, %Z_v : i32" for i, op in enumerate(INT_OPS))
        ops += "\n      %U_r = arith.cmpi ult, %X_v, %Z_v : i32"
        outputs = {**{f"R{i}": "i32" for i in range(len(INT_OPS))}, "U": "i1"}
        return elementwise_module({"X": "i32", "Z": "i32"}, outputs, ops)
    return (LIT_DIR / f"{name}.mlir").read_text()


CASE_NAMES = ["truncf_f8E4M3FN", "truncf_f8E5M2", "truncf_bf16", "truncf_f16", "extf_f8E4M3FN", "extf_f8E5M2",
              "maxmin", "intdiv", "softmax", "rmsnorm"]


def emit_case(name: str) -> tuple[str, str, bool]:
    """(CUDA source, signature JSON, fmad) of a case; needs MLIR."""
    from support import emit_text

    emitted = emit_text(_case_ir(name))
    return emitted.source, emitted.signature.to_json(), emitted.fmad


def build_case(source: str, signature_json: str, fmad: bool):
    from tilemlir.runtime import KernelSignature, build

    return build(source, KernelSignature.from_json(signature_json), fmad=fmad, use_cache=False)


# -- inputs and references -------------------------------------------------------------------------------


def _special_floats() -> torch.Tensor:
    """Values at and around every fp8 / bf16 / f16 rounding and overflow edge, then random ones."""
    edges = [0.0, -0.0, 1.0, -1.0, 448.0, 464.0, -464.0, 464.00003, 479.99997, 480.0, 500.0, -1e6, 57344.0,
             61439.996, 61440.0, 61440.004, 65504.0, 65520.0, 65536.0, 3.3895314e38, 2.0 ** -9, 2.0 ** -10,
             1.5 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 2.0 ** -24, 2.0 ** -25, 1.401298464e-45, 0.1, 1 / 3,
             math.inf, -math.inf, math.nan, -math.nan]
    values = torch.tensor(edges, dtype=torch.float32)
    values[-1] = torch.tensor([0xFFC00001 - 2**32], dtype=torch.int32).view(torch.float32)[0]  # negative NaN
    generator = torch.Generator().manual_seed(11)
    wide = torch.randn(4096 - len(edges), generator=generator) * torch.exp2(torch.randint(-30, 20, (4096 - len(edges),),
                                                                                          generator=generator).float())
    return torch.cat([values, wide]).reshape(-1, COLS)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()])


def check_truncf(kernel, dst: str) -> str:
    x = _special_floats().cuda()
    dtype = getattr(torch, _TORCH_DTYPES[dst])
    y = torch.full_like(x, 0.5).to(dtype)  # poisoned
    kernel(x, y)
    expected = x.cpu().to(dtype)
    got = y.cpu()
    if dst.startswith("f8"):  # bit for bit, NaNs included (torch keeps the NaN's sign)
        mismatch = (_bits(got) != _bits(expected)).nonzero()
    else:  # NaN payloads differ by library; every other value bit for bit
        both_nan = torch.isnan(got.float()) & torch.isnan(expected.float())
        mismatch = ((_bits(got) != _bits(expected)) & ~both_nan).nonzero()
    assert mismatch.numel() == 0, [(x.flatten()[i].item(), _bits(got).flatten()[i].item(),
                                    _bits(expected).flatten()[i].item()) for i in mismatch[:8, 0] * COLS + mismatch[:8, 1]]
    return f"truncf f32->{dst}: {x.numel()} values bit-exact vs torch"


def check_extf(kernel, src: str) -> str:
    dtype = getattr(torch, _TORCH_DTYPES[src])
    x = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).reshape(4, COLS).cuda()
    y = torch.full((4, COLS), 0.5, device="cuda")
    kernel(x, y)
    expected = x.cpu().float()
    same = (_bits(y.cpu()) == _bits(expected)) | (torch.isnan(y.cpu()) & torch.isnan(expected))
    assert bool(same.all()), (x.cpu().view(torch.uint8)[~same], y.cpu()[~same], expected[~same])
    return f"extf {src}->f32: all 256 encodings exact"


def _maximum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0.0:
        return a if math.copysign(1, a) > 0 else b
    return max(a, b)


def _minimum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0.0:
        return a if math.copysign(1, a) < 0 else b
    return min(a, b)


def _maxnum(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else _maximum(a, b) if a == b == 0.0 else max(a, b)


def _minnum(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else _minimum(a, b) if a == b == 0.0 else min(a, b)


def check_maxmin(kernel) -> str:
    specials = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.0]
    pairs = [(a, b) for a in specials for b in specials]
    generator = torch.Generator().manual_seed(3)
    rows = 2
    rand = torch.randn(rows * COLS - len(pairs), 2, generator=generator).tolist()
    a, b = (torch.tensor([p[i] for p in pairs + rand], dtype=torch.float32).reshape(rows, COLS) for i in (0, 1))
    x, z = a.cuda(), b.cuda()
    outs = [torch.full_like(x, 7.0) for _ in MAXMIN_OPS]
    out_b = torch.full_like(x, 7.0).to(torch.bfloat16)
    kernel(x, z, x.to(torch.bfloat16), z.to(torch.bfloat16), *outs, out_b)
    flat_a, flat_b = a.flatten().tolist(), b.flatten().tolist()
    for fn, out in zip((_maximum, _minimum, _maxnum, _minnum), outs):
        for i, (u, v) in enumerate(zip(flat_a, flat_b)):
            want, got = fn(u, v), out.flatten()[i].item()
            ok = (math.isnan(want) and math.isnan(got)) or (want == got and math.copysign(1, want) == math.copysign(1, got))
            assert ok, (fn.__name__, u, v, want, got)
    got_b = out_b.float().cpu().flatten()
    ref_b = [_maximum(u, v) for u, v in zip(a.to(torch.bfloat16).float().flatten().tolist(),
                                            b.to(torch.bfloat16).float().flatten().tolist())]
    assert all((math.isnan(w) and math.isnan(g)) or w == g for w, g in zip(ref_b, got_b.tolist()))
    return f"maximumf/minimumf/maxnumf/minnumf: {len(flat_a)} pairs incl. NaN and signed zeros exact"


def _int_reference(op: str, a: int, b: int) -> int:
    ua, ub = a & 0xFFFFFFFF, b & 0xFFFFFFFF

    def signed(v: int) -> int:
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v

    trunc = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
    return signed({
        "arith.divsi": trunc, "arith.remsi": a - b * trunc, "arith.floordivsi": a // b,
        "arith.ceildivsi": -(-a // b), "arith.divui": ua // ub, "arith.remui": ua % ub,
        "arith.ceildivui": -(-ua // ub), "arith.shrui": ua >> (ub % 32), "arith.shrsi": a >> (ub % 32),
        "arith.minui": min(ua, ub), "arith.maxui": max(ua, ub),
    }[op])


def check_intdiv(kernel) -> str:
    generator = torch.Generator().manual_seed(5)
    rows = 8
    a = torch.randint(-(2**31), 2**31 - 1, (rows, COLS), generator=generator, dtype=torch.int64)
    b = torch.randint(-(2**31), 2**31 - 1, (rows, COLS), generator=generator, dtype=torch.int64)
    a[:2] = torch.randint(-20, 20, (2, COLS), generator=generator)
    b[:4] = torch.randint(-7, 8, (4, COLS), generator=generator)
    b[b == 0] = 3
    shifts = torch.randint(1, 32, (rows, COLS), generator=generator)  # also divisors: never 0
    x, z = a.to(torch.int32).cuda(), b.to(torch.int32).cuda()
    outs = [torch.full_like(x, 12345) for _ in INT_OPS]
    ult = torch.zeros_like(x, dtype=torch.bool)
    z_shift = torch.where(torch.arange(rows).reshape(-1, 1) >= 6, shifts, b).to(torch.int32).cuda()
    kernel(x, z_shift, *outs, ult)
    flat_a, flat_b = x.cpu().flatten().tolist(), z_shift.cpu().flatten().tolist()
    for op, out in zip(INT_OPS, outs):
        got = out.cpu().flatten().tolist()
        for i, (u, v) in enumerate(zip(flat_a, flat_b)):
            if op in ("arith.shrui", "arith.shrsi") and not 0 <= v < 32:
                continue  # shifts by >= the width are poison in the IR
            if op == "arith.divsi" and u == -(2**31) and v == -1:
                continue
            assert got[i] == _int_reference(op, u, v), (op, u, v, got[i], _int_reference(op, u, v))
    want_ult = [(u & 0xFFFFFFFF) < (v & 0xFFFFFFFF) for u, v in zip(flat_a, flat_b)]
    assert ult.cpu().flatten().tolist() == want_ult
    return f"{len(INT_OPS) + 1} integer ops on {len(flat_a)} pairs incl. negatives exact"


def check_softmax(kernel) -> str:
    for rows in (1, 37, 1000):
        x = torch.randn(rows, 1000, device="cuda").half()
        y = torch.full_like(x, float("nan"))
        kernel(x, y)
        want = torch.softmax(x.double(), dim=1)
        err = relative_error(y, want)
        assert err < 2e-3, err
    return f"softmax 1000x1000 f16: rel err {err:.2e}"


def check_rmsnorm(kernel) -> str:
    for rows in (1, 37, 513):
        x = torch.randn(rows, 4096, device="cuda").bfloat16()
        w = torch.randn(4096, device="cuda").bfloat16()
        y = torch.full_like(x, float("nan"))
        eps = 1e-6
        kernel(x, w, y, eps)
        xd = x.double()
        want = xd * torch.rsqrt(xd.pow(2).mean(dim=1, keepdim=True) + eps) * w.double()
        err = relative_error(y, want)
        assert err < 8e-3, err
    return f"rmsnorm 513x4096 bf16: rel err {err:.2e}"


CHECKS: dict[str, Callable] = {
    "truncf_f8E4M3FN": lambda k: check_truncf(k, "f8E4M3FN"), "truncf_f8E5M2": lambda k: check_truncf(k, "f8E5M2"),
    "truncf_bf16": lambda k: check_truncf(k, "bf16"), "truncf_f16": lambda k: check_truncf(k, "f16"),
    "extf_f8E4M3FN": lambda k: check_extf(k, "f8E4M3FN"), "extf_f8E5M2": lambda k: check_extf(k, "f8E5M2"),
    "maxmin": check_maxmin, "intdiv": check_intdiv, "softmax": check_softmax, "rmsnorm": check_rmsnorm,
}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_emitted_kernel_semantics_on_gpu(name):
    pytest.importorskip("tilemlir.mlir")
    pytest.importorskip("cuda.bindings.driver")
    kernel = build_case(*emit_case(name))
    CHECKS[name](kernel)
