"""Thread-level tensor-core ops of the `tile` dialect: `tile.ldmatrix`, `tile.stmatrix` and `tile.mma_sync`.

At the thread level registers live in "local" arrays indexed by constants
(docs/ir.md), so these ops read and write constant-offset slices of such
arrays instead of taking SSA vectors as nvgpu's ops do. Each is one warp
instruction: every lane of the warp runs it together (docs/tensor_cores.md).

Shared indices are logical (as in `memref.load`); `tile.ldmatrix` and `tile.stmatrix` have their
entries in `dialects/shared_access.SHARED_INDEXED`, so a pass that rewrites shared indices
(materialize-shared-layouts) finds them as for every other shared access.
"""


from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tilemlir.dialects.tile import LOCAL, SHARED, Tile, _bool_attr, _checked, _i64, _int_attr, _without_segments, \
    memory_space
from tilemlir.mlir import ext, ir

Operand = ext.Operand

MATRIX_COUNTS = (1, 2, 4)  # 8x8 matrices an ldmatrix or stmatrix moves: .x1, .x2, .x4
MMA_SHAPES = ("m16n8k16",)
MMA_OPERAND_TYPES = ("f16", "bf16")
# mma.sync m16n8k16 per lane: A 4 registers (8 halves), B 2, C/D 4 elements (f32, or f16 packed in pairs)
MMA_A_REGISTERS, MMA_B_REGISTERS, MMA_C_ELEMENTS = 4, 2, 4


def _slice_problem(label: str, type_: ir.Type, offset: int | None, count: int, element: str | None) -> str | None:
    """Whether `count` elements at `offset` of register array `type_` exist (and are of type `element`)."""
    if memory_space(type_) != LOCAL or type_.rank != 1:
        return f"{label} must be a rank-1 \"local\" register array, got {type_}"
    if element is not None and str(type_.element_type) != element:
        return f"{label} must hold {element} elements, got {type_.element_type}"
    if offset is None:
        return f"'{label}_offset' must be an integer"
    if offset < 0 or offset + count > type_.shape[0]:
        return f"{label} slice [{offset}, {offset + count}) leaves the {type_.shape[0]}-element array"
    return None


def _row_buffer_problem(label: str, type_: ir.Type, indices: int) -> str | None:
    """Whether `type_` is a shared buffer of 16-bit elements whose rows hold whole 16-byte rows,
    indexed by `indices` logical indices."""
    if memory_space(type_) != SHARED:
        return f"{label} must be a shared buffer, got {type_}"
    if not isinstance(type_.element_type, ir.FloatType) or type_.element_type.width != 16:
        return f"{label} must hold 16-bit elements (f16 or bf16), got {type_.element_type}"
    if indices != type_.rank:
        return f"expects {type_.rank} indices (rank of {label}), got {indices}"
    if type_.shape[-1] % 8:
        return f"{label} rows must hold whole 16-byte rows of 8 elements, but its last dim is {type_.shape[-1]}"
    return None


class LdmatrixOp(Tile.Operation, name="ldmatrix"):
    """`ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16`: the warp loads `count` 8x8 matrices
    of 16-bit elements from shared memory into `count` i32 registers of each lane.

    Lane l gives, in `indices`, the logical index of the first element of the 16-byte row it
    addresses (lanes 8i..8i+7: the rows of matrix i; the row's 8 elements run along the last
    dim); register i of every lane, at `dst[dst_offset + i]`, receives its fragment of matrix i,
    transposed with `trans`.

        "tile.ldmatrix"(%A_s, %a_frag, %row, %col) {count = 4 : i64, trans = false, dst_offset = 4 : i64}
            : (memref<128x32xf16, "shared">, memref<16xi32, "local">, index, index) -> ()
    """

    src: Operand[ir.MemRefType]
    dst: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]
    count: ir.IntegerAttr
    dst_offset: ir.IntegerAttr
    trans: Any  # a BoolAttr; checked below

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        src, dst = operands[0].type, operands[1].type
        problem = _row_buffer_problem("src", src, len(operands) - 2)
        if problem:
            return problem
        count = _int_attr(self, "count")
        if count not in MATRIX_COUNTS:
            return f"count must be 1, 2 or 4, got {count}"
        if _bool_attr(self, "trans") is None:
            return "'trans' must be a boolean"
        return _slice_problem("dst", dst, _int_attr(self, "dst_offset"), count, "i32")


def stmatrix_registers(op) -> list[int] | None:
    """The `registers` offsets of a tile.stmatrix (one per matrix), or None if not all integers."""
    attr = op.operation.attributes["registers"]
    if not all(isinstance(r, ir.IntegerAttr) for r in attr):
        return None
    return [ir.IntegerAttr(r).value for r in attr]


class StmatrixOp(Tile.Operation, name="stmatrix"):
    """`stmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16` (sm_90): the warp stores
    `count = len(registers)` 8x8 matrices of 16-bit elements from its registers into shared memory.

    Lane l gives, in `indices`, the logical index of the first element of the 16-byte row it
    addresses (lanes 8i..8i+7: the rows of matrix i; the row's 8 elements run along the last
    dim; the addresses of lanes from 8 * count on are not used). Lane l's fragment of matrix i is
    the pair (`src[registers[i]]`, `src[registers[i] + 1]`): elements (l / 4, 2 (l % 4)) and
    (l / 4, 2 (l % 4) + 1) of the matrix, which `trans` stores transposed. `src` holds dst's
    element type, or f32 rounded to it (to nearest, ties to even) as the elements are stored.

        "tile.stmatrix"(%C_s, %C_f, %row, %col) {registers = [0, 2, 4, 6], trans = false}
            : (memref<64x64xbf16, "shared">, memref<32xf32, "local">, index, index) -> ()
    """

    dst: Operand[ir.MemRefType]
    src: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]
    registers: ir.ArrayAttr
    trans: Any  # a BoolAttr; checked below

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        dst, src = operands[0].type, operands[1].type
        problem = _row_buffer_problem("dst", dst, len(operands) - 2)
        if problem:
            return problem
        registers = stmatrix_registers(self)
        if registers is None:
            return f"'registers' must be an array of integers, got {self.operation.attributes['registers']}"
        if len(registers) not in MATRIX_COUNTS:
            return f"'registers' must give 1, 2 or 4 register offsets (one per matrix), got {len(registers)}"
        if _bool_attr(self, "trans") is None:
            return "'trans' must be a boolean"
        return _stmatrix_src_problem(src, str(dst.element_type), registers)


STMATRIX_TYPES = ("f16", "bf16")  # what stmatrix stores


def stmatrix_converts(src_element: str, dst_element: str) -> bool:
    """Whether stmatrix stores registers of `src_element` into a tile of `dst_element`: a 16-bit float, from
    f32 (rounded) or the same type."""
    return dst_element in STMATRIX_TYPES and src_element in ("f32", dst_element)


def _stmatrix_src_problem(src: ir.Type, dst_element: str, registers: list[int]) -> str | None:
    if memory_space(src) != LOCAL or src.rank != 1:
        return f"src must be a rank-1 \"local\" register array, got {src}"
    if not stmatrix_converts(str(src.element_type), dst_element):
        return f"src must hold f32 or {dst_element} (the element type of dst) elements, got {src.element_type}"
    for offset in registers:
        problem = _slice_problem("src", src, offset, 2, None)
        if problem:
            return problem
    return None


class MmaSyncOp(Tile.Operation, name="mma_sync"):
    """`mma.sync.aligned.m16n8k16.row.col` on register slices: D = A x B + C, D in place of C.

    `a`: 4 i32 registers at `a_offset` (two `operand_type` halves each), or 8 `operand_type`
    elements of a fragment held as halves (the m16k16 A layout, docs/tensor_cores.md); `b`: 2 i32
    registers at `b_offset`; `c`: 4 f32 elements, or 4 f16 elements (two f16x2 registers, f16
    inputs only), at `c_offset`. Fragments as in the PTX ISA's m16n8k16 tables.

        "tile.mma_sync"(%a_frag, %b_frag, %acc) {shape = "m16n8k16", operand_type = "bf16",
            a_offset = 4 : i64, b_offset = 2 : i64, c_offset = 36 : i64}
            : (memref<16xi32, "local">, memref<8xi32, "local">, memref<64xf32, "local">) -> ()
    """

    a: Operand[ir.MemRefType]
    b: Operand[ir.MemRefType]
    c: Operand[ir.MemRefType]
    shape: ir.StringAttr
    operand_type: ir.StringAttr
    a_offset: ir.IntegerAttr
    b_offset: ir.IntegerAttr
    c_offset: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        a, b, c = (v.type for v in self.operation.operands)
        attrs = self.operation.attributes
        shape, operand_type = attrs["shape"].value, attrs["operand_type"].value
        if shape not in MMA_SHAPES:
            return f"shape must be one of {', '.join(MMA_SHAPES)}, got '{shape}'"
        if operand_type not in MMA_OPERAND_TYPES:
            return f"operand_type must be f16 or bf16, got '{operand_type}'"
        a_offset = _int_attr(self, "a_offset")
        if isinstance(a.element_type, ir.IntegerType) or memory_space(a) != LOCAL:
            problem = _slice_problem("a", a, a_offset, MMA_A_REGISTERS, "i32")
        else:
            problem = _slice_problem("a", a, a_offset, 2 * MMA_A_REGISTERS, operand_type)
            if problem is None and a_offset % 2:
                problem = f"a slice of {operand_type} halves must start at an even offset, got {a_offset}"
        accumulate = str(c.element_type)
        if problem is None and accumulate not in ("f32", "f16"):
            problem = f"c must hold f32 or f16 accumulators, got {c.element_type}"
        if problem is None and accumulate == "f16" and operand_type != "f16":
            problem = f"{operand_type} inputs accumulate in f32 only, got an f16 accumulator"
        return (problem or _slice_problem("b", b, _int_attr(self, "b_offset"), MMA_B_REGISTERS, "i32")
                or _slice_problem("c", c, _int_attr(self, "c_offset"), MMA_C_ELEMENTS, None)
                or (None if accumulate != "f16" or _int_attr(self, "c_offset") % 2 == 0
                    else "an f16 c slice must start at an even offset (f16x2 registers)"))


def ldmatrix(src, dst, indices, count: int, trans: bool, dst_offset: int, *, loc=None, ip=None) -> LdmatrixOp:
    # The DSL rejects a falsy attribute value at construction, so `trans` is set after.
    op = _without_segments(LdmatrixOp(src, dst, list(indices), _i64(count), _i64(dst_offset), ir.BoolAttr.get(True),
                                      loc=loc, ip=ip))
    op.operation.attributes["trans"] = ir.BoolAttr.get(trans)
    return op


def stmatrix(dst, src, indices, registers: Sequence[int], trans: bool = False, *, loc=None, ip=None) -> StmatrixOp:
    # The DSL rejects a falsy attribute value at construction, so `trans` is set after.
    op = _without_segments(StmatrixOp(dst, src, list(indices), ir.ArrayAttr.get([_i64(r) for r in registers]),
                                      ir.BoolAttr.get(True), loc=loc, ip=ip))
    op.operation.attributes["trans"] = ir.BoolAttr.get(trans)
    return op


def mma_sync(a, b, c, operand_type: str, a_offset: int, b_offset: int, c_offset: int, shape: str = "m16n8k16", *,
             loc=None, ip=None) -> MmaSyncOp:
    return MmaSyncOp(a, b, c, ir.StringAttr.get(shape), ir.StringAttr.get(operand_type), _i64(a_offset),
                     _i64(b_offset), _i64(c_offset), loc=loc, ip=ip)


TENSOR_CORE_OPS = ("tile.ldmatrix", "tile.stmatrix", "tile.mma_sync")


# -- the tile-level `tile.mma` attribute on tile.gemm (set by select-mma) --------------------------
MMA_ATTR = "tile.mma"
POLICY_ATTR = "tile.gemm_policy"  # T.gemm(..., policy=T.GemmWarpPolicy.X), as "square", "full_row", "full_col"
POLICIES = ("square", "full_row", "full_col")
# on a wgmma gemm of a pipelined loop (plan-pipeline): how many of its batches may stay in flight past an iteration
WGMMA_PENDING_ATTR = "tile.wgmma_pending"
GEMM_MNK_ATTR = "tile.gemm_mnk"  # [M, N, K] of a gemm kept at the thread level (its fragments are register arrays)


MMA_SYNC_SHAPE, WGMMA_SHAPE, WGMMA_FP8_SHAPE = "m16n8k16", "m64nNk16", "m64nNk32"
MMA_INSTRUCTIONS = {"mma_sync": MMA_SYNC_SHAPE, "wgmma": WGMMA_SHAPE}
_GRID_KEYS = {MMA_SYNC_SHAPE: ("warps_m", "warps_n"), WGMMA_SHAPE: ("warpgroups_m", "warpgroups_n"),
              WGMMA_FP8_SHAPE: ("warpgroups_m", "warpgroups_n")}


@dataclass(frozen=True)
class MmaChoice:
    """What select-mma chose for a gemm: the instruction shape and the grid splitting C, of warps
    (mma.sync m16n8k16) or warpgroups (wgmma m64nNk16, or m64nNk32 for fp8) along M and N."""

    shape: str
    grid_m: int
    grid_n: int

    @property
    def wgmma(self) -> bool:
        return self.shape in (WGMMA_SHAPE, WGMMA_FP8_SHAPE)


def mma_attr(grid_m: int, grid_n: int, shape: str = MMA_SYNC_SHAPE) -> ir.Attribute:
    """`{shape = "m16n8k16", warps_m, warps_n}` (or `{shape = "m64nNk16" | "m64nNk32", warpgroups_m, warpgroups_n}`):
    the grid of warps (warpgroups) splitting C."""
    key_m, key_n = _GRID_KEYS[shape]
    return ir.DictAttr.get({"shape": ir.StringAttr.get(shape), key_m: _i64(grid_m), key_n: _i64(grid_n)})


def mma_choice(op: ir.Operation) -> MmaChoice | None:
    """The choice recorded on a gemm `select-mma` gave `tile.mma`, else None."""
    if MMA_ATTR not in op.attributes:
        return None
    attr = ir.DictAttr(op.attributes[MMA_ATTR])
    shape = ir.StringAttr(attr["shape"]).value
    key_m, key_n = _GRID_KEYS[shape]
    return MmaChoice(shape, ir.IntegerAttr(attr[key_m]).value, ir.IntegerAttr(attr[key_n]).value)
