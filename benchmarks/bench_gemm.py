"""Issue 16's GEMM benchmark: our GEMM (`examples/gemm.py`) against torch.matmul (cuBLAS), a
Triton GEMM and TileLang (when it imports) on one GPU, in one process.

Runs on the GPU machine without MLIR: our kernels come from the artifact directories
`build_gemm_artifacts.py` writes (`benchmarks/artifacts_gemm/<id>/`), loaded with
`tilemlir.runtime.load`. Per case (shape x dtype): fresh `randn` inputs; a float32 reference
(torch.matmul of the same inputs upcast, TF32 off); per implementation one warm call (compiles,
autotunes, loads), then a call into a NaN-poisoned C, whose relative norm error must be within the
dtype's bound (`gemm_cases.ERROR_BOUND`) with no element left NaN; then `--rounds` interleaved
rounds of `do_bench` timings. TFLOP/s = 2MNK / time. Per artifact of ours: registers, spills,
shared bytes and SASS HMMA / LDSM / LDGSTS / FFMA counts (cuobjdump here, cuFuncGetAttribute),
and whether it runs on the tensor cores or the SIMT path (then the notes say so; it still runs).

    python3 -m benchmarks.bench_gemm [--dtypes bf16] [--shapes 4096^3,4096x7168x2048] [--quick]
        [--rounds 2] [--no-tilelang] [--no-triton] [--artifacts DIR] [--out DIR]

Writes bench_gemm.json / .md under --out (default $OUT, else benchmarks/out) after every case and
prints the markdown tables last.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import gemm_cases, gemm_report
from benchmarks.cases import split_list
from benchmarks.cli import add_run_options, finish_run_options
from benchmarks.gemm_cases import GemmCase
from benchmarks.ours import Missing, load_artifact

GEMM_ARTIFACTS = Path(__file__).resolve().parent / "artifacts_gemm"
MANIFEST = "manifest.json"
DEFAULT_ROUNDS = 2
DEFAULT_BUDGET_S = 420


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", help="comma-separated dtypes (bf16, fp16; default both)")
    parser.add_argument("--shapes", help="comma-separated MxNxK or D^3 shapes (default: the benchmark's)")
    parser.add_argument("--artifacts", type=Path, default=GEMM_ARTIFACTS, help="our artifacts (default %(default)s)")
    add_run_options(parser, DEFAULT_ROUNDS, DEFAULT_BUDGET_S)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.cases = gemm_cases.select_cases(split_list(args.dtypes), split_list(args.shapes))
    except ValueError as exc:
        parser.error(str(exc))
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return finish_run_options(args)


# -- ours ----------------------------------------------------------------------------------------
def signature_problems(signature: Any, case: GemmCase) -> list[str]:
    """How a loaded signature departs from C = A @ B with A (M, K), B (K, N), C (M, N), M symbolic."""
    n, k = case.shape.n, case.shape.k
    want = [("A", ("M", k)), ("B", (k, n)), ("C", ("M", n))]
    params = list(signature.params)
    if len(params) != 3 or any(not hasattr(p, "shape") for p in params):
        return [f"params {[p.name for p in params]}, expected three tensors A, B, C"]
    problems = []
    for param, (name, shape) in zip(params, want):
        if param.dtype != case.dtype or tuple(param.shape) != shape:
            problems.append(f"{param.name} is {param.dtype} {tuple(param.shape)}, expected {name} {case.dtype} {shape}")
    if tuple(signature.out_idx) not in ((), (2,)):
        problems.append(f"out_idx {list(signature.out_idx)}, expected [] or [2]")
    return problems


def load_ours(case: GemmCase, root: Path) -> Any:
    """Our compiled kernel for `case`, taking a caller's C (so the harness can poison it)."""
    directory = root / case.artifact_id
    loaded = load_artifact(directory, f"no artifact {directory.name} under {root} (run python3 -m "
                                      "benchmarks.build_gemm_artifacts here and carry benchmarks/artifacts_gemm)")
    from tilemlir.runtime.kernel import CompiledKernel

    problems = signature_problems(loaded.signature, case)
    if problems:
        raise Missing(f"artifact {directory.name} is not this GEMM: " + "; ".join(problems))
    signature = dataclasses.replace(loaded.signature, out_idx=())
    return CompiledKernel(signature, loaded.cuda_source(), loaded.cubin, loaded.options)


def artifact_resources(directory: Path, built: dict[str, Any]) -> dict[str, Any]:
    """Registers, spills, shared bytes and matrix opcodes of one artifact's cubin, read here; the
    builder's record (compile time, its own cuobjdump reading) fills in what cannot be read here."""
    from benchmarks import ours, sass

    signature = json.loads((directory / "signature.json").read_text())
    name = signature["name"]
    cubin = directory / f"{name}.cubin"
    found = sass.inspect_cubin(cubin, name, sass.MATRIX_OPCODES)
    found.pop("cuobjdump", None)
    if found.get("error") and built.get("resources") and not built["resources"].get("error"):
        found = {**built["resources"], "read": f"at build time ({found['error']} here)"}
    found["dynamic_shared"] = signature.get("shared_bytes", 0)
    try:
        found["driver"] = ours.function_attributes(cubin.read_bytes(), name)
    except Exception as exc:  # no driver (a CPU-only machine): the cuobjdump numbers stand alone
        found["driver"] = {"error": f"{type(exc).__name__}: {exc}"}
    source = (directory / f"{name}.cu").read_text()
    found["path"] = gemm_cases.matrix_path(found.get("opcodes"), source)
    if "compile_s" in built:
        found["compile_s"] = built["compile_s"]
    found["extra_args"] = {**{k: v for k, v in built.get("kwargs", {}).items() if k not in ("N", "K", "dtype")},
                           **built.get("compile_options", {})}  # the compile options (tensor_cores, tma) beside them
    return found


# -- the run -------------------------------------------------------------------------------------
class GemmRunner:
    def __init__(self, args: argparse.Namespace, device: str = "cuda"):
        import torch

        from benchmarks import measure

        self.args = args
        self.torch = torch
        self.device = device
        self.short = measure._short
        self.timing = measure.Timing(quick=args.quick)
        self.results: list[dict] = []
        self.resources: dict[str, dict] = {}
        self.notes: list[str] = []
        self.tilelang: dict[str, Any] = {}
        self.tilelang_errors: dict[str, str] = {}
        self.tilelang_off = "--no-tilelang" if args.no_tilelang else None
        self.triton_off = "--no-triton" if args.no_triton else None
        self.manifest = self.read_manifest()
        self.env = collect_env(args, self.manifest) if device.startswith("cuda") else {"device": device}
        torch.backends.cuda.matmul.allow_tf32 = False  # the float32 reference
        torch.backends.cudnn.allow_tf32 = False

    def read_manifest(self) -> dict[str, Any]:
        path = self.args.artifacts / MANIFEST
        return json.loads(path.read_text()) if path.is_file() else {}

    # -- peers -----------------------------------------------------------------------------------
    def prepare_tilelang(self) -> None:
        """Import TileLang and compile every case's kernel in parallel threads."""
        if self.tilelang_off:
            return
        try:
            import tilelang

            from benchmarks import tilelang_gemm
        except Exception as exc:
            self.tilelang_off = f"tilelang does not import: {self.short(exc)}"
            self.notes.append(self.tilelang_off)
            self.env["tilelang"] = self.tilelang_off
            return
        from concurrent.futures import ThreadPoolExecutor

        from benchmarks.bench_memory_bound import compile_tilelang

        self.env["tilelang"] = f"{getattr(tilelang, '__version__', 'unknown')} ({tilelang_gemm.CONFIG})"
        started = time.perf_counter()
        elaborated = {}
        for case in self.args.cases:
            try:
                factory, factory_args = tilelang_gemm.factory_call(case.shape.m, case.shape.n, case.shape.k,
                                                                   case.dtype)
                elaborated[case.id] = (factory, factory.get_tir(*factory_args))
            except Exception as exc:
                self.tilelang_errors[case.id] = f"elaboration failed: {self.short(exc)}"
        with ThreadPoolExecutor(max(1, self.args.compile_workers)) as pool:
            futures = {key: pool.submit(compile_tilelang, *job) for key, job in elaborated.items()}
        for key, future in futures.items():
            try:
                self.tilelang[key] = future.result()
            except Exception as exc:
                self.tilelang_errors[key] = f"compile failed: {self.short(exc)}"
        self.notes.append(f"TileLang: {len(self.tilelang)} kernels compiled, {len(self.tilelang_errors)} failed, "
                          f"in {time.perf_counter() - started:.1f} s")
        print(self.notes[-1], flush=True)

    def impls(self, case: GemmCase) -> tuple[dict[str, tuple[Callable, str]], dict[str, dict]]:
        """name -> (call(a, b, c), how it is called) of the runnable implementations, and the
        result entries of those that are not."""
        torch = self.torch
        runnable: dict[str, tuple[Callable, str]] = {}
        absent: dict[str, dict] = {}
        try:
            mine = load_ours(case, self.args.artifacts)
            runnable["ours"] = (lambda a, b, c: mine(a, b, c), f"{case.artifact_id}(A, B, C)")
            self.note_resources(case)
        except Missing as exc:
            absent["ours"] = {"status": "missing", "reason": str(exc)}
        runnable["torch"] = (lambda a, b, c: torch.matmul(a, b, out=c), "torch.matmul(A, B, out=C)")
        if self.triton_off:
            absent["triton"] = {"status": "skipped", "reason": self.triton_off}
        else:
            try:
                from benchmarks import triton_gemm

                runnable["triton"] = (triton_gemm.matmul, "triton_gemm.matmul(A, B, C), autotuned")
            except Exception as exc:
                absent["triton"] = {"status": "error", "reason": self.short(exc)}
        if self.tilelang_off:
            absent["tilelang"] = {"status": "skipped", "reason": self.tilelang_off}
        elif case.id in self.tilelang:
            kernel = self.tilelang[case.id]
            runnable["tilelang"] = (lambda a, b, c: kernel(a, b, c), "kernel(A, B, C)")
        else:
            absent["tilelang"] = {"status": "error", "reason": self.tilelang_errors.get(case.id, "not compiled")}
        return runnable, absent

    def note_resources(self, case: GemmCase) -> None:
        if case.artifact_id in self.resources:
            return
        built = self.manifest.get("artifacts", {}).get(case.artifact_id, {})
        try:
            found = artifact_resources(self.args.artifacts / case.artifact_id, built)
        except Exception as exc:
            found = {"error": self.short(exc), "path": built.get("path", "unknown")}
        self.resources[case.artifact_id] = found
        if found.get("path") not in gemm_report.TENSOR_CORE_PATHS:
            print(f"ours: {case.artifact_id} is on the {found.get('path')} path (no HMMA in its SASS): T.gemm runs on "
                  "CUDA cores in this build; it is still checked and timed", flush=True)

    # -- one case --------------------------------------------------------------------------------
    def run_case(self, case: GemmCase, seed: int) -> dict:
        torch = self.torch
        m, n, k = case.shape.m, case.shape.n, case.shape.k
        dtype = getattr(torch, case.dtype)
        generator = torch.Generator(device=self.device).manual_seed(seed)
        a = torch.randn(m, k, generator=generator, device=self.device).to(dtype)
        b = torch.randn(k, n, generator=generator, device=self.device).to(dtype)
        ref = torch.matmul(a.float(), b.float())
        c = torch.empty(m, n, device=self.device, dtype=dtype)
        runnable, entries = self.impls(case)
        for name, (call, text) in runnable.items():
            entries[name] = self.check(call, text, a, b, c, ref, case.error_bound)
        del ref
        self.time_rounds({name: runnable[name][0] for name in runnable if gemm_report.passed(entries[name])},
                         a, b, c, entries)
        config = self.triton_config(case)
        if config and "triton" in entries:
            entries["triton"]["config"] = config
        result = {"case": case.id, "dtype": case.dtype, "shape": [m, n, k], "flops": case.shape.flops,
                  "bound": case.error_bound, "artifact": case.artifact_id, "seed": seed,
                  "impls": {name: entries[name] for name in gemm_report.IMPLS if name in entries}}
        print(progress_line(result), flush=True)
        return result

    def check(self, call, text, a, b, c, ref, bound) -> dict:
        torch = self.torch
        try:
            call(a, b, c)  # compiles, autotunes, loads the module
            c.fill_(float("nan"))
            call(a, b, c)
            if self.device.startswith("cuda"):
                torch.cuda.synchronize()
        except Exception as exc:
            return {"status": "error", "reason": self.short(exc), "call": text}
        unwritten = int(torch.isnan(c).sum())
        error = relative_error(c, ref)
        return {"status": "ok", "call": text, "error": error, "unwritten": unwritten,
                "ok": unwritten == 0 and error <= bound}  # False for a NaN error

    def time_rounds(self, calls: dict[str, Callable], a, b, c, entries: dict) -> None:
        """Interleaved rounds over the implementations, so drift shows as spread in every one."""
        for name in calls:
            entries[name]["times_us"] = []
        for _ in range(self.args.rounds):
            for name, call in calls.items():
                try:
                    entries[name]["times_us"].append(self.timing(lambda f=call: f(a, b, c)))
                except Exception as exc:
                    entries[name].update(status="error", reason=f"timing: {self.short(exc)}")

    def triton_config(self, case: GemmCase) -> str | None:
        if self.triton_off:
            return None
        try:
            from benchmarks import triton_gemm

            return triton_gemm.chosen_config(case.shape.m, case.shape.n, case.shape.k)
        except Exception:  # Triton did not import: its entry already says why
            return None

    def skipped(self, case: GemmCase, reason: str, status: str = "skipped") -> dict:
        return {"case": case.id, "dtype": case.dtype, "shape": [case.shape.m, case.shape.n, case.shape.k],
                "flops": case.shape.flops, "bound": case.error_bound, "artifact": case.artifact_id,
                "impls": {name: {"status": status, "reason": reason} for name in gemm_report.IMPLS}}

    # -- output ----------------------------------------------------------------------------------
    def report(self) -> dict:
        return {"env": self.env, "results": self.results, "resources": self.resources, "notes": self.notes}

    def write(self) -> None:
        self.args.out.mkdir(parents=True, exist_ok=True)
        data = self.report()
        (self.args.out / "bench_gemm.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
        (self.args.out / "bench_gemm.md").write_text(gemm_report.full_markdown(data))


def relative_error(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64."""
    ref64 = ref.double()
    return float((out.double() - ref64).norm() / ref64.norm())


def progress_line(result: dict) -> str:
    parts = [result["case"]]
    for name in gemm_report.IMPLS:
        impl = result["impls"].get(name)
        if impl is not None:
            parts.append(f"{name} {gemm_report.rate_cell(impl, result['flops'])}")
    return " | ".join(parts)


def collect_env(args: argparse.Namespace, manifest: dict[str, Any]) -> dict:
    import torch

    from benchmarks.bench_memory_bound import _nvidia_smi

    try:
        import triton

        triton_version = triton.__version__
    except ImportError as exc:
        triton_version = f"does not import: {exc}"
    props = torch.cuda.get_device_properties(0)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": f"{props.name}, {props.multi_processor_count} SMs, {props.total_memory // 2**30} GiB",
        "driver": _nvidia_smi("driver_version"),
        "clocks (SM, memory MHz, power W, at start)": _nvidia_smi("clocks.sm,clocks.mem,power.draw"),
        "python": platform.python_version(),
        "torch": f"{torch.__version__} (CUDA {torch.version.cuda})",
        "triton": triton_version,
        "tilelang": "not used" if args.no_tilelang else "not imported yet",
        "tilemlir (artifacts built from)": manifest.get("source_commit", "unknown (no manifest.json)"),
        "seed": args.seed,
        "command": " ".join(["python3", "-m", "benchmarks.bench_gemm", *sys.argv[1:]]),
        "timing": "triton.testing.do_bench(fn, warmup=%d, rep=%d, return_mode='median'), L2 flushed per call, "
                  "%d rounds" % (*((5, 20) if args.quick else (25, 100)), args.rounds),
        "reference": "torch.matmul(A.float(), B.float()) with TF32 off; error = ||C - ref|| / ||ref|| in float64",
    }


def final_tables(data: dict) -> str:
    parts = ["", "== correctness ==", gemm_report.correctness_table(data["results"])]
    if data["resources"]:
        parts += ["", "== our kernels ==", gemm_report.resources_table(data["resources"])]
    notes = gemm_report.path_notes(data["resources"]) + gemm_report.notes_lines(data["results"])
    if notes:
        parts += ["", "== notes ==", *notes[:40]]
    paths = {a: r.get("path", "—") for a, r in data["resources"].items()}
    parts += ["", "== TFLOP/s ==", gemm_report.perf_table(data["results"], paths)]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark runs on the GPU machine", file=sys.stderr)
        return 2
    runner = GemmRunner(args)
    print(f"{len(args.cases)} cases, seed {args.seed}, our artifacts from {args.artifacts}, output under {args.out}",
          flush=True)
    runner.prepare_tilelang()
    for index, case in enumerate(args.cases):
        if time.perf_counter() - started > args.budget_s:
            runner.results.append(runner.skipped(case, f"time budget of {args.budget_s:.0f} s spent"))
            continue
        try:
            runner.results.append(runner.run_case(case, args.seed + index))
        except Exception as exc:  # e.g. out of memory: the other cases still run
            runner.results.append(runner.skipped(case, f"case failed: {runner.short(exc)}", "error"))
            print(f"{case.id}: {runner.results[-1]['impls']['ours']['reason']}", flush=True)
            torch.cuda.empty_cache()
        runner.write()
    runner.notes.append(f"wall time {time.perf_counter() - started:.0f} s")
    runner.write()
    print(final_tables(runner.report()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
