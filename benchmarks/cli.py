"""The command-line options the GPU benchmarks share (bench_gemm, bench_memory_bound): timing rounds and
length, which peers run, where results go, the input seed, the time budget, TileLang's compile threads.
Pure Python: the parsers are tested where there is no GPU."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


def add_run_options(parser: argparse.ArgumentParser, rounds: int, budget_s: float) -> None:
    """The shared options, with this benchmark's default rounds and time budget."""
    parser.add_argument("--quick", action="store_true", help="shorter do_bench (warmup 5 ms, rep 20 ms)")
    parser.add_argument("--rounds", type=int, default=rounds,
                        help="timing rounds over all implementations (default %(default)s)")
    parser.add_argument("--no-tilelang", action="store_true", help="leave TileLang out")
    parser.add_argument("--no-triton", action="store_true", help="leave Triton out")
    parser.add_argument("--out", type=Path, help="output directory (default $OUT, else benchmarks/out)")
    parser.add_argument("--seed", type=int, help="input seed (default: from the clock, printed)")
    parser.add_argument("--budget-s", type=float, default=budget_s,
                        help="skip the remaining cases past this many seconds (default %(default)s)")
    parser.add_argument("--compile-workers", type=int, default=12, help="threads compiling TileLang kernels")


def finish_run_options(args: argparse.Namespace) -> argparse.Namespace:
    """The defaults that depend on the environment: the output directory ($OUT) and the seed (the clock)."""
    if args.out is None:
        args.out = Path(os.environ.get("OUT") or DEFAULT_OUT)
    if args.seed is None:
        args.seed = int(time.time()) % 1_000_000
    return args
