"""Autotuning sweeps (issue 18) on the H200 from precompiled artifacts: examples/gemm.py over tile
shapes x pipeline stages x threads (28 configs), the bf16 softmax and RMSNorm kernels over
max_chunks x min_blocks (15 configs) at the benchmark's row shapes.

    python3 -m benchmarks.tune build [--problems gemm,softmax,rmsnorm] [--shapes 8192x8192] [--root DIR]
    python3 -m benchmarks.tune run [--root DIR] [--out DIR] [--rounds 3] [--quick]
    python3 -m benchmarks.tune all ...      # both, on a machine with the compiler and a GPU

`build` (here, with the compiler) compiles every config of every problem with
`tilemlir.compile_many` (worker processes, sm_90a) and exports each distinct
kernel into <root>/<problem>/<NN>/ (17 MB in all, 12 of them gemm
cubins); <root>/<problem>/space.json lists the configs, their directories,
CUDA hashes and compile errors. `run` (on the GPU machine,
which has no MLIR: it imports tilemlir.runtime, tilemlir.testing,
tilemlir.autotuner.select and torch, nothing that loads the compiler) loads
each artifact with `tilemlir.runtime.load`, checks it against a float64
torch reference (relative norm error within `cases.TOLERANCE` of the output
dtype, outputs poisoned before each check run), times it with
`tilemlir.testing.do_bench` (CUDA events, L2 flushed, medians), R interleaved
rounds keeping each config's fastest median (one window can land in a slower
clock regime, RESULTS.md), and writes <out>/tune_results.json (per problem:
the winning config, its time, every trial) and <out>/tune.md. Configs that
compiled to the same kernel are timed once.

On the device tool: run(command="python3 -m benchmarks.tune run --out $OUT", carry=["benchmarks/artifacts"]);
the GPU tests of the helpers: python3 -m pytest -q test/gpu/test_testing_gpu.py.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cases import KERNELS_BY_NAME, ROW_SHAPES, TOLERANCE, Case, Shape, parse_shape, split_list

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "benchmarks" / "artifacts" / "tune"
DEFAULT_OUT = REPO / "benchmarks" / "out"
SPACE_FILE = "space.json"
ARCH = "sm_90a"

GEMM_TILES = ((64, 64, 32), (128, 64, 32), (64, 128, 32), (128, 128, 32), (128, 128, 64), (128, 256, 32),
              (256, 128, 32))
GEMM_SPACE = tuple({"block_M": m, "block_N": n, "block_K": k, "num_stages": stages, "threads": threads}
                   for (m, n, k), stages, threads in itertools.product(GEMM_TILES, (2, 3), (128, 256)))
GEMM_SHAPE = (4096, 4096, 4096)  # M, N, K
ROW_SPACE = tuple({"max_chunks": chunks, "min_blocks": blocks}
                  for chunks, blocks in itertools.product((2, 4, 8), (None, 2, 3, 4, 6)))
ROW_CASES = {"softmax": "softmax_bf16", "rmsnorm": "rmsnorm_bf16"}
FAMILIES = ("gemm", *ROW_CASES)
# what a numpy dtype name is called in cases.TOLERANCE
_TOLERANCE_NAMES = {"float8_e4m3fn": "float8_e4m3"}


@dataclass(frozen=True)
class Problem:
    """One tuning: a family's factory at one shape (gemm: M, N, K; rows: M, N) over `space`."""

    family: str
    dims: tuple[int, ...]
    space: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        kernel = "gemm_fp16" if self.family == "gemm" else ROW_CASES[self.family]
        return f"{kernel}_{'x'.join(map(str, self.dims))}"

    def case(self) -> Case:
        return Case(KERNELS_BY_NAME[ROW_CASES[self.family]], Shape(self.dims))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Problem":
        return cls(data["family"], tuple(data["dims"]), tuple(data["space"]))


def problems(families: list[str] | None = None, shapes: list[str] | None = None) -> list[Problem]:
    """The problems of `families` (default all); `shapes` (MxN) replace the row kernels' default shapes."""
    families = families or list(FAMILIES)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown problem(s) {', '.join(unknown)}; known: {', '.join(FAMILIES)}")
    rows = [parse_shape(s) for s in shapes] if shapes else list(ROW_SHAPES)
    found = [Problem("gemm", GEMM_SHAPE, GEMM_SPACE)] if "gemm" in families else []
    return found + [Problem(f, s.dims, ROW_SPACE) for f in FAMILIES[1:] if f in families for s in rows]


# -- build (with the compiler) ---------------------------------------------------------------------------
def factory_of(problem: Problem) -> tuple[Any, dict[str, Any]]:
    """The @tilemlir.jit factory of a problem and its fixed arguments."""
    if problem.family == "gemm":
        sys.path.insert(0, str(REPO / "examples"))  # compiler workers inherit it and import gemm too
        from gemm import matmul

        _, n, k = problem.dims
        return matmul, {"N": n, "K": k, "dtype": "float16"}
    from benchmarks.build_artifacts import REGISTRY, factory_for

    entry = REGISTRY[ROW_CASES[problem.family]]
    return factory_for(entry), entry.kwargs(Shape(problem.dims))


def build(chosen: list[Problem], root: Path, workers: int | None) -> int:
    import tilemlir
    from benchmarks.build_artifacts import COMMIT_FILE, source_commit

    root.mkdir(parents=True, exist_ok=True)
    for problem in chosen:
        start = time.perf_counter()
        factory, fixed = factory_of(problem)
        results = tilemlir.compile_many(factory, [{**fixed, **c} for c in problem.space], workers=workers, arch=ARCH)
        directory = root / problem.name
        shutil.rmtree(directory, ignore_errors=True)
        entries, exported = [], {}
        for index, (config, result) in enumerate(zip(problem.space, results)):
            entry: dict[str, Any] = {"config": config}
            if result.ok:  # configs with the same CUDA share one directory (the artifacts travel to the GPU)
                entry["cuda_sha256"] = hashlib.sha256(result.kernel.cuda_source().encode()).hexdigest()
                entry["dir"] = exported.setdefault(entry["cuda_sha256"], f"{index:02d}")
                if entry["dir"] == f"{index:02d}":
                    result.kernel.export(directory / entry["dir"])
            else:
                entry["error"] = result.error
            entries.append(entry)
        space = {"problem": asdict(problem), "fixed": fixed, "arch": ARCH, "configs": entries}
        (directory / SPACE_FILE).write_text(json.dumps(space, indent=2) + "\n")
        built = [e for e in entries if "dir" in e]
        print(f"{problem.name}: {len(built)} of {len(entries)} configs built "
              f"({len({e['cuda_sha256'] for e in built})} distinct kernels), {time.perf_counter() - start:.1f} s",
              flush=True)
        for entry in entries:
            if "error" in entry:
                print(f"  failed {entry['config']}: {entry['error'].splitlines()[0]}")
    (root / COMMIT_FILE).write_text(source_commit() + "\n")
    return 0


# -- run (on the GPU, no compiler) -----------------------------------------------------------------------
def relative_check(name: str, actual: Any, expected: Any) -> None:
    """AssertionError unless ||actual - expected|| / ||expected|| is within TOLERANCE of actual's dtype."""
    import numpy as np

    dtype = actual.dtype.name
    bound = TOLERANCE[_TOLERANCE_NAMES.get(dtype, dtype)]
    want = expected.astype(np.float64)
    error = float(np.linalg.norm(actual.astype(np.float64) - want) / np.linalg.norm(want))
    if not error <= bound:  # NaN fails too
        raise AssertionError(f"output {name}: relative error {error:.3e} above {bound:.0e} ({dtype})")


def tune_problem(directory: Path, args: tuple, reference: list, bench: Callable[[Callable[[], Any]], float],
                 rounds: int = 1, run: Callable[[Any, tuple, dict], Any] | None = None) -> dict[str, Any]:
    """Check and time every artifact of one problem's directory on `args` against `reference`;
    the winner and every trial, as JSON data."""
    from tilemlir.autotuner.select import Candidate, Trial, best, kernel_run, select
    from tilemlir.runtime import load

    space = json.loads((directory / SPACE_FILE).read_text())
    entries = space["configs"]
    built = [e for e in entries if "dir" in e]
    candidates = [Candidate(e["config"], load(directory / e["dir"])) for e in built]
    run = run or kernel_run
    timed = select(candidates, args, run=run, bench=bench, ref_prog=lambda *_: reference, check=relative_check,
                   name=directory.name) if candidates else []
    for _ in range(rounds - 1):  # interleaved: every config once per round
        for candidate, trial in zip(candidates, timed):
            if trial.ok and trial.same_as is None:
                trial.ms = min(trial.ms, bench(lambda: run(candidate.kernel, args, candidate.config)))
    fastest = {json.dumps(t.config, sort_keys=True): t.ms for t in timed if t.same_as is None}
    for trial in timed:
        if trial.ok and trial.same_as is not None:
            trial.ms = fastest[json.dumps(trial.same_as, sort_keys=True)]
    by_config = iter(timed)
    trials = [next(by_config) if "dir" in e else Trial(e["config"], error=e["error"], stage="compile")
              for e in entries]
    winner = best(trials)
    return {"problem": directory.name, "best": winner.config if winner else None,
            "ms": winner.ms if winner else None, "fixed": space["fixed"],
            "trials": [{"config": t.config, "ms": t.ms, "stage": t.stage, "error": t.error, "same_as": t.same_as}
                       for t in trials]}


def problem_data(problem: Problem, torch: Any) -> tuple[tuple, list]:
    """(arguments, float64 references) on the GPU: fresh standard-normal inputs."""
    generator = torch.Generator(device="cuda")
    generator.seed()
    if problem.family == "gemm":
        m, n, k = problem.dims
        a = torch.randn((m, k), generator=generator, device="cuda").to(torch.float16)
        b = torch.randn((k, n), generator=generator, device="cuda").to(torch.float16)
        return (a, b), [a.double() @ b.double()]
    from benchmarks.torch_impls import make_inputs, reference, scalars_of

    case = problem.case()
    inputs = make_inputs(case, "cuda", generator)
    return (*inputs, *scalars_of(case.kernel).values()), reference(case.kernel, inputs)


def run_step(root: Path, out: Path, rounds: int, quick: bool, families: list[str] | None = None) -> int:
    """Tune every problem built under `root` (of `families`, default all) on the GPU; results into `out`."""
    import torch

    from tilemlir.testing import do_bench

    warmup, rep = (5, 20) if quick else (25, 100)
    bench = lambda fn: do_bench(fn, warmup=warmup, rep=rep)  # noqa: E731
    results = []
    for space_file in sorted(root.glob(f"*/{SPACE_FILE}")):
        problem = Problem.from_dict(json.loads(space_file.read_text())["problem"])
        if families and problem.family not in families:
            continue
        args, reference = problem_data(problem, torch)
        start = time.perf_counter()
        result = tune_problem(space_file.parent, args, reference, bench, rounds)
        results.append(result)
        print(f"{result['problem']}: {_best_text(result)} ({time.perf_counter() - start:.0f} s)", flush=True)
        del args, reference
        torch.cuda.empty_cache()
    if not results:
        print(f"no {SPACE_FILE} under {root}: run `python3 -m benchmarks.tune build` where the compiler is")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    (out / "tune_results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "tune.md").write_text(markdown(results))
    print(f"wrote {out / 'tune_results.json'} and {out / 'tune.md'}")
    return 0


def _best_text(result: dict[str, Any]) -> str:
    if result["best"] is None:
        return "no config passed"
    return f"{_config_text(result['best'])}: {1e3 * result['ms']:.1f} us"


def _config_text(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def markdown(results: list[dict[str, Any]]) -> str:
    """Per problem: the winner, then every config by time (failures last, with their stage)."""
    lines = ["# Autotuning results", ""]
    for result in results:
        lines += [f"## {result['problem']}", "", f"best: {_best_text(result)}", "", "| config | us | note |",
                  "|---|---|---|"]
        for trial in sorted(result["trials"], key=lambda t: (t["ms"] is None, t["ms"] or 0.0)):
            us = f"{1e3 * trial['ms']:.1f}" if trial["ms"] is not None else "—"
            note = f"{trial['stage']} failed: {trial['error'].splitlines()[0]}" if trial["error"] else ""
            if trial["same_as"] is not None:
                note = f"same kernel as {_config_text(trial['same_as'])}" + (f"; {note}" if note else "")
            lines.append(f"| {_config_text(trial['config'])} | {us} | {note.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("build", "run", "all"))
    parser.add_argument("--problems", help=f"comma list of {', '.join(FAMILIES)} (default all)")
    parser.add_argument("--shapes", help="comma list of MxN row shapes (default the benchmark's)")
    parser.add_argument("--root", type=Path, default=ROOT, help="artifact root (default %(default)s)")
    parser.add_argument("--workers", type=int, help="compiler processes (build; default: the CPUs)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results directory (run; default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (run; default 3)")
    parser.add_argument("--quick", action="store_true", help="do_bench warmup 5 ms, rep 20 ms (run)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    families = split_list(args.problems)
    try:
        chosen = problems(families, split_list(args.shapes))
    except ValueError as exc:
        parser.error(str(exc))
    if args.step in ("build", "all"):
        status = build(chosen, args.root, args.workers)
        if status or args.step == "build":
            return status
    return run_step(args.root, args.out, args.rounds, args.quick, families)


if __name__ == "__main__":
    sys.exit(main())
