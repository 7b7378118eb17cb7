"""The debugging statements: `tile.print` (printf from one thread) and `tile.device_assert` (`__assertfail`).

    if (tx == 0) printf("x: block (%lld, %lld, %lld), thread 0: x[%lld] = %.9g\\n", (long long)bx, 0LL, 0LL,
                        (long long)i, (double)v);
    if (!(ok)) __assertfail("x is small", "kernel.py", 15u, "k", sizeof(char));

A print's line is the CPU backend's (`backends/cpu/debug_calls.format_line`): `%.9g` for a float
(widened from a narrower float by the frontend), `%.17g` for a double, integers by their signedness
(`tile.unsigned`), bools as true/false. `__assertfail` is what CUDA's `assert` calls: it reports the
message, the Python file and line, the kernel and the failing block and thread, and traps, so the
launch fails with cudaErrorAssert. Both are built into NVRTC: no header is needed.
"""

from __future__ import annotations

import os

from tilemlir.analysis.signedness import UNSIGNED_ATTR
from tilemlir.diagnostics.reporting import error, source_location
from tilemlir.dialects.debug_ops import PRINT_BUFFER_ATTR, print_parts, string_attr
from tilemlir.emit_cuda import cexpr as C
from tilemlir.mlir import ir

_SIGNED = {8: "signed char", 16: "short", 32: "int", 64: "long long"}
_UNSIGNED = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}


def c_string(text: str) -> str:
    """`text` as a C string literal."""
    return f'"{_escaped(text)}"'


def _escaped(text: str, escape_percent: bool = False) -> str:
    """`text` inside a C string literal: UTF-8, every byte outside printable ASCII as an octal escape;
    `%` doubled in a printf format."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "%" and escape_percent:
            out.append("%%")
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def print_statement(emitter, op: ir.Operation) -> None:
    value, block, indices = print_parts(op)
    thread = ir.IntegerAttr(op.attributes["thread"]).value
    spec, argument = _value_format(emitter, op, value)
    fmt = f"{_escaped(string_attr(op, 'msg'), True)}: block (%lld, %lld, %lld), thread {thread}: "
    if indices:
        fmt += f"{_escaped(string_attr(op, PRINT_BUFFER_ATTR), True)}[{', '.join(['%lld'] * len(indices))}] = "
    fmt = f'"{fmt}{spec}\\n"'
    args = [fmt, *(_long_long(emitter, v) for v in [*block, *indices]), argument]
    tid = emitter.id_var("gpu.thread_id", "x")
    emitter.out.wrapped(f"if ({tid.text} == {thread}) printf(", args, ");")


def _long_long(emitter, value: ir.Value) -> str:
    expr = emitter.value(value)
    return C.int_lit(expr.value, wide=True).text if expr.value is not None else f"(long long){C.paren(expr, C.UNARY)}"


def _value_format(emitter, op: ir.Operation, value: ir.Value) -> tuple[str, str]:
    """(printf conversion, argument) of the printed value."""
    type_, expr = value.type, emitter.value(value)
    operand = C.paren(expr, C.UNARY)
    if isinstance(type_, ir.F64Type):
        return "%.17g", operand
    if isinstance(type_, ir.F32Type):
        return "%.9g", f"(double){operand}"
    if isinstance(type_, ir.IndexType):
        return "%lld", f"(long long){operand}"
    if isinstance(type_, ir.IntegerType) and type_.width == 1:
        return "%s", f'{C.paren(expr, C.COND + 1)} ? "true" : "false"'
    if isinstance(type_, ir.IntegerType) and type_.width in _SIGNED:
        if UNSIGNED_ATTR in op.attributes:
            return "%llu", f"(unsigned long long)({_UNSIGNED[type_.width]}){operand}"
        return "%lld", f"(long long)({_SIGNED[type_.width]}){operand}"
    raise error(op, f"tile.print of {type_} is not supported by the CUDA emitter (the frontend widens narrow floats)")


def assert_statement(emitter, op: ir.Operation) -> None:
    where = source_location(op.location)
    file, line = (os.path.basename(where.file), where.line) if where is not None else ("<unknown>", 0)
    condition = emitter.value(op.operands[0])
    emitter.out.line(f"if (!{C.paren(condition, C.UNARY)}) __assertfail({c_string(string_attr(op, 'msg'))}, "
                     f"{c_string(file)}, {line}u, {c_string(emitter.kernel.name)}, sizeof(char));")


HANDLERS = {"tile.print": print_statement, "tile.device_assert": assert_statement}
