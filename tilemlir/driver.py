"""The compiler driver: frontend IR -> pipeline stages -> CUDA (NVRTC) or CPU (llvmlite) kernels.

`tilemlir.api` calls `lower_module` for `tilemlir.lower(fn, stage, target, **options)` and
`compile_module` (with the target's typed options record, already checked,
`tilemlir.options`) for `tilemlir.compile(fn, target)`. The stage pipelines
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
from tilemlir.hardware import max_shared_bytes
from tilemlir.options import (TMA_ARCHS, CpuOptions, CudaOptions, TargetOptions, persistent_blocks,
                              tensor_core_instruction, use_tma, use_warp_specialization)
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import STAGE_PIPELINES, STAGES

log = logging.getLogger("tilemlir.driver")


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


def _stage_pipeline(stage: str, instruction: str | None, tma: bool, warp_specialize: bool,
                    persistent_blocks: int) -> list:
    passes: list = list(STAGE_PIPELINES[stage])
    if instruction != "mma_sync":
        from tilemlir.passes.select_mma import SelectMmaOptions

        select = SelectMmaOptions(enable=instruction is not None, instruction=instruction or "mma_sync")
        passes = [("select-mma", select) if p == "select-mma" else p for p in passes]
    enabled: dict = {}
    if instruction == "wgmma":
        from tilemlir.passes.select_stmatrix import SelectStmatrixOptions

        enabled["select-stmatrix"] = SelectStmatrixOptions(enable=True)
    if tma:
        from tilemlir.passes.plan_pipeline import PlanPipelineOptions
        from tilemlir.passes.select_tma_stores import SelectTmaStoresOptions

        from tilemlir.passes.epilogue_slabs import EpilogueSlabsOptions

        enabled["plan-pipeline"] = PlanPipelineOptions(tma=True)
        # TMA's one arch (also the CPU target's simulated lowering) decides what the block's shared memory holds
        enabled["epilogue-slabs"] = EpilogueSlabsOptions(enable=True, direct=instruction == "wgmma",
                                                          limit=max_shared_bytes(TMA_ARCHS[0]))
        enabled["select-tma-stores"] = SelectTmaStoresOptions(enable=True)
    passes = [(p, enabled[p]) if p in enabled else p for p in passes]
    if warp_specialize:
        from tilemlir.passes.warp_specialize import WarpSpecializeOptions

        split = WarpSpecializeOptions(enable=True, persistent_blocks=persistent_blocks)
        passes = [("warp-specialize", split) if p == "warp-specialize" else p for p in passes]
    return passes


def _dumper(module: ir.Module) -> _Dumper:
    name = ir.StringAttr(entry_function(module, "the compiler driver").attributes["sym_name"]).value
    return _Dumper(config.settings().dump_dir, name)


def run_stages(module: ir.Module, until: str, dumper: _Dumper | None = None,
               instruction: str | None = "mma_sync", tma: bool = False,
               warp_specialize: bool = False, persistent_blocks: int = 0) -> tuple[dict[str, str], dict[str, float]]:
    """Run every stage up to `until` in place; the IR text after each stage and each stage's seconds.
    `dumper` continues the numbering of a dump begun by the caller; `instruction` is the tensor-core
    instruction select-mma tries first ("mma_sync" or "wgmma"; None: every gemm on CUDA cores); `tma`
    makes plan-pipeline give ring copies TMA can run to TMA; `warp_specialize` gives them to a producer
    warpgroup (warp-specialize), on a persistent grid of at most `persistent_blocks` blocks when not 0."""
    if until not in STAGES:
        raise CompileError(f"unknown stage '{until}' (known stages: {', '.join(STAGES)})")
    dumper = dumper or _dumper(module)
    dumper.after_pass("frontend", module.operation)
    texts: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for stage in STAGES:
        start = time.perf_counter()
        if STAGE_PIPELINES[stage]:
            run_pipeline(module, _stage_pipeline(stage, instruction, tma, warp_specialize, persistent_blocks), after_pass=dumper.after_pass)
        seconds[stage] = time.perf_counter() - start
        texts[stage] = _text(module)
        if stage == until:
            break
    return texts, seconds


def lower_module(module: ir.Module, stage: str, options: TargetOptions) -> str:
    """The IR text of `module` (frontend IR) after `stage`, lowered as a compile with `options` lowers it."""
    with module.context:
        return run_stages(module, stage, **_lowering_choices(options))[0][stage]


def _lowering_choices(options: TargetOptions) -> dict[str, Any]:
    """run_stages' lowering choices for a compile with `options` (CUDA: for the arch it builds for)."""
    arch = None
    if isinstance(options, CudaOptions):
        from tilemlir.runtime.nvrtc import resolve_arch

        arch = resolve_arch(options.arch)
    return {"instruction": tensor_core_instruction(options.tensor_cores, arch), "tma": use_tma(options.tma, arch),
            "warp_specialize": use_warp_specialization(options.warp_specialize, options.tma),
            "persistent_blocks": persistent_blocks(options.persistent, options.warp_specialize, arch)}


@dataclasses.dataclass(frozen=True)
class CompileResult:
    """What `compile_module` returns: the launchable kernel and what its compile went through."""

    kernel: Any  # a tilemlir.runtime.CompiledKernel (CUDA) or a CPU backend CpuKernel
    stage_ir: dict[str, str]  # the IR text after each stage it ran
    compile_seconds: dict[str, float]  # per stage, and "emit" / "nvrtc" or "llvm"


def compile_module(module: ir.Module, info: KernelInfo, options: TargetOptions) -> CompileResult:
    """Compile frontend `module` for the target `options` is the record of; `info` is the frontend's
    signature facts."""
    with module.context:
        if isinstance(options, CudaOptions):
            return _compile_cuda(module, info, options)
        return _compile_cpu(module, info, options)


def _compile_cuda(module: ir.Module, info: KernelInfo, options: CudaOptions) -> CompileResult:
    from tilemlir import runtime
    from tilemlir.emit_cuda import emit
    from tilemlir.runtime.nvrtc import resolve_arch

    arch = resolve_arch(options.arch)
    stage_ir, seconds = run_stages(module, "final", **_lowering_choices(options))
    start = time.perf_counter()
    emitted = emit(module, fast_math=options.fast_math, index_bits=options.index_bits, arch=arch)
    signature = dataclasses.replace(emitted.signature, out_idx=tuple(info.out_idx))
    seconds["emit"] = time.perf_counter() - start
    start = time.perf_counter()
    kernel = runtime.build(
        emitted.source,
        signature,
        arch=arch,
        fmad=emitted.fmad if options.fmad is None else options.fmad,
        fast_math=options.fast_math,
        use_cache=options.use_cache,
    )
    seconds["nvrtc"] = time.perf_counter() - start
    if emitted.entry_registers is not None:
        _check_entry_registers(kernel.cubin, signature.name, emitted.entry_registers)
    log.debug("compiled %s: %s", info.name, ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in seconds.items()))
    return CompileResult(kernel, stage_ir, seconds)


def _check_entry_registers(cubin: bytes, name: str, planned: int) -> None:
    """setmaxnreg's counts assume ptxas started every thread at `planned` registers: were it fewer, the
    consumers' raise would wait forever for registers the block's pool never gets."""
    from tilemlir.runtime.cubin import register_counts

    given = register_counts(cubin).get(name)
    if given != planned:
        raise CompileError(f"warp specialization planned setmaxnreg for {planned} registers per thread at entry, "
                           f"but ptxas gave kernel '{name}' {given}; compile without warp_specialize=True")


def _compile_cpu(module: ir.Module, info: KernelInfo, options: CpuOptions) -> CompileResult:
    from tilemlir.backends.cpu.kernel import build

    until = "frontend" if options.level == "tile" else "final"
    dumper = _dumper(module)
    stage_ir, seconds = run_stages(module, until, dumper, **_lowering_choices(options))
    start = time.perf_counter()
    kernel = build(module, info, level=options.level, after_pass=dumper.after_pass)
    seconds["llvm"] = time.perf_counter() - start
    return CompileResult(kernel, stage_ir, seconds)
