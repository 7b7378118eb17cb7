"""What an out-of-range global read reads: the identity of the reduction it feeds.

docs/ir.md's rule, made precise here so the CPU reference and the GPU
lowering agree (both call `padding_value`):

- The *read* is a `tile.copy` whose source is a global tensor, or a global
  `memref.load` inside a `tile.parallel`.
- Its *destination buffers*: the copy's `dst`; for a load, every on-chip
  buffer that a `memref.store` in the same `tile.parallel` writes with a
  value computed from the load (through any element code).
- The reductions it *feeds*: scanning forward in program order from the
  read (into nested regions, out through enclosing blocks up to the
  kernel, and once around an enclosing serial loop), every `tile.reduce`
  whose `src` holds the read's values. A buffer holds them from the read
  until an op overwrites it; a `tile.copy` from a holding buffer, or a
  `tile.parallel` that stores a loaded element of one unchanged (up to
  float/int conversions), makes its destination hold them too.
- The value: the identity of the one kind fed (0 for sum, abssum, absmax;
  -inf for max, +inf for min), 0 when none or several kinds are fed. For an
  element type without infinities (f8E4M3FN) or an integer type, the
  lowest / highest finite value stands for -inf / +inf; an unsigned
  buffer's (`analysis.signedness`) are 0 and all ones.
- A max/min identity is that of the *reduced* buffer's type and signedness,
  carried back to the read type through the conversions on the way
  (`analysis.converted_identity`): an int8 global copied into a uint8
  fragment feeding a max pads with 0, not -128 (which the copy makes 128).
  The conversions followed are the copies' and direct element stores' (a
  loaded value stored unchanged, or through the one conversion a copy
  would use); a value computed from the load keeps the read type's
  identity, as do reductions fed along paths that disagree.
"""

from __future__ import annotations

import math


from tilemlir.analysis.converted_identity import Step, converted_identity
from tilemlir.analysis.signedness import conversion_op, int_attr, int_range, is_unsigned
from tilemlir.dialects.tile import memory_space
from tilemlir.ir_util import enclosing, operation, walk_ops
from tilemlir.mlir import ir

PAD_ATTR = "tile.pad"

_CONVERSIONS = {
    "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
    "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast",
}
_LOOPS = ("scf.for", "scf.while", "tile.pipelined")


def padding_value(op) -> float | int:
    """The value an out-of-range element read by `op` reads as (see the module docstring)."""
    op = operation(op)
    read_type = _read_element_type(op)
    read_unsigned = is_unsigned(op.operands[0])
    fed = _fed_reductions(op)
    kinds = {kind for kind, _ in fed}
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind not in ("max", "min"):
        return identity(kind, read_type, read_unsigned)
    read = (str(read_type), read_unsigned)
    values = {converted_identity(kind, read, path) for _, path in fed}
    return values.pop() if len(values) == 1 else identity(kind, read_type, read_unsigned)


def padding_attr(op) -> ir.Attribute:
    """`padding_value(op)` as an attribute of the read element type (what `tile.pad` holds)."""
    op = operation(op)
    read_type = _read_element_type(op)
    value = padding_value(op)
    if isinstance(read_type, ir.FloatType):
        with op.location:
            return ir.FloatAttr.get(read_type, float(value))
    return int_attr(read_type, int(value))


def identity(kind: str | None, element_type: ir.Type, unsigned: bool = False) -> float | int:
    """The identity of reduction `kind` (None: 0) in `element_type` (integers read as unsigned when
    `unsigned`)."""
    if kind not in ("max", "min"):
        return 0.0 if isinstance(element_type, ir.FloatType) else 0
    lowest = kind == "max"
    if isinstance(element_type, ir.IntegerType):
        low, high = int_range(element_type.width, unsigned)
        return low if lowest else high
    largest = FINITE_FLOAT_MAX.get(str(element_type))
    if largest is None:  # the type has infinities
        return -math.inf if lowest else math.inf
    return -largest if lowest else largest


# The float types without an infinity and their largest finite value (test_padding checks them against
# ml_dtypes' finfo); every other float type has infinities. A table rather than ml_dtypes: importing it
# would cost every compile about half a second.
FINITE_FLOAT_MAX = {"f8E4M3FN": 448.0, "f8E4M3FNUZ": 240.0, "f8E5M2FNUZ": 57344.0}


def _read_element_type(op: ir.Operation) -> ir.Type:
    if op.name == "tile.copy":
        src = op.operands[0].type
        if memory_space(src) is not None:
            raise ValueError(f"padding_value: tile.copy reads {src}, not a global tensor")
        return src.element_type
    if op.name == "memref.load" and memory_space(op.operands[0].type) is None:
        if enclosing(op, "tile.parallel", stop="tile.kernel") is None:
            raise ValueError("padding_value: the global memref.load is not inside a tile.parallel")
        return op.results[0].type
    raise ValueError(f"padding_value expects a tile.copy from global memory or a global memref.load, got {op.name}")


def _fed_reductions(op: ir.Operation) -> set[tuple[str, tuple[Step, ...]]]:
    """(kind, conversion path from the read to the reduced buffer) of every reduction the read feeds."""
    if op.name == "tile.copy":
        holders, anchor = [(op.operands[1], (_step(op.operands[1]),))], op
    else:
        anchor = enclosing(op, "tile.parallel", stop="tile.kernel")
        holders = _stores_derived_from(op, anchor)
    tracker = _Tracker(holders)
    for later in _ops_after(anchor):
        tracker.visit(later)
        if not tracker.holders:
            break
    return tracker.fed


def _step(buffer: ir.Value) -> Step:
    return str(buffer.type.element_type), is_unsigned(buffer)


def _stores_derived_from(load: ir.Operation, parallel: ir.Operation) -> list[tuple[ir.Value, tuple[Step, ...]]]:
    """On-chip buffers that stores inside `parallel` write with values computed from `load`'s, each with
    its conversion path: the buffer's step for a direct store, none for a computed value (which the
    read type's identity pads)."""
    value = load.results[0]
    derived, buffers, work = {value}, [], [value]
    while work:
        for use in list(work.pop().uses):
            user = operation(use.owner)
            if user.name == "memref.store":
                if use.operand_number == 0 and memory_space(user.operands[1].type) is not None:
                    buffer = user.operands[1]
                    buffers.append((buffer, (_step(buffer),) if _stored_directly(user, load) else ()))
                continue
            for result in user.results:
                if result not in derived:
                    derived.add(result)
                    work.append(result)
    return buffers


def _stored_directly(store: ir.Operation, load: ir.Operation) -> bool:
    """`store` writes `load`'s value unchanged, or through the one conversion a copy would use."""
    value = store.operands[0]
    if value == load.results[0]:
        return True
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return False
    owner = operation(owner)
    if owner.name not in _CONVERSIONS or owner.operands[0] != load.results[0]:
        return False
    src, dst = load.results[0].type, value.type
    return owner.name == conversion_op(src, dst, is_unsigned(load.operands[0]), is_unsigned(store.operands[1]))


class _Tracker:
    """Follows which buffers hold the read's values (and through which conversions) while scanning ops in
    program order."""

    def __init__(self, holders: list[tuple[ir.Value, tuple[Step, ...]]]):
        self.holders = list(holders)
        self.fed: set[tuple[str, tuple[Step, ...]]] = set()

    def path(self, buffer: ir.Value) -> tuple[Step, ...] | None:
        return next((path for held, path in self.holders if held == buffer), None)

    def holds(self, buffer: ir.Value) -> bool:
        return self.path(buffer) is not None

    def drop(self, buffer: ir.Value) -> None:
        self.holders = [(h, path) for h, path in self.holders if h != buffer]

    def visit(self, op: ir.Operation) -> None:
        name = op.name
        if name == "tile.reduce":
            src, dst = op.operands[0], op.operands[1]
            if self.holds(src):
                self.fed.add((op.attributes["kind"].value, self.path(src)))
            self.drop(dst)
        elif name == "tile.copy":
            src, dst = op.operands[0], op.operands[1]
            path = self.path(src)
            if path is not None:
                self.holders.append((dst, path + (_step(dst),) if path else ()))
            else:
                self.drop(dst)
        elif name == "tile.fill":
            self.drop(op.operands[0])
        elif name == "tile.parallel":
            self._visit_parallel(op)
        else:
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        self.visit(inner.operation)

    def _visit_parallel(self, op: ir.Operation) -> None:
        moved, written = [], []
        for inner in walk_ops(op):
            if inner.name != "memref.store" or memory_space(inner.operands[1].type) is None:
                continue
            buffer = inner.operands[1]
            written.append(buffer)
            source = _unconverted(inner.operands[0])
            if source is not None and source.name == "memref.load" and self.holds(source.operands[0]):
                path = self.path(source.operands[0])
                direct = _stored_directly(inner, source) and path
                moved.append((buffer, path + (_step(buffer),) if direct else ()))
        for buffer in written:
            if not any(buffer == m for m, _ in moved):
                self.drop(buffer)
        self.holders.extend(m for m in moved if not self.holds(m[0]))


def _unconverted(value: ir.Value) -> ir.Operation | None:
    """The op defining `value` once float/int conversions are looked through."""
    owner = value.owner
    while isinstance(owner, (ir.Operation, ir.OpView)):
        owner = operation(owner)
        if owner.name not in _CONVERSIONS:
            return owner
        owner = owner.operands[0].owner
    return None


def _ops_after(op: ir.Operation):
    """Ops after `op` in program order, up to the end of its tile.kernel; once around enclosing loops."""
    current = op
    while current is not None and current.name != "tile.kernel":
        block = current.block
        ops = [o.operation for o in block.operations]
        index = next(i for i, o in enumerate(ops) if o == current)
        yield from ops[index + 1 :]
        parent = operation(block.owner) if block.owner is not None else None
        if parent is not None and parent.name in _LOOPS:
            yield from ops[: index + 1] if current != op else ops[:index]
        current = parent
