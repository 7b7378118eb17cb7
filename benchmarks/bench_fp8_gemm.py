"""Issue 20's block-scaled fp8 GEMM benchmark: `examples/fp8_gemm.py` (DeepSeek-V3 scales: sa per row and 128-wide
K group, sb per 128 x 128 block; wgmma m64nNk32) against `torch._scaled_mm` (cuBLASLt, row-wise scales: one per row
of A and one per row of B, the finest scaling it takes) on one GPU, in one process; and the fp8 peak cuBLASLt
reaches at 8192^3 (per-tensor scales) for reference.

Runs on the GPU machine without MLIR: our kernels load from `benchmarks/artifacts_fp8_gemm/<id>/`
(`build_fp8_gemm_artifacts.py` builds them). Per shape: fresh `randn` inputs (seed printed) quantized both ways on
the GPU; each implementation's bf16 output, into a NaN-poisoned C, against a float64 product of its own dequantized
operands (relative norm error within `fp8_gemm_cases.ERROR_BOUND`, no NaN left); then `--rounds` interleaved
timings (triton's do_bench, else CUDA events). TFLOP/s = 2MNK / time. The two recipes do the same fp8 tensor-core
work; ours also applies K / 128 scale pairs per output element in float32 on CUDA cores.

    python3 -m benchmarks.bench_fp8_gemm [--shapes 4096x7168x2048,...] [--rounds 2] [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import fp8_gemm_cases
from benchmarks.cases import split_list
from benchmarks.cli import finish_run_options
from benchmarks.gemm_cases import tflops
from benchmarks.ours import Missing, load_artifact

FP8_ARTIFACTS = Path(__file__).resolve().parent / "artifacts_fp8_gemm"
GROUP = 128
E4M3_MAX = 448.0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK shapes (default: the benchmark's)")
    parser.add_argument("--artifacts", type=Path, default=FP8_ARTIFACTS, help="our artifacts (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="timing rounds (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="shorter timings")
    parser.add_argument("--budget-s", type=float, default=480, help="skip the remaining shapes past this")
    parser.add_argument("--out", type=Path, help="output directory (default $OUT, else benchmarks/out)")
    parser.add_argument("--seed", type=int, help="input seed (default: from the clock, printed)")
    args = parser.parse_args(argv)
    try:
        args.shapes = fp8_gemm_cases.select_shapes(split_list(args.shapes))
    except ValueError as exc:
        parser.error(str(exc))
    return finish_run_options(args)


def block_quantized(torch, x, rows_per_block):
    """e4m3 values and float32 scales, one per rows_per_block x 128 block, amax -> 448."""
    rows, k = x.shape
    blocks = -(-rows // rows_per_block)
    padded = torch.zeros((blocks * rows_per_block, k), device=x.device)
    padded[:rows] = x
    tiles = padded.view(blocks, rows_per_block, k // GROUP, GROUP)
    scale = tiles.abs().amax(dim=(1, 3)).clamp(min=1e-4) / E4M3_MAX
    q = (tiles / scale[:, None, :, None]).to(torch.float8_e4m3fn).view(padded.shape)[:rows].contiguous()
    return q, scale.contiguous()


def row_quantized(torch, x):
    scale = x.abs().amax(dim=1, keepdim=True).clamp(min=1e-4) / E4M3_MAX
    return (x / scale).to(torch.float8_e4m3fn), scale.float().contiguous()


def relative_error(torch, got, want) -> float:
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


def timer(torch, quick: bool):
    try:
        from triton.testing import do_bench

        return lambda fn: do_bench(fn, warmup=5 if quick else 25, rep=20 if quick else 100) * 1e3  # us
    except ImportError:
        def events(fn, calls=10 if quick else 50):
            fn()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            stop.record()
            torch.cuda.synchronize()
            return start.elapsed_time(stop) / calls * 1e3
        return events


def load_ours(root: Path, n: int, k: int):
    directory = root / fp8_gemm_cases.artifact_id(n, k)
    loaded = load_artifact(directory, f"no artifact {directory.name} under {root} (run python3 -m "
                                      "benchmarks.build_fp8_gemm_artifacts here and carry benchmarks/artifacts_fp8_gemm)")
    from tilemlir.runtime.kernel import CompiledKernel

    signature = dataclasses.replace(loaded.signature, out_idx=())  # C passed by us, so it can be poisoned
    return CompiledKernel(signature, loaded.cuda_source(), loaded.cubin, loaded.options)


def run_shape(torch, shape, args, bench, ours_cache) -> dict:
    m, n, k = shape.m, shape.n, shape.k
    a = torch.randn((m, k), device="cuda") * torch.rand((m, 1), device="cuda") * 4
    b = torch.randn((n, k), device="cuda")
    row = {"shape": shape.name, "flops": shape.flops, "results": {}}
    impls = {}
    try:
        if (n, k) not in ours_cache:
            ours_cache[(n, k)] = load_ours(args.artifacts, n, k)
        kernel = ours_cache[(n, k)]
        a_q, sa = block_quantized(torch, a, 1)
        b_q, sb = block_quantized(torch, b, GROUP)
        c = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
        want = (a_q.double() * sa.double().repeat_interleave(GROUP, 1)) @ \
            (b_q.double() * sb.double().repeat_interleave(GROUP, 0)[:n].repeat_interleave(GROUP, 1)).T
        impls["ours (1x128 / 128x128 scales)"] = (lambda: kernel(a_q, b_q, sa, sb, c), c, want)
    except Missing as exc:
        row["results"]["ours (1x128 / 128x128 scales)"] = {"error": str(exc)}
    a_r, scale_a = row_quantized(torch, a)
    b_r, scale_b = row_quantized(torch, b)
    want_r = (a_r.double() * scale_a.double()) @ (b_r.double() * scale_b.double()).T
    holder = {}

    def scaled_mm():
        holder["c"] = torch._scaled_mm(a_r, b_r.t(), scale_a=scale_a, scale_b=scale_b.t(), out_dtype=torch.bfloat16)
    impls["torch._scaled_mm (row-wise)"] = (scaled_mm, None, want_r)
    for name, (call, out, want) in impls.items():
        if out is not None:
            out.view(torch.uint8).fill_(0xFF)
        call()
        torch.cuda.synchronize()
        error = relative_error(torch, out if out is not None else holder["c"], want)
        row["results"][name] = {"error": error, "ok": error <= fp8_gemm_cases.ERROR_BOUND, "times_us": []}
    for _ in range(args.rounds):
        for name, (call, _, _) in impls.items():
            row["results"][name]["times_us"].append(bench(call))
    for result in row["results"].values():
        if result.get("times_us"):
            result["tflops"] = tflops(shape.flops, min(result["times_us"]))
    return row


def peak(torch, bench) -> dict:
    shape = fp8_gemm_cases.PEAK_SHAPE
    a = torch.randn((shape.m, shape.k), device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn((shape.n, shape.k), device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    time_us = min(bench(lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
                  for _ in range(2))
    return {"shape": shape.name, "what": "torch._scaled_mm, per-tensor scales", "tflops": tflops(shape.flops, time_us)}


def markdown(rows: list[dict], peak_row: dict | None) -> str:
    lines = ["| M x N x K | implementation | TFLOP/s | times (us) | rel. error |", "|---|---|---|---|---|"]
    for row in rows:
        for name, result in row["results"].items():
            if "times_us" not in result:
                lines.append(f"| {row['shape']} | {name} | — | {result['error']} | |")
                continue
            flag = "" if result["ok"] else " FAILED"
            times = ", ".join(f"{t:.1f}" for t in result["times_us"])
            lines.append(f"| {row['shape']} | {name} | {result['tflops']:.0f} | {times} | {result['error']:.2e}{flag} |")
        results = [r for r in row["results"].values() if "tflops" in r]
        if len(results) == 2:
            lines.append(f"| {row['shape']} | ours / cuBLASLt | {results[0]['tflops'] / results[1]['tflops']:.2f}x | | |")
    if peak_row:
        lines.append(f"\nfp8 peak reference: {peak_row['tflops']:.0f} TFLOP/s ({peak_row['what']}, {peak_row['shape']})")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    print(f"seed {args.seed}; {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    bench = timer(torch, args.quick)
    started, rows, cache, failed = time.monotonic(), [], {}, False
    args.out.mkdir(parents=True, exist_ok=True)
    peak_row = peak(torch, bench)
    for shape in args.shapes:
        if time.monotonic() - started > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {shape.name} and later shapes skipped", flush=True)
            break
        row = run_shape(torch, shape, args, bench, cache)
        failed |= any(r.get("ok") is False for r in row["results"].values())
        rows.append(row)
        print("\n".join(markdown([row], None).splitlines()[2:]), flush=True)
        (args.out / "bench_fp8_gemm.json").write_text(json.dumps({"rows": rows, "peak": peak_row}, indent=1) + "\n")
    text = markdown(rows, peak_row)
    (args.out / "bench_fp8_gemm.md").write_text(text + "\n")
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
