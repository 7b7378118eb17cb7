"""select-mma: mark each tile.gemm the tensor cores can run with its warp grid.

Takes tile-level IR (docs/ir.md) before lower-gemm-simt; gives the same IR
with `tile.mma = {shape = "m16n8k16", warps_m, warps_n}` on every eligible
`tile.gemm` (docs/tensor_cores.md). Eligible: A and B f16 or bf16, B shared
and A shared or a (non-transposed) fragment, C f32 (or f16 for f16 inputs),
the block's threads a multiple of 32, K % 16 == 0, and a warp grid with
warps_m * warps_n = threads / 32, M % (16 warps_m) == 0 and
N % (8 warps_n) == 0. Ring operands (rank-3 shared A / B with leading
indices) are eligible like plain tiles.

The warp grid: `tile.gemm_policy` (T.gemm's `policy=`, TileLang's
GemmWarpPolicy) when given: "full_row" puts every warp along M, "full_col"
along N, "square" the squarest split; else all warps along M when C feeds a
reduce over N or is (through a whole fragment copy) the A of another gemm,
or when A is a fragment (its m16k16 layout gives each warp whole rows);
else the squarest split, ties to more warps along M. A requested policy
that no grid satisfies is a located error; other gemms stay for
lower-gemm-simt, with a remark saying why. With `enable=false` (the
compile option `tensor_cores=False`) it selects nothing.

With `instruction=wgmma` (sm_90a) a gemm gets `tile.mma = {shape = "m64nNk16",
warpgroups_m, warpgroups_n}` instead where wgmma can run it: A and B
two-dimensional shared tiles whose rows are a multiple of 32 bytes (so
select-shared-layouts swizzles them), C f32, threads whole warpgroups of 128,
and a warpgroup grid with M % (64 groups_m) == 0 and N / groups_n at most 256
and a multiple of 8 (of a whole swizzle panel when B is stored K x N). Every
warpgroup goes along M where that fits (policy full_col: along N). A C that is
(through a whole fragment copy) another gemm's fragment A takes wgmma only with
every warpgroup along M at M = 64 each: that gemm runs on mma.sync, whose warps hold whole runs of
M / warps rows, which a wgmma C of two or more m64 blocks per warpgroup
interleaves (softmax row statistics could follow only one of the two). Otherwise
the mma.sync choice above, with a remark saying why not wgmma.

fp8 operands (float8_e4m3 / float8_e5m2, the same or mixed) take the tensor cores through wgmma
m64nNk32 only: `tile.mma = {shape = "m64nNk32", ...}` under the wgmma rules above, plus A stored
M x K and B stored N x K (fp8 wgmma reads K-major operands only); with `instruction=wgmma` an fp8
gemm wgmma cannot run is a located error naming what it takes (and that tensor_cores=False runs
it on CUDA cores), and with mma_sync (whose fp8 m16n8k32 this project does not emit) an fp8 gemm
stays on CUDA cores with a remark.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.mma_layouts import ATOM_K, ATOM_M, ATOM_N, WARP
from tilemlir.diagnostics import CompileError
from tilemlir.diagnostics import reporting as diag
from tilemlir.analysis.shared_layouts import swizzle_width
from tilemlir.dialects.tensor_core_ops import MMA_ATTR, MMA_INSTRUCTIONS, POLICIES, POLICY_ATTR, WGMMA_FP8_SHAPE, \
    WGMMA_SHAPE, mma_attr
from tilemlir.dialects.tile import FP8_TYPES, FRAGMENT, SHARED, _element_bytes, memory_space
from tilemlir.dialects.warpgroup import WARPGROUP, WGMMA_M, WGMMA_TYPE_NAMES
from tilemlir.ir_util import defining_op, enclosing, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

WGMMA_MAX_N = 256
_ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",)}


@dataclass(frozen=True)
class SelectMmaOptions:
    enable: bool = True  # false: select nothing (every gemm on CUDA cores; the compile option tensor_cores=False)
    instruction: str = "mma_sync"  # or "wgmma" (sm_90a): tried first, mma.sync where it cannot run


@register_pass("select-mma", "give tensor-core-eligible tile.gemm ops tile.mma (mma.sync m16n8k16 or wgmma "
               "m64nNk16 / m64nNk32, a warp or warpgroup grid)", SelectMmaOptions)
def run(module: ir.Operation, options: SelectMmaOptions) -> None:
    if not options.enable:
        return
    if options.instruction not in MMA_INSTRUCTIONS:
        raise CompileError(f"select-mma: instruction must be one of {', '.join(MMA_INSTRUCTIONS)}, got "
                                f"{options.instruction!r}")
    module = operation(module)
    with module.context, module.location:
        for gemm in ops_named(module, "tile.gemm"):
            _select(gemm, options.instruction == "wgmma")


def _select(gemm: ir.Operation, try_wgmma: bool) -> None:
    kernel = enclosing(gemm, "tile.kernel", stop="func.func")
    if kernel is None:
        return
    threads = lir.kernel_threads(kernel)
    policy = _policy(gemm)
    if _fp8_types(gemm):
        _select_fp8(gemm, threads, policy, try_wgmma)
        return
    problem = _ineligible(gemm, threads)
    if problem:
        diag.remark(gemm, f"T.gemm runs on CUDA cores: {problem}")
        return
    if try_wgmma:
        groups = wgmma_grid(gemm, threads, policy)
        if isinstance(groups, tuple):
            gemm.attributes[MMA_ATTR] = mma_attr(*groups, shape=WGMMA_SHAPE)
            return
        diag.remark(gemm, f"T.gemm runs on mma.sync, not wgmma: {groups}")
    m, n = gemm.operands[2].type.shape
    warps = threads // WARP
    grids = [(wm, warps // wm) for wm in range(1, warps + 1)
             if warps % wm == 0 and m % (ATOM_M * wm) == 0 and n % (ATOM_N * (warps // wm)) == 0]
    grid = _choose(gemm, grids, warps, policy)
    if grid is None:
        if policy is not None:
            raise diag.error(gemm, f"T.gemm policy {policy!r}: no grid of {warps} warps with that split tiles C "
                                   f"({m}x{n}) into m16n8 atoms (needs M % (16 warps_m) == 0 and "
                                   "N % (8 warps_n) == 0)")
        diag.remark(gemm, f"T.gemm runs on CUDA cores: no grid of {warps} warps tiles C ({m}x{n}) into whole "
                          "m16n8 atoms per warp")
        return
    if memory_space(gemm.operands[0].type) == FRAGMENT and grid[1] != 1:
        if policy is not None:
            raise diag.error(gemm, f"T.gemm policy {policy!r} splits N over {grid[1]} warps, but a fragment A needs "
                                   "every warp along M (use T.GemmWarpPolicy.FullRow)")
        diag.remark(gemm, f"T.gemm runs on CUDA cores: a fragment A needs every warp along M, and {warps} warps "
                          f"do not tile M = {m} into m16 atoms each")
        return
    gemm.attributes[MMA_ATTR] = mma_attr(*grid)


def _fp8_types(gemm: ir.Operation) -> tuple[str, str] | None:
    """The ISA names of A's and B's types when they are fp8 (the verifier keeps fp8 from mixing with others)."""
    types = tuple(str(v.type.element_type) for v in list(gemm.operands)[:2])
    if types[0] not in FP8_TYPES:
        return None
    return tuple(WGMMA_TYPE_NAMES[t] for t in types)


def _select_fp8(gemm: ir.Operation, threads: int, policy: str | None, try_wgmma: bool) -> None:
    """fp8 gemms take the tensor cores through wgmma m64nNk32 only: without wgmma, CUDA cores (as every
    gemm with tensor_cores=False); with it, a gemm it cannot run is an error, not a silent fallback."""
    a_type, b_type = _fp8_types(gemm)
    if not try_wgmma:
        diag.remark(gemm, "T.gemm runs on CUDA cores: fp8 operands take the tensor cores only through wgmma "
                          "m64nNk32 (tensor_cores='wgmma', sm_90a)")
        return
    trans_a = ir.BoolAttr(gemm.attributes["transpose_a"]).value
    trans_b = ir.BoolAttr(gemm.attributes["transpose_b"]).value
    if trans_a or not trans_b:
        groups = ("fp8 wgmma reads K-major operands only: A stored M x K (transpose_A=False) and B stored N x K "
                  f"(transpose_B=True), got transpose_A={trans_a}, transpose_B={trans_b}")
    else:
        groups = wgmma_grid(gemm, threads, policy)
    if isinstance(groups, str):
        raise diag.error(gemm, f"T.gemm on {a_type} x {b_type} operands runs on wgmma m64nNk32.f32.{a_type}.{b_type}, "
                               f"which cannot take this one: {groups} (tensor_cores=False runs it on CUDA cores)")
    gemm.attributes[MMA_ATTR] = mma_attr(*groups, shape=WGMMA_FP8_SHAPE)


def wgmma_grid(gemm: ir.Operation, threads: int, policy: str | None) -> tuple[int, int] | str:
    """The warpgroup grid (groups_m, groups_n) of a wgmma lowering of `gemm`, or why there is none.
    Every warpgroup along M where that tiles C (each then holds whole rows), else the fewest along N."""
    a, b, c = list(gemm.operands)[:3]
    if memory_space(a.type) != SHARED:
        return "wgmma reads A from shared memory here (a fragment A is not supported yet)"
    if str(c.type.element_type) != "f32":
        return f"wgmma accumulates in f32 here, not {c.type.element_type}"
    if threads % WARPGROUP:
        return f"the block's {threads} threads are not whole warpgroups of {WARPGROUP}"
    widths = [_swizzle_of(v) for v in (a, b)]
    for label, width in zip("AB", widths):
        if width is None:
            return (f"{label} must be a two-dimensional T.alloc_shared whose rows are a multiple of 32 bytes "
                    "(wgmma reads swizzled shared tiles)")
    m, n = c.type.shape
    groups = threads // WARPGROUP
    b_mn_major = not ir.BoolAttr(gemm.attributes["transpose_b"]).value
    panel = widths[1] // _element_bytes(b.type.element_type) if b_mn_major else ATOM_N
    grids = [(gm, groups // gm) for gm in range(groups, 0, -1) if groups % gm == 0]
    if policy == "full_row":
        grids = grids[:1]
    elif policy == "full_col":
        grids = grids[-1:]
    feeds_fragment_a = _feeds_fragment_a(gemm)
    for gm, gn in grids:
        tile_n = n // gn if n % gn == 0 else 0
        if feeds_fragment_a and (gn != 1 or m != WGMMA_M * gm):
            continue
        if m % (WGMMA_M * gm) == 0 and tile_n and tile_n % panel == 0 and tile_n <= WGMMA_MAX_N:
            return gm, gn
    if feeds_fragment_a:
        return (f"C is the fragment A of a T.gemm on mma.sync, whose warps each hold {m * WARP // threads} whole "
                f"rows; a wgmma C holds those rows only with every warpgroup along M at 64 rows each (M = "
                f"{WGMMA_M * groups} here, not {m})")
    return (f"no grid of {groups} warpgroups tiles C ({m}x{n}) into m64 rows and n blocks of at most "
            f"{WGMMA_MAX_N} columns, each a multiple of {panel}")


def _swizzle_of(operand: ir.Value) -> int | None:
    """The swizzle select-shared-layouts will give the shared tile `operand`, None if it gives none."""
    alloc = defining_op(operand)
    if alloc is None or alloc.name != "tile.alloc_shared" or operand.type.rank != 2:
        return None
    return swizzle_width(operand.type.shape[-1] * _element_bytes(operand.type.element_type)) or None


def _ineligible(gemm: ir.Operation, threads: int) -> str | None:
    a, b, c = (v.type for v in list(gemm.operands)[:3])
    in_type, acc_type = str(a.element_type), str(c.element_type)
    if in_type not in _ACCUMULATORS:
        return f"the tensor-core path takes f16 or bf16 operands, not {in_type}"
    if acc_type not in _ACCUMULATORS[in_type]:
        return f"{in_type} operands accumulate in {' or '.join(_ACCUMULATORS[in_type])} on tensor cores, not {acc_type}"
    if memory_space(b) != SHARED:
        return "B must be a shared tile"
    if memory_space(a) == FRAGMENT and ir.BoolAttr(gemm.attributes["transpose_a"]).value:
        return "a fragment A must not be transposed"
    if memory_space(a) not in (SHARED, FRAGMENT):
        return "A must be a shared tile or a fragment"
    if threads % WARP:
        return f"the block's {threads} threads are not whole warps"
    k = a.shape[-2] if ir.BoolAttr(gemm.attributes["transpose_a"]).value else a.shape[-1]
    if k % ATOM_K:
        return f"K = {k} is not a multiple of {ATOM_K}"
    return None


def _policy(gemm: ir.Operation) -> str | None:
    if POLICY_ATTR not in gemm.attributes:
        return None
    policy = ir.StringAttr(gemm.attributes[POLICY_ATTR]).value
    if policy not in POLICIES:
        raise diag.error(gemm, f"'{POLICY_ATTR}' must be one of {', '.join(POLICIES)}, got {policy!r}")
    return policy


def _choose(gemm: ir.Operation, grids: list[tuple[int, int]], warps: int, policy: str | None):
    if policy == "full_row" or (policy is None and _rows_per_warp(gemm)):
        if (warps, 1) in grids or policy == "full_row":
            return (warps, 1) if (warps, 1) in grids else None
    if policy == "full_col":
        return (1, warps) if (1, warps) in grids else None
    m, n = gemm.operands[2].type.shape
    if not grids:
        return None

    def squareness(grid):
        wm, wn = grid
        tile_m, tile_n = m // wm, n // wn
        return (max(tile_m, tile_n) / min(tile_m, tile_n), -wm)

    return min(grids, key=squareness)


def _feeds_fragment_a(gemm: ir.Operation) -> bool:
    """Whether C is (itself or through a whole fragment copy) the A operand of another gemm."""
    return any(user.name == "tile.gemm" and number == 0 and user != gemm for user, number in _fed_uses(gemm))


def _fed_uses(gemm: ir.Operation):
    """(user, operand number) of every use of C and of the fragments C is copied into."""
    c = gemm.operands[2]
    fed = [c]
    for use in c.uses:
        user = operation(use.owner)
        if user.name == "tile.copy" and use.operand_number == 0 and memory_space(user.operands[1].type) == FRAGMENT:
            fed.append(user.operands[1])
    for value in fed:
        for use in value.uses:
            yield operation(use.owner), use.operand_number


def _rows_per_warp(gemm: ir.Operation) -> bool:
    """Whether C's rows should each stay in one warp: A is a fragment, C feeds a reduce over N, or C
    is (itself, or through a whole fragment copy) the A of another gemm."""
    a, c = gemm.operands[0], gemm.operands[2]
    if memory_space(a.type) == FRAGMENT or _feeds_fragment_a(gemm):
        return True
    return any(user.name == "tile.reduce" and number == 0 and user.operands[0] == c
               and ir.IntegerAttr(user.attributes["dim"]).value == 1 for user, number in _fed_uses(gemm))
