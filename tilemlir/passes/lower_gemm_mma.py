"""lower-gemm-mma: each `tile.mma` gemm becomes ldmatrix + mma.sync m16n8k16 per k16 step, or wgmma.

Takes thread-level IR after partition-threads, where a `tile.mma` gemm
(select-mma) was kept with C (and a fragment A) as register arrays holding
the layouts of `analysis/mma_layouts.py` and `tile.gemm_mnk = [M, N, K]`.
Gives the same IR without `tile.gemm`: with `warp = tid / 32` split as
`warp_m = warp mod warps_m`, `warp_n = warp / warps_m` (C's layout's warp
digits), `lane = tid mod 32`, and the warp's tile of `WM / 16` m-atoms and
`WN / 8` n-atoms, each k16 step is

- per m-atom, one `tile.ldmatrix` x4 of A into `a_frag[4 m ...]`: lane l
  addresses row `l mod 16`, 8-element chunk `l / 16` of the atom's 16x16 A
  tile (A stored K x M, `transpose_a`: the matrices' rows run along K and
  the load is `.trans`); none for a fragment A, whose registers already
  hold the m16k16 operand layout;
- per pair of n-atoms, one `tile.ldmatrix` x4 of B into `b_frag[2 n ...]`
  (x2 for an odd last atom): `.trans` when B is stored K x N, plain when it
  is N x K (`transpose_b`), each matrix an 8x8 (k, n) block;
- per (m-atom, n-atom), one `tile.mma_sync` into C at the register its
  layout gives the atom's c0.

The k16 steps are an `scf.for` marked `tile.unroll = steps` over shared
operands (every register offset is a constant), and unrolled here for a
fragment A (its offsets move with the step). `a_frag` / `b_frag` are i32
"local" arrays allocated at the top of the launch. A C (or fragment A)
whose layout is not the mma layout of the gemm's warp grid (an annotation
won) is a CompileError naming the gemm.

A gemm of shape m64nNk16 or, for fp8, m64nNk32 (select-mma's wgmma choice;
A and B swizzled shared tiles; a k32 step of fp8 is 32 bytes of K, as a k16
step of 16-bit types is) becomes, with warpgroup `g = tid / 128` holding the
`TM x TN` tile at `(g mod groups_m) TM, (g / groups_m) TN`: a
`tile.wgmma_fence`, the k16 steps (an `scf.for` marked unrolled), each one
`tile.wgmma_desc` of B at (k0, col0) (or (col0, k0) when B is N x K) and
per 64-row block i of the tile one of A at (row0 + 64 i, k0) (or
transposed) and one `tile.wgmma` into C's registers `i TN / 2 ..`; then a
`tile.wgmma_commit` and a `tile.wgmma_wait` for all batches, or all but one
with `tile.wgmma_pending = 1` (plan-pipeline's), followed by a wait for all
after the enclosing loop. Descriptor offsets come from
`shared_layouts.wgmma_descriptor_offsets`. A launch with a wgmma and a
thread's store to shared memory gets a `tile.fence_proxy_async` before
each of its barriers: the writers' side of the generic-to-async proxy
ordering wgmma's shared reads need (a launch whose shared tiles only TMA
writes needs none).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis.layouts import LayoutError, from_attr, same_placement
from tilemlir.analysis.mma_layouts import ATOM_K, ATOM_M, ATOM_N, WARP, accumulator_layout, atom_register, \
    operand_a_layout, wgmma_accumulator_layout
from tilemlir.analysis.shared_layouts import SWIZZLE_ATTR, wgmma_descriptor_offsets
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import tensor_core_ops as tc
from tilemlir.dialects import warpgroup
from tilemlir.dialects.warpgroup import WARPGROUP, WGMMA_M
from tilemlir.dialects.tile import LOCAL, SHARED, gemm_ring_indices, memory_space
from tilemlir import ir_util
from tilemlir.ir_util import defining_op, enclosing, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import UNROLL_ATTR, Builder

LAYOUT_ON_ALLOCA = "tile.layout"


@register_pass("lower-gemm-mma", "tile.mma gemm (thread level) -> ldmatrix + mma.sync per k16 step, or wgmma")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for gemm in ops_named(module, "tile.gemm"):
            choice = tc.mma_choice(gemm)
            (_WgmmaGemm if choice is not None and choice.wgmma else _MmaGemm)(gemm).lower()
        for launch in ops_named(module, "gpu.launch"):
            if ops_named(launch, "tile.wgmma") and _writes_shared_generically(launch):
                _fence_barriers(launch)


def _writes_shared_generically(launch: ir.Operation) -> bool:
    """Whether a thread stores to shared memory (cp.async copies are such stores until async-copies):
    TMA ring copies (`tile.copy {tile.tma}`, tma-copies') write through the async proxy, as wgmma reads."""
    return any(memory_space(op.operands[1].type) == SHARED
               for op in ops_named(launch, "memref.store", "vector.store", "memref.atomic_rmw"))


def _fence_barriers(launch: ir.Operation) -> None:
    """A proxy fence before every barrier: shared bytes written by plain stores or cp.async (the generic
    proxy) reach a later wgmma (the async proxy) only through the writer's fence and then a barrier,
    and a wgmma's reads, retired by its wait, come before later writes the same way."""
    for barrier in ops_named(launch, "gpu.barrier"):
        warpgroup.fence_proxy_async(loc=barrier.location, ip=ir.InsertionPoint(barrier))


@dataclass(frozen=True)
class _Tiling:
    m: int
    n: int
    k: int
    warps_m: int  # warpgroups for wgmma
    warps_n: int
    unit: int = WARP  # threads of a warp (a warpgroup for wgmma)

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * self.unit

    @property
    def warp_m(self) -> int:  # rows of C a warp holds
        return self.m // self.warps_m

    @property
    def warp_n(self) -> int:
        return self.n // self.warps_n

    @property
    def atoms_m(self) -> int:
        return self.warp_m // ATOM_M

    @property
    def atoms_n(self) -> int:
        return self.warp_n // ATOM_N

    @property
    def steps(self) -> int:
        return self.k // ATOM_K


class _MmaGemm:
    INSTRUCTION = "mma.sync"

    def __init__(self, gemm: ir.Operation):
        self.gemm = gemm
        choice = tc.mma_choice(gemm)
        if choice is None or tc.GEMM_MNK_ATTR not in gemm.attributes:
            raise diag.error(gemm, "tile.gemm reached the thread level without tile.mma and tile.gemm_mnk: run "
                                   "select-mma, lower-gemm-simt and partition-threads first")
        launch = _enclosing_launch(gemm)
        m, n, k = (ir.IntegerAttr(v).value for v in ir.ArrayAttr(gemm.attributes[tc.GEMM_MNK_ATTR]))
        self.t = _Tiling(m, n, k, choice.grid_m, choice.grid_n, WARPGROUP if choice.wgmma else WARP)
        self.a, self.b, self.c = list(gemm.operands)[:3]
        self.ring_a, self.ring_b = gemm_ring_indices(gemm)
        self.trans_a = ir.BoolAttr(gemm.attributes["transpose_a"]).value
        self.trans_b = ir.BoolAttr(gemm.attributes["transpose_b"]).value
        self.operand_type = str(self.b.type.element_type)
        self.fragment_a = memory_space(self.a.type) == LOCAL
        body = launch.regions[0].blocks[0]
        self.b_ = Builder(ir.InsertionPoint(gemm), gemm.location, body)
        self.top = self.b_.at(ir.InsertionPoint.at_block_begin(body))

    def lower(self) -> None:
        t = self.t
        c_layout = self._register_layout(self.c, (t.m, t.n), "C",
                                         lambda: accumulator_layout((t.m, t.n), t.threads, t.warps_m, t.warps_n))
        a_layout = None
        if self.fragment_a:
            a_layout = self._register_layout(self.a, (t.m, t.k), "A",
                                             lambda: operand_a_layout((t.m, t.k), t.threads, t.warps_m))
        b = self.b_
        tid = b.thread_id(t.threads)
        lane, warp = b.rem(tid, WARP), b.div(tid, WARP)
        self.warp_row = b.mul(b.rem(warp, t.warps_m), t.warp_m)
        self.warp_col = b.mul(b.div(warp, t.warps_m), t.warp_n)
        self.lane_lo8, self.lane_hi = b.rem(lane, 8), b.div(lane, 8)  # row within a matrix, which matrix
        self.lane_lo16, self.lane_16 = b.rem(lane, 16), b.div(lane, 16)
        self.a_frag = None if self.fragment_a else self._registers("a_frag", tc.MMA_A_REGISTERS * t.atoms_m)
        self.b_frag = self._registers("b_frag", 2 * t.atoms_n)
        self.c_offsets = {(i, j): atom_register(c_layout, i * ATOM_M, j * ATOM_N)
                          for i in range(t.atoms_m) for j in range(t.atoms_n)}
        if self.fragment_a:
            for step in range(t.steps):
                self._step(b, b.index(step * ATOM_K),
                           lambda i, s=step: atom_register(a_layout, i * ATOM_M, s * ATOM_K))
        else:
            with b.loop(t.steps, unroll=False) as (inner, step, _, loop):
                loop.attributes[UNROLL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), t.steps)
                loop.attributes["tile.name"] = ir.StringAttr.get("ks")
                self._step(inner, inner.mul(step, ATOM_K), lambda i: tc.MMA_A_REGISTERS * i)
        self.gemm.erase()

    def _register_layout(self, value: ir.Value, shape, label: str, expected):
        alloca = defining_op(value)
        wanted = expected()
        try:
            layout = from_attr(alloca.attributes[LAYOUT_ON_ALLOCA], shape, self.t.threads)
        except (KeyError, LayoutError, AttributeError):
            layout = None
        if layout is None or not same_placement(layout, wanted):
            grid = "warpgroup grid" if isinstance(self, _WgmmaGemm) else "warp grid"
            raise diag.error(self.gemm, f"the {label} operand of this T.gemm on tensor cores does not hold the "
                                        f"{self.INSTRUCTION} layout of its {self.t.warps_m}x{self.t.warps_n} {grid} "
                                        "(a T.annotate_layout chose another); drop the annotation")
        return layout

    def _registers(self, name: str, count: int) -> ir.Value:
        type_ = ir.MemRefType.get([count], ir.IntegerType.get_signless(32), memory_space=ir.StringAttr.get(LOCAL))
        return self.top.op("memref.alloca", results=[type_], attributes={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0]), "name": ir.StringAttr.get(name)}).result

    def _step(self, b: Builder, k0: ir.Value, a_offset) -> None:
        t = self.t
        if not self.fragment_a:
            for i in range(t.atoms_m):
                self._load_a(b, k0, i)
        for j in range(0, t.atoms_n, 2):
            self._load_b(b, k0, j, count=4 if j + 1 < t.atoms_n else 2)
        a = self.a if self.fragment_a else self.a_frag
        for i in range(t.atoms_m):
            for j in range(t.atoms_n):
                tc.mma_sync(a, self.b_frag, self.c, self.operand_type, a_offset(i), 2 * j, self.c_offsets[i, j],
                            loc=b.loc, ip=b.ip)

    def _load_a(self, b: Builder, k0: ir.Value, i: int) -> None:
        m0 = b.add(self.warp_row, i * ATOM_M)
        if self.trans_a:  # A_s[k, m]: matrix q = lane / 8 is (k half q / 2, m half q mod 2), rows along k
            k = b.add(b.add(k0, self.lane_lo8), b.mul(b.div(self.lane_hi, 2), 8))
            m = b.add(m0, b.mul(b.rem(self.lane_hi, 2), 8))
            indices = [k, m]
        else:  # A_s[m, k]: lane l addresses row l mod 16, chunk l / 16
            indices = [b.add(m0, self.lane_lo16), b.add(k0, b.mul(self.lane_16, 8))]
        tc.ldmatrix(self.a, self.a_frag, [*self.ring_a, *indices], 4, self.trans_a, tc.MMA_A_REGISTERS * i,
                    loc=b.loc, ip=b.ip)

    def _load_b(self, b: Builder, k0: ir.Value, j: int, count: int) -> None:
        n0 = b.add(self.warp_col, j * ATOM_N)
        # matrix q = lane / 8: k half q mod 2, n atom j + q / 2 (x2: lanes 16-31 repeat lanes 0-15)
        q = self.lane_hi if count == 4 else b.rem(self.lane_hi, 2)
        k_half, n_atom = b.mul(b.rem(q, 2), 8), b.mul(b.div(q, 2), ATOM_N)
        if self.trans_b:  # B_s[n, k]: rows along n, the 8 k of a row contiguous
            indices = [b.add(b.add(n0, n_atom), self.lane_lo8), b.add(k0, k_half)]
        else:  # B_s[k, n]: rows along k, loaded .trans
            indices = [b.add(b.add(k0, k_half), self.lane_lo8), b.add(n0, n_atom)]
        tc.ldmatrix(self.b, self.b_frag, [*self.ring_b, *indices], count, not self.trans_b, 2 * j,
                    loc=b.loc, ip=b.ip)


class _WgmmaGemm(_MmaGemm):
    """A tile.mma gemm of shape m64nNk16 (m64nNk32 for fp8): per k16 (k32) step, per 64-row block of the
    warpgroup's tile, one wgmma reading A and B through descriptors; one fence, commit and wait around
    the steps."""

    INSTRUCTION = "wgmma"

    def lower(self) -> None:
        t, b = self.t, self.b_
        groups_m, groups_n = t.warps_m, t.warps_n  # warpgroups here
        tile_m, tile_n = t.m // groups_m, t.n // groups_n
        self._register_layout(self.c, (t.m, t.n), "C",
                              lambda: wgmma_accumulator_layout((t.m, t.n), t.threads, groups_m, groups_n))
        group = b.div(b.thread_id(t.threads), WARPGROUP)
        row0 = b.mul(b.rem(group, groups_m), tile_m)
        col0 = b.mul(b.div(group, groups_m), tile_n)
        a_k_major, b_k_major = not self.trans_a, self.trans_b
        a_type, b_type = (warpgroup.WGMMA_TYPE_NAMES[str(v.type.element_type)] for v in (self.a, self.b))
        step_k = warpgroup.wgmma_k(a_type)
        steps = t.k // step_k
        warpgroup.wgmma_fence(loc=b.loc, ip=b.ip)
        with b.loop(steps, unroll=False) as (inner, step, _, loop):
            loop.attributes[UNROLL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), steps)
            loop.attributes["tile.name"] = ir.StringAttr.get("ks")
            k0 = inner.mul(step, step_k)
            b_desc = self._descriptor(inner, self.b, self.ring_b, [col0, k0] if b_k_major else [k0, col0], b_k_major)
            for i in range(tile_m // WGMMA_M):
                m0 = inner.add(row0, i * WGMMA_M)
                a_desc = self._descriptor(inner, self.a, self.ring_a, [m0, k0] if a_k_major else [k0, m0], a_k_major)
                warpgroup.wgmma(a_desc, b_desc, self.c, tile_n, a_type, i * tile_n // 2, trans_a=not a_k_major,
                                trans_b=not b_k_major, b_type=b_type, loc=inner.loc, ip=inner.ip)
        warpgroup.wgmma_commit(loc=b.loc, ip=b.ip)
        pending = ir.IntegerAttr(self.gemm.attributes[tc.WGMMA_PENDING_ATTR]).value \
            if tc.WGMMA_PENDING_ATTR in self.gemm.attributes else 0
        warpgroup.wgmma_wait(pending, loc=b.loc, ip=b.ip)
        if pending:
            self._wait_after_the_loop()
        self.gemm.erase()

    def _wait_after_the_loop(self) -> None:
        """A batch left in flight by the last iteration retires before anything after the loop reads C."""
        loop = enclosing(self.gemm, "scf.for", stop="gpu.launch")
        if loop is None:
            raise diag.error(self.gemm, "a wgmma gemm with tile.wgmma_pending must be in a loop (plan-pipeline sets "
                                        "it on the gemms of a pipelined loop)")
        warpgroup.wgmma_wait(0, loc=self.gemm.location, ip=ir_util.after(loop))

    def _descriptor(self, b: Builder, operand: ir.Value, ring: list[ir.Value], origin: list[ir.Value],
                    k_major: bool) -> ir.Value:
        alloca = defining_op(operand)
        width = ir.IntegerAttr(alloca.attributes[SWIZZLE_ATTR]).value if SWIZZLE_ATTR in alloca.attributes else 0
        if width == 0:
            raise diag.error(self.gemm, "a wgmma operand must be a swizzled shared tile (select-shared-layouts gives "
                                        "one to every shared operand of a tile.mma gemm whose rows are a multiple "
                                        "of 32 bytes)")
        leading, stride = wgmma_descriptor_offsets(operand.type.shape[-2], width, k_major)
        return warpgroup.wgmma_desc(operand, [*ring, *origin], leading, stride, width, loc=b.loc, ip=b.ip)


def _enclosing_launch(op: ir.Operation) -> ir.Operation:
    current = op
    while current is not None and current.name != "gpu.launch":
        if current.name == "func.func":
            break
        current = operation(current.parent)
    if current is None or current.name != "gpu.launch":
        raise diag.error(op, "a tile.mma gemm must be inside a gpu.launch: lower-gemm-mma takes thread-level IR "
                             "(run partition-threads first)")
    return current
