"""Compile every tilemlir kernel of issue 8 at every benchmark shape into
`benchmarks/artifacts/<kernel>_<shape>/` (CUDA source, cubin, signature.json,
build.json), for `bench_memory_bound.py` to load on the GPU machine, which
has no MLIR.

Runs here, with the compiler. Each kernel is a `@tilemlir.jit` factory in
`tilemlir.kernels.<module>`; `REGISTRY` says which factory builds which
benchmark kernel and with which compile-time arguments (rows stay symbolic,
so one artifact also serves fewer rows). A kernel whose module or factory
does not exist yet is skipped with a message; a kernel that fails to
compile is reported and the others still build (exit status 1 then).

    python3 -m benchmarks.build_artifacts [--kernels softmax] [--shapes 8192x8192] [--clean]
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cases import LAUNCH_CASE, Case, Shape, select_cases, split_list
from benchmarks.ours import ARTIFACTS

# The artifacts travel to the GPU machine with every run (64 MiB in all, the TileLang bundle included).
SIZE_WARNING = 16 * 2**20


@dataclass(frozen=True)
class Entry:
    module: str  # tilemlir.kernels.<module>
    factory: str  # the @tilemlir.jit factory in it
    kwargs: Callable[[Shape], dict[str, Any]]  # its compile-time arguments for a shape


def _dtype(dtype: str) -> Callable[[Shape], dict[str, Any]]:
    return lambda shape: {"dtype": dtype}


def _cols(**extra: Any) -> Callable[[Shape], dict[str, Any]]:
    return lambda shape: {"N": shape.dims[1], **extra}


# benchmark kernel name (cases.KERNELS) -> factory; adjust to the kernel library as it lands
REGISTRY: dict[str, Entry] = {
    **{f"{op}_{short}": Entry("elementwise", op, _dtype(dtype))
       for op in ("add", "mul") for short, dtype in (("fp32", "float32"), ("fp16", "float16"), ("bf16", "bfloat16"))},
    "cast_fp32_bf16": Entry("elementwise", "cast", lambda s: {"src": "float32", "dst": "bfloat16"}),
    "cast_bf16_fp8": Entry("elementwise", "cast", lambda s: {"src": "bfloat16", "dst": "float8_e4m3"}),
    "softmax_fp16": Entry("softmax", "softmax", _cols(dtype="float16")),
    "softmax_bf16": Entry("softmax", "softmax", _cols(dtype="bfloat16")),
    "rmsnorm_bf16": Entry("norm", "rmsnorm", _cols()),
    "add_rmsnorm_bf16": Entry("norm", "add_rmsnorm", _cols()),
    "layernorm_bf16": Entry("norm", "layernorm", _cols()),
    "add_layernorm_bf16": Entry("norm", "add_layernorm", _cols()),
    "row_sum_fp32": Entry("reduce", "row_sum", _cols()),
    "row_max_fp32": Entry("reduce", "row_max", _cols()),
    "quant_row_fp8": Entry("quant", "quant_row_fp8", _cols()),
    "quant_block_fp8": Entry("quant", "quant_block_fp8", _cols()),
    "silu_mul_bf16": Entry("activation", "silu_mul", _cols()),
}


class Skip(Exception):
    """The kernel library has no such kernel yet."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", help="comma-separated kernel names or families (default: all)")
    parser.add_argument("--shapes", help="comma-separated shapes (default: the benchmark's)")
    parser.add_argument("--out", type=Path, default=ARTIFACTS, help="artifact root (default %(default)s)")
    parser.add_argument("--arch", default="sm_90a",
                        help="arch the artifacts must be built for (default %(default)s, what NVRTC targets "
                             "on a machine without a GPU)")
    parser.add_argument("--clean", action="store_true", help="remove the artifact root first")
    return parser


def factory_for(entry: Entry) -> Any:
    try:
        module = importlib.import_module(f"tilemlir.kernels.{entry.module}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("tilemlir.kernels"):
            raise Skip(f"no module tilemlir.kernels.{entry.module}") from None
        raise
    factory = getattr(module, entry.factory, None)
    if factory is None:
        raise Skip(f"tilemlir.kernels.{entry.module} has no {entry.factory}")
    return factory


def compile_kernel(entry: Entry, shape: Shape) -> Any:
    """The compiled kernel (an object with .export(dir)) of `entry` at `shape`."""
    import tilemlir

    made = factory_for(entry)(**entry.kwargs(shape))
    return made if hasattr(made, "export") else tilemlir.compile(made, target="cuda")


def exported_arch(directory: Path) -> str | None:
    build = directory / "build.json"
    return json.loads(build.read_text()).get("arch") if build.is_file() else None


def build(cases: list[Case], root: Path, arch: str) -> tuple[int, list[str], list[str]]:
    """Export every case's artifact; returns (built, skipped messages, failure messages)."""
    built, skipped, failed = 0, [], []
    compiled: dict[tuple, Any] = {}
    for case in cases:
        entry = REGISTRY.get(case.kernel.name)
        if entry is None:
            skipped.append(f"{case.id}: no REGISTRY entry for {case.kernel.name}")
            continue
        key = (entry.module, entry.factory, tuple(sorted(entry.kwargs(case.shape).items())))
        started = time.perf_counter()
        try:
            if key not in compiled:
                compiled[key] = compile_kernel(entry, case.shape)
            target = root / case.id
            if target.exists():
                shutil.rmtree(target)
            compiled[key].export(target)
            if exported_arch(target) not in (None, arch):
                raise RuntimeError(f"compiled for {exported_arch(target)}, not {arch} (set the arch the way "
                                   "tilemlir.compile takes it and rebuild)")
        except Skip as exc:
            skipped.append(f"{case.id}: {exc}")
            continue
        except Exception as exc:  # a CompileError carries its located diagnostics in its text
            failed.append(f"{case.id}: {type(exc).__name__}: {exc}")
            print(f"FAILED  {case.id}: {type(exc).__name__}: {exc}", flush=True)
            continue
        built += 1
        print(f"built   {case.id}  ({time.perf_counter() - started:.2f} s, {dir_size(root / case.id) / 1024:.0f} KiB)",
              flush=True)
    return built, skipped, failed


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


COMMIT_FILE = "SOURCE_COMMIT"  # the commit the artifacts were built from (the GPU machine has no git)


def source_commit() -> str:
    """`git describe`-style: the short commit, with -dirty when the tree has changes."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                              timeout=10, cwd=Path(__file__).resolve().parent)
        return done.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cases = select_cases(split_list(args.kernels), split_list(args.shapes))
    except ValueError as exc:
        parser.error(str(exc))
    if not args.kernels and not args.shapes:
        cases.append(LAUNCH_CASE)
    if args.clean and args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    built, skipped, failed = build(cases, args.out, args.arch)
    (args.out / COMMIT_FILE).write_text(source_commit() + "\n")
    for message in skipped:
        print(f"skipped {message}")
    total = dir_size(args.out)
    print(f"{built} built, {len(skipped)} skipped, {len(failed)} failed; {args.out} holds {total / 2**20:.2f} MiB")
    if total > SIZE_WARNING:
        print(f"warning: artifacts exceed {SIZE_WARNING // 2**20} MiB; they travel with every GPU run (64 MiB in all)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
