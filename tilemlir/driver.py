"""The compiler driver: frontend IR -> pipeline stages -> CUDA (NVRTC) or CPU (llvmlite) kernels.

`tilemlir.api` calls `lower_module` for `tilemlir.lower(fn, stage)` and
`compile_module` for `tilemlir.compile(fn, target)`. The stage pipelines
live in `tilemlir.pipeline`; this module only runs them, keeps the IR of
every stage, dumps it under TILEMLIR_DUMP_DIR, and hands the final IR to
the emitter and the runtime (or to the CPU backend).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from pathlib import Path
from typing import Any

from tilemlir import config
from tilemlir.diagnostics import CompileError
from tilemlir.frontend.info import KernelInfo
from tilemlir.ir_util import entry_function
from tilemlir.mlir import ir
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import STAGE_PIPELINES, STAGES

log = logging.getLogger("tilemlir.driver")

TARGETS = ("cuda", "cpu")
CPU_LEVELS = ("tile", "thread")
_CUDA_OPTIONS = ("fast_math", "fmad", "arch", "use_cache", "index_bits")
# fast_math is accepted and has no effect on the CPU: the CPU backend is the exact reference.
# index_bits: 32 or 64-bit index math in CUDA (None: 32 where proven exact, see emit_cuda/index_width.py);
# the CPU backend computes it in 64 bits, so it takes 64 (or None) only.
_CPU_OPTIONS = ("level", "fast_math", "index_bits")


def _text(module: ir.Module) -> str:
    return module.operation.get_asm(assume_verified=True)


class _Dumper:
    """Writes the IR after every pass to TILEMLIR_DUMP_DIR/<kernel>/NN-<pass>.mlir."""

    def __init__(self, directory: Path | None, kernel: str):
        self.directory = directory / kernel if directory else None
        self.count = 0

    def after_pass(self, label: str, op: ir.Operation) -> None:
        if self.directory is None:
            return  # printing the module after every pass is not free: only when asked to dump
        self.directory.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
        text = op.get_asm(enable_debug_info=True, assume_verified=True)
        (self.directory / f"{self.count:02d}-{safe}.mlir").write_text(text)
        self.count += 1


def _dumper(module: ir.Module) -> _Dumper:
    name = ir.StringAttr(entry_function(module, "the compiler driver").attributes["sym_name"]).value
    return _Dumper(config.settings().dump_dir, name)


def run_stages(module: ir.Module, until: str, dumper: _Dumper | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """Run every stage up to `until` in place; the IR text after each stage and each stage's seconds.
    `dumper` continues the numbering of a dump begun by the caller."""
    if until not in STAGES:
        raise CompileError(f"unknown stage '{until}' (known stages: {', '.join(STAGES)})")
    dumper = dumper or _dumper(module)
    dumper.after_pass("frontend", module.operation)
    texts: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for stage in STAGES:
        start = time.perf_counter()
        if STAGE_PIPELINES[stage]:
            run_pipeline(module, STAGE_PIPELINES[stage], after_pass=dumper.after_pass)
        seconds[stage] = time.perf_counter() - start
        texts[stage] = _text(module)
        if stage == until:
            break
    return texts, seconds


def lower_module(module: ir.Module, stage: str) -> str:
    """The IR text of `module` (frontend IR) after `stage`."""
    with module.context:
        return run_stages(module, stage)[0][stage]


@dataclasses.dataclass
class CompiledArtifact:
    """What `compile_module` returns: a launchable kernel plus the IR of each stage it went through."""

    kernel: Any
    stage_ir: dict[str, str]
    compile_seconds: dict[str, float]

    def ir(self, stage: str) -> str:
        if stage not in self.stage_ir:
            raise CompileError(
                f"stage '{stage}' is not part of this kernel's compilation (it has: {', '.join(self.stage_ir)})"
            )
        return self.stage_ir[stage]

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "kernel":
            raise AttributeError(name)
        return getattr(self.kernel, name)


def _check_options(options: dict, allowed: tuple[str, ...], target: str) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise CompileError(
            f"unknown option(s) for target '{target}': {', '.join(unknown)} (known: {', '.join(allowed)})"
        )


def compile_module(module: ir.Module, info: KernelInfo, target: str, options: dict) -> CompiledArtifact:
    """Compile frontend `module` for `target`; `info` is the frontend's signature facts."""
    if target not in TARGETS:
        raise CompileError(f"unknown target '{target}' (known targets: {', '.join(TARGETS)})")
    with module.context:
        if target == "cuda":
            _check_options(options, _CUDA_OPTIONS, target)
            _check_index_bits(options.get("index_bits"), (32, 64), target)
            return _compile_cuda(module, info, options)
        _check_options(options, _CPU_OPTIONS, target)
        _check_index_bits(options.get("index_bits"), (64,), target)
        return _compile_cpu(module, info, options)


def _check_index_bits(value: Any, allowed: tuple[int, ...], target: str) -> None:
    if value is None or (type(value) is int and value in allowed):
        return
    choices = " or ".join(str(a) for a in allowed)
    why = "; the CPU backend (the reference) computes index math in 64 bits" if target == "cpu" and value == 32 else ""
    raise CompileError(f"option index_bits for target '{target}' must be {choices}, or None to let the compiler "
                       f"choose, got {value!r}{why}")


def _compile_cuda(module: ir.Module, info: KernelInfo, options: dict) -> CompiledArtifact:
    from tilemlir import runtime
    from tilemlir.emit_cuda import emit
    from tilemlir.runtime.nvrtc import resolve_arch

    arch = resolve_arch(options.get("arch"))
    stage_ir, seconds = run_stages(module, "final")
    start = time.perf_counter()
    emitted = emit(module, fast_math=bool(options.get("fast_math", False)), index_bits=options.get("index_bits"),
                   arch=arch)
    signature = dataclasses.replace(emitted.signature, out_idx=tuple(info.out_idx))
    seconds["emit"] = time.perf_counter() - start
    start = time.perf_counter()
    kernel = runtime.build(
        emitted.source,
        signature,
        arch=arch,
        fmad=bool(options.get("fmad", emitted.fmad)),
        fast_math=bool(options.get("fast_math", False)),
        use_cache=bool(options.get("use_cache", True)),
    )
    seconds["nvrtc"] = time.perf_counter() - start
    log.debug("compiled %s: %s", info.name, ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in seconds.items()))
    return CompiledArtifact(kernel, stage_ir, seconds)


def _compile_cpu(module: ir.Module, info: KernelInfo, options: dict) -> CompiledArtifact:
    from tilemlir.backends.cpu.kernel import build

    level = options.get("level", "tile")
    if level not in CPU_LEVELS:
        raise CompileError(f"CPU option level must be one of {', '.join(CPU_LEVELS)}, got {level!r}")
    until = "frontend" if level == "tile" else "final"
    dumper = _dumper(module)
    stage_ir, seconds = run_stages(module, until, dumper)
    start = time.perf_counter()
    kernel = build(module, info, level=level, after_pass=dumper.after_pass)
    seconds["llvm"] = time.perf_counter() - start
    return CompiledArtifact(kernel, stage_ir, seconds)
