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
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.mma_layouts import ATOM_K, ATOM_M, ATOM_N, WARP
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tensor_core_ops import MMA_ATTR, POLICIES, POLICY_ATTR, mma_attr
from tilemlir.dialects.tile import FRAGMENT, SHARED, memory_space
from tilemlir.ir_util import enclosing, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

_ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",)}


@dataclass(frozen=True)
class SelectMmaOptions:
    enable: bool = True  # false: select nothing (every gemm on CUDA cores; the compile option tensor_cores=False)


@register_pass("select-mma", "give tensor-core-eligible tile.gemm ops tile.mma (mma.sync m16n8k16, a warp grid)",
               SelectMmaOptions)
def run(module: ir.Operation, options: SelectMmaOptions) -> None:
    if not options.enable:
        return
    module = operation(module)
    with module.context, module.location:
        for gemm in ops_named(module, "tile.gemm"):
            _select(gemm)


def _select(gemm: ir.Operation) -> None:
    kernel = enclosing(gemm, "tile.kernel", stop="func.func")
    if kernel is None:
        return
    threads = lir.kernel_threads(kernel)
    problem = _ineligible(gemm, threads)
    policy = _policy(gemm)
    if problem:
        diag.remark(gemm, f"T.gemm runs on CUDA cores: {problem}")
        return
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


def _rows_per_warp(gemm: ir.Operation) -> bool:
    """Whether C's rows should each stay in one warp: A is a fragment, C feeds a reduce over N, or C
    is (itself, or through a whole fragment copy) the A of another gemm."""
    a, c = gemm.operands[0], gemm.operands[2]
    if memory_space(a.type) == FRAGMENT:
        return True
    fed = [c]
    for use in c.uses:
        user = operation(use.owner)
        if user.name == "tile.copy" and use.operand_number == 0 and memory_space(user.operands[1].type) == FRAGMENT:
            fed.append(user.operands[1])
    for value in fed:
        for use in value.uses:
            user = operation(use.owner)
            if user.name == "tile.reduce" and use.operand_number == 0 and value == c \
                    and ir.IntegerAttr(user.attributes["dim"]).value == 1:
                return True
            if user.name == "tile.gemm" and use.operand_number == 0 and user != gemm:
                return True
    return False
