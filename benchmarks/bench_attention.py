"""Issue 19's attention benchmark: our FlashAttention forward (`examples/flash_attention.py`) against
F.scaled_dot_product_attention's cuDNN and flash backends, bf16, on one GPU, in one process.

Runs on the GPU machine without MLIR: our kernels load from `benchmarks/artifacts_attention/<id>/`
(`build_attention_artifacts.py` writes them). Per case (shape x causal): fresh `randn` inputs; a float32
reference (SDPA's math backend on the same inputs upcast, one batch element at a time); per implementation
one warm call, then a call into a NaN-poisoned output whose relative norm error must be within
`attention_cases.ERROR_BOUND` with no element left NaN; then `--rounds` interleaved rounds of `do_bench`
(L2 flushed). TFLOP/s = 4 B H S^2 D / time, halved for causal. Registers, spills and shared bytes of ours
come from the build manifest.

    python3 -m benchmarks.bench_attention [--shapes 4x32x4096x128] [--variants mma,wgmma] [--quick]
        [--rounds 2] [--artifacts DIR] [--out DIR]

Writes bench_attention.json / .md under --out (default $OUT, else benchmarks/out).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import attention_cases
from benchmarks.cases import split_list
from benchmarks.ours import Missing, load_artifact

ARTIFACTS = Path(__file__).resolve().parent / "artifacts_attention"
SDPA_BACKENDS = {"sdpa_cudnn": "CUDNN_ATTENTION", "sdpa_flash": "FLASH_ATTENTION"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", help="comma-separated BxHxSxD shapes (default: the benchmark's)")
    parser.add_argument("--variants", help="our variants (default: every one with an artifact)")
    parser.add_argument("--artifacts", type=Path, default=ARTIFACTS, help="our artifacts (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved timing rounds (default %(default)s)")
    parser.add_argument("--quick", action="store_true", help="shorter do_bench warmup and repetitions")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", Path(__file__).parent / "out")))
    return parser


def load_ours(case, variant: str, root: Path):
    """Our kernel for `case`, taking the caller's O and LSE (so they can be poisoned)."""
    from tilemlir.runtime.kernel import CompiledKernel

    directory = root / case.artifact_id(variant)
    loaded = load_artifact(directory, f"no artifact {directory.name} (run python3 -m "
                                      "benchmarks.build_attention_artifacts and carry benchmarks/artifacts_attention)")
    signature = dataclasses.replace(loaded.signature, out_idx=())
    return CompiledKernel(signature, loaded.cuda_source(), loaded.cubin, loaded.options)


def reference(torch, q, k, v, causal):
    """SDPA's math backend in float32, one batch element at a time (the 8x16x8192 scores are 34 GB at once)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        return torch.cat([F.scaled_dot_product_attention(q[b:b + 1].float(), k[b:b + 1].float(),
                                                         v[b:b + 1].float(), is_causal=causal)
                          for b in range(q.shape[0])])


def relative_error(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


class Runner:
    def __init__(self, args):
        import torch

        from benchmarks.measure import Timing

        self.torch, self.args = torch, args
        self.timing = Timing(quick=args.quick)
        manifest = args.artifacts / "manifest.json"
        self.manifest = json.loads(manifest.read_text()) if manifest.is_file() else {}
        self.results = []

    def impls(self, case):
        """name -> call(q, k, v, out), and name -> why absent."""
        torch = self.torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        runnable, absent = {}, {}
        for variant in self.args.variants:
            try:
                kernel = load_ours(case, variant, self.args.artifacts)
            except Missing as exc:
                absent[f"ours_{variant}"] = str(exc)
                continue
            lse = torch.empty(case.batch, case.heads, case.seq, dtype=torch.float32, device="cuda")
            runnable[f"ours_{variant}"] = lambda q, k, v, out, f=kernel, lse=lse: f(q, k, v, out, lse)
        for name, backend in SDPA_BACKENDS.items():
            def sdpa(q, k, v, out, backend=getattr(SDPBackend, backend)):
                with sdpa_kernel(backend):
                    out.copy_(F.scaled_dot_product_attention(q, k, v, is_causal=case.causal))
            runnable[name] = sdpa
        return runnable, absent

    def run_case(self, case, seed):
        torch = self.torch
        generator = torch.Generator(device="cuda").manual_seed(seed)
        shape = (case.batch, case.heads, case.seq, case.dim)
        q, k, v = (torch.randn(shape, generator=generator, device="cuda").to(torch.bfloat16) for _ in range(3))
        ref = reference(torch, q, k, v, case.causal)
        out = torch.empty_like(q)
        runnable, absent = self.impls(case)
        entries = {name: {"status": "missing", "reason": why} for name, why in absent.items()}
        for name, call in list(runnable.items()):
            try:
                call(q, k, v, out)
                out.view(torch.uint8).fill_(0xFF)
                call(q, k, v, out)
                torch.cuda.synchronize()
            except Exception as exc:  # e.g. a backend this torch build lacks
                entries[name] = {"status": "error", "reason": f"{type(exc).__name__}: {str(exc)[:200]}"}
                del runnable[name]
                continue
            unwritten = int(torch.isnan(out).sum())
            error = relative_error(out, ref)
            entries[name] = {"status": "ok", "error": error, "unwritten": unwritten,
                             "ok": unwritten == 0 and error <= attention_cases.ERROR_BOUND, "times_us": []}
        del ref
        for _ in range(self.args.rounds):
            for name, call in runnable.items():
                entries[name]["times_us"].append(self.timing(lambda c=call: c(q, k, v, out)))
        for entry in entries.values():
            if entry.get("times_us"):
                entry["tflops"] = case.flops / min(entry["times_us"]) / 1e6
        result = {"case": case.id, "flops": case.flops, "seed": seed, "impls": entries,
                  "ours": {v: self.manifest.get("artifacts", {}).get(case.artifact_id(v), {}).get("resources")
                           for v in self.args.variants}}
        print(progress_line(result), flush=True)
        return result

    def write(self):
        self.args.out.mkdir(parents=True, exist_ok=True)
        data = {"results": self.results, "source_commit": self.manifest.get("source_commit", "unknown"),
                "command": " ".join(["python3", "-m", "benchmarks.bench_attention", *sys.argv[1:]])}
        (self.args.out / "bench_attention.json").write_text(json.dumps(data, indent=1) + "\n")
        (self.args.out / "bench_attention.md").write_text(markdown(self.results) + "\n")


def progress_line(result) -> str:
    parts = [result["case"]]
    for name, entry in result["impls"].items():
        if "tflops" in entry:
            parts.append(f"{name} {entry['tflops']:.0f} TFLOP/s (err {entry['error']:.1e}"
                         f"{'' if entry['ok'] else ', FAILED'})")
        else:
            parts.append(f"{name} {entry['status']}: {entry.get('reason', '')[:80]}")
    return " | ".join(parts)


def markdown(results) -> str:
    names = sorted({name for r in results for name in r["impls"]})
    lines = ["| case | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for r in results:
        cells = []
        for name in names:
            entry = r["impls"].get(name, {})
            if "tflops" in entry:
                cells.append(f"{entry['tflops']:.0f}" + ("" if entry["ok"] else f" (FAILED, err {entry['error']:.1e})"))
            else:
                cells.append(entry.get("status", "—"))
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("TFLOP/s (4 B H S^2 D / best time, halved for causal). Ours' resources (ptxas at build):")
    for r in results:
        for variant, resources in r["ours"].items():
            if resources:
                lines.append(f"- {r['case']} ours_{variant}: {resources}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    args.variants = split_list(args.variants) or list(attention_cases.VARIANTS)
    shapes = [attention_cases.parse_shape(s) for s in split_list(args.shapes) or []] or attention_cases.SHAPES
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark runs on the GPU machine", file=sys.stderr)
        return 2
    runner = Runner(args)
    for index, case in enumerate(attention_cases.all_cases(shapes)):
        try:
            runner.results.append(runner.run_case(case, 1234 + index))
        except Exception as exc:  # out of memory, say: the other cases still run
            print(f"{case.id}: case failed: {type(exc).__name__}: {exc}", flush=True)
            torch.cuda.empty_cache()
        runner.write()
    print(markdown(runner.results), flush=True)
    return 0 if all(e.get("ok", True) for r in runner.results for e in r["impls"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
