"""The debugging ops of the `tile` dialect: `tile.print` and `tile.device_assert` (`T.print`, `T.device_assert`).

Both stay from the frontend to the target, unchanged by the passes (no results, no memory effect a
pass must order, except that `tile.print` reads its operands); each backend implements them:
printf and `__assertfail` in CUDA, calls back into Python on the CPU. Defined on
`tilemlir.dialects.tile.Tile`, loaded with it.
"""

from collections.abc import Sequence
from typing import Any

from tilemlir.dialects.tile import Tile, _checked, _int_attr
from tilemlir.ir_util import enclosing
from tilemlir.mlir import ext, ir

Operand = ext.Operand
PRINT_BUFFER_ATTR = "buffer"  # on a tile.print of a buffer element: the buffer's name
PRINT_SHAPE_ATTR = "shape"  # and its shape (the element indices' extents)
BLOCK_OPERANDS = 3  # a tile.print's block coordinates (x, y, z) after its value


def _in_kernel_problem(op) -> str | None:
    if enclosing(op.operation, "tile.kernel") is None and enclosing(op.operation, "gpu.launch") is None:
        return "must be inside a tile.kernel or a gpu.launch"
    return None


def _threads(op) -> int | None:
    kernel = enclosing(op.operation, "tile.kernel")
    if kernel is None or "threads" not in kernel.attributes:
        return None
    return ir.IntegerAttr(kernel.attributes["threads"]).value


class PrintOp(Tile.Operation, name="print"):
    """Print one scalar from one thread of each block that runs it: `msg`, the block's coordinates,
    the printing thread and `value`; for an element of a buffer (a `buffer` name attribute), also
    its indices. At tile level the op stands where the block's uniform code runs (never inside a
    `tile.parallel`); at thread level every thread reaches it and only thread `thread` prints.
    A `tile.unsigned` attribute prints an integer as unsigned.

        "tile.print"(%v, %bx, %c0, %c0) {msg = "x * 2", thread = 0 : i64} : (f32, index, index, index) -> ()
        "tile.print"(%v, %bx, %c0, %c0, %i, %j) {msg = "acc", buffer = "acc", shape = [4, 8], thread = 32 : i64}
            : (f32, index, index, index, index, index) -> ()
    """

    value: Operand[Any]
    block_x: Operand[ir.IndexType]
    block_y: Operand[ir.IndexType]
    block_z: Operand[ir.IndexType]
    indices: Sequence[Operand[ir.IndexType]]
    msg: ir.StringAttr
    thread: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        type_ = operands[0].type
        if not isinstance(type_, (ir.IntegerType, ir.IndexType, ir.FloatType)):
            return f"value must be a scalar (integer, index or float), got {type_}"
        indexed = len(operands) > 1 + BLOCK_OPERANDS
        named = PRINT_BUFFER_ATTR in self.operation.attributes
        if indexed != named:
            return ("a buffer element's print has a 'buffer' name and its indices; a scalar's has neither, got "
                    f"{len(operands) - 1 - BLOCK_OPERANDS} indices and {'a' if named else 'no'} 'buffer'")
        if named and not isinstance(self.operation.attributes[PRINT_BUFFER_ATTR], ir.StringAttr):
            return f"'buffer' must be a string, got {self.operation.attributes[PRINT_BUFFER_ATTR]}"
        if named and print_shape(self.operation) is None:
            return (f"a buffer element's print needs a 'shape', an array of {len(operands) - 1 - BLOCK_OPERANDS} "
                    f"positive integers (one per index), got {self.operation.attributes.get(PRINT_SHAPE_ATTR)}")
        thread = _int_attr(self, "thread")
        threads = _threads(self)
        if thread is None or thread < 0 or (threads is not None and thread >= threads):
            bound = f" below the kernel's {threads} threads" if threads is not None else ""
            return f"'thread' must be a thread of the block (0 or more{bound}), got {self.operation.attributes['thread']}"
        if enclosing(self.operation, "tile.parallel") is not None:
            return "must not be inside a tile.parallel (its points run on different threads)"
        return _in_kernel_problem(self)


class DeviceAssertOp(Tile.Operation, name="device_assert"):
    """Stop the kernel when `cond` is false, reporting `msg` and the op's location: `__assertfail`
    (a trap: the launch fails) on the GPU, a located error raised after the run on the CPU. Every
    thread that reaches it checks its own `cond`.

        "tile.device_assert"(%ok) {msg = "i < n"} : (i1) -> ()
    """

    cond: Operand[ir.IntegerType]
    msg: ir.StringAttr

    @_checked
    def verify_invariants(self):
        type_ = self.operation.operands[0].type
        if not (isinstance(type_, ir.IntegerType) and type_.width == 1):
            return f"cond must be i1, got {type_}"
        return _in_kernel_problem(self)


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def print_(value, block: Sequence, msg: str, thread: int, buffer: tuple[str, Sequence[int]] | None = None,
           indices: Sequence = (), *, loc=None, ip=None) -> PrintOp:
    """`block`: the three block coordinates (index values); `buffer`: (name, shape) of the buffer an
    element of which `value` is, at `indices`."""
    op = PrintOp(value, *block, list(indices), ir.StringAttr.get(msg), _i64(1), loc=loc, ip=ip)
    op.operation.attributes["thread"] = _i64(thread)  # the DSL rejects a falsy attribute (0) at construction
    if "operandSegmentSizes" in op.operation.attributes:
        del op.operation.attributes["operandSegmentSizes"]
    if buffer is not None:
        op.operation.attributes[PRINT_BUFFER_ATTR] = ir.StringAttr.get(buffer[0])
        op.operation.attributes[PRINT_SHAPE_ATTR] = ir.ArrayAttr.get([_i64(extent) for extent in buffer[1]])
    return op


def device_assert(cond, msg: str, *, loc=None, ip=None) -> DeviceAssertOp:
    return DeviceAssertOp(cond, ir.StringAttr.get(msg), loc=loc, ip=ip)


def print_parts(op: ir.Operation) -> tuple[ir.Value, list[ir.Value], list[ir.Value]]:
    """(value, the three block coordinates, the element indices) of a `tile.print`."""
    operands = list(op.operands)
    return operands[0], operands[1:1 + BLOCK_OPERANDS], operands[1 + BLOCK_OPERANDS:]


def print_shape(op: ir.Operation) -> list[int] | None:
    """The `shape` of a buffer element's `tile.print`, None when it has none or a malformed one."""
    attr = op.attributes[PRINT_SHAPE_ATTR] if PRINT_SHAPE_ATTR in op.attributes else None
    if not isinstance(attr, ir.ArrayAttr):
        return None
    extents = [a.value if isinstance(a, ir.IntegerAttr) else 0 for a in attr]
    if len(extents) != len(op.operands) - 1 - BLOCK_OPERANDS or any(e <= 0 for e in extents):
        return None
    return extents


def string_attr(op: ir.Operation, name: str) -> str | None:
    return ir.StringAttr(op.attributes[name]).value if name in op.attributes else None
