"""The cp.async statements: `tile.cp_async`, `tile.cp_async_commit`, `tile.cp_async_wait`, one line each.

Each is a call of a `tl_` prelude helper wrapping its PTX instruction (ISA 9.7.9.25.3), emitted
only when a kernel uses it: `tl_cp_async_cg16(&A_s[r][c], &A[i * 4096 + j]);` (16 bytes: `.cg`,
around L1), `tl_cp_async_ca8(...)` / `tl_cp_async_ca4(...)` (`.ca`), with a third argument, the
bytes to read, where the op zero-fills (`src_bytes`); `tl_cp_async_commit();`,
`tl_cp_async_wait<1>();`.
"""

from __future__ import annotations

from tilemlir.dialects.async_copy import cp_async_indices, cp_async_src_bytes
from tilemlir.emit_cuda import cexpr as C
from tilemlir.mlir import ir


def cp_async(emitter, op: ir.Operation) -> None:
    size = op.attributes["bytes"].value
    kind = "cg" if size == 16 else "ca"
    helper = f"cp_async_{kind}{size}"
    emitter.prelude.helper(helper)
    dst_indices, src_indices = cp_async_indices(op)
    dst = emitter.memory.element(op.operands[0], [emitter.value(v) for v in dst_indices], op)
    src = emitter.memory.element(op.operands[1], [emitter.value(v) for v in src_indices], op)
    args = [f"&{C.paren(dst, C.UNARY)}", f"&{C.paren(src, C.UNARY)}"]
    src_bytes = cp_async_src_bytes(op)
    if src_bytes is not None:
        args.append(f"(unsigned){C.paren(emitter.value(src_bytes), C.UNARY)}")
    emitter.out.line(f"tl_{helper}({', '.join(args)});")


def commit(emitter, op: ir.Operation) -> None:
    emitter.prelude.helper("cp_async_commit")
    emitter.out.line("tl_cp_async_commit();")


def wait(emitter, op: ir.Operation) -> None:
    emitter.prelude.helper("cp_async_wait")
    emitter.out.line(f"tl_cp_async_wait<{op.attributes['pending'].value}>();")


HANDLERS = {"tile.cp_async": cp_async, "tile.cp_async_commit": commit, "tile.cp_async_wait": wait}
