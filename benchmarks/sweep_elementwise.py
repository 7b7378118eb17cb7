"""Block-shape sweep of the elementwise kernels: which (threads, elements per thread) is fastest.

    python3 -m benchmarks.sweep_elementwise build     # here: one artifact per variant
    python3 -m benchmarks.sweep_elementwise run       # on the GPU: time every variant and torch

Every variant is checked against torch before it is timed; times are
`do_bench` medians with L2 flushed, on 2^28 elements.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "artifacts" / "sweep"
N = 2**28
VARIANTS = [(op, dtype, threads, elements)
            for op, dtype in (("add", "bfloat16"), ("add", "float32"))
            for threads, elements in ((256, 16), (128, 32), (256, 32), (512, 16), (128, 16), (1024, 8))]


def _name(op, dtype, threads, elements) -> str:
    return f"{op}_{dtype}_t{threads}_e{elements}"


def build() -> int:
    from tilemlir.kernels import elementwise

    for op, dtype, threads, elements in VARIANTS:
        kernel = getattr(elementwise, op)(dtype=dtype, threads=threads, elements=elements)
        kernel.export(ROOT / _name(op, dtype, threads, elements))
        print("built", _name(op, dtype, threads, elements))
    return 0


def run() -> int:
    import torch
    from triton.testing import do_bench

    from tilemlir.runtime import load

    rows = []
    for dtype in ("bfloat16", "float32"):
        torch_dtype = getattr(torch, dtype)
        a, b = (torch.randn(N, device="cuda", dtype=torch_dtype) for _ in range(2))
        want = a + b
        peer = do_bench(lambda: a + b, warmup=25, rep=100, return_mode="median")
        rows.append(("torch a + b", dtype, peer * 1e3, 1.0))
        for op, vdtype, threads, elements in VARIANTS:
            if vdtype != dtype:
                continue
            kernel = load(ROOT / _name(op, dtype, threads, elements))
            assert torch.equal(kernel(a, b), want), f"{_name(op, dtype, threads, elements)} is wrong"
            ms = do_bench(lambda: kernel(a, b), warmup=25, rep=100, return_mode="median")
            rows.append((f"threads {threads}, {elements} elements", dtype, ms * 1e3, peer / ms))
    print("| variant | dtype | us | torch time / ours |")
    print("|---|---|---|---|")
    for label, dtype, us, ratio in rows:
        print(f"| {label} | {dtype} | {us:.1f} | {ratio:.3f} |")
    print(json.dumps(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("build", "run"))
    return build() if parser.parse_args(argv).step == "build" else run()


if __name__ == "__main__":
    sys.exit(main())
