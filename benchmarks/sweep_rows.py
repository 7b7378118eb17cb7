"""Block-shape sweep of the row kernels: any compile-time parameters of their factories, by default
`max_chunks` (16-byte chunks a thread holds, which sets the threads per row) and `min_blocks`
(resident blocks per multiprocessor asked of the CUDA compiler, which caps registers per thread).

    python3 -m benchmarks.sweep_rows build     # here: one artifact tree per variant
    python3 -m benchmarks.sweep_rows run       # on the GPU: time every variant (checked first)

Both take the same --kernels, --shapes and --param NAME=V1,V2 (repeatable; the variants are
every combination; `none` passes None, a non-integer a string), e.g.
`--shapes 8001x576 --param max_chunks=2 --param min_blocks=none,8,12,16` for the narrow rows, or
`--kernels quant_block_fp8 --param block_rows=8,16,32,64 --param threads=64,128,256`.

Uses the benchmark's cases, inputs and calling convention (benchmarks/cases.py,
torch_impls.py, ours.py), so a variant is timed exactly as the benchmark times
the default. `run --rounds R` times every variant R times, interleaved, and keeps each one's
fastest median: one 100 ms window can land in a slower clock regime (RESULTS.md, timing regimes).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cases import select_cases, split_list

ROOT = Path(__file__).resolve().parent / "artifacts" / "sweep_rows"
KERNELS = ["quant_row_fp8", "layernorm_bf16", "add_layernorm_bf16", "softmax_bf16", "rmsnorm_bf16",
           "add_rmsnorm_bf16", "silu_mul_bf16", "row_sum_fp32"]
SHAPES = ["8192x8192", "4001x7168", "16384x4096"]
DEFAULT_PARAMS = {"max_chunks": (2, 4, 8), "min_blocks": (None, 2, 3, 4, 6)}
Variant = tuple[tuple[str, "int | str | None"], ...]


def _value(text: str) -> int | str | None:
    if text.lower() == "none":
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def parse_param(text: str) -> tuple[str, tuple[int | str | None, ...]]:
    """'block_rows=8,16' -> ('block_rows', (8, 16)); 'none' is None, a non-integer a string."""
    name, sep, values = text.partition("=")
    if not sep or not name.isidentifier() or not all(values.split(",")):
        raise argparse.ArgumentTypeError(f"--param wants NAME=V1,V2,..., got {text!r}")
    return name, tuple(_value(v) for v in values.split(","))


def variants_of(params: dict[str, tuple[int | str | None, ...]]) -> list[Variant]:
    """Every combination of the parameters' values, as ((name, value), ...) in the given order."""
    names = list(params)
    return [tuple(zip(names, values)) for values in itertools.product(*(params[n] for n in names))]


def label(variant: Variant) -> str:
    """A directory-safe name: (('max_chunks', 4), ('min_blocks', None)) -> 'max_chunks4_min_blocksnone'."""
    return "_".join(f"{name}{'none' if value is None else value}" for name, value in variant)


def _sweep(args: argparse.Namespace) -> tuple[list, list[Variant]]:
    """(the cases, the variants) the command line asks for."""
    params = dict(args.param) if args.param else DEFAULT_PARAMS
    return select_cases(split_list(args.kernels) or KERNELS, split_list(args.shapes) or SHAPES), variants_of(params)


def build(cases: list, variants: list[Variant]) -> int:
    from benchmarks.build_artifacts import REGISTRY, factory_for
    from benchmarks.ours import artifact_dir
    from tilemlir.diagnostics import CompileError

    for variant in variants:
        built = 0
        for case in cases:
            entry = REGISTRY[case.kernel.name]
            try:
                kernel = factory_for(entry)(**entry.kwargs(case.shape), **dict(variant))
            except TypeError as exc:  # a parameter the factory does not take
                print(f"{case.kernel.name}: {exc}", file=sys.stderr)
                return 2
            except CompileError as exc:  # e.g. more resident threads than a multiprocessor holds
                print(f"  {label(variant)} {case.id}: not a variant: {str(exc).splitlines()[0]}")
                continue
            kernel.export(artifact_dir(case, ROOT / label(variant)))
            built += 1
        print(f"built {label(variant)}: {built} kernels")
    return 0


def run(cases: list, variants: list[Variant], rounds: int) -> int:
    import torch
    from triton.testing import do_bench

    from benchmarks.ours import Missing, load_ours
    from benchmarks.torch_impls import make_inputs, reference, scalars_of

    print("| case | default us | best us | best variant | " + " | ".join(label(v) for v in variants) + " |")
    print("|---|---|---|---|" + "---|" * len(variants))
    generator = torch.Generator(device="cuda").manual_seed(0)
    for case in cases:
        inputs = make_inputs(case, "cuda", generator)
        wanted = reference(case.kernel, inputs)
        scalars = scalars_of(case.kernel)
        try:
            impls = {"default": load_ours(case)}
        except Missing:  # a shape the benchmark's artifacts were not built for
            impls = {}
        errors = {}
        for variant in variants:
            if (ROOT / label(variant) / case.id).is_dir():
                impl = impls[label(variant)] = load_ours(case, ROOT / label(variant))
                outputs = impl(inputs, None, scalars)
                errors[label(variant)] = max(float((o.double() - w.double()).norm() / w.double().norm())
                                             for o, w in zip(outputs, wanted))
        times = {name: float("inf") for name in impls}
        for _ in range(rounds):
            for name, impl in impls.items():
                us = 1e3 * do_bench(lambda: impl(inputs, None, scalars), warmup=25, rep=100, return_mode="median")
                times[name] = min(times[name], us)
        right = [name for name in errors if errors[name] < 5e-2]
        best = min(right, key=times.get) if right else None
        cells = [("—" if label(v) not in times else f"{times[label(v)]:.1f}" + (
            "" if label(v) in right else f" (WRONG {errors[label(v)]:.1e})")) for v in variants]
        summary = f"{times[best]:.1f} | {best}" if best else "— | —"
        default = f"{times['default']:.1f}" if "default" in times else "—"
        print(f"| {case.id} | {default} | {summary} | " + " | ".join(cells) + " |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("build", "run"))
    parser.add_argument("--kernels", help=f"comma list of kernels (default {','.join(KERNELS)})")
    parser.add_argument("--shapes", help=f"comma list of M x N shapes (default {','.join(SHAPES)})")
    parser.add_argument("--param", action="append", type=parse_param,
                        help="NAME=V1,V2: a factory parameter and its values (repeatable; default "
                             "max_chunks=2,4,8 min_blocks=none,2,3,4,6)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds per variant (run)")
    args = parser.parse_args(argv)
    cases, variants = _sweep(args)
    return build(cases, variants) if args.step == "build" else run(cases, variants, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
