"""One walk over an MLIR affine expression, evaluated in a domain the caller supplies.

Several components read an `ir.AffineExpr` in their own domain: integer
arrays (layout checks), Z3 terms (guards), Python expressions with ranges
(the launch signature), C expressions (the CUDA emitter). `fold_affine`
is the one traversal they share; an `AffineOps` says what each node kind
means in the domain.

The domain sees the expression exactly as MLIR stores it: there is no
subtraction or negation node (`d0 - d1` is `d0 + d1 * -1`, and a negative
constant is a constant node with a negative value), and the three
division kinds keep MLIR's meaning, rounding toward minus infinity
(`floordiv`, `mod`: the remainder takes the sign of the divisor) or plus
infinity (`ceildiv`). A domain with another rounding (C's `/` and `%`)
must translate, not map the node straight onto its own operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from tilemlir.mlir import ir

V = TypeVar("V")
Binary = Callable[[V, V], V]


@dataclass(frozen=True)
class AffineOps(Generic[V]):
    """What each affine node kind is in one domain of values V."""

    constant: Callable[[int], V]
    add: Binary
    mul: Binary
    floordiv: Binary
    ceildiv: Binary
    mod: Binary


def fold_affine(expr: ir.AffineExpr, ops: AffineOps[V], dims: Sequence[V], symbols: Sequence[V]) -> V:
    """The value of `expr` in the domain of `ops`, with `dims[i]` for `d<i>` and `symbols[j]` for `s<j>`.

    Operands are folded left before right, then their node's operation is applied.
    """
    if isinstance(expr, ir.AffineConstantExpr):
        return ops.constant(expr.value)
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    binary = _binary_op(expr, ops)
    lhs = fold_affine(expr.lhs, ops, dims, symbols)
    return binary(lhs, fold_affine(expr.rhs, ops, dims, symbols))


def _binary_op(expr: ir.AffineExpr, ops: AffineOps[V]) -> Binary:
    for kind, name in _BINARY_KINDS:
        if isinstance(expr, kind):
            return getattr(ops, name)
    raise ValueError(f"unknown affine expression kind: {expr}")


_BINARY_KINDS = (
    (ir.AffineAddExpr, "add"),
    (ir.AffineMulExpr, "mul"),
    (ir.AffineFloorDivExpr, "floordiv"),
    (ir.AffineCeilDivExpr, "ceildiv"),
    (ir.AffineModExpr, "mod"),
)
