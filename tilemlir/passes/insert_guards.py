"""insert-guards: put a bounds check around every global access that may leave its tensor.

Takes thread-level IR (docs/ir.md, after partition-threads) and gives the
same IR where each `memref.load`/`memref.store`/`vector.load`/
`vector.store`/scalar `tile.atomic_add` on a global memref inside a
`gpu.launch` whose indices a
cheap range analysis (`tilemlir.analysis.intervals`) cannot keep in
bounds is wrapped in a guard (`tilemlir.rewriting.guards`): an `scf.if` on
the failing checks, marked `tile.guard`; a load's else branch yields its
`tile.pad` value (0 without one). Only checks the range analysis cannot
settle are emitted (`%i >= 0`, `%i < dim`). A vector access that may be
partly out of range runs whole when every lane is in range and falls back
to guarded scalar lanes otherwise. Z3 removes what it can in
`eliminate-guards`.

Statistics: guards-inserted, accesses-in-range (no guard needed).
"""

from __future__ import annotations

from collections import Counter

from tilemlir.analysis.accesses import MemoryAccess, global_access, global_accesses, ops_where
from tilemlir.analysis.intervals import value_range
from tilemlir.diagnostics import reporting as diag
from tilemlir.ir_util import operation
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.guards import (
    conjunction,
    extent_value,
    index_constant,
    is_guard,
    lower_check,
    make_guard,
    upper_check,
    wrap_in_guard,
    yield_,
)


@register_pass("insert-guards", "guard every global load/store that may index outside its tensor")
def run(module, options) -> None:
    stats: Counter = Counter()
    for launch in ops_where(operation(module), lambda op: op.name == "gpu.launch"):
        for access in global_accesses(launch):
            with access.op.location:
                _guard(access, stats)
    diag.statistic("guards-inserted", stats["guards-inserted"], "bounds guards put around global accesses")
    diag.statistic("accesses-in-range", stats["accesses-in-range"], "global accesses the range analysis kept unguarded")


def needed_checks(access: MemoryAccess) -> list[tuple[int, str]]:
    """(dim, "lower"|"upper") checks the range analysis cannot prove for this access."""
    checks = []
    last = access.rank - 1
    for dim, index in enumerate(access.indices):
        lo, hi = value_range(index)
        if lo is None or lo < 0:
            checks.append((dim, "lower"))
        size = access.memref.type.shape[dim]
        extent_lo = 0 if size == ir.ShapedType.get_dynamic_size() else size
        extra = access.lanes - 1 if dim == last else 0
        if hi is None or hi + extra >= extent_lo:
            checks.append((dim, "upper"))
    return checks


def _guard(access: MemoryAccess, stats: Counter) -> None:
    parent = access.op.parent
    if parent is not None and is_guard(parent):
        return
    checks = needed_checks(access)
    if not checks:
        stats["accesses-in-range"] += 1
        return
    if access.lanes < 1:
        raise diag.error(access.op, f"insert-guards: cannot guard '{access.op.name}' of a multi-dimensional vector")
    cond = _build_checks(access, checks, access.indices, access.lanes)
    if access.lanes == 1:
        wrap_in_guard(access.op, cond)
    else:
        _guard_vector(access, cond, stats)
    stats["guards-inserted"] += 1


def _build_checks(access: MemoryAccess, checks, indices, lanes: int) -> ir.Value:
    ip, loc = ir.InsertionPoint(access.op), access.op.location
    leaves = []
    for dim, kind in checks:
        if kind == "lower":
            leaves.append(lower_check(indices[dim], ip, loc))
        else:
            extent = extent_value(access.memref, dim, ip, loc)
            lane_count = lanes if dim == access.rank - 1 else 1
            leaves.append(upper_check(indices[dim], lane_count, extent, ip, loc))
    return conjunction(leaves, ip, loc)


def _guard_vector(access: MemoryAccess, cond: ir.Value, stats: Counter) -> None:
    """Whole vector when all lanes are in range; else each lane alone under its own guard."""
    op, loc = access.op, access.op.location
    results = [r.type for r in op.results]
    guard = make_guard(cond, results, loc, ir.InsertionPoint(op), with_else=True)
    then_block, else_block = guard.regions[0].blocks[0], guard.regions[1].blocks[0]
    for old, new in zip(op.results, guard.results):
        old.replace_all_uses_with(new)
    terminator = yield_(list(op.results), then_block, loc)
    op.move_before(terminator)
    lane_values = [_lane_access(access, lane, else_block, stats) for lane in range(access.lanes)]
    ip = ir.InsertionPoint(else_block)
    if access.is_load:
        vector = ir.Operation.create(
            "vector.from_elements", results=results, operands=lane_values, loc=loc, ip=ip
        ).result
        yield_([vector], else_block, loc)
    else:
        yield_([], else_block, loc)


def _lane_access(access: MemoryAccess, lane: int, block: ir.Block, stats: Counter) -> ir.Value | None:
    """One lane of a vector access as a scalar access at the end of `block`, guarded if needed."""
    op, loc, ip = access.op, access.op.location, ir.InsertionPoint(block)
    indices = list(access.indices)
    indices[-1] = _add_index(indices[-1], lane, ip, loc)
    if access.is_load:
        scalar = ir.Operation.create(
            "memref.load", results=[access.element_type], operands=[access.memref, *indices], loc=loc, ip=ip
        )
    else:
        element = ir.Operation.create(
            "vector.extract",
            results=[access.element_type],
            operands=[op.operands[0]],
            attributes={"static_position": ir.DenseI64ArrayAttr.get([lane])},
            loc=loc,
            ip=ip,
        ).result
        scalar = ir.Operation.create("memref.store", operands=[element, access.memref, *indices], loc=loc, ip=ip)
    if access.is_load and "tile.pad" in op.attributes:
        scalar.attributes["tile.pad"] = op.attributes["tile.pad"]
    lane_access = global_access(scalar)
    checks = needed_checks(lane_access)
    if checks:
        scalar = wrap_in_guard(scalar, _build_checks(lane_access, checks, lane_access.indices, 1))
        stats["guards-inserted"] += 1
    return scalar.results[0] if access.is_load else None


def _add_index(index: ir.Value, offset: int, ip, loc) -> ir.Value:
    if offset == 0:
        return index
    return ir.Operation.create(
        "arith.addi", results=[index.type], operands=[index, index_constant(offset, ip, loc)], loc=loc, ip=ip
    ).result
