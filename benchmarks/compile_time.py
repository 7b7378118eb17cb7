"""Compile-time benchmark (issue 5's targets): cold compile of the softmax
example, first compile from a warm disk cache in a new process, and
`import tilemlir.runtime`.

Runs here (NVRTC needs no GPU). Every number comes from a fresh Python
process (`--worker`), repeated `--repeat` times; the table shows the
minimum and the median.

- cold: an empty `TILEMLIR_CACHE_DIR`; `tilemlir.compile(fn, target="cuda")`
  right after import, then, in the same process, the stages on a fresh
  copy of the kernel: frontend (`JitFunction.frontend`), the passes to the
  thread level and to the final IR (`tilemlir.lower(fn, stage)`, which
  re-parse the frontend text), and NVRTC alone on the emitted source
  (`tilemlir.runtime.compile_cuda`). Emission is what the total leaves.
  Timing records the driver logs at debug level are kept too.
- warm: a new process over the cache the cold run filled; from before
  `import tilemlir` to the compiled kernel in hand (no GPU here: no launch).
- import: `import tilemlir.runtime`, and with `load` resolved.

    python3 -m benchmarks.compile_time [--example examples/softmax.py] [--function softmax]
        [--args '{"N": 8192}'] [--repeat 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START = time.perf_counter()

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "out"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--example", type=Path, default=ROOT / "examples" / "softmax.py",
                        help="Python file holding the kernel (default %(default)s)")
    parser.add_argument("--function", default="softmax", help="the kernel (or factory) in it")
    parser.add_argument("--args", default="{}", help="JSON keyword arguments when the function is a factory")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, help="output directory (default $OUT, else benchmarks/out)")
    parser.add_argument("--worker", choices=("cold", "warm", "import"), help=argparse.SUPPRESS)
    return parser


# -- workers (each in its own process) -----------------------------------------------------
def load_kernel_function(example: Path, function: str, factory_args: dict):
    """A fresh, uncompiled JitFunction of the example's kernel."""
    import importlib.util

    from tilemlir.api import JitFunction

    spec = importlib.util.spec_from_file_location(f"_example_{example.stem}", example)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, function)
    raw = fn.fn if isinstance(fn, JitFunction) else fn
    jit = JitFunction(raw, getattr(fn, "out_idx", None))
    return jit.instantiate(**factory_args) if jit.kind == "factory" else jit


def _import_compiler():
    import tilemlir
    import tilemlir.api  # noqa: F401 - the compiler front door, loaded lazily by tilemlir.compile

    return tilemlir


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def worker_cold(args: argparse.Namespace) -> dict:
    import logging

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(f"{record.name}: {record.getMessage()}")

    logger = logging.getLogger("tilemlir")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Keep())
    factory_args = json.loads(args.args)
    t_import, tilemlir = _timed(_import_compiler)
    t_mlir, _ = _timed(lambda: __import__("tilemlir.mlir"))
    result = {"import_api_s": t_import, "import_mlir_s": t_mlir}
    try:
        result["total_s"], kernel = _timed(lambda: tilemlir.compile(
            load_kernel_function(args.example, args.function, factory_args), target="cuda"))
    except Exception as exc:  # still time the stages that work
        result["total_s"], kernel = f"{type(exc).__name__}: {exc}", None
    fresh = load_kernel_function(args.example, args.function, factory_args)
    result["frontend_s"], _ = _timed(fresh.frontend)
    for stage in ("thread", "final"):
        try:
            result[f"to_{stage}_s"], _ = _timed(lambda s=stage: tilemlir.lower(fresh, stage=s))
        except Exception as exc:
            result[f"to_{stage}_s"] = f"{type(exc).__name__}: {exc}"
    result["nvrtc_s"] = _nvrtc_time(kernel) if kernel is not None else "no kernel"
    timings = getattr(kernel, "timings", None)
    if timings is not None:
        result["driver_timings"] = timings() if callable(timings) else timings
    result["log"] = [r for r in records if " s" in r or "time" in r.lower()]
    return result


def _nvrtc_time(kernel) -> float | str:
    try:
        from tilemlir.runtime import CompileOptions, compile_cuda

        source, name = kernel.cuda_source(), kernel.signature.name
        seconds, _ = _timed(lambda: compile_cuda(source, name, CompileOptions(arch=kernel.arch)))
        return seconds
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def worker_warm(args: argparse.Namespace) -> dict:
    t_import, tilemlir = _timed(_import_compiler)
    fn = load_kernel_function(args.example, args.function, json.loads(args.args))
    t_compile, _ = _timed(lambda: tilemlir.compile(fn, target="cuda"))
    return {"import_s": t_import, "compile_from_cache_s": t_compile, "process_to_kernel_s": time.perf_counter() - START}


def worker_import(args: argparse.Namespace) -> dict:
    begin = time.perf_counter()
    import tilemlir.runtime

    imported = time.perf_counter()
    _ = tilemlir.runtime.load, tilemlir.runtime.KernelSignature
    resolved = time.perf_counter()
    return {"import_runtime_s": imported - begin, "import_runtime_with_load_s": resolved - begin,
            "mlir_imported": any(name.startswith("torch_mlir") for name in sys.modules)}


WORKERS = {"cold": worker_cold, "warm": worker_warm, "import": worker_import}


# -- the parent ----------------------------------------------------------------------------
def run_worker(kind: str, args: argparse.Namespace, cache: Path) -> dict:
    command = [sys.executable, "-m", "benchmarks.compile_time", "--worker", kind, "--example", str(args.example),
               "--function", args.function, "--args", args.args]
    env = dict(os.environ, TILEMLIR_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarize(runs: list[dict]) -> dict:
    """Per numeric key: (min, median) over the runs; other values from the first run."""
    summary: dict = {}
    for key in runs[0]:
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
        summary[key] = (min(values), statistics.median(values)) if values else runs[0][key]
    return summary


def table(summaries: dict[str, dict]) -> str:
    lines = ["| measurement | min s | median s |", "|---|---|---|"]
    for kind, summary in summaries.items():
        if "error" in summary:
            lines.append(f"| {kind} | error: {summary['error']} | |")
            continue
        for key, value in summary.items():
            if isinstance(value, tuple):
                lines.append(f"| {kind}: {key} | {value[0]:.4f} | {value[1]:.4f} |")
            elif key.endswith("_s"):
                lines.append(f"| {kind}: {key} | {value} | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args), default=str))
        return 0
    if not args.example.is_file():
        print(f"no example {args.example}; pass --example FILE --function NAME", file=sys.stderr)
        return 2
    summaries, raw, warm_cache = {}, {}, Path(tempfile.mkdtemp(prefix="tilemlir-cache-"))
    for kind in ("cold", "warm", "import"):
        runs = []
        for _ in range(args.repeat):
            cache = Path(tempfile.mkdtemp(prefix="tilemlir-cache-")) if kind == "cold" else warm_cache
            result = run_worker(kind, args, cache)
            if kind == "cold":
                warm_cache = cache  # the last cold run's cache serves the warm runs
            runs.append(result)
            if "error" in result:
                break
        raw[kind] = runs
        summaries[kind] = runs[-1] if "error" in runs[-1] else summarize(runs)
    out = args.out or Path(os.environ.get("OUT") or DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compile_time.json").write_text(json.dumps(raw, indent=1, default=str) + "\n")
    cold_log = summaries.get("cold", {}).get("log")
    if cold_log:
        print("driver log (cold):", *cold_log, sep="\n  ")
    print(table(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
