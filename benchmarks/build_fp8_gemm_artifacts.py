"""Compile `examples/fp8_gemm.py` (its kernel body unchanged) for sm_90a with tensor_cores="wgmma", one artifact per
(N, K) of the fp8 benchmark, into `benchmarks/artifacts_fp8_gemm/<id>/` for `bench_fp8_gemm.py` to load on the GPU
machine (no MLIR there). NVRTC needs no GPU; ptxas's report of each is printed (registers, spills).

    python3 -m benchmarks.build_fp8_gemm_artifacts [--shapes 4096x7168x2048] [--kernel-args '{"num_stages": 4}']
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import fp8_gemm_cases
from benchmarks.build_artifacts import COMMIT_FILE, dir_size, source_commit
from benchmarks.cases import split_list

ROOT = Path(__file__).resolve().parents[1]
FP8_ARTIFACTS = Path(__file__).resolve().parent / "artifacts_fp8_gemm"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", help="comma-separated MxNxK shapes (default: the benchmark's)")
    parser.add_argument("--out", type=Path, default=FP8_ARTIFACTS, help="artifact root (default %(default)s)")
    parser.add_argument("--kernel-args", type=json.loads, default={}, help="JSON object of extra factory arguments")
    return parser


def factory():
    sys.path.insert(0, str(ROOT / "examples"))
    import fp8_gemm

    return fp8_gemm.fp8_gemm


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        shapes = fp8_gemm_cases.select_shapes(split_list(args.shapes))
    except ValueError as exc:
        parser.error(str(exc))
    import tilemlir
    from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report

    args.out.mkdir(parents=True, exist_ok=True)
    manifest, failed = {}, []
    for n, k in dict.fromkeys((s.n, s.k) for s in shapes):
        name = fp8_gemm_cases.artifact_id(n, k)
        kwargs = {"N": n, "K": k, **args.kernel_args}
        started = time.perf_counter()
        try:
            kernel = tilemlir.compile(factory().instantiate(**kwargs), target="cuda", arch="sm_90a",
                                      tensor_cores="wgmma")
            shutil.rmtree(args.out / name, ignore_errors=True)
            kernel.export(args.out / name)
        except Exception as exc:  # a CompileError carries its located diagnostics
            failed.append(name)
            print(f"FAILED  {name}: {type(exc).__name__}: {exc}", flush=True)
            continue
        report = ptxas_report(kernel.cuda_source(), kernel.signature.name, CompileOptions(arch="sm_90a"))
        resources = re.findall(r"(\d+ bytes spill stores, \d+ bytes spill loads|Used \d+ registers)", report)
        manifest[name] = {"kwargs": kwargs, "compile_s": round(time.perf_counter() - started, 2), "ptxas": resources}
        print(f"built   {name}  {'; '.join(resources)}", flush=True)
    (args.out / "manifest.json").write_text(json.dumps({"artifacts": manifest, "source_commit": source_commit()},
                                                       indent=1, sort_keys=True) + "\n")
    (args.out / COMMIT_FILE).write_text(source_commit() + "\n")
    print(f"{len(manifest)} built, {len(failed)} failed; {args.out} holds {dir_size(args.out) / 2**20:.2f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
