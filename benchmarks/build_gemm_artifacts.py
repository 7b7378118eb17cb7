"""Compile our GEMM (`examples/gemm.py`'s `matmul`, its kernel body unchanged) for every
(dtype, N, K) of the GEMM benchmark into `benchmarks/artifacts_gemm/<id>/` (CUDA source, cubin,
signature.json, build.json), for `bench_gemm.py` to load on the GPU machine, which has no MLIR.

Runs here, with the compiler; NVRTC needs no GPU. M stays symbolic, so one artifact serves every
M. `manifest.json` in the root records, per artifact, the factory's arguments, the compile time,
and what this machine's cuobjdump reads in the cubin (registers, spills, shared bytes, HMMA /
LDSM / LDGSTS counts) and hence which path the kernel took: "mma.sync" (tensor cores) or
"SIMT" (CUDA cores, today's lower-gemm-simt). A kernel that fails to compile is reported and the
others still build (exit status 1 then).

    python3 -m benchmarks.build_gemm_artifacts [--dtypes bf16] [--shapes 4096^3] [--clean]
        [--kernel-args '{"block_K": 64}'] [--compile-args '{"tensor_cores": "wgmma"}']
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import gemm_cases
from benchmarks.build_artifacts import COMMIT_FILE, dir_size, exported_arch, source_commit
from benchmarks.cases import split_list
from benchmarks.gemm_cases import matrix_path
from benchmarks.sass import MATRIX_OPCODES, inspect_cubin

ROOT = Path(__file__).resolve().parents[1]
GEMM_ARTIFACTS = Path(__file__).resolve().parent / "artifacts_gemm"
EXAMPLE = ROOT / "examples" / "gemm.py"
FACTORY = "matmul"
MANIFEST = "manifest.json"
# Everything that travels with a GPU call, the TileLang bundle (37 MB) and the repository included,
# must stay under 64 MiB.
SIZE_WARNING = 24 * 2**20
# examples/gemm.py's arguments and compile options that won on an H100 (benchmarks/RESULTS.md, session 13):
# 128 x 256 tiles on two warpgroups, 4 TMA-fed stages, rasterized in panels of 10
TUNED_KERNEL_ARGS = {"block_M": 128, "block_N": 256, "block_K": 64, "threads": 256, "num_stages": 4,
                     "enable_rasterization": True, "panel_size": 10}
TUNED_COMPILE_ARGS = {"tensor_cores": "wgmma", "tma": True}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", help="comma-separated dtypes (bf16, fp16; default both)")
    parser.add_argument("--shapes", help="comma-separated MxNxK or D^3 shapes (default: the benchmark's)")
    parser.add_argument("--out", type=Path, default=GEMM_ARTIFACTS, help="artifact root (default %(default)s)")
    parser.add_argument("--arch", default="sm_90a", help="arch the artifacts must be built for (default %(default)s)")
    parser.add_argument("--kernel-args", type=json.loads, default={},
                        help="JSON object of extra factory arguments (block_M, block_K, num_stages, threads, ...)")
    parser.add_argument("--compile-args", type=json.loads, default={},
                        help="JSON object of compile options (e.g. {\"tensor_cores\": \"wgmma\"})")
    parser.add_argument("--tuned", action="store_true",
                        help="start from the config that won on the GPU (TUNED_KERNEL_ARGS, TUNED_COMPILE_ARGS; "
                             "benchmarks/RESULTS.md, session 13); --kernel-args / --compile-args override its keys")
    parser.add_argument("--clean", action="store_true", help="remove the artifact root first")
    parser.add_argument("--example", type=Path, default=EXAMPLE,
                        help="the module whose `matmul` factory is built (default examples/gemm.py; "
                             "benchmarks/epilogue_gemm.py: other epilogues, its `epilogue` a --kernel-args key)")
    return parser


def load_factory(example: Path = EXAMPLE) -> Any:
    """`example`'s `matmul` (its folder goes on sys.path: the examples import their harness)."""
    folder = str(example.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import importlib

    return getattr(importlib.import_module(example.stem), FACTORY)


def factory_kwargs(dtype: str, n: int, k: int, extra: dict[str, Any]) -> dict[str, Any]:
    clashes = sorted(set(extra) & {"N", "K", "dtype"})
    if clashes:
        raise ValueError(f"--kernel-args may not set {', '.join(clashes)}: the benchmark's shapes and dtypes do")
    return {"N": n, "K": k, "dtype": dtype, **extra}


def compile_gemm(factory: Any, kwargs: dict[str, Any], options: dict[str, Any]) -> Any:
    import tilemlir

    return tilemlir.compile(factory.instantiate(**kwargs), target="cuda", **options)


def inspect_artifact(directory: Path, name: str) -> dict[str, Any]:
    found = inspect_cubin(directory / f"{name}.cubin", name, MATRIX_OPCODES)
    found.pop("cuobjdump", None)
    return found


def build(ids: dict[str, tuple[str, int, int]], root: Path, arch: str, extra: dict[str, Any],
          options: dict[str, Any], example: Path = EXAMPLE) -> tuple[dict[str, Any], list[str]]:
    """Export every artifact; returns (manifest entries by id, failure messages)."""
    factory = load_factory(example)
    origin = example.resolve().relative_to(ROOT) if example.resolve().is_relative_to(ROOT) else example
    entries, failed = {}, []
    for artifact, (dtype, n, k) in ids.items():
        kwargs = factory_kwargs(dtype, n, k, extra)
        started = time.perf_counter()
        try:
            kernel = compile_gemm(factory, kwargs, options)
            seconds = time.perf_counter() - started
            target = root / artifact
            if target.exists():
                shutil.rmtree(target)
            kernel.export(target)
            if exported_arch(target) not in (None, arch):
                raise RuntimeError(f"compiled for {exported_arch(target)}, not {arch}")
        except Exception as exc:  # a CompileError carries its located diagnostics in its text
            failed.append(f"{artifact}: {type(exc).__name__}: {exc}")
            print(f"FAILED  {artifact}: {type(exc).__name__}: {exc}", flush=True)
            continue
        resources = inspect_artifact(target, kernel.signature.name)
        path = matrix_path(resources.get("opcodes"), kernel.cuda_source())
        entries[artifact] = {"factory": f"{origin}:{FACTORY}", "kwargs": kwargs, "compile_options": options,
                             "compile_s": round(seconds, 2), "path": path, "resources": resources}
        print(f"built   {artifact}  ({seconds:.1f} s, {dir_size(target) / 1024:.0f} KiB, {path})", flush=True)
    return entries, failed


def write_manifest(root: Path, entries: dict[str, Any]) -> None:
    """Merge `entries` into the root's manifest (a partial rebuild keeps the others' records)."""
    manifest_file = root / MANIFEST
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
    manifest.setdefault("artifacts", {}).update(entries)
    manifest["source_commit"] = source_commit()
    manifest_file.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (root / COMMIT_FILE).write_text(manifest["source_commit"] + "\n")


def repository_bytes() -> int | None:
    """What the device tool sends of the repository: tracked plus untracked, not ignored, files."""
    import subprocess

    try:
        done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    files = (ROOT / name for name in done.stdout.decode().split("\0") if name)
    return sum(f.stat().st_size for f in files if f.is_file())


def carry_line(artifacts: int) -> str:
    """The size of a `run_on_h200.sh gemm` call: repository + .whl + these artifacts, against 64 MiB."""
    wheels = dir_size(ROOT / ".whl")
    repository = repository_bytes()
    if repository is None:
        return f"artifacts {artifacts / 2**20:.1f} MiB + .whl {wheels / 2**20:.1f} MiB (+ the repository) of 64 MiB"
    total = repository + wheels + artifacts
    return (f"a gemm call carries {total / 2**20:.1f} MiB of 64: repository {repository / 2**20:.1f}, "
            f".whl {wheels / 2**20:.1f}, artifacts {artifacts / 2**20:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for flag, value in (("--kernel-args", args.kernel_args), ("--compile-args", args.compile_args)):
        if not isinstance(value, dict):
            parser.error(f"{flag} must be a JSON object")
    if args.tuned:
        args.kernel_args = {**TUNED_KERNEL_ARGS, **args.kernel_args}
        args.compile_args = {**TUNED_COMPILE_ARGS, **args.compile_args}
    try:
        cases = gemm_cases.select_cases(split_list(args.dtypes), split_list(args.shapes))
        ids = gemm_cases.artifact_ids(cases)
        for dtype, n, k in ids.values():
            factory_kwargs(dtype, n, k, args.kernel_args)
    except ValueError as exc:
        parser.error(str(exc))
    if args.clean and args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    entries, failed = build(ids, args.out, args.arch, args.kernel_args, args.compile_args, args.example)
    write_manifest(args.out, entries)
    paths = sorted({e["path"] for e in entries.values()})
    total = dir_size(args.out)
    print(f"{len(entries)} built, {len(failed)} failed, paths: {', '.join(paths) or '—'}; "
          f"{args.out} holds {total / 2**20:.2f} MiB")
    print(carry_line(total))
    if total > SIZE_WARNING:
        print(f"warning: artifacts over {SIZE_WARNING // 2**20} MiB; with the 37 MB TileLang bundle and the "
              "repository, a GPU call carries at most 64 MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
