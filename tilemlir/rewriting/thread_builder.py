"""Building thread-level IR from Python: index arithmetic, loops, conditionals, shuffles.

Used by lower-tile-ops and partition-threads. Index arithmetic folds
constants as it goes (so a register index built from loop variables and
constants stays small and readable) and divides with unsigned ops
(`arith.divui` / `arith.remui`): every index it builds is non-negative.
Constants are created at the start of a fixed block (the kernel body) so
they dominate every use inside it.
"""

from __future__ import annotations

import contextlib

from tilemlir.analysis.signedness import conversion_op, int_attr, int_combine_op
from tilemlir.ir_util import constant_int, operation
from tilemlir.mlir import ir

UNROLL_ATTR = "tile.unroll"
CMP = {"eq": 0, "ne": 1, "slt": 2, "sle": 3, "sgt": 4, "sge": 5, "ult": 6, "ule": 7, "ugt": 8, "uge": 9}


def index_type() -> ir.Type:
    return ir.IndexType.get()


class Builder:
    """Creates ops at an insertion point, with one location, constants hoisted to `const_block`."""

    def __init__(self, ip: ir.InsertionPoint, loc: ir.Location, const_block: ir.Block, pool: dict | None = None):
        self.ip = ip
        self.loc = loc
        self.const_block = const_block
        self.pool = {} if pool is None else pool

    def at(self, ip: ir.InsertionPoint) -> "Builder":
        return Builder(ip, self.loc, self.const_block, self.pool)

    def located(self, loc: ir.Location) -> "Builder":
        return Builder(self.ip, loc, self.const_block, self.pool)

    def before(self, op) -> "Builder":
        return self.at(ir.InsertionPoint(operation(op)))

    def op(self, name: str, operands=(), results=(), attributes=None, regions: int = 0) -> ir.Operation:
        return ir.Operation.create(
            name, results=list(results), operands=list(operands), attributes=attributes or {},
            regions=regions, loc=self.loc, ip=self.ip,
        )

    # ---------------------------------------------------------- constants

    def const(self, value, type_: ir.Type) -> ir.Value:
        key = (str(type_), repr(value))
        if key not in self.pool:
            if isinstance(type_, (ir.IndexType, ir.IntegerType)):
                attr = int_attr(type_, int(value))
            else:
                with self.loc:
                    attr = ir.FloatAttr.get(type_, float(value))
            ip = ir.InsertionPoint.at_block_begin(self.const_block)
            self.pool[key] = ir.Operation.create("arith.constant", results=[type_], attributes={"value": attr},
                                                 loc=self.loc, ip=ip).result
        return self.pool[key]

    def index(self, value: int) -> ir.Value:
        return self.const(value, index_type())

    # ------------------------------------------------------ index arithmetic

    def add(self, a, b) -> ir.Value:
        a, b = self._value(a), self._value(b)
        ca, cb = constant_int(a), constant_int(b)
        if ca is not None and cb is not None:
            return self.index(ca + cb)
        if ca == 0:
            return b
        if cb == 0:
            return a
        return self.op("arith.addi", [a, b], [a.type]).result

    def sub(self, a, b) -> ir.Value:
        a, b = self._value(a), self._value(b)
        ca, cb = constant_int(a), constant_int(b)
        if ca is not None and cb is not None:
            return self.index(ca - cb)
        if cb == 0:
            return a
        return self.op("arith.subi", [a, b], [a.type]).result

    def mul(self, a, b) -> ir.Value:
        a, b = self._value(a), self._value(b)
        ca, cb = constant_int(a), constant_int(b)
        if ca is not None and cb is not None:
            return self.index(ca * cb)
        if ca == 0 or cb == 0:
            return self.index(0)
        if ca == 1:
            return b
        if cb == 1:
            return a
        return self.op("arith.muli", [a, b], [a.type]).result

    def div(self, a, divisor: int | ir.Value) -> ir.Value:
        """a / divisor, unsigned; a divisor Value that is not a constant is divided by at run time."""
        a = self._value(a)
        if isinstance(divisor, ir.Value):
            known = constant_int(divisor)
            if known is None:
                return self.op("arith.divui", [a, divisor], [a.type]).result
            divisor = known
        ca = constant_int(a)
        if ca is not None:
            return self.index(ca // divisor)
        if divisor == 1:
            return a
        return self.op("arith.divui", [a, self.index(divisor)], [a.type]).result

    def rem(self, a, modulus: int | ir.Value) -> ir.Value:
        """a mod modulus, unsigned; a modulus Value that is not a constant is taken at run time."""
        a = self._value(a)
        if isinstance(modulus, ir.Value):
            known = constant_int(modulus)
            if known is None:
                return self.op("arith.remui", [a, modulus], [a.type]).result
            modulus = known
        ca = constant_int(a)
        if ca is not None:
            return self.index(ca % modulus)
        if modulus == 1:
            return self.index(0)
        return self.op("arith.remui", [a, self.index(modulus)], [a.type]).result

    def digit(self, a, stride: int, size: int, bounded: bool = False) -> ir.Value:
        """`(a floordiv stride) mod size`; `bounded`: a < stride * size is known, skip the mod."""
        quotient = self.div(a, stride)
        return quotient if bounded else self.rem(quotient, size)

    def linear(self, terms) -> ir.Value:
        """Sum of `coeff * value` over `terms` (coeff: int, value: Value or int)."""
        total = self.index(0)
        for coeff, value in terms:
            total = self.add(total, self.mul(value, coeff))
        return total

    def _value(self, a) -> ir.Value:
        return self.index(a) if isinstance(a, int) else a

    # ----------------------------------------------------------- predicates

    def cmp(self, predicate: str, a, b) -> ir.Value:
        a, b = self._value(a), self._value(b)
        attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), CMP[predicate])
        return self.op("arith.cmpi", [a, b], [ir.IntegerType.get_signless(1)], {"predicate": attr}).result

    def and_(self, conditions: list[ir.Value]) -> ir.Value | None:
        result = None
        for cond in conditions:
            result = cond if result is None else self.op("arith.andi", [result, cond], [cond.type]).result
        return result

    # ------------------------------------------------------------- regions

    @contextlib.contextmanager
    def loop(self, size: int | ir.Value, unroll: bool = True, iter_args=()):
        """`scf.for %iv = 0 to size step 1`; yields (builder inside, iv, carried values, op).

        Without `iter_args` the body builder inserts before the loop's
        `scf.yield`; with them the body must end by calling `yield_`.
        """
        upper = self._value(size)
        op = self.op("scf.for", [self.index(0), upper, self.index(1), *iter_args],
                     [v.type for v in iter_args], regions=1)
        if unroll:
            op.attributes[UNROLL_ATTR] = ir.UnitAttr.get()
        block = op.regions[0].blocks.append(index_type(), *[v.type for v in iter_args])
        inner = self.at(ir.InsertionPoint(block))
        if not iter_args:
            inner = inner.before(inner.op("scf.yield"))
        yield inner, block.arguments[0], list(block.arguments)[1:], op

    def yield_(self, values=()) -> None:
        self.op("scf.yield", list(values))

    @contextlib.contextmanager
    def if_(self, condition: ir.Value):
        """`scf.if condition { ... }` without results; yields the builder inside the then-block."""
        op = self.op("scf.if", [condition], regions=2)
        block = op.regions[0].blocks.append()
        yield self.at(ir.InsertionPoint(block)).before(
            ir.Operation.create("scf.yield", loc=self.loc, ip=ir.InsertionPoint(block)))

    # ------------------------------------------------------------- memory

    def load(self, memref: ir.Value, indices) -> ir.Value:
        indices = [self._value(i) for i in indices]
        return self.op("memref.load", [memref, *indices], [memref.type.element_type]).result

    def store(self, value: ir.Value, memref: ir.Value, indices) -> ir.Operation:
        indices = [self._value(i) for i in indices]
        return self.op("memref.store", [value, memref, *indices])

    def thread_id(self, threads: int) -> ir.Value:
        return self.op("gpu.thread_id", results=[index_type()], attributes={
            "dimension": ir.Attribute.parse("#gpu<dim x>"),
            "upper_bound": ir.IntegerAttr.get(index_type(), threads),
        }).result

    def shuffle_xor(self, value: ir.Value, offset: int, width: int = 32) -> ir.Value:
        i32 = ir.IntegerType.get_signless(32)
        return self.op("gpu.shuffle", [value, self.const(offset, i32), self.const(width, i32)],
                       [value.type, ir.IntegerType.get_signless(1)],
                       {"mode": ir.Attribute.parse("#gpu<shuffle_mode xor>")}).results[0]

    # ------------------------------------------------------------ elements

    def convert(self, value: ir.Value, to: ir.Type, src_unsigned: bool = False, dst_unsigned: bool = False) -> ir.Value:
        """Numeric conversion as a copy does it (`signedness.conversion_op`): the flags say which side's
        integers are unsigned."""
        if value.type == to:
            return value
        return self.op(conversion_op(value.type, to, src_unsigned, dst_unsigned), [value], [to]).result

    def absolute(self, value: ir.Value, unsigned: bool = False) -> ir.Value:
        """|value|; an unsigned integer or a bool is its own absolute value."""
        if isinstance(value.type, ir.IntegerType) and (unsigned or value.type.width == 1):
            return value
        name = "math.absf" if isinstance(value.type, ir.FloatType) else "math.absi"
        return self.op(name, [value], [value.type]).result

    def combine(self, kind: str, a: ir.Value, b: ir.Value, unsigned: bool = False) -> ir.Value:
        """a (+) b for a reduction kind (abs kinds combine partial results: sum or max); `unsigned`
        compares integers as unsigned, as bools (i1) always compare: False < True, so max is or, min is and."""
        if isinstance(a.type, ir.FloatType):
            name = {"sum": "arith.addf", "abssum": "arith.addf", "max": "arith.maximumf",
                    "absmax": "arith.maximumf", "min": "arith.minimumf"}[kind]
        else:
            name = int_combine_op(kind, unsigned or a.type.width == 1)
        return self.op(name, [a, b], [a.type]).result

    def select(self, condition: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.op("arith.select", [condition, a, b], [a.type]).result


def flat_index(builder: Builder, indices, extents) -> ir.Value:
    """Row-major linear index of `indices` in a box of `extents`."""
    terms, stride = [], 1
    for index, extent in reversed(list(zip(indices, extents))):
        terms.append((stride, index))
        stride *= extent
    return builder.linear(terms)

