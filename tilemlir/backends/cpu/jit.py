"""Loop-level MLIR (scf/memref/arith/math/vector, no memory spaces) -> LLVM IR -> machine code.

`to_llvm_ir` runs `tilemlir.pipeline.cpu_llvm_pipeline` (our rewrites and
the upstream conversions, each with the reason it stands there) through
the pass runner, checks that only the LLVM dialect is left, and translates
the module to LLVM IR text; `JitModule` optimizes the LLVM IR with
llvmlite's new pass manager at the level it is given (O2 by default) for the
host CPU and JIT-compiles it with MCJIT at that level.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import llvmlite.binding as llvm

from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir, translate_module_to_llvmir
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import cpu_llvm_pipeline

_init_lock = threading.Lock()
_initialized = False


def to_llvm_ir(module: ir.Module, after_pass: Callable[[str, ir.Operation], None] | None = None) -> str:
    """Lower `module` (in place) to the LLVM dialect and translate it to LLVM IR text; `after_pass` as
    `run_pipeline` takes it (the driver's IR dumps)."""
    with module.context:
        run_pipeline(module, cpu_llvm_pipeline(), after_pass=after_pass)
        _check_fully_lowered(module)
        return translate_module_to_llvmir(module.operation)


def _check_fully_lowered(module: ir.Module) -> None:
    leftovers: list[str] = []

    def visit(op):
        name = op.name
        if not (name.startswith("llvm.") or name == "builtin.module") and name not in leftovers:
            leftovers.append(name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if leftovers:
        raise CompileError(f"CPU backend: cannot lower {', '.join(leftovers)} to LLVM")


def _initialize() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


class JitModule:
    """LLVM IR text optimized (at `opt_level`, 0-3, for the host CPU) and compiled in memory; keeps the
    engine alive."""

    def __init__(self, llvm_ir: str, opt_level: int = 2):
        if opt_level not in range(4):
            raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
        _initialize()
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
        target = llvm.Target.from_default_triple()
        self._machine = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=opt_level
        )
        tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        builder = llvm.create_pass_builder(self._machine, tuning)
        builder.getModulePassManager().run(module, builder)
        self._engine = llvm.create_mcjit_compiler(module, self._machine)
        self._engine.finalize_object()
        self.optimized_ir = str(module)

    def address(self, symbol: str) -> int:
        address = self._engine.get_function_address(symbol)
        if not address:
            raise CompileError(f"CPU backend: JIT module has no function '{symbol}'")
        return address
