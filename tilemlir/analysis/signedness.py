"""Which integer buffers hold unsigned values, and the signedness-aware choices built on that.

MLIR integers are signless: uint8 and int8 are both `i8`. Element code
carries signedness in its ops (the frontend picks `divui`, `cmpi ult`,
`uitofp`, ...), but the tile ops (`tile.copy`, `tile.reduce`, `tile.gemm`)
convert, compare and pad whole buffers, so their lowerings need the
buffer's language dtype. docs/ir.md's rule: a buffer is unsigned when it
is a function argument whose `tile.arg_dtypes` entry is a `uint*` name, or
the result of an allocation marked `tile.unsigned` (the frontend marks
`tile.alloc_*` of a uint dtype; lowerings that allocate a buffer holding
another's values mark it alike).
"""

from __future__ import annotations

from tilemlir.ir_util import operation
from tilemlir.mlir import ir

UNSIGNED_ATTR = "tile.unsigned"


def is_unsigned(buffer: ir.Value) -> bool:
    """Whether the memref `buffer` holds unsigned integers (see the module docstring)."""
    if not isinstance(buffer.type, ir.MemRefType) or not isinstance(buffer.type.element_type, ir.IntegerType):
        return False
    owner = buffer.owner
    if isinstance(owner, ir.Block):
        return _argument_dtype(owner, ir.BlockArgument(buffer).arg_number).startswith("uint")
    return UNSIGNED_ATTR in operation(owner).attributes


def mark_unsigned(op, unsigned: bool = True) -> None:
    """Record on an allocation that its buffer holds unsigned integers (no-op when `unsigned` is False)."""
    if unsigned:
        operation(op).attributes[UNSIGNED_ATTR] = ir.UnitAttr.get()


def _argument_dtype(block: ir.Block, index: int) -> str:
    function = block.owner
    if function is None or operation(function).name != "func.func":
        return ""
    attrs = operation(function).attributes
    if "tile.arg_dtypes" not in attrs:
        return ""
    names = ir.ArrayAttr(attrs["tile.arg_dtypes"])
    return ir.StringAttr(names[index]).value if index < len(names) else ""


def int_range(width: int, unsigned: bool) -> tuple[int, int]:
    """The lowest and highest value of a `width`-bit integer read as unsigned or signed (i1: 0 and 1)."""
    if unsigned or width == 1:
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def int_attr(type_: ir.Type, value: int) -> ir.IntegerAttr:
    """An IntegerAttr holding `value`'s bits: the bindings take a signed 64-bit number, so an unsigned
    value beyond the signed range is given as the signed reading of the same bits."""
    if isinstance(type_, ir.IntegerType) and type_.width > 1:
        width = type_.width
        value &= (1 << width) - 1
        if value >> (width - 1):
            value -= 1 << width
    return ir.IntegerAttr.get(type_, int(value))


def conversion_op(src: ir.Type, dst: ir.Type, src_unsigned: bool = False, dst_unsigned: bool = False) -> str:
    """The `arith` op converting a scalar of type `src` to `dst` (distinct types, not two floats of one
    width): floats round to nearest even, float to integer truncates toward zero, an integer is read as
    unsigned when `src_unsigned` (or it is an i1), a float becomes an unsigned integer when `dst_unsigned`."""
    src_float, dst_float = isinstance(src, ir.FloatType), isinstance(dst, ir.FloatType)
    if src_float and dst_float:
        return "arith.extf" if dst.width > src.width else "arith.truncf"
    if src_float:
        return "arith.fptoui" if dst_unsigned else "arith.fptosi"
    unsigned = src_unsigned or src.width == 1
    if dst_float:
        return "arith.uitofp" if unsigned else "arith.sitofp"
    if dst.width > src.width:
        return "arith.extui" if unsigned else "arith.extsi"
    return "arith.trunci"


def int_combine_op(kind: str, unsigned: bool = False) -> str:
    """The `arith` op combining two integer partial results of reduction `kind`."""
    if kind in ("sum", "abssum"):
        return "arith.addi"
    suffix = "ui" if unsigned else "si"
    return f"arith.max{suffix}" if kind in ("max", "absmax") else f"arith.min{suffix}"
