"""Issue 14's codegen baseline: what matters for speed in every benchmark kernel and every example,
checked in as `benchmarks/codegen_baseline.json`, so that a change that costs speed fails a test.

    python3 -m benchmarks.codegen_baseline                     # compare with the baseline (exit 1 on a difference)
    python3 -m benchmarks.codegen_baseline --update            # rewrite it, then commit it with the change
    python3 -m benchmarks.codegen_baseline --check-identical   # is the generated CUDA the baseline's, byte for byte?
    python3 -m benchmarks.codegen_baseline --dump-sources DIR  # write every build's CUDA, to diff two trees

A build is one compile: a `build_artifacts.REGISTRY` factory with the
compile-time arguments of a benchmark shape (rows stay symbolic, so shapes
with the same columns share one), or an example at its defaults. Each is
compiled fresh (no disk cache) for sm_90a by NVRTC, which needs no GPU.
Per build the baseline holds:

- from the final IR: global loads and stores by access width in bytes
  (vector or scalar), atomics, and the guards left (`tile.guard`);
- from the signature: the dynamic shared bytes;
- from the cubin, through cuobjdump: registers, stack, local and static
  shared bytes, local-memory instructions (LDL/STL: spills or arrays
  demoted to local memory), and the SASS global loads and stores by width;
- the sha256 of the CUDA source without its Python line comments, which
  the check does not compare (a kernel file's edit moves them): only
  `--check-identical` does.

cuobjdump rather than ptxas's verbose log (`-Xptxas -v` through NVRTC):
it reads the very cubin the runtime loads and exports, needs no second
compile with other flags, and its SASS gives the access widths too.

Any difference in the compared numbers fails the check, a worse one as a
regression, a better one as a stale baseline (left stale, it would hide the
next regression). Changing the baseline is a deliberate commit: `--update`,
then review the file's diff with the change that caused it.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import hashlib
import importlib.util
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.build_artifacts import REGISTRY, Skip, factory_for
from benchmarks.cases import LAUNCH_CASE, select_cases
from benchmarks.sass import find_cuobjdump, inspect_cubin, tool_version

ARCH = "sm_90a"
REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "benchmarks" / "codegen_baseline.json"
EXAMPLES = REPO / "examples"
UPDATE_COMMAND = "python3 -m benchmarks.codegen_baseline --update"

WIDTHS = ("ir_loads", "ir_stores", "sass_loads", "sass_stores")  # {"16B": count}: wider is better
COSTS = ("guards", "ir_atomics", "registers", "local_instructions", "local_bytes", "stack_bytes",
         "dynamic_shared_bytes", "static_shared_bytes")  # counts and bytes: fewer is better
METRICS = ("guards", "ir_loads", "ir_stores", "ir_atomics", "sass_loads", "sass_stores", "registers",
           "local_instructions", "local_bytes", "stack_bytes", "dynamic_shared_bytes",
           "static_shared_bytes")  # what the check compares, in the file's order
SOURCE_HASH = "cuda_sha256"


class BaselineError(Exception):
    """The baseline cannot be measured or read; the message says why."""


# -- the builds ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Build:
    id: str  # "softmax_bf16/N=7168,dtype=bfloat16" or "examples/softmax"
    make_kernel: Callable[[], Any]  # the kernel function (a @tilemlir.jit kernel, not a factory)


def registry_builds() -> list[Build]:
    """One build per distinct REGISTRY factory and compile-time arguments over the benchmark cases."""
    builds: dict[tuple, Build] = {}
    for case in [*select_cases(), LAUNCH_CASE]:
        entry = REGISTRY[case.kernel.name]
        kwargs = entry.kwargs(case.shape)
        key = (entry.module, entry.factory, tuple(kwargs.items()))
        arguments = ",".join(f"{name}={value}" for name, value in kwargs.items())
        builds.setdefault(key, Build(f"{case.kernel.name}/{arguments}",
                                     functools.partial(_instantiate, entry, kwargs)))
    return list(builds.values())


def _instantiate(entry, kwargs: dict[str, Any]) -> Any:
    return factory_for(entry).instantiate(**kwargs)


def example_builds(directory: Path = EXAMPLES) -> list[Build]:
    """One build per example module (every examples/*.py but the harness), its factory at its defaults."""
    paths = sorted(p for p in directory.glob("*.py") if p.stem != "harness")
    return [Build(f"examples/{p.stem}", functools.partial(example_kernel, p)) for p in paths]


def example_kernel(path: Path) -> Any:
    """The kernel function of the example at `path`: its one @tilemlir.jit, instantiated if a factory."""
    from tilemlir.api import JitFunction

    spec = importlib.util.spec_from_file_location(f"tilemlir_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = [v for v in vars(module).values() if isinstance(v, JitFunction)]
    if len(found) != 1:
        raise BaselineError(f"{path}: an example defines one @tilemlir.jit function, this one {len(found)}")
    return found[0].instantiate() if found[0].kind == "factory" else found[0]


def all_builds() -> list[Build]:
    builds = registry_builds() + example_builds()
    return sorted(builds, key=lambda b: b.id)


def select(builds: list[Build], patterns: list[str] | None) -> list[Build]:
    """The builds whose id matches one of the glob `patterns` (all when None)."""
    if not patterns:
        return builds
    chosen = [b for b in builds if any(fnmatch.fnmatchcase(b.id, p) for p in patterns)]
    if not chosen:
        raise BaselineError(f"no build matches {', '.join(patterns)} (ids look like "
                            f"{builds[0].id!r}; see --list)")
    return chosen


# -- measuring -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    metrics: dict[str, Any]  # METRICS plus SOURCE_HASH
    source: str  # the CUDA source without Python line comments


def compile_build(build: Build) -> Any:
    """The build compiled for ARCH from scratch (a cache hit would have no IR of its stages)."""
    import tilemlir
    from tilemlir.config import settings

    if settings().cuda_override is not None:
        raise BaselineError("TILEMLIR_CUDA_OVERRIDE is set: the baseline measures the generated CUDA, unset it")
    return tilemlir.compile(build.make_kernel(), target="cuda", arch=ARCH, use_cache=False)


def measure(build: Build, with_sass: bool = True) -> Measured:
    kernel = compile_build(build)
    source = strip_line_comments(kernel.cuda_source())
    metrics: dict[str, Any] = {**ir_metrics(kernel.ir("final")),
                               "dynamic_shared_bytes": kernel.signature.shared_bytes}
    if with_sass:
        metrics.update(cubin_metrics(kernel.cubin, kernel.signature.name))
    metrics[SOURCE_HASH] = hashlib.sha256(source.encode()).hexdigest()
    return Measured(canonical(metrics), source)


def ir_metrics(final_ir: str) -> dict[str, Any]:
    """Global accesses by width in bytes and guards of a module's final-stage IR text."""
    from tilemlir.analysis.accesses import global_accesses
    from tilemlir.context import make_context
    from tilemlir.mlir import ir
    from tilemlir.rewriting.guards import guards_in

    module = ir.Module.parse(final_ir, make_context())
    loads: Counter = Counter()
    stores: Counter = Counter()
    atomics = 0
    with module.context:
        for access in global_accesses(module.operation):
            if access.is_atomic:
                atomics += 1
            else:
                (loads if access.is_load else stores)[_access_bytes(access)] += 1
        guards = len(guards_in(module.operation))
    return {"guards": guards, "ir_loads": _by_width(loads), "ir_stores": _by_width(stores), "ir_atomics": atomics}


def _access_bytes(access) -> int:
    if not access.op.name.startswith("vector."):
        return access.element_bytes
    vector = access.op.results[0].type if access.is_load else access.op.operands[0].type
    return math.prod(vector.shape) * access.element_bytes


def cubin_metrics(cubin: bytes, function: str) -> dict[str, Any]:
    """Registers, local/stack/static shared bytes, LDL/STL and global access widths (cuobjdump)."""
    if find_cuobjdump() is None:
        raise BaselineError("no cuobjdump: install the dev extra (pip install -e '.[cuda,dev]'), which brings "
                            "nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm")
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{function}.cubin"
        path.write_bytes(cubin)
        found = inspect_cubin(path, function)
    if "error" in found:
        raise BaselineError(f"{function}: {found['error']}")
    return {"sass_loads": _by_width(_bits_to_bytes(found["ldg_bits"])),
            "sass_stores": _by_width(_bits_to_bytes(found["stg_bits"])),
            "registers": found["regs"], "local_instructions": found["local_insts"], "local_bytes": found["local"],
            "stack_bytes": found["stack"], "static_shared_bytes": found["shared"]}


def _bits_to_bytes(counts: dict[int, int]) -> Counter:
    return Counter({bits // 8: n for bits, n in counts.items()})


def _by_width(counts: Counter) -> dict[str, int]:
    """{16: 4, 2: 1} -> {"16B": 4, "2B": 1}, widest first."""
    return {f"{width}B": counts[width] for width in sorted(counts, reverse=True) if counts[width]}


def canonical(metrics: dict[str, Any]) -> dict[str, Any]:
    """`metrics` in the file's order: METRICS, then the source hash."""
    return {key: metrics[key] for key in (*METRICS, SOURCE_HASH) if key in metrics}


_LINE_COMMENT = re.compile(r"^[ \t]*// [^\s:]+\.py:\d+[ \t]*\n", re.MULTILINE)
_BANNER_ORIGIN = re.compile(r"^(// \w+: generated by tilemlir from [^\s:]+):\d+$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{2,}")


def strip_line_comments(source: str) -> str:
    """`source` without the `// file.py:LINE` comments the emitter puts before each Python line's code,
    the line number of the banner's origin, and blank lines (the emitter adds one before a comment):
    what an edit that moves kernel code without changing it leaves alone."""
    source = _LINE_COMMENT.sub("", source)
    source = _BANNER_ORIGIN.sub(r"\1", source)
    return _BLANK_LINES.sub("\n", source)


def toolchain() -> dict[str, str]:
    """What besides our compiler decides the numbers: the arch, NVRTC, cuobjdump."""
    from tilemlir.runtime.nvrtc import nvrtc_version

    facts = {"arch": ARCH, "nvrtc": nvrtc_version()}
    try:
        facts["nvrtc_wheel"] = metadata.version("nvidia-cuda-nvrtc")
    except metadata.PackageNotFoundError:
        pass
    tool = find_cuobjdump()
    facts["cuobjdump"] = tool_version(tool) if tool else "missing"
    return facts


# -- comparing -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    metric: str
    before: Any
    after: Any
    verdict: str  # "worse", "better" or "changed" (neither: e.g. more accesses of every width)

    def __str__(self) -> str:
        return f"{self.metric}: {_show(self.before)} -> {_show(self.after)} ({self.verdict})"


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}" if value else "none"
    return "missing" if value is None else str(value)


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """The compared metrics (METRICS, not the source hash) that differ, each with its verdict."""
    changes = []
    for metric in METRICS:
        old, new = before.get(metric), after.get(metric)
        if old != new:
            changes.append(Change(metric, old, new, _verdict(metric, old, new)))
    return changes


def _verdict(metric: str, old: Any, new: Any) -> str:
    if metric in WIDTHS and isinstance(old, dict) and isinstance(new, dict):
        return width_verdict(old, new)
    if metric in COSTS and isinstance(old, int) and isinstance(new, int):
        return "worse" if new > old else "better"
    return "changed"  # a symbolic shared size, or a metric one side lacks


def width_verdict(old: dict[str, int], new: dict[str, int]) -> str:
    """Accesses by width: worse when, for some W, a smaller share of the bytes moves in accesses at
    least W bytes wide (a vector access lost or narrowed, a scalar tail added); better when no share
    shrinks and one grows (accesses widened, a scalar tail gone); else changed (e.g. one access
    fewer of the same width)."""
    widths = sorted({int(w[:-1]) for w in (*old, *new)}, reverse=True)
    old_total, new_total = _bytes_at_least(old, 0), _bytes_at_least(new, 0)
    if not old_total or not new_total:
        return "changed"
    # share_new(W) vs share_old(W), cross-multiplied to stay in integers
    pairs = [(_bytes_at_least(old, w) * new_total, _bytes_at_least(new, w) * old_total) for w in widths]
    if any(now < before for before, now in pairs):
        return "worse"
    return "better" if any(now > before for before, now in pairs) else "changed"


def _bytes_at_least(counts: dict[str, int], width: int) -> int:
    return sum(int(w[:-1]) * n for w, n in counts.items() if int(w[:-1]) >= width)


@dataclass
class Comparison:
    changed: dict[str, list[Change]]  # build id -> its changes
    missing: list[str]  # built here, not in the baseline
    extra: list[str]  # in the baseline, not built here
    text_changed: list[str]  # same metrics, other CUDA text (informational)

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.extra)


def compare_all(baseline: dict[str, dict], measured: dict[str, dict], complete: bool = True) -> Comparison:
    """`measured` against the baseline's builds; `complete`: every build was measured, so a
    baseline entry without one is an extra."""
    changed, text_changed = {}, []
    for build_id in sorted(measured.keys() & baseline.keys()):
        changes = compare(baseline[build_id], measured[build_id])
        if changes:
            changed[build_id] = changes
        elif baseline[build_id].get(SOURCE_HASH) != measured[build_id].get(SOURCE_HASH):
            text_changed.append(build_id)
    extra = sorted(baseline.keys() - measured.keys()) if complete else []
    return Comparison(changed, sorted(measured.keys() - baseline.keys()), extra, text_changed)


def describe_build(build_id: str, changes: list[Change]) -> str:
    worse = any(c.verdict == "worse" for c in changes)
    lines = [f"{build_id}: {'REGRESSION' if worse else 'differs from the baseline'}"]
    return "\n".join(lines + [f"  {c}" for c in changes])


def advice(comparison: Comparison, baseline_path: Path) -> str:
    """What to do about a failed comparison."""
    if any(c.verdict == "worse" for changes in comparison.changed.values() for c in changes):
        first = "A kernel got slower code. Fix it; or, if that is the price of a deliberate change, "
    else:
        first = "The baseline is stale (it would hide the next regression): "
    shown = baseline_path.relative_to(REPO) if baseline_path.is_relative_to(REPO) else baseline_path
    return (first + f"run `{UPDATE_COMMAND}` and commit {shown} with the change that caused "
            "the difference, saying why in the message.")


def describe(comparison: Comparison, toolchains: tuple[dict, dict] | None = None) -> str:
    """Each differing build with its changes, the missing and extra builds, a toolchain change."""
    parts = [describe_build(build_id, changes) for build_id, changes in comparison.changed.items()]
    if comparison.missing:
        parts.append("\n  ".join(["built here, not in the baseline:", *comparison.missing]))
    if comparison.extra:
        parts.append("\n  ".join(["in the baseline, no longer built:", *comparison.extra]))
    if toolchains and toolchains[0] != toolchains[1]:
        parts.append(f"note: the baseline was made with {_show(toolchains[0])}, this run uses "
                     f"{_show(toolchains[1])}; registers and SASS can change with NVRTC")
    return "\n".join(parts)


# -- the file ------------------------------------------------------------------------------------
def load(path: Path = BASELINE) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BaselineError(f"no baseline {path}: make it with `{UPDATE_COMMAND}`") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path} is not JSON ({exc}): regenerate it with `{UPDATE_COMMAND}`") from None
    if not isinstance(data, dict) or not isinstance(data.get("builds"), dict):
        raise BaselineError(f"{path} has no \"builds\" object: regenerate it with `{UPDATE_COMMAND}`")
    return data


def dump(builds: dict[str, dict], tools: dict[str, str]) -> str:
    """The file's text: builds sorted by id, each metric on its own line."""
    data = {"about": "tilemlir codegen baseline (benchmarks/codegen_baseline.py); regenerate with "
                     f"`{UPDATE_COMMAND}`, deliberately",
            "toolchain": tools,
            "builds": {build_id: canonical(builds[build_id]) for build_id in sorted(builds)}}
    text = json.dumps(data, indent=2)
    # one line per access-width object keeps a diff to the metric that changed
    return re.sub(r"\{\n\s+(\"\d+B\": \d+(?:,\n\s+\"\d+B\": \d+)*)\n\s+\}",
                  lambda m: "{" + re.sub(r",\n\s+", ", ", m.group(1)) + "}", text) + "\n"


# -- the command ---------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="rewrite the baseline with this tree's numbers")
    mode.add_argument("--check-identical", action="store_true",
                      help="compare the CUDA sources (line comments stripped) with the baseline's hashes")
    mode.add_argument("--dump-sources", type=Path, metavar="DIR",
                      help="write each build's CUDA source (line comments stripped) to DIR/<build id>.cu")
    mode.add_argument("--list", action="store_true", help="print the build ids and exit")
    parser.add_argument("--builds", help="comma-separated globs over build ids (default: all), e.g. 'softmax_*'")
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="the baseline file (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        builds = select(all_builds(), _split(args.builds))
        if args.list:
            print("\n".join(b.id for b in builds))
            return 0
        return _run(args, builds)
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _split(text: str | None) -> list[str] | None:
    return [p.strip() for p in text.split(",") if p.strip()] if text else None


def _run(args: argparse.Namespace, builds: list[Build]) -> int:
    if args.dump_sources:
        if args.dump_sources.exists() and any(args.dump_sources.iterdir()):
            raise BaselineError(f"{args.dump_sources} is not empty: a source left from another run would show "
                                "in a diff of two trees; pass a new directory")
        measured = measure_all(builds, False, args.dump_sources)
        print(f"wrote {len(measured)} sources under {args.dump_sources}")
        return 0
    if args.check_identical:
        baseline = load(args.baseline)
        return _check_identical(baseline["builds"], measure_all(builds, False, None))
    tools = toolchain()
    if args.update:
        baseline = _load_for_update(args, tools)
        measured = measure_all(builds, True, None)
        return _update(args, baseline, measured, tools)
    baseline = load(args.baseline)
    measured = measure_all(builds, True, None)
    comparison = compare_all(baseline["builds"], measured, complete=not args.builds)
    if not comparison.ok:
        print(describe(comparison, (baseline.get("toolchain", {}), tools)))
        print(advice(comparison, args.baseline))
    if comparison.text_changed:
        print(f"{len(comparison.text_changed)} build(s) have the baseline's numbers but other CUDA text "
              f"(not a failure; --update refreshes the hashes): {', '.join(comparison.text_changed)}")
    print(f"{len(measured)} builds: {'as in' if comparison.ok else 'DIFFERENT from'} {args.baseline}")
    return 0 if comparison.ok else 1


def _load_for_update(args: argparse.Namespace, tools: dict[str, str]) -> dict[str, Any]:
    """The baseline to update: a partial one (--builds) keeps the other builds' entries, so they
    must come from the same toolchain."""
    baseline = load(args.baseline) if args.baseline.exists() else {"builds": {}}
    if args.builds and baseline["builds"] and baseline.get("toolchain") != tools:
        raise BaselineError(f"{args.baseline} was made with {_show(baseline.get('toolchain'))}, this run uses "
                            f"{_show(tools)}: update every build (no --builds), not a mix of toolchains")
    return baseline


def measure_all(builds: list[Build], with_sass: bool, sources: Path | None) -> dict[str, dict]:
    from tilemlir.diagnostics import CompileError

    measured = {}
    for build in builds:
        started = time.perf_counter()
        try:
            result = measure(build, with_sass)
        except (CompileError, Skip) as exc:
            raise BaselineError(f"{build.id} does not compile: {exc}") from None
        measured[build.id] = result.metrics
        if sources is not None:
            target = sources / f"{build.id}.cu"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(result.source)
        print(f"measured {build.id} ({time.perf_counter() - started:.2f} s)", flush=True)
    return measured


def _check_identical(baseline: dict[str, dict], measured: dict[str, dict]) -> int:
    differ = sorted(b for b in measured if baseline.get(b, {}).get(SOURCE_HASH) != measured[b][SOURCE_HASH])
    for build_id in differ:
        print(f"{build_id}: {'not in the baseline' if build_id not in baseline else 'CUDA differs'}")
    print(f"{len(measured) - len(differ)} of {len(measured)} builds' CUDA identical to the baseline's "
          "(Python line comments aside)")
    return 1 if differ else 0


def _update(args, baseline: dict, measured: dict[str, dict], tools: dict) -> int:
    comparison = compare_all(baseline["builds"], measured, complete=not args.builds)
    builds = {**baseline["builds"], **measured} if args.builds else measured
    args.baseline.write_text(dump(builds, tools))
    if not baseline["builds"]:
        print("a new baseline")
    elif comparison.ok:
        print("no compared metric changed")
    else:
        print(describe(comparison, (baseline.get("toolchain", tools), tools)))
    print(f"wrote {args.baseline} ({len(builds)} builds); review its diff and commit it with the change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
