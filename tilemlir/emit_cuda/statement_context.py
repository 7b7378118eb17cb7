"""`StatementContext`: what a statement module may use of the kernel being emitted.

`KernelEmitter` builds one per kernel and gives it to each statement module
(`vectors.VectorStatements`): the module reads operands through `value`,
writes its lines through `out`, names its variables through `identifiers`,
and sees nothing else of the emitter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.code_writer import CodeWriter
from tilemlir.emit_cuda.ctype import CTypes
from tilemlir.emit_cuda.identifiers import Identifiers
from tilemlir.emit_cuda.memory import Memory
from tilemlir.emit_cuda.prelude import Prelude
from tilemlir.emit_cuda.scalar import ScalarOps
from tilemlir.emit_cuda.value_names import ValueNames
from tilemlir.mlir import ir


@dataclass(frozen=True)
class StatementContext:
    types: CTypes  # C spellings at the kernel's index width
    prelude: Prelude  # the vector structs and `tl_` helpers the kernel uses
    identifiers: Identifiers  # fresh C names, scoped like the C++ blocks
    value_names: ValueNames  # a value's readable base name
    memory: Memory  # tensors, register arrays and shared buffers, and their elements' lvalues
    scalar: ScalarOps  # the expression of a scalar op (or of one element of an elementwise vector op)
    out: CodeWriter  # the function body's lines
    value: Callable[[ir.Value], CExpr]  # an SSA value's C expression at its use
    folded: Callable[[ir.Value], bool]  # whether a value is computed in place at its use (no C variable holds it)
    bind: Callable[[ir.Value, CExpr], None]  # from now on the value is this expression (the variable holding it)
    result_variable: Callable[[ir.Value, ir.Operation], tuple[str, bool]]  # (C variable, whether to declare it)
    c_type: Callable[[ir.Type, ir.Operation], str]  # a value type's C spelling, else an error located at the op
