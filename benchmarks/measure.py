"""Running one implementation of one case on the GPU: poisoned checked runs,
correctness against float64, bit-for-bit comparison with PyTorch, batch
invariance, timing with `triton.testing.do_bench`, copy bandwidth and host
launch overhead.

An implementation is an `Impl`: fn(inputs, outputs, scalars) -> tuple of
outputs. `allocates` implementations ignore `outputs` (None) and return new
tensors; for those, poisoning works through PyTorch's caching allocator: the
blocks the outputs will land in are filled with poison and freed just
before the call, and the check records whether the outputs really landed
there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from benchmarks import torch_impls
from benchmarks.cases import BATCH_INVARIANCE_ROWS, TOLERANCE, Case, Shape
from benchmarks.torch_impls import TORCH_DTYPE, poison


@dataclass
class Impl:
    name: str
    fn: Callable[[list, Any, dict], tuple]
    allocates: bool
    fewer_rows: bool  # can be launched on the first rows of the inputs
    call: str = ""  # how it is called, for the report


@dataclass
class Timing:
    quick: bool = False

    def __call__(self, fn: Callable[[], Any]) -> float:
        """Median time of fn in microseconds, L2 flushed before each call."""
        from triton.testing import do_bench

        warmup, rep = (5, 20) if self.quick else (25, 100)
        return 1000.0 * do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def run_checked(impl: Impl, case: Case, inputs: list[torch.Tensor], scalars: dict, device: str
                ) -> tuple[tuple[torch.Tensor, ...], bool]:
    """One run whose outputs start as poison; returns (outputs, poisoned)."""
    specs = case.kernel.outputs
    if impl.allocates:
        _sync(device)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
        bait = [poison(torch.empty(s.shape(case.shape), device=device, dtype=TORCH_DTYPE[s.dtype])) for s in specs]
        pointers = {b.data_ptr() for b in bait}
        del bait
        outputs = tuple(impl.fn(inputs, None, scalars))
        poisoned = all(o.data_ptr() in pointers for o in outputs)
    else:
        outputs = tuple(impl.fn(inputs, [poison(o) for o in torch_impls.empty_outputs(case, device)], scalars))
        poisoned = True
    _sync(device)
    return outputs, poisoned


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def check(case: Case, outputs: tuple[torch.Tensor, ...], refs: list[torch.Tensor], poisoned: bool
          ) -> dict[str, Any]:
    """Relative norm error of every output against its float64 reference, within TOLERANCE of its dtype."""
    errors, notes, ok = {}, [], True
    for spec, out, ref in zip(case.kernel.outputs, outputs, refs):
        want = (TORCH_DTYPE[spec.dtype], tuple(ref.shape))
        if (out.dtype, tuple(out.shape)) != want:
            notes.append(f"{spec.name} is {out.dtype} {tuple(out.shape)}, expected {want[0]} {want[1]}")
            errors[spec.name], ok = float("nan"), False
            continue
        err = torch_impls.relative_error(out, ref)
        errors[spec.name] = err
        ok = ok and err <= TOLERANCE[spec.dtype]  # False for NaN
    if len(outputs) != len(refs):
        notes.append(f"{len(outputs)} outputs, expected {len(refs)}")
        ok = False
    result = {"ok": ok, "errors": errors, "poisoned": poisoned}
    if not poisoned:
        result["note"] = "outputs did not land in the poisoned blocks: an unwritten element would go unseen"
    if notes:
        result["note"] = "; ".join(notes)
    return result


def bitwise(case: Case, outputs: tuple[torch.Tensor, ...], variants: dict[str, list[torch.Tensor]]
            ) -> dict[str, Any]:
    """Per output: elements whose bits differ from PyTorch's, and the rounding variant that matches, if any."""
    found = {}
    names = list(variants)
    for j, spec in enumerate(case.kernel.outputs):
        out = outputs[j]
        try:
            counts = {v: torch_impls.mismatches(out, variants[v][j]) for v in names}
        except ValueError as exc:
            found[spec.name] = {"error": str(exc)}
            continue
        match = next((v for v in names if counts[v] == 0), None)
        found[spec.name] = {"mismatches": counts[names[0]], "total": out.numel(), "variant": match,
                            "by_variant": counts}
    return found


def batch_invariance(impl: Impl, case: Case, inputs: list[torch.Tensor], scalars: dict,
                     full: tuple[torch.Tensor, ...], device: str) -> dict[str, Any]:
    """Do the first m rows' output bits stay the same when only m rows are launched?"""
    rows = case.shape.dims[0]
    differing = []
    for m in (m for m in BATCH_INVARIANCE_ROWS if m < rows):
        sub_inputs = [t[:m] if spec.dims[0] == "M" else t for spec, t in zip(case.kernel.inputs, inputs)]
        sub_case = Case(case.kernel, Shape((m, case.shape.dims[1])))
        try:
            outs, _ = run_checked(impl, sub_case, sub_inputs, scalars, device)
        except Exception as exc:
            return {"ok": None, "detail": f"n/a: {_short(exc)}"}
        for spec, small, big in zip(case.kernel.outputs, outs, full):
            bad = (torch_impls.bits(small) != torch_impls.bits(big[:m])).reshape(m, -1).any(dim=1)
            if bad.any():
                differing.append(f"{spec.name}: {int(bad.sum())} of {m} rows differ at M={m}")
    tested = ", ".join(str(m) for m in BATCH_INVARIANCE_ROWS if m < rows)
    return {"ok": not differing, "detail": "; ".join(differing) or f"M = {tested} vs {rows}"}


def copy_bandwidth(timing: Timing, device: str, numel: int = 2**28) -> float:
    """Device-to-device copy of `numel` fp32 values in GB/s, counting bytes read plus bytes written."""
    src = torch.randn(numel, device=device)
    dst = torch.empty_like(src)
    t = timing(lambda: dst.copy_(src))
    return 2 * src.numel() * src.element_size() / (t * 1e-6) / 1e9


def launch_overhead(call: Callable[[], Any], calls: int = 10_000, warmup: int = 200) -> tuple[float, float]:
    """(host us per call, us per call including the final synchronize) over a loop of `calls` launches."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    issued = time.perf_counter()
    torch.cuda.synchronize()
    done = time.perf_counter()
    return 1e6 * (issued - start) / calls, 1e6 * (done - start) / calls


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1][:300] if text else ''}"
