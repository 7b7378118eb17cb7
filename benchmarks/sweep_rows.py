"""Block-shape sweep of the row kernels: each factory's `max_chunks` (16-byte chunks a thread
holds, which sets the threads per row) and `min_blocks` (resident blocks per multiprocessor asked
of the CUDA compiler, which caps registers per thread).

    python3 -m benchmarks.sweep_rows build     # here: one artifact tree per (max_chunks, min_blocks)
    python3 -m benchmarks.sweep_rows run       # on the GPU: time every variant (checked first)

Both take --shapes, --chunks and --min-blocks (comma lists; 0 for no cap) to sweep other points,
e.g. `--shapes 8001x576 --chunks 2 --min-blocks 0,8,12,16` for the narrow rows.

Uses the benchmark's cases, inputs and calling convention (benchmarks/cases.py,
torch_impls.py, ours.py), so a variant is timed exactly as the benchmark times
the default.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cases import select_cases

ROOT = Path(__file__).resolve().parent / "artifacts" / "sweep_rows"
KERNELS = ["quant_row_fp8", "layernorm_bf16", "add_layernorm_bf16", "softmax_bf16", "rmsnorm_bf16",
           "add_rmsnorm_bf16", "silu_mul_bf16", "row_sum_fp32"]
SHAPES = ["8192x8192", "4001x7168", "16384x4096"]
CHUNKS = (2, 4, 8)
MIN_BLOCKS = (None, 2, 3, 4, 6)


def _label(chunks: int, blocks: int | None) -> str:
    return f"c{chunks}" + (f"_b{blocks}" if blocks else "")


def _sweep(args: argparse.Namespace) -> tuple[list, list[tuple[int, int | None]]]:
    """(the cases, the (max_chunks, min_blocks) variants) the command line asks for."""
    shapes = args.shapes.split(",") if args.shapes else SHAPES
    chunks = [int(c) for c in args.chunks.split(",")] if args.chunks else CHUNKS
    blocks = [int(b) or None for b in args.min_blocks.split(",")] if args.min_blocks else MIN_BLOCKS
    return select_cases(KERNELS, shapes), [(c, b) for c in chunks for b in blocks]


def build(cases: list, variants: list[tuple[int, int | None]]) -> int:
    from benchmarks.build_artifacts import REGISTRY, factory_for
    from benchmarks.ours import artifact_dir
    from tilemlir.errors import CompileError

    for chunks, blocks in variants:
        built = 0
        for case in cases:
            entry = REGISTRY[case.kernel.name]
            try:
                kernel = factory_for(entry)(**entry.kwargs(case.shape), max_chunks=chunks, min_blocks=blocks)
            except CompileError:  # more resident threads than a multiprocessor holds: not a variant
                continue
            kernel.export(artifact_dir(case, ROOT / _label(chunks, blocks)))
            built += 1
        print(f"built {_label(chunks, blocks)}: {built} kernels")
    return 0


def run(cases: list, variants: list[tuple[int, int | None]]) -> int:
    import torch
    from triton.testing import do_bench

    from benchmarks.ours import load_ours
    from benchmarks.torch_impls import make_inputs, reference, scalars_of

    print("| case | default us | best us | best max_chunks, min_blocks | " + " | ".join(
        _label(c, b) for c, b in variants) + " |")
    print("|---|---|---|---|" + "---|" * len(variants))
    generator = torch.Generator(device="cuda").manual_seed(0)
    for case in cases:
        inputs = make_inputs(case, "cuda", generator)
        wanted = reference(case.kernel, inputs)
        scalars = scalars_of(case.kernel)
        default = load_ours(case)
        default_us = 1e3 * do_bench(lambda: default(inputs, None, scalars), warmup=25, rep=100, return_mode="median")
        cells, best = [], None
        for chunks, blocks in variants:
            directory = ROOT / _label(chunks, blocks)
            if not (directory / case.id).is_dir():
                cells.append("—")
                continue
            impl = load_ours(case, directory)
            outputs = impl(inputs, None, scalars)
            error = max(float((o.double() - w.double()).norm() / w.double().norm()) for o, w in zip(outputs, wanted))
            us = 1e3 * do_bench(lambda: impl(inputs, None, scalars), warmup=25, rep=100, return_mode="median")
            cells.append(f"{us:.1f}" + ("" if error < 5e-2 else f" (WRONG {error:.1e})"))
            if error < 5e-2 and (best is None or us < best[0]):
                best = (us, chunks, blocks)
        summary = f"{best[0]:.1f} | {best[1]}, {best[2]}" if best else "— | —"
        print(f"| {case.id} | {default_us:.1f} | {summary} | " + " | ".join(cells) + " |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("build", "run"))
    parser.add_argument("--shapes", help=f"comma list of M x N shapes (default {','.join(SHAPES)})")
    parser.add_argument("--chunks", help="comma list of max_chunks values")
    parser.add_argument("--min-blocks", help="comma list of min_blocks values, 0 for none")
    args = parser.parse_args(argv)
    cases, variants = _sweep(args)
    return build(cases, variants) if args.step == "build" else run(cases, variants)


if __name__ == "__main__":
    sys.exit(main())
