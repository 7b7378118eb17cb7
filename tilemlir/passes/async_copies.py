"""async-copies: the asynchronous shared stores of a global vector load become one `tile.cp_async`.

Takes thread-level IR after vectorize, where a plan-pipeline ring copy's shared stores carry
`tile.async` (lower-tile-ops). Gives the same IR where, for each global `vector.load` of 4, 8 or
16 bytes whose lanes (`vector.extract %v[i]`) are each stored once, unchanged, by a `tile.async`
`memref.store` to consecutive elements of one shared buffer (the first at a provable multiple of
the lane count, so the shared address is aligned like the global one), the load, extracts and
stores become one `tile.cp_async` at the first store. Guards stay as zero fill:

- a guarded load (`scf.if %ok -> vector { vector.load } else { zeros } {tile.guard}`) becomes a
  copy with `src_bytes = %ok ? bytes : 0`;
- a guard around whole copies (`scf.if %ok { copies } else { zero tile.async stores of the same
  elements } {tile.guard}`) is dissolved: its copies run unconditionally with
  `src_bytes = %ok ? src_bytes : 0` (cp.async reads nothing for 0 and writes the zeros).

Anything else (a pad other than zero, lanes converted or reordered, a misaligned run) stays a
synchronous store: correct, since the pipeline's wait and barrier order synchronous stores too.
"""

from __future__ import annotations

from tilemlir.analysis.shared_layouts import ASYNC_ATTR
from tilemlir.dialects import async_copy
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import constant_int, defining_op, is_multiple_of, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.guards import GUARD

_COPY_BYTES = (4, 8, 16)


@register_pass("async-copies", "tile.async shared stores of a global vector load -> tile.cp_async (zero fill for "
                               "guards)")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for load in ops_named(module, "vector.load"):
            if memory_space(load.operands[0].type) is None:
                _convert(load)
        for guard in ops_named(module, "scf.if"):
            if GUARD in guard.attributes and not len(guard.results):
                _dissolve(guard)


# -- one load -> one copy ---------------------------------------------------------------------------


def _element_bytes(type_: ir.Type) -> int:
    return -(-type_.width // 8) if isinstance(type_, (ir.IntegerType, ir.FloatType)) else 0


def _guarded_value(load: ir.Operation) -> tuple[ir.Value, ir.Value | None]:
    """(the vector the stores take, the guard condition) for a load used directly or through a guard."""
    value = load.results[0]
    uses = list(value.uses)
    parent = operation(load.parent)
    if (len(uses) == 1 and operation(uses[0].owner).name == "scf.yield" and parent.name == "scf.if"
            and GUARD in parent.attributes and len(parent.results) == 1 and len(list(load.block.operations)) == 2
            and _is_zero_vector_yield(parent)):
        return parent.results[0], parent.operands[0]
    return value, None


def _is_zero_vector_yield(guard: ir.Operation) -> bool:
    if len(guard.regions[1].blocks) != 1:
        return False
    terminator = operation(list(guard.regions[1].blocks[0].operations)[-1])
    source = defining_op(terminator.operands[0])
    if source is None or source.name != "arith.constant":
        return False
    attr = source.attributes["value"]
    return isinstance(attr, ir.DenseElementsAttr) and attr.is_splat and _is_zero(attr.get_splat_value())


def _is_zero(attr: ir.Attribute) -> bool:
    if isinstance(attr, ir.FloatAttr):
        return attr.value == 0.0 and str(attr).lstrip()[0] != "-"
    return isinstance(attr, ir.IntegerAttr) and attr.value == 0


def _convert(load: ir.Operation) -> None:
    vector_type = ir.VectorType(load.results[0].type)
    lanes = vector_type.shape[0]
    size = lanes * _element_bytes(vector_type.element_type)
    alignment = load.attributes["alignment"].value if "alignment" in load.attributes else 0
    if vector_type.rank != 1 or size not in _COPY_BYTES or alignment < size:
        return
    value, condition = _guarded_value(load)
    stores = _lane_stores(value, lanes)
    if stores is None:
        return
    first = stores[0][1]
    dst = first.operands[1]
    dst_indices = list(first.operands)[2:]
    b = ir.InsertionPoint(first)
    src_bytes = None
    if condition is not None:
        src_bytes = _select(condition, _index(size, b, first.location), _index(0, b, first.location), b,
                            first.location)
    async_copy.cp_async(dst, load.operands[0], dst_indices, list(load.operands)[1:], size, src_bytes,
                        loc=first.location, ip=b)
    for extract, store in stores:
        store.erase()
        extract.erase()
    guard = operation(load.parent) if condition is not None else None
    if guard is not None:
        guard.erase()
    else:
        load.erase()


def _lane_stores(value: ir.Value, lanes: int):
    """[(extract, store)] per lane when every lane goes, unchanged, to consecutive aligned elements of one
    shared buffer through one `tile.async` store; else None."""
    found: dict[int, tuple[ir.Operation, ir.Operation]] = {}
    for use in value.uses:
        extract = operation(use.owner)
        if extract.name != "vector.extract" or "static_position" not in extract.attributes:
            return None
        position = list(ir.DenseI64ArrayAttr(extract.attributes["static_position"]))
        uses = list(extract.results[0].uses)
        if len(position) != 1 or position[0] in found or len(uses) != 1:
            return None
        store = operation(uses[0].owner)
        if store.name != "memref.store" or uses[0].operand_number != 0 or ASYNC_ATTR not in store.attributes:
            return None
        if memory_space(store.operands[1].type) != SHARED or store.block != extract.block:
            return None
        found[position[0]] = (extract, store)
    if sorted(found) != list(range(lanes)):
        return None
    stores = [found[i] for i in range(lanes)]
    first = stores[0][1]
    base = _affine(first.operands[-1])
    for lane, (_, store) in enumerate(stores):
        if store.operands[1] != first.operands[1] or list(store.operands)[2:-1] != list(first.operands)[2:-1]:
            return None
        term, offset = _affine(store.operands[-1])
        if term != base[0] or offset != base[1] + lane:
            return None
    if not is_multiple_of(first.operands[-1], lanes) or first.operands[1].type.shape[-1] % lanes:
        return None
    if any(_before(store, first) for _, store in stores[1:]):
        return None
    return stores


def _before(a: ir.Operation, b: ir.Operation) -> bool:
    for op in a.block.operations:
        op = operation(op)
        if op == a:
            return True
        if op == b:
            return False
    return False


def _affine(value: ir.Value) -> tuple[ir.Value | None, int]:
    """`value` as (term, constant): peels `arith.addi` of constants."""
    constant = constant_int(value)
    if constant is not None:
        return None, constant
    op = defining_op(value)
    if op is not None and op.name == "arith.addi":
        for term, other in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
            known = constant_int(other)
            if known is not None:
                inner, offset = _affine(term)
                return inner, offset + known
    return value, 0


def _index(value: int, ip: ir.InsertionPoint, loc: ir.Location) -> ir.Value:
    index = ir.IndexType.get()
    return ir.Operation.create("arith.constant", results=[index], attributes={"value": ir.IntegerAttr.get(index, value)},
                               loc=loc, ip=ip).result


def _select(condition: ir.Value, a: ir.Value, b: ir.Value, ip: ir.InsertionPoint, loc: ir.Location) -> ir.Value:
    return ir.Operation.create("arith.select", results=[a.type], operands=[condition, a, b], loc=loc, ip=ip).result


# -- a guard around whole copies ------------------------------------------------------------------


def _dissolve(guard: ir.Operation) -> None:
    if len(guard.regions[1].blocks) != 1:
        return
    then_ops = [operation(op) for op in guard.regions[0].blocks[0].operations][:-1]
    copies = [op for op in then_ops if op.name == "tile.cp_async"]
    if not copies or any(op.name != "tile.cp_async" and not _pure(op) for op in then_ops):
        return
    buffers = {op.operands[0] for op in copies}
    elements = sum(op.attributes["bytes"].value // _element_bytes(op.operands[0].type.element_type) for op in copies)
    zeros = _zero_stores(guard.regions[1].blocks[0], buffers)
    if zeros != elements:
        return
    condition = guard.operands[0]
    for op in then_ops:
        op.move_before(guard)
    for op in copies:
        ip, loc = ir.InsertionPoint(op), op.location
        size = op.attributes["bytes"].value
        old = async_copy.cp_async_src_bytes(op)
        src_bytes = _select(condition, old if old is not None else _index(size, ip, loc), _index(0, ip, loc), ip, loc)
        dst_indices, src_indices = async_copy.cp_async_indices(op)
        async_copy.cp_async(op.operands[0], op.operands[1], dst_indices, src_indices, size, src_bytes, loc=loc, ip=ip)
        op.erase()
    guard.erase()


def _pure(op: ir.Operation) -> bool:
    return op.name.startswith(("arith.", "index.")) and not op.regions


def _zero_stores(block: ir.Block, buffers) -> int | None:
    """How many elements `block` sets to zero by `tile.async` stores into `buffers` (unrolled loops
    counted), None when it does anything else."""
    count = 0
    for op in [operation(o) for o in block.operations][:-1]:
        if _pure(op):
            continue
        if op.name == "memref.store" and ASYNC_ATTR in op.attributes and op.operands[1] in buffers:
            value = defining_op(op.operands[0])
            if value is None or value.name != "arith.constant" or not _is_zero(value.attributes["value"]):
                return None
            count += 1
        elif op.name == "scf.for" and not len(op.results):
            trips = [constant_int(v) for v in list(op.operands)[:3]]
            inner = _zero_stores(op.regions[0].blocks[0], buffers)
            if None in trips or inner is None or trips[2] != 1:
                return None
            count += (trips[1] - trips[0]) * inner
        else:
            return None
    return count
