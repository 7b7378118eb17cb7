"""The guard forms shared by insert-guards, eliminate-guards and vectorize.

A guard is an `scf.if` marked `tile.guard` (docs/ir.md):

    scf.if %ok { memref.store %v, %Y[%i, %j] : memref<?x64xf32> } {tile.guard}

    %x = scf.if %ok -> (f32) {
      %l = memref.load %X[%i, %j] {tile.pad = 0xFF800000 : f32} : memref<?x64xf32>
      scf.yield %l : f32
    } else {
      %p = arith.constant 0xFF800000 : f32
      scf.yield %p : f32
    } {tile.guard}

`%ok` is an `arith.andi` chain of `arith.cmpi` checks (`sge %i, 0`,
`slt %j, %dim`); each leaf of the chain is one check. The else branch
yields the load's `tile.pad` value (0 without one).

Helpers here build those forms, run a guards pass over each function,
read a guard's checks, and remove a guard keeping its then branch
(`inline_then`) or its else branch (`inline_else`). Removed ops are detached into a `Graveyard` rather than
erased, so no op is freed while a pass still holds terms keyed by values.
"""

from __future__ import annotations

import z3

from tilemlir.analysis.accesses import ops_where
from tilemlir.diagnostics import reporting as diag
from tilemlir.ir_util import defining_op, inside, operation, root_of
from tilemlir.mlir import ir

GUARD = "tile.guard"
PAD = "tile.pad"
_SLT, _SGE = 2, 5

# Ops without side effects that may be cloned, hoisted, or erased when unused.
PURE_OPS = frozenset(
    {
        "arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.cmpi", "arith.andi",
        "arith.ori", "arith.xori", "arith.select", "arith.minsi", "arith.maxsi", "arith.minui",
        "arith.maxui", "arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
        "arith.trunci", "arith.shli", "arith.shrsi", "arith.shrui", "arith.divsi", "arith.divui",
        "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui",
        "affine.apply", "affine.min", "affine.max", "memref.dim", "gpu.thread_id",
        "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "vector.extract", "vector.from_elements",
        "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
        "arith.bitcast", "arith.addf", "arith.subf", "arith.mulf", "arith.negf", "arith.maximumf",
        "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.cmpf",
    }
)
_DIVISIONS = frozenset(
    {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
     "arith.ceildivui"}
)


def is_guard(op) -> bool:
    op = operation(op)
    return op.name == "scf.if" and GUARD in op.attributes


def guards_in(root: ir.Operation) -> list[ir.Operation]:
    """Every guard nested in `root`, innermost first (post-order)."""
    return ops_where(root, is_guard)


def hoistable(op: ir.Operation) -> bool:
    """Whether `op` may run earlier or more often than written: pure, and no division by a non-constant."""
    if op.name not in PURE_OPS or len(op.regions):
        return False
    if op.name in _DIVISIONS:
        divisor = defining_op(op.operands[1])
        return divisor is not None and divisor.name == "arith.constant" and _int_value(divisor) not in (0, None)
    return True


def _int_value(constant: ir.Operation) -> int | None:
    attr = constant.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


# -- building ----------------------------------------------------------------


def index_constant(value: int, ip: ir.InsertionPoint, loc) -> ir.Value:
    return constant(ir.IntegerAttr.get(ir.IndexType.get(), value), ip, loc)


def constant(attr: ir.Attribute, ip: ir.InsertionPoint, loc) -> ir.Value:
    return ir.Operation.create("arith.constant", results=[attr.type], attributes={"value": attr}, loc=loc, ip=ip).result


def compare(predicate: int, lhs: ir.Value, rhs: ir.Value, ip, loc) -> ir.Value:
    attrs = {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), predicate)}
    i1 = ir.IntegerType.get_signless(1)
    return ir.Operation.create("arith.cmpi", results=[i1], operands=[lhs, rhs], attributes=attrs, loc=loc, ip=ip).result


def binary(name: str, lhs: ir.Value, rhs: ir.Value, ip, loc) -> ir.Value:
    return ir.Operation.create(name, results=[lhs.type], operands=[lhs, rhs], loc=loc, ip=ip).result


def conjunction(leaves: list[ir.Value], ip, loc) -> ir.Value:
    """`arith.andi` chain of i1 values (left-nested, in order)."""
    result = leaves[0]
    for leaf in leaves[1:]:
        result = binary("arith.andi", result, leaf, ip, loc)
    return result


def lower_check(index: ir.Value, ip, loc) -> ir.Value:
    return compare(_SGE, index, index_constant(0, ip, loc), ip, loc)


def upper_check(index: ir.Value, lanes: int, extent: ir.Value, ip, loc) -> ir.Value:
    """`index + lanes - 1 < extent`."""
    if lanes > 1:
        index = binary("arith.addi", index, index_constant(lanes - 1, ip, loc), ip, loc)
    return compare(_SLT, index, extent, ip, loc)


def extent_value(memref: ir.Value, dim: int, ip, loc) -> ir.Value:
    """The extent of `dim`: a constant when static, else `memref.dim`."""
    size = memref.type.shape[dim]
    if size != ir.ShapedType.get_dynamic_size():
        return index_constant(size, ip, loc)
    index = ir.IndexType.get()
    return ir.Operation.create(
        "memref.dim", results=[index], operands=[memref, index_constant(dim, ip, loc)], loc=loc, ip=ip
    ).result


def pad_attr(load: ir.Operation, result_type: ir.Type) -> ir.Attribute:
    """The value a guarded-off load yields: its `tile.pad` (converted to the element type), else 0."""
    element = result_type.element_type if isinstance(result_type, ir.VectorType) else result_type
    raw = load.attributes[PAD] if PAD in load.attributes else None
    if isinstance(element, ir.FloatType):
        value = ir.FloatAttr(raw).value if isinstance(raw, ir.FloatAttr) else float(_int_or_zero(raw))
        scalar = ir.FloatAttr.get(element, value)
    else:
        value = ir.IntegerAttr(raw).value if isinstance(raw, ir.IntegerAttr) else int(_float_or_zero(raw))
        scalar = ir.IntegerAttr.get(element, value)
    if isinstance(result_type, ir.VectorType):
        return ir.DenseElementsAttr.get_splat(result_type, scalar)
    return scalar


def _int_or_zero(attr) -> int:
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else 0


def _float_or_zero(attr) -> float:
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else 0.0


def make_guard(cond: ir.Value, result_types: list, loc, ip, with_else: bool) -> ir.Operation:
    """An empty guard `scf.if` (blocks created, no terminators)."""
    op = ir.Operation.create("scf.if", results=result_types, operands=[cond], regions=2, loc=loc, ip=ip)
    op.attributes[GUARD] = ir.UnitAttr.get()
    with loc:
        op.regions[0].blocks.append()
        if with_else:
            op.regions[1].blocks.append()
    return op


def yield_(values: list, block: ir.Block, loc) -> ir.Operation:
    return ir.Operation.create("scf.yield", operands=list(values), loc=loc, ip=ir.InsertionPoint(block))


def wrap_in_guard(access_op: ir.Operation, cond: ir.Value, pad: ir.Attribute | None = None) -> ir.Operation:
    """Move `access_op` into a new guard on `cond`; a load's else branch yields `pad` (default: its `tile.pad`)."""
    loc = access_op.location
    results = [r.type for r in access_op.results]
    guard = make_guard(cond, results, loc, ir.InsertionPoint(access_op), with_else=bool(results))
    then_block = guard.regions[0].blocks[0]
    for old, new in zip(access_op.results, guard.results):
        old.replace_all_uses_with(new)
    terminator = yield_(list(access_op.results), then_block, loc)
    access_op.move_before(terminator)
    if results:
        else_block = guard.regions[1].blocks[0]
        pads = [constant(pad if pad is not None else pad_attr(access_op, t), ir.InsertionPoint(else_block), loc) for t in results]
        yield_(pads, else_block, loc)
    return guard


def clone_slice(
    value: ir.Value, loop: ir.Operation, mapping: dict, ip, graveyard: Graveyard | None = None
) -> ir.Value:
    """`value` recomputed at `ip` with `mapping` applied: its defining ops inside `loop` are cloned
    (each clone noted in `graveyard` as maybe dead, when one is given) and `mapping` gains them."""
    if value in mapping:
        return mapping[value]
    op = defining_op(value)
    if op is None or not inside(op, loop):
        return value
    operands = [clone_slice(v, loop, mapping, ip, graveyard) for v in op.operands]
    clone = op.clone(ip=ip)
    for i, operand in enumerate(operands):
        clone.operands[i] = operand
    if graveyard is not None:
        graveyard.maybe_dead.append(clone)
    result = clone.results[value.result_number]
    mapping[value] = result
    return result


def symbol_dims(terms, roots: list[ir.Value], within: ir.Operation, ip, loc) -> dict:
    """A `clone_slice` mapping that reads every extent a symbol names from that symbol's first tensor.

    Each `memref.dim` that the slice of `roots` inside `within` reads, and that
    `terms` (the function's `IndexTerms`) gives a symbol's variable (`tile.arg_dims`),
    maps to a `memref.dim` of the first argument that symbol sizes, built at `ip`.
    Checks of two tensors of one length then compute the same value, which cse
    makes one SSA value, so canonicalize merges the `scf.if`s built on them.

    Sound because tensors sharing a symbol have equal extents at run time: every
    launch path checks it before the kernel runs (`runtime/checks.py` `bind` raises,
    the Python fast path and the native call plan answer SLOW), and the prover
    already gives both extents one variable, so no proof depends on which is read.
    """
    mapping: dict = {}
    first: dict = {}
    stack, seen = list(roots), set()
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        op = defining_op(value)
        if op is None:
            continue
        if op.name == "memref.dim":
            symbol = _symbol_of(terms, value)
            if symbol is not None:
                if symbol not in first:
                    first[symbol] = _first_dim(terms, symbol, ip, loc)
                mapping[value] = first[symbol]
            continue
        if inside(op, within):
            stack.extend(op.operands)
    return mapping


def _symbol_of(terms, value: ir.Value) -> str | None:
    term = terms.int_term(value)
    name = term.decl().name() if z3.is_const(term) and not z3.is_int_value(term) else ""
    return name[len("sym."):] if name.startswith("sym.") else None


def _first_dim(terms, symbol: str, ip, loc) -> ir.Value:
    arguments = terms.func.regions[0].blocks[0].arguments
    for index, dims in enumerate(terms.arg_dims):
        if isinstance(dims, list) and symbol in dims:
            operands = [arguments[index], index_constant(dims.index(symbol), ip, loc)]
            return ir.Operation.create("memref.dim", results=[ir.IndexType.get()], operands=operands, loc=loc, ip=ip).result
    raise ValueError(f"symbol {symbol} sizes no argument")


# -- running -------------------------------------------------------------------


def run_per_function(functions: list[ir.Operation], rewrite, statistics: dict[str, str]) -> None:
    """`rewrite(func) -> Counter` on each function, under its location; then each of `statistics`
    (name -> description) is reported with that function's count."""
    for func in functions:
        with func.location:
            stats = rewrite(func)
        for name, description in statistics.items():
            diag.statistic(name, stats[name], description)


# -- reading -------------------------------------------------------------------


def check_leaves(cond: ir.Value) -> list[ir.Value]:
    """The checks of an `arith.andi` chain of i1 values, in order."""
    op = defining_op(cond)
    if op is not None and op.name == "arith.andi":
        return check_leaves(op.operands[0]) + check_leaves(op.operands[1])
    return [cond]


def guarded_access(guard: ir.Operation) -> ir.Operation | None:
    """The single op (besides the yield) in the guard's then block, if that is all it holds."""
    ops = list(guard.regions[0].blocks[0].operations)
    return operation(ops[0]) if len(ops) == 2 else None


# -- removing ------------------------------------------------------------------


class Graveyard:
    """Ops taken out of the IR but kept alive until the pass ends, and pure ops that may have died."""

    def __init__(self):
        self.detached: list = []
        self.maybe_dead: list[ir.Operation] = []

    def bury(self, op: ir.Operation) -> None:
        for operand in op.operands:
            self.note_operand(operand)
        self.detached.append(op.detach_from_parent())

    def note_operand(self, value: ir.Value) -> None:
        owner = defining_op(value)
        if owner is not None and owner.name in PURE_OPS:
            self.maybe_dead.append(owner)

    def release(self, root: ir.Operation) -> int:
        """Erase the buried ops, then the pure ops under `root` left without uses; returns how many of those.

        The bindings give one op several wrapper objects, and touching a wrapper
        of an erased op crashes: ops are tracked by hash (their address), each
        queued once, and none is reached again after it is erased (it had no users).
        """
        queued = {hash(op): op for op in self.maybe_dead if root_of(op) == root}
        self.maybe_dead.clear()
        # In burial order: an op buried later never uses a value of one buried earlier,
        # while an earlier one may use values inside a later one (a guard, then its loop).
        for op in self.detached:
            op.operation.erase()
        self.detached.clear()
        erased = 0
        while queued:
            _, op = queued.popitem()
            if op.name not in PURE_OPS or _has_uses(op):
                continue
            for value in op.operands:
                owner = defining_op(value)
                if owner is not None:
                    queued.setdefault(hash(owner), owner)
            op.erase()
            erased += 1
        return erased


def _has_uses(op: ir.Operation) -> bool:
    return any(True for result in op.results for _ in result.uses)


def _inline_block(guard: ir.Operation, block: ir.Block, graveyard: Graveyard) -> None:
    ops = [operation(o) for o in block.operations]
    terminator = ops[-1]
    for op in ops[:-1]:
        op.move_before(guard)
    for old, new in zip(guard.results, terminator.operands):
        old.replace_all_uses_with(new)
    graveyard.note_operand(guard.operands[0])
    graveyard.bury(guard)


def inline_then(guard: ir.Operation, graveyard: Graveyard) -> None:
    """Drop a guard whose condition always holds: its then branch runs unconditionally."""
    _inline_block(guard, guard.regions[0].blocks[0], graveyard)


def inline_else(guard: ir.Operation, graveyard: Graveyard) -> None:
    """Drop a guard whose condition never holds: its else branch (pad values) runs instead."""
    if len(guard.regions[1].blocks) == 0:
        graveyard.note_operand(guard.operands[0])
        graveyard.bury(guard)
        return
    _inline_block(guard, guard.regions[1].blocks[0], graveyard)


def set_condition(guard: ir.Operation, cond: ir.Value, graveyard: Graveyard) -> None:
    graveyard.note_operand(guard.operands[0])
    guard.operands[0] = cond
