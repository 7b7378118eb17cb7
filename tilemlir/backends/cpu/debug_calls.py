"""`tile.print` and `tile.device_assert` on the CPU: calls from the JIT-compiled kernel back into Python.

Both levels lower them with `lower_debug_ops` (lower-tile-to-loops before the grid becomes loops,
simulate-threads before the launch does): a `tile.print` becomes a call of
`@tilemlir_debug_print(site, bx, by, bz, thread, index, bits)` (at thread level only in the
printing thread), a `tile.device_assert` a call of `@tilemlir_debug_assert_failed(site, bx, by,
bz, thread)` when its condition is false (thread -1 at tile level, which has no threads). Each op
is a *site*: its text, kept as JSON in the function's `tile.print_sites` / `tile.assert_sites`.

The two external functions are ctypes callbacks registered with llvmlite under those names.
`CpuKernel` runs the kernel inside `debug_context(print_sites, assert_sites)`: a print writes its
line to `sys.stdout` as it happens (as the GPU's printf formats it), the first failed assertion
is kept and `DebugContext.raise_failure` raises it, located, after the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import struct
import sys
import threading

import llvmlite.binding as llvm

from tilemlir.diagnostics import DeviceAssertionError, Diagnostic, SourceLocation
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.debug_ops import PRINT_BUFFER_ATTR, print_parts, print_shape, string_attr
from tilemlir.analysis.signedness import UNSIGNED_ATTR
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, func, ir

PRINT_SITES_ATTR = "tile.print_sites"
ASSERT_SITES_ATTR = "tile.assert_sites"
PRINT_FUNCTION = "tilemlir_debug_print"
ASSERT_FUNCTION = "tilemlir_debug_assert_failed"
_PRINT_ARGS, _ASSERT_ARGS = 7, 5


# -- lowering -------------------------------------------------------------------------------------


def lower_debug_ops(root: ir.Operation, function: ir.Operation, block: list[ir.Value],
                    thread: ir.Value | None) -> None:
    """Lower every debug op under `root`. `block`: the block's 1 to 3 coordinates (index values);
    `thread`: the simulated thread's id (index), None at tile level."""
    prints = ops_named(root, "tile.print")
    asserts = ops_named(root, "tile.device_assert")
    if not prints and not asserts:
        return
    i64 = ir.IntegerType.get_signless(64)
    print_sites = _sites(function, PRINT_SITES_ATTR)
    assert_sites = _sites(function, ASSERT_SITES_ATTR)
    for op in prints:
        _declare(function, PRINT_FUNCTION, _PRINT_ARGS)
        with op.location, ir.InsertionPoint(op):
            value, coordinates, indices = print_parts(op)
            printer = ir.IntegerAttr(op.attributes["thread"]).value
            args = [b.constant(i64, len(print_sites)), *(_i64(c) for c in coordinates),
                    b.constant(i64, printer), _i64(_linear(indices, op)), _bits(value, op)]
            if thread is None:
                func.CallOp([], ir.FlatSymbolRefAttr.get(PRINT_FUNCTION), args)
            else:
                with b.if_then(arith.cmpi(b.CMPI.eq, thread, b.index(printer))):
                    func.CallOp([], ir.FlatSymbolRefAttr.get(PRINT_FUNCTION), args)
        print_sites.append(_print_site(op))
        op.erase()
    for op in asserts:
        _declare(function, ASSERT_FUNCTION, _ASSERT_ARGS)
        with op.location, ir.InsertionPoint(op):
            failed = arith.xori(op.operands[0], b.constant(ir.IntegerType.get_signless(1), 1))
            with b.if_then(failed):
                padded = [*block, *[b.index(0)] * (3 - len(block))]
                who = b.constant(i64, -1) if thread is None else _i64(thread)
                func.CallOp([], ir.FlatSymbolRefAttr.get(ASSERT_FUNCTION),
                            [b.constant(i64, len(assert_sites)), *(_i64(c) for c in padded), who])
        assert_sites.append(_assert_site(op, function))
        op.erase()
    for name, sites in ((PRINT_SITES_ATTR, print_sites), (ASSERT_SITES_ATTR, assert_sites)):
        function.attributes[name] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in sites])


def _sites(function: ir.Operation, name: str) -> list[str]:
    if name not in function.attributes:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(function.attributes[name])]


def _declare(function: ir.Operation, name: str, count: int) -> None:
    module = function.parent
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
            return
    i64 = ir.IntegerType.get_signless(64)
    with function.location, ir.InsertionPoint(function):
        func.FuncOp(name, ([i64] * count, []), visibility="private")


def _i64(value: ir.Value) -> ir.Value:
    return arith.index_cast(ir.IntegerType.get_signless(64), value)


def _linear(indices: list[ir.Value], op: ir.Operation) -> ir.Value:
    """The row-major element number of a buffer element's indices (0 for a scalar)."""
    shape = print_shape(op) or []
    linear = b.index(0)
    for index, extent in zip(indices, shape):
        linear = arith.addi(arith.muli(linear, b.index(extent)), index)
    return linear


def _bits(value: ir.Value, op: ir.Operation) -> ir.Value:
    """`value` as 64 bits: a float widened to f64, an integer extended (by its signedness)."""
    i64 = ir.IntegerType.get_signless(64)
    type_ = value.type
    if isinstance(type_, ir.IndexType):
        return arith.index_cast(i64, value)
    if isinstance(type_, ir.FloatType):
        wide = value if type_ == ir.F64Type.get() else arith.extf(ir.F64Type.get(), value)
        return arith.bitcast(i64, wide)
    if type_.width == 64:
        return value
    unsigned = UNSIGNED_ATTR in op.attributes or type_.width == 1
    return arith.extui(i64, value) if unsigned else arith.extsi(i64, value)


def _print_site(op: ir.Operation) -> str:
    type_ = op.operands[0].type
    if isinstance(type_, ir.FloatType):
        kind, bits = "float", 64 if type_ == ir.F64Type.get() else 32
    elif isinstance(type_, ir.IndexType):
        kind, bits = "int", 64
    else:
        bits = type_.width
        kind = "bool" if bits == 1 else "uint" if UNSIGNED_ATTR in op.attributes else "int"
    return json.dumps({"msg": string_attr(op, "msg"), "buffer": string_attr(op, PRINT_BUFFER_ATTR),
                       "shape": print_shape(op) or [], "kind": kind, "bits": bits})


def _assert_site(op: ir.Operation, function: ir.Operation) -> str:
    where = diag.source_location(op)
    return json.dumps({"msg": string_attr(op, "msg"), "kernel": ir.StringAttr(function.attributes["sym_name"]).value,
                       "where": None if where is None else [where.file, where.line, where.col]})


# -- formatting (what the CUDA printf writes too) -------------------------------------------------


def format_value(kind: str, bits: int, payload: int) -> str:
    if kind == "float":
        value = struct.unpack("<d", struct.pack("<q", payload))[0]
        return ("%.9g" if bits == 32 else "%.17g") % value
    if kind == "bool":
        return "true" if payload else "false"
    if kind == "uint":
        return str(payload % (1 << 64))
    return str(payload)


def format_line(site: dict, block: tuple[int, int, int], thread: int, index: int, payload: int) -> str:
    value = format_value(site["kind"], site["bits"], payload)
    head = f"{site['msg']}: block ({block[0]}, {block[1]}, {block[2]}), thread {thread}: "
    if site["buffer"] is None:
        return head + value
    coordinates = []
    for extent in reversed(site["shape"]):
        coordinates.append(index % extent)
        index //= extent
    return head + f"{site['buffer']}[{', '.join(str(c) for c in reversed(coordinates))}] = {value}"


# -- the run-time side ----------------------------------------------------------------------------


class DebugContext:
    """One run's sites, and the first assertion that failed in it."""

    def __init__(self, print_sites: list[str], assert_sites: list[str]):
        self.print_sites = [json.loads(s) for s in print_sites]
        self.assert_sites = [json.loads(s) for s in assert_sites]
        self.failure: tuple[int, tuple[int, int, int], int] | None = None
        self.failures = 0

    def raise_failure(self) -> None:
        if self.failure is None:
            return
        site_number, block, thread = self.failure
        site = self.assert_sites[site_number]
        where = SourceLocation(*site["where"]) if site["where"] else None
        who = f"block ({block[0]}, {block[1]}, {block[2]})" + ("" if thread < 0 else f", thread {thread}")
        more = f" ({self.failures - 1} more failure(s) in this run)" if self.failures > 1 else ""
        raise DeviceAssertionError(Diagnostic(
            "error", f"device assertion failed in kernel '{site['kernel']}', {who}: {site['msg']}{more}", where))


_current = threading.local()


@contextlib.contextmanager
def debug_context(print_sites: list[str], assert_sites: list[str]):
    context = DebugContext(print_sites, assert_sites)
    previous = getattr(_current, "context", None)
    _current.context = context
    try:
        yield context
    finally:
        _current.context = previous


def _on_print(site, bx, by, bz, thread, index, payload) -> None:
    context = getattr(_current, "context", None)
    if context is not None:
        sys.stdout.write(format_line(context.print_sites[site], (bx, by, bz), thread, index, payload) + "\n")


def _on_assert_failed(site, bx, by, bz, thread) -> None:
    context = getattr(_current, "context", None)
    if context is not None:
        context.failures += 1
        if context.failure is None:
            context.failure = (site, (bx, by, bz), thread)


_PRINT_CALLBACK = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * _PRINT_ARGS)(_on_print)
_ASSERT_CALLBACK = ctypes.CFUNCTYPE(None, *[ctypes.c_int64] * _ASSERT_ARGS)(_on_assert_failed)
llvm.add_symbol(PRINT_FUNCTION, ctypes.cast(_PRINT_CALLBACK, ctypes.c_void_p).value)
llvm.add_symbol(ASSERT_FUNCTION, ctypes.cast(_ASSERT_CALLBACK, ctypes.c_void_p).value)
