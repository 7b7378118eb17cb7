"""materialize-shared-layouts: logical indices into swizzled shared buffers become physical ones.

Takes thread-level IR after vectorize and async-copies, where every access of a shared buffer
uses logical indices (docs/tensor_cores.md) and a `tile.swizzle = W > 0` alloca says how the
buffer is stored. Gives the same IR where each access of such a buffer — every op of
`dialects/shared_access.SHARED_INDEXED`, the one table other shared-indexed ops (ldmatrix) join —
indexes the element `analysis.shared_layouts.physical_element` computes. The buffer becomes
one-dimensional (its elements in the same places): a physical position is one linear index,
and writing it back as row-major indices would only make the CUDA compiler take it apart and
put it together again on every access. The swizzle atom is 16 bytes, so an aligned vector access
or cp.async of up to 16 bytes stays one contiguous access at the permuted address. The new
alloca keeps the old one's attributes and gets `tile.materialized` and `tile.logical_shape`; an op using the buffer that
the table does not list is an error naming it.
"""

from __future__ import annotations

from tilemlir.analysis.shared_layouts import SWIZZLE_ATTR, SWIZZLE_ROW_PERIOD, physical_element, shifted_element
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.shared_access import SHARED_INDEXED, shared_indices
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import constant_int, defining_op, is_multiple_of, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder

MATERIALIZED_ATTR = "tile.materialized"
LOGICAL_SHAPE_ATTR = "tile.logical_shape"  # the flattened buffer's shape before: what the CUDA's comment says


class _BuilderArithmetic:
    """`analysis.shared_layouts.IndexArithmetic` over index values, folding constants."""

    def __init__(self, b: Builder):
        self.b = b

    def add(self, a, c):
        return self.b.add(a, c)

    def mul(self, a, c: int):
        return self.b.mul(a, c)

    def div(self, a, c: int):
        return self.b.div(a, c)

    def rem(self, a, c: int):
        return self.b.rem(a, c)

    def xor(self, a, c):
        a, c = self.b._value(a), self.b._value(c)
        known_a, known_c = constant_int(a), constant_int(c)
        if known_a is not None and known_c is not None:
            return self.b.index(known_a ^ known_c)
        if known_c == 0:
            return a
        return self.b.op("arith.xori", [a, c], [ir.IndexType.get()]).result

    def const(self, a: int):
        return self.b.index(a)


@register_pass("materialize-shared-layouts", "logical indices into tile.swizzle shared buffers -> physical ones")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for alloca in ops_named(module, "memref.alloca"):
            if (memory_space(alloca.results[0].type) == SHARED and SWIZZLE_ATTR in alloca.attributes
                    and MATERIALIZED_ATTR not in alloca.attributes and alloca.attributes[SWIZZLE_ATTR].value):
                _materialize(alloca)


def _materialize(alloca: ir.Operation) -> None:
    buffer = alloca.results[0]
    type_ = buffer.type
    width = alloca.attributes[SWIZZLE_ATTR].value
    element_bytes = -(-type_.element_type.width // 8)
    block = alloca.block
    users = []
    for use in buffer.uses:
        user = operation(use.owner)
        where = shared_indices(user)
        if where is None or where.buffer != use.operand_number:
            listed = ", ".join(sorted(SHARED_INDEXED))
            raise diag.error(user, f"{user.name} uses the swizzled shared buffer '{_name(alloca)}', but "
                                   f"materialize-shared-layouts rewrites only the indices of {listed} "
                                   "(add the op to dialects/shared_access.SHARED_INDEXED)")
        users.append((user, where))
    flat = _flat_alloca(alloca)
    pool: dict = {}
    for user, where in users:
        b = Builder(ir.InsertionPoint(user), user.location, block, pool)
        linear = _physical(b, where.indices(user), list(type_.shape), element_bytes, width)
        _reindex(user, where, flat, linear)
    alloca.erase()


def _physical(b: Builder, logical: list[ir.Value], shape: list[int], element_bytes: int, width: int) -> ir.Value:
    """The physical element of `logical`, the terms of its row and column that are whole swizzle periods
    (8 rows, whole panels) added after the permutation (`shifted_element`), not permuted with the rest."""
    ar = _BuilderArithmetic(b)
    *lead, row, col = logical
    row_rest, rows_ahead = _split(b, row, SWIZZLE_ROW_PERIOD)
    col_rest, columns_ahead = _split(b, col, width // element_bytes)
    permuted = physical_element([*lead, row_rest, col_rest], shape, element_bytes, width, ar)
    return b.add(permuted, shifted_element(rows_ahead, columns_ahead, shape, element_bytes, width, ar))


def _split(b: Builder, index: ir.Value, unit: int) -> tuple[ir.Value, ir.Value]:
    """`index` as (rest, multiple of `unit`): its additive terms that are multiples of `unit` summed apart."""
    rest, multiples = b.index(0), b.index(0)
    for term in _terms(index):
        if is_multiple_of(term, unit):
            multiples = b.add(multiples, term)
        else:
            rest = b.add(rest, term)
    return rest, multiples


def _terms(value: ir.Value) -> list[ir.Value]:
    op = defining_op(value)
    if op is not None and op.name == "arith.addi":
        return _terms(op.operands[0]) + _terms(op.operands[1])
    return [value]


def _flat_alloca(alloca: ir.Operation) -> ir.Value:
    """A one-dimensional alloca of `alloca`'s elements, its attributes kept, just before it."""
    type_ = ir.MemRefType(alloca.results[0].type)
    size = 1
    for extent in type_.shape:
        size *= extent
    flat_type = ir.MemRefType.get([size], type_.element_type, memory_space=type_.memory_space)
    attributes = {name: alloca.attributes[name] for name in alloca.attributes}
    attributes[MATERIALIZED_ATTR] = ir.UnitAttr.get()
    attributes[LOGICAL_SHAPE_ATTR] = ir.DenseI64ArrayAttr.get(list(type_.shape))
    flat = ir.Operation.create("memref.alloca", results=[flat_type], operands=[], attributes=attributes,
                               loc=alloca.location, ip=ir.InsertionPoint(alloca))
    return flat.results[0]


def _reindex(user: ir.Operation, where, flat: ir.Value, linear) -> None:
    """`user` again, addressing `flat` at `linear` instead of its buffer at its indices."""
    operands = list(user.operands)
    operands[where.buffer] = flat
    operands[where.first:where.first + where.rank] = [linear]
    attributes = {name: user.attributes[name] for name in user.attributes}
    new = ir.Operation.create(user.name, results=[r.type for r in user.results], operands=operands,
                              attributes=attributes, loc=user.location, ip=ir.InsertionPoint(user))
    for old_result, new_result in zip(user.results, new.results):
        old_result.replace_all_uses_with(new_result)
    user.erase()


def _name(alloca: ir.Operation) -> str:
    return ir.StringAttr(alloca.attributes["name"]).value if "name" in alloca.attributes else "shared"
