"""Threads-per-row sweep of the row kernels: each factory's `max_chunks` (16-byte chunks a thread holds).

    python3 -m benchmarks.sweep_rows build     # here: one artifact tree per max_chunks value
    python3 -m benchmarks.sweep_rows run       # on the GPU: time every variant (checked first)

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
KERNELS = ["quant_row_fp8", "layernorm_bf16", "softmax_bf16", "rmsnorm_bf16", "silu_mul_bf16"]
SHAPES = ["8192x8192", "4001x7168", "16384x4096"]
CHUNKS = (1, 2, 4, 8)


def _cases():
    return select_cases(KERNELS, SHAPES)


def build() -> int:
    from benchmarks.build_artifacts import REGISTRY, factory_for
    from benchmarks.ours import artifact_dir

    for chunks in CHUNKS:
        for case in _cases():
            entry = REGISTRY[case.kernel.name]
            kernel = factory_for(entry)(**entry.kwargs(case.shape), max_chunks=chunks)
            kernel.export(artifact_dir(case, ROOT / f"c{chunks}"))
        print(f"built max_chunks={chunks}")
    return 0


def run() -> int:
    import torch
    from triton.testing import do_bench

    from benchmarks.ours import load_ours
    from benchmarks.torch_impls import make_inputs, reference, scalars_of

    print("| case | " + " | ".join(f"max_chunks {c} us" for c in CHUNKS) + " |")
    print("|---|" + "---|" * len(CHUNKS))
    generator = torch.Generator(device="cuda").manual_seed(0)
    for case in _cases():
        inputs = make_inputs(case, "cuda", generator)
        wanted = reference(case.kernel, inputs)
        scalars = scalars_of(case.kernel)
        cells = []
        for chunks in CHUNKS:
            impl = load_ours(case, ROOT / f"c{chunks}")
            outputs = impl(inputs, None, scalars)
            error = max(float((o.double() - w.double()).norm() / w.double().norm()) for o, w in zip(outputs, wanted))
            ms = do_bench(lambda: impl(inputs, None, scalars), warmup=25, rep=100, return_mode="median")
            cells.append(f"{ms * 1e3:.1f}" + ("" if error < 5e-2 else f" (WRONG {error:.1e})"))
        print(f"| {case.id} | " + " | ".join(cells) + " |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("build", "run"))
    return build() if parser.parse_args(argv).step == "build" else run()


if __name__ == "__main__":
    sys.exit(main())
