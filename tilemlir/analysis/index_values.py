"""Index expressions evaluated over every point of a loop, with numpy.

`point_values(value, known)` evaluates an integer SSA value (an index of a
fragment access inside a `tile.parallel`, say `63 - i` or `j floordiv 2`)
for many points at once: `known` maps the values whose contents are given
(a parallel loop's block arguments) to integer arrays of one shape. The
value may be built from those and constants with `arith` add/sub/mul,
signed and unsigned division and remainder (`divsi`/`remsi` truncate as C
does, `floordivsi`/`ceildivsi` round as named), min/max, `select` over a
`cmpi`, and integer casts. Anything else (a block index, a serial loop's
induction variable, a value loaded from memory) makes the result None:
the index is not a function of the known values alone.
"""

from __future__ import annotations

import numpy as np

from tilemlir.ir_util import constant_int, defining_op
from tilemlir.mlir import ir

_MAX_DEPTH = 200

_BINARY = {
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.maxui": np.maximum,
    "arith.minui": np.minimum,
    "arith.floordivsi": np.floor_divide,
    "arith.divui": np.floor_divide,
    "arith.remui": np.remainder,
    "arith.divsi": lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)),
    "arith.remsi": lambda a, b: np.sign(a) * (np.abs(a) % np.abs(b)),
    "arith.ceildivsi": lambda a, b: -np.floor_divide(-a, b),
    "arith.ceildivui": lambda a, b: -np.floor_divide(-a, b),
}
_DIVISIONS = {"arith.floordivsi", "arith.divui", "arith.remui", "arith.divsi", "arith.remsi", "arith.ceildivsi",
              "arith.ceildivui"}
_CASTS = {"arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"}
_COMPARE = {
    0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
    6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal,
}


def point_values(value: ir.Value, known: dict) -> np.ndarray | None:
    """`value` at every point (an int64 array shaped like the arrays in `known`), or None when it is not
    computed from `known` and constants by the ops the module docstring lists (or divides by zero)."""
    shape = next(iter(known.values())).shape if known else ()
    try:
        return _evaluate(value, known, shape, 0)
    except _NotEvaluable:
        return None


class _NotEvaluable(Exception):
    pass


def _evaluate(value: ir.Value, known: dict, shape, depth: int) -> np.ndarray:
    for key, array in known.items():
        if key == value:
            return np.asarray(array, dtype=np.int64)
    constant = constant_int(value)
    if constant is not None:
        return np.full(shape, constant, dtype=np.int64)
    op = defining_op(value)
    if op is None or depth > _MAX_DEPTH:
        raise _NotEvaluable
    args = [_evaluate(v, known, shape, depth + 1) for v in op.operands] if op.name != "arith.select" else None
    if op.name in _BINARY:
        if op.name in _DIVISIONS and (args[1] == 0).any():
            raise _NotEvaluable
        return _BINARY[op.name](args[0], args[1]).astype(np.int64)
    if op.name in _CASTS:
        return args[0]
    if op.name == "arith.cmpi":
        predicate = ir.IntegerAttr(op.attributes["predicate"]).value
        return _COMPARE[predicate](args[0], args[1]).astype(np.int64)
    if op.name == "arith.select":
        condition, then_value, else_value = (_evaluate(v, known, shape, depth + 1) for v in op.operands)
        return np.where(condition != 0, then_value, else_value)
    raise _NotEvaluable


def gather_is_held(domain, fragment, loop_args, indices) -> bool:
    """Does every thread running a point of a parallel loop (domain layout `domain`, block arguments
    `loop_args`) hold the element of a fragment (layout `fragment`) that `indices` select there? An index
    that is not a function of the loop variables may stand in a dim the layout keeps in each holder's
    registers (no thread digit): any value is held then."""
    points = domain.all_elements()
    known = {arg: points[:, k] for k, arg in enumerate(loop_args)}
    threaded = {d.dim for d in fragment.digits if d.is_thread and d.dim is not None}
    columns = []
    for k, index in enumerate(indices):
        values = point_values(index, known)
        if values is None:
            if k in threaded:
                return False
            values = np.zeros(len(points), dtype=np.int64)
        elif (values < 0).any() or (values >= fragment.shape[k]).any():
            return False
        columns.append(values)
    flat = np.ravel_multi_index(columns, fragment.shape) if columns else np.zeros(len(points), dtype=np.int64)
    table = fragment.holders()
    for replica in range(domain.replicate):
        thread, _ = domain.locate(points, replica)
        if not (table[flat] == thread[:, None]).any(axis=1).all():
            return False
    return True
