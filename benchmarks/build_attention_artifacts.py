"""Compile our FlashAttention forward (`examples/flash_attention.py`, unchanged) for every case and variant of
the attention benchmark into `benchmarks/artifacts_attention/<id>/` for `bench_attention.py` to load on the
GPU machine (no MLIR there). NVRTC needs no GPU. `manifest.json` records per artifact the factory's
arguments, the compile options and time, and ptxas's registers and spill bytes (0 expected).

    python3 -m benchmarks.build_attention_artifacts [--variants mma,wgmma] [--shapes 4x32x4096x128] [--clean]
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

from benchmarks import attention_cases
from benchmarks.build_artifacts import COMMIT_FILE, dir_size, source_commit
from benchmarks.cases import split_list

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts_attention"
MANIFEST = "manifest.json"


def load_factory():
    examples = str(ROOT / "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    import flash_attention

    return flash_attention.flash_attention


def ptxas_numbers(kernel) -> dict:
    """Registers and spill bytes from ptxas's verbose report on the kernel's CUDA."""
    from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report

    report = ptxas_report(kernel.cuda_source(), kernel.signature.name, CompileOptions(arch="sm_90a"))
    registers = re.search(r"Used (\d+) registers", report)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    return {"registers": int(registers.group(1)) if registers else None,
            "spill_store_bytes": int(spills.group(1)) if spills else None,
            "spill_load_bytes": int(spills.group(2)) if spills else None}


def build(cases, variants, root: Path) -> tuple[dict, list[str]]:
    import tilemlir

    factory = load_factory()
    entries, failed = {}, []
    for case in cases:
        for variant in variants:
            artifact = case.artifact_id(variant)
            if artifact in entries:
                continue
            params, options = case.factory_kwargs(variant)
            started = time.perf_counter()
            try:
                kernel = tilemlir.compile(factory.instantiate(**params), target="cuda", **options)
                seconds = time.perf_counter() - started
                shutil.rmtree(root / artifact, ignore_errors=True)
                kernel.export(root / artifact)
                resources = ptxas_numbers(kernel)
            except Exception as exc:  # a CompileError carries its located diagnostics in its text
                failed.append(f"{artifact}: {type(exc).__name__}: {exc}")
                print(f"FAILED  {artifact}: {type(exc).__name__}: {exc}", flush=True)
                continue
            resources["shared_bytes"] = json.loads((root / artifact / "signature.json").read_text()).get(
                "shared_bytes", 0)
            entries[artifact] = {"factory": "examples/flash_attention.py:flash_attention", "kwargs": params,
                                 "options": options, "compile_s": round(seconds, 2), "resources": resources}
            print(f"built   {artifact}  ({seconds:.1f} s, {resources})", flush=True)
    return entries, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", help=f"comma-separated ({', '.join(attention_cases.VARIANTS)}; default all)")
    parser.add_argument("--shapes", help="comma-separated BxHxSxD shapes (default: the benchmark's)")
    parser.add_argument("--out", type=Path, default=ARTIFACTS, help="artifact root (default %(default)s)")
    parser.add_argument("--clean", action="store_true", help="remove the artifact root first")
    args = parser.parse_args(argv)
    variants = split_list(args.variants) or list(attention_cases.VARIANTS)
    unknown = sorted(set(variants) - set(attention_cases.VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}")
    try:
        shapes = [attention_cases.parse_shape(s) for s in split_list(args.shapes) or []] or attention_cases.SHAPES
    except ValueError as exc:
        parser.error(str(exc))
    if args.clean and args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    entries, failed = build(attention_cases.all_cases(shapes), variants, args.out)
    manifest_file = args.out / MANIFEST
    manifest = json.loads(manifest_file.read_text()) if manifest_file.is_file() else {}
    manifest.setdefault("artifacts", {}).update(entries)
    manifest["source_commit"] = source_commit()
    manifest_file.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (args.out / COMMIT_FILE).write_text(manifest["source_commit"] + "\n")
    print(f"{len(entries)} built, {len(failed)} failed; {args.out} holds {dir_size(args.out) / 2**20:.2f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
