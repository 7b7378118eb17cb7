"""The warpgroup statements: wgmma descriptors, `tile.wgmma` and the wgmma / proxy fences, one line each.

Each is a call of a `tl_` helper holding its PTX (ISA 9.7.15), generated into the prelude only when a
kernel uses it:

    const unsigned long long A_s_desc = tl_wgmma_desc(&A_s[...], 16, 1024, 1);
    tl_wgmma_m64n128k16_f32_bf16_kn(C_f + 64, A_s_desc, B_s_desc);
    tl_wgmma_m64n128k32_f32_e4m3_e4m3(C_f, A_s_desc, B_s_desc);   (fp8: K-major, no imm-trans)
    tl_wgmma_fence(); tl_wgmma_commit(); tl_wgmma_wait<0>(); tl_fence_proxy_async();
    tl_setmaxnreg_dec<40>(); tl_setmaxnreg_inc<232>(); tl_named_barrier<1, 256>();

The wgmma helper takes the accumulator as `float*` and binds its n / 2 elements as `"+f"` operands, so
with a constant offset (the loops around it unrolled) they stay registers; the trans flags are
immediates in the instruction (`_kn`: A K-major, B N-major).
"""

from __future__ import annotations

from tilemlir.emit_cuda import cexpr as C
from tilemlir.dialects.warpgroup import WGMMA_FP8_TYPES, wgmma_b_type
from tilemlir.emit_cuda.statement_context import StatementContext
from tilemlir.mlir import ir

# the descriptor's swizzle field (ISA 9.7.15.5.1.2.2): 1 = 128 bytes, 2 = 64, 3 = 32
_SWIZZLE_MODES = {128: 1, 64: 2, 32: 3}

_DESC = """\
__device__ __forceinline__ unsigned long long tl_wgmma_desc(const void* start, unsigned leading_bytes,
                                                            unsigned stride_bytes, unsigned swizzle_mode) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(start));
  return static_cast<unsigned long long>((address & 0x3FFFF) >> 4)
         | (static_cast<unsigned long long>((leading_bytes & 0x3FFFF) >> 4) << 16)
         | (static_cast<unsigned long long>((stride_bytes & 0x3FFFF) >> 4) << 32)
         | (static_cast<unsigned long long>(swizzle_mode) << 62);
}"""

_FENCES = {
    "tl_wgmma_fence": 'asm volatile("wgmma.fence.sync.aligned;" ::: "memory");',
    "tl_wgmma_commit": 'asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");',
    "tl_fence_proxy_async": 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");',
}

_SETMAXNREG = """\
template <int N> __device__ __forceinline__ void tl_setmaxnreg_{action}() {{
  asm volatile("setmaxnreg.{action}.sync.aligned.u32 %0;" :: "n"(N));
}}"""

_NAMED_BARRIER = """\
template <int ID, int THREADS> __device__ __forceinline__ void tl_named_barrier() {
  asm volatile("bar.sync %0, %1;" :: "n"(ID), "n"(THREADS) : "memory");
}"""

_WAIT = """\
template <int N> __device__ __forceinline__ void tl_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}"""


def wgmma_helper(n: int, operand_type: str, trans_a: bool, trans_b: bool, b_type: str | None = None) -> tuple[str, str]:
    """(name, definition) of the m64n{n}k16 f32 helper for `operand_type` operands read through descriptors,
    or for fp8 (`b_type`: B's type where it differs) the m64n{n}k32 one, which takes no imm-trans (K-major)."""
    b_type = b_type or operand_type
    registers = n // 2
    outs = ", ".join(f"%{i}" for i in range(registers))
    if operand_type in WGMMA_FP8_TYPES:
        name = f"tl_wgmma_m64n{n}k32_f32_{operand_type}_{b_type}"
        ptx = (f"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{operand_type}.{b_type} "
               f"{{{outs}}}, %{registers}, %{registers + 1}, 1, 1, 1;")
    else:
        majors = ("m" if trans_a else "k") + ("n" if trans_b else "k")
        name = f"tl_wgmma_m64n{n}k16_f32_{operand_type}_{majors}"
        ptx = (f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{operand_type}.{operand_type} "
               f"{{{outs}}}, %{registers}, %{registers + 1}, 1, 1, 1, {int(trans_a)}, {int(trans_b)};")
    operands = ", ".join(f'"+f"(d[{i}])' for i in range(registers))
    return name, (
        f"__device__ __forceinline__ void {name}(float* d, unsigned long long a, unsigned long long b) {{\n"
        f'  asm volatile("{ptx}"\n'
        f"               : {operands}\n"
        '               : "l"(a), "l"(b) : "memory");\n'
        "}")


class WarpgroupStatements:
    def __init__(self, cx: StatementContext):
        self._cx = cx

    def descriptor(self, op: ir.Operation) -> None:
        cx = self._cx
        cx.prelude.helper_text("tl_wgmma_desc", _DESC)
        operands = list(op.operands)
        start = cx.memory.element(operands[0], [cx.value(v) for v in operands[1:]], op)
        attrs = op.attributes
        leading, stride = ir.IntegerAttr(attrs["leading_bytes"]).value, ir.IntegerAttr(attrs["stride_bytes"]).value
        mode = _SWIZZLE_MODES[ir.IntegerAttr(attrs["swizzle"]).value]
        name, declare = cx.result_variable(op.results[0], op)
        call = f"tl_wgmma_desc(&{start.text}, {leading}, {stride}, {mode})"
        cx.out.line(f"const unsigned long long {name} = {call};" if declare else f"{name} = {call};")
        cx.bind(op.results[0], C.atom(name))

    def wgmma(self, op: ir.Operation) -> None:
        cx = self._cx
        attrs = op.attributes
        name, text = wgmma_helper(ir.IntegerAttr(attrs["n"]).value, ir.StringAttr(attrs["operand_type"]).value,
                                  ir.BoolAttr(attrs["trans_a"]).value, ir.BoolAttr(attrs["trans_b"]).value,
                                  wgmma_b_type(op))
        cx.prelude.helper_text(name, text)
        a, b, c = op.operands
        offset = ir.IntegerAttr(attrs["c_offset"]).value
        array = cx.memory.element(c, [], c.owner).text
        accumulators = array if offset == 0 else f"{array} + {offset}"
        cx.out.line(f"{name}({accumulators}, {cx.value(a).text}, {cx.value(b).text});")

    def fence(self, op: ir.Operation) -> None:
        name = {"tile.wgmma_fence": "tl_wgmma_fence", "tile.wgmma_commit": "tl_wgmma_commit",
                "tile.fence_proxy_async": "tl_fence_proxy_async"}[op.name]
        self._cx.prelude.helper_text(name, f"__device__ __forceinline__ void {name}() {{ {_FENCES[name]} }}")
        self._cx.out.line(f"{name}();")

    def wait(self, op: ir.Operation) -> None:
        self._cx.prelude.helper_text("tl_wgmma_wait", _WAIT)
        self._cx.out.line(f"tl_wgmma_wait<{ir.IntegerAttr(op.attributes['pending']).value}>();")

    def setmaxnreg(self, op: ir.Operation) -> None:
        action = ir.StringAttr(op.attributes["action"]).value
        name = f"tl_setmaxnreg_{action}"
        self._cx.prelude.helper_text(name, _SETMAXNREG.format(action=action))
        self._cx.out.line(f"{name}<{ir.IntegerAttr(op.attributes['count']).value}>();")

    def named_barrier(self, op: ir.Operation) -> None:
        self._cx.prelude.helper_text("tl_named_barrier", _NAMED_BARRIER)
        barrier, threads = (ir.IntegerAttr(op.attributes[name]).value for name in ("id", "threads"))
        self._cx.out.line(f"tl_named_barrier<{barrier}, {threads}>();")
