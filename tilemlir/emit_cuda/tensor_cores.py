"""Tensor-core statements: `tile.ldmatrix`, `tile.stmatrix` and `tile.mma_sync`, one line each.

Each op is one call of a `tl_` prelude helper holding the instruction's
inline PTX, on constant-offset slices of register arrays (kept in
registers once the loops around them are unrolled):

    tl_ldmatrix_x4_trans(b_frag + 4, &B_s[k][n]);
    tl_stmatrix_x2_f32_bf16(&C_s[r][c], C_f[0], C_f[1], C_f[2], C_f[3]);
    tl_mma_m16n8k16_f32_f16(C_f + 36, a_frag + 4, b_frag + 2);

A helper is added to the prelude only when a kernel uses it, so kernels
without tensor-core ops print exactly as before. A fragment A held as
16-bit elements (`half A_f[64]`) is packed into .b32 pairs inside its
helper (`..._f16a`); an f16 accumulator likewise (`tl_mma_m16n8k16_f16_f16`);
stmatrix's elements, passed one by one, are converted (f32, rounded to
nearest even) and packed into its .b32 registers inside its helper.
"""

from __future__ import annotations

from tilemlir.dialects.tensor_core_ops import stmatrix_registers
from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.statement_context import StatementContext
from tilemlir.mlir import ir

_HALF = {"f16": ("half", "__half_as_ushort"), "bf16": ("__nv_bfloat16", "__bfloat16_as_ushort")}
_ROUND_FROM_F32 = {"f16": "__float2half_rn", "bf16": "__float2bfloat16_rn"}


def ldmatrix_helper(count: int, trans: bool) -> tuple[str, str]:
    """(name, definition) of the ldmatrix helper for `count` matrices (.trans with `trans`)."""
    name = f"tl_ldmatrix_x{count}{'_trans' if trans else ''}"
    outs = ", ".join(f"%{i}" for i in range(count))
    regs = ", ".join(f'"=r"(d[{i}])' for i in range(count))
    return name, (
        f"__device__ __forceinline__ void {name}(int* d, const void* row) {{\n"
        "  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));\n"
        f'  asm volatile("ldmatrix.sync.aligned.m8n8.x{count}{".trans" if trans else ""}.shared.b16 '
        f'{{{outs}}}, [%{count}];"\n'
        f'               : {regs} : "r"(address));\n'
        "}")


def stmatrix_helper(count: int, trans: bool, src_type: str, dst_type: str) -> tuple[str, str]:
    """(name, definition) of the stmatrix helper for `count` matrices (.trans with `trans`) of `dst_type`
    elements from `src_type` ones (f32, converted, or `dst_type` itself): a shared address, then the
    2 * count elements, each register's pair low half first."""
    name = f"tl_stmatrix_x{count}{'_trans' if trans else ''}_{src_type}_{dst_type}"
    half_type, to_bits = _HALF[dst_type]
    if src_type == "f32":
        param_type, bits = "float", f"{to_bits}({_ROUND_FROM_F32[dst_type]}(x))"
    else:
        param_type, bits = half_type, f"{to_bits}(x)"
    params = ", ".join(f"{param_type} a{i}" for i in range(2 * count))
    regs = ", ".join(f"%{i + 1}" for i in range(count))
    packed = ", ".join(f'"r"(pack(a{2 * i}, a{2 * i + 1}))' for i in range(count))
    return name, (
        f"__device__ __forceinline__ void {name}(void* row, {params}) {{\n"
        "  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));\n"
        f"  const auto bits = []({param_type} x) {{ return static_cast<unsigned>({bits}); }};\n"
        f"  const auto pack = [&]({param_type} lo, {param_type} hi) {{ return bits(lo) | (bits(hi) << 16); }};\n"
        f'  asm volatile("stmatrix.sync.aligned.m8n8.x{count}{".trans" if trans else ""}.shared.b16 '
        f'[%0], {{{regs}}};"\n'
        f'               :: "r"(address), {packed} : "memory");\n'
        "}")


def mma_helper(operand_type: str, accumulate: str, halves_a: bool) -> tuple[str, str]:
    """(name, definition) of the m16n8k16 helper for `operand_type` inputs accumulating in `accumulate`,
    A given as four .b32 registers or (`halves_a`) as eight 16-bit elements."""
    name = f"tl_mma_m16n8k16_{accumulate}_{operand_type}{'a' if halves_a else ''}"
    half_type, to_bits = _HALF[operand_type]
    a_param = f"const {half_type}* a" if halves_a else "const int* a"
    lines = [f"__device__ __forceinline__ void {name}({'float' if accumulate == 'f32' else 'half'}* d, "
             f"{a_param}, const int* b) {{"]
    if halves_a:
        lines.append("  unsigned ra[4];")
        lines.append("  for (int i = 0; i < 4; ++i) "
                     f"ra[i] = {to_bits}(a[2 * i]) | (static_cast<unsigned>({to_bits}(a[2 * i + 1])) << 16);")
    a_regs = ", ".join(f'"r"({"ra" if halves_a else "a"}[{i}])' for i in range(4))
    ptx = f"mma.sync.aligned.m16n8k16.row.col.{accumulate}.{operand_type}.{operand_type}.{accumulate}"
    if accumulate == "f32":
        lines.append(f'  asm volatile("{ptx} {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};"')
        lines.append(f'               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])')
        lines.append(f'               : {a_regs}, "r"(b[0]), "r"(b[1]));')
    else:
        lines.append("  unsigned c[2];")
        lines.append("  for (int i = 0; i < 2; ++i) "
                     "c[i] = __half_as_ushort(d[2 * i]) | (static_cast<unsigned>(__half_as_ushort(d[2 * i + 1])) << 16);")
        lines.append(f'  asm volatile("{ptx} {{%0, %1}}, {{%2, %3, %4, %5}}, {{%6, %7}}, {{%0, %1}};"')
        lines.append(f'               : "+r"(c[0]), "+r"(c[1])')
        lines.append(f'               : {a_regs}, "r"(b[0]), "r"(b[1]));')
        lines.append("  for (int i = 0; i < 2; ++i) {")
        lines.append("    d[2 * i] = __ushort_as_half(static_cast<unsigned short>(c[i] & 0xffffu));")
        lines.append("    d[2 * i + 1] = __ushort_as_half(static_cast<unsigned short>(c[i] >> 16));")
        lines.append("  }")
    lines.append("}")
    return name, "\n".join(lines)


class TensorCoreStatements:
    def __init__(self, cx: StatementContext):
        self._cx = cx

    def ldmatrix(self, op: ir.Operation) -> None:
        operands = list(op.operands)
        count = ir.IntegerAttr(op.attributes["count"]).value
        trans = ir.BoolAttr(op.attributes["trans"]).value
        name, text = ldmatrix_helper(count, trans)
        self._cx.prelude.helper_text(name, text)
        row = self._cx.memory.element(operands[0], [self._cx.value(v) for v in operands[2:]], op)
        dst = self._slice(operands[1], ir.IntegerAttr(op.attributes["dst_offset"]).value)
        self._cx.out.line(f"{name}({dst}, &{row.text});")

    def stmatrix(self, op: ir.Operation) -> None:
        dst, src, *indices = op.operands
        registers = stmatrix_registers(op)
        trans = ir.BoolAttr(op.attributes["trans"]).value
        name, text = stmatrix_helper(len(registers), trans, str(src.type.element_type), str(dst.type.element_type))
        self._cx.prelude.helper_text(name, text)
        row = self._cx.memory.element(dst, [self._cx.value(v) for v in indices], op)
        elements = [self._cx.memory.element(src, [C.int_lit(offset + half)], op).text
                    for offset in registers for half in range(2)]
        self._cx.out.line(f"{name}(&{row.text}, {', '.join(elements)});")

    def mma_sync(self, op: ir.Operation) -> None:
        a, b, c = op.operands
        operand_type = ir.StringAttr(op.attributes["operand_type"]).value
        halves_a = not isinstance(a.type.element_type, ir.IntegerType)
        name, text = mma_helper(operand_type, str(c.type.element_type), halves_a)
        self._cx.prelude.helper_text(name, text)
        args = [self._slice(v, ir.IntegerAttr(op.attributes[f"{label}_offset"]).value)
                for v, label in ((c, "c"), (a, "a"), (b, "b"))]
        self._cx.out.line(f"{name}({', '.join(args)});")

    def _slice(self, registers: ir.Value, offset: int) -> str:
        array: CExpr = self._cx.memory.element(registers, [], registers.owner)
        return array.text if offset == 0 else f"{array.text} + {offset}"
