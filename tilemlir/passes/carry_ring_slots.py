"""carry-ring-slots: a ring slot `(iv + c) mod S` of a unit-step loop becomes a loop-carried counter.

Takes thread-level IR (the `final` stage's, after its last cse). In every `scf.for` with step 1, each
distinct `arith.remui(iv + c, S)` computed at the top of its body (c >= 0 and S > 1 constants; plan-pipeline
writes these for the ring slot a tile is read from and the one the next copy fills) becomes an iter_arg:
`(lower + c) mod S` before the loop, `next == S ? 0 : next` with `next = slot + 1` yielded. Gives the same
IR with the loop rebuilt, carrying its old iter_args first and the counters after them.

Why: a remainder by 3 costs the GPU a multiply-high sequence per iteration, and the CUDA compiler then
strength-reduces `slot * stage_bytes` into one induction register per shared address, each stepped and
corrected every iteration. One counter stepped by a compare and a select leaves one slot base that the
addresses add to.
"""

from __future__ import annotations

from tilemlir.ir_util import constant_int, defining_op, enclosing, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder

RESULT_NAMES_ATTR = "tile.result_names"  # the emitter names loop-carried values from it


@register_pass("carry-ring-slots", "(iv + c) mod S in a unit-step scf.for -> a loop-carried slot counter")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for loop in ops_named(module, "scf.for"):
            slots = _slots(loop)
            if slots:
                _carry(loop, slots)


def _slots(loop: ir.Operation) -> dict[tuple[int, int], list[ir.Operation]]:
    """(c, S) -> the remui ops of the body computing (iv + c) mod S, for a unit-step loop."""
    if constant_int(loop.operands[2]) != 1:
        return {}
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    slots: dict[tuple[int, int], list[ir.Operation]] = {}
    for op in body.operations:
        op = operation(op)
        if op.name != "arith.remui":
            continue
        modulus = constant_int(op.operands[1])
        offset = _offset_from(op.operands[0], iv)
        if modulus is not None and modulus > 1 and offset is not None:
            slots.setdefault((offset, modulus), []).append(op)
    return slots


def _offset_from(value: ir.Value, iv: ir.Value) -> int | None:
    """c when `value` is `iv` or `iv + c` with a constant c >= 0; None otherwise."""
    if value == iv:
        return 0
    op = defining_op(value)
    if op is None or op.name != "arith.addi":
        return None
    a, b = op.operands
    for this, other in ((a, b), (b, a)):
        offset = constant_int(other)
        if this == iv and offset is not None and offset >= 0:
            return offset
    return None


def _carry(loop: ir.Operation, slots: dict[tuple[int, int], list[ir.Operation]]) -> None:
    lower, upper, step, *inits = loop.operands
    # constants go to the body of the launch holding the loop (or of its function)
    kernel_block = (enclosing(loop, "gpu.launch") or enclosing(loop, "func.func")).regions[0].blocks[0]
    pool: dict = {}
    before = Builder(ir.InsertionPoint(loop), loop.location, kernel_block, pool)
    keys = sorted(slots)
    starts = [before.rem(before.add(lower, offset), modulus) for offset, modulus in keys]
    old_body = loop.regions[0].blocks[0]
    result_types = [r.type for r in loop.results] + [ir.IndexType.get()] * len(keys)
    attributes = {name: loop.attributes[name] for name in loop.attributes}
    attributes[RESULT_NAMES_ATTR] = _result_names(loop, keys)
    new = ir.Operation.create("scf.for", results=result_types, operands=[lower, upper, step, *inits, *starts],
                              attributes=attributes, regions=1, loc=loop.location, ip=ir.InsertionPoint(loop))
    body = new.regions[0].blocks.append(*[arg.type for arg in old_body.arguments],
                                        *[ir.IndexType.get()] * len(keys))
    old_yield = operation(list(old_body.operations)[-1])
    _move_body(old_body, body)
    for old_arg, new_arg in zip(old_body.arguments, body.arguments):
        old_arg.replace_all_uses_with(new_arg)
    counters = list(body.arguments)[len(old_body.arguments):]
    for key, counter in zip(keys, counters):
        for remainder in slots[key]:
            remainder.results[0].replace_all_uses_with(counter)
            ahead = defining_op(remainder.operands[0])
            remainder.erase()
            if ahead is not None and not list(ahead.results[0].uses):
                ahead.erase()
    inner = Builder(ir.InsertionPoint(old_yield), loop.location, kernel_block, pool)
    steps = [_next_slot(inner, counter, modulus) for (_, modulus), counter in zip(keys, counters)]
    ir.Operation.create("scf.yield", operands=[*old_yield.operands, *steps], loc=old_yield.location,
                        ip=ir.InsertionPoint(old_yield))
    old_yield.erase()
    for old_result, new_result in zip(loop.results, new.results):
        old_result.replace_all_uses_with(new_result)
    loop.erase()


def _result_names(loop: ir.Operation, keys: list[tuple[int, int]]) -> ir.ArrayAttr:
    """The loop's result names (the emitter's C names), the counters' added: `slot` for iv mod S, `slot_ahead<c>`
    for (iv + c) mod S."""
    old = list(loop.attributes[RESULT_NAMES_ATTR]) if RESULT_NAMES_ATTR in loop.attributes else []
    old += [ir.StringAttr.get("")] * (len(loop.results) - len(old))
    added = [ir.StringAttr.get("slot" if offset == 0 else f"slot_ahead{offset}") for offset, _ in keys]
    return ir.ArrayAttr.get(old + added)


def _move_body(source: ir.Block, target: ir.Block) -> None:
    anchor = ir.Operation.create("scf.yield", loc=ir.Location.unknown(), ip=ir.InsertionPoint(target))
    for op in list(source.operations):
        operation(op).move_before(anchor)
    anchor.erase()


def _next_slot(b: Builder, slot: ir.Value, modulus: int) -> ir.Value:
    following = b.add(slot, 1)
    return b.select(b.cmp("eq", following, modulus), b.index(0), following)
