"""Thread-level Hopper warpgroup ops of the `tile` dialect: wgmma and its fences (docs/tensor_cores.md).

`wgmma.mma_async` (PTX ISA 9.7.15) runs on a warpgroup, four consecutive warps (threads
128g .. 128g + 127) executing it together; it reads A and B from shared memory through
64-bit matrix descriptors and accumulates into registers asynchronously:

- `tile.wgmma_desc(src, indices...) {leading_bytes, stride_bytes, swizzle}` -> i64: the descriptor of
  the operand tile starting at logical element `indices` of shared buffer `src` (start address,
  leading and stride byte offsets, swizzle mode). Its indices are logical, so the op has its
  entry in `dialects/shared_access.SHARED_INDEXED` and materialize-shared-layouts makes them
  physical like every shared access's.
- `tile.wgmma(a_desc, b_desc, c) {n, operand_type, c_offset, trans_a, trans_b, b_type?}`:
  `wgmma.mma_async.sync.aligned.m64n{n}k{K}.f32.{a}.{b}` into the `n / 2` f32 registers of `c`
  at `c_offset`; `trans_a` / `trans_b` (the ISA's imm-trans) say A is stored M-major (K x M)
  and B N-major (K x N) instead of K-major. K is 16 for f16 / bf16, 32 for the fp8 types e4m3
  and e5m2, which are K-major only (no imm-trans) and may differ between A (`operand_type`) and
  B (`b_type`, absent when B's type is A's).
- `tile.wgmma_fence()` before the first wgmma of a batch (the accumulators were touched),
  `tile.wgmma_commit()` closes the batch, `tile.wgmma_wait() {pending = N}` waits until at most N
  of the warpgroup's batches are in flight (only then may c be read, or A and B be overwritten).
- `tile.fence_proxy_async()`: `fence.proxy.async.shared::cta`, ordering the thread's
  generic-proxy shared accesses (stores, cp.async) with async-proxy ones (wgmma's reads, TMA).
- `tile.named_barrier() {id = B, threads = N}`: `bar.sync B, N`, a barrier of the N threads (whole warps)
  that reach barrier B, the rest of the block not waiting (warp-specialize's consumer-only syncs).
- `tile.setmaxnreg() {action = "inc" | "dec", count = N}`: `setmaxnreg.{action}.sync.aligned.u32 N`,
  the warpgroup's per-thread register maximum raised to (taking from the block's pool, blocking
  until it holds enough) or lowered to (giving back) N, a multiple of 8 in 24..256; every warp of
  the warpgroup runs the same one (warp-specialize's register rebalancing).

Defined on `tilemlir.dialects.tile.Tile`, loaded with it (tilemlir/context.py).
"""

from collections.abc import Sequence
from typing import Any

from tilemlir.dialects.tile import LOCAL, SHARED, Tile, _bool_attr, _checked, _i64, _int_attr, _int_range_problem, \
    _without_segments, memory_space
from tilemlir.ir_util import enclosing
from tilemlir.mlir import ext, ir

Operand = ext.Operand
Result = ext.Result

WARPGROUP = 128
WGMMA_M, WGMMA_K = 64, 16
WGMMA_FP8_TYPES = ("e4m3", "e5m2")  # the ISA's fp8 types: m64nNk32, K-major only, A and B of either kind
WGMMA_OPERAND_TYPES = ("f16", "bf16", *WGMMA_FP8_TYPES)
# the MLIR element type of a wgmma operand -> the ISA's type name
WGMMA_TYPE_NAMES = {"f16": "f16", "bf16": "bf16", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
WGMMA_OPERAND_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1}
B_TYPE_ATTR = "b_type"


def wgmma_k(operand_type: str) -> int:
    """The K of one wgmma on `operand_type` operands: 32 bytes of K, 16 elements of f16 / bf16, 32 of fp8."""
    return 32 // WGMMA_OPERAND_BYTES[operand_type]
DESCRIPTOR_SWIZZLES = (32, 64, 128)
# the 14-bit fields hold byte offsets >> 4
DESCRIPTOR_FIELD_LIMIT = 1 << 18


def wgmma_n_problem(n: int | None) -> str | None:
    if n is None or n < 8 or n > 256 or n % 8:
        return f"n must be a multiple of 8 in 8..256, got {n}"
    return None


def _launch_problem(op) -> str | None:
    if enclosing(op.operation, "gpu.launch") is None:
        return "must be inside a gpu.launch (a thread-level op)"
    return None


class WgmmaDescOp(Tile.Operation, name="wgmma_desc"):
    """The 64-bit wgmma matrix descriptor of the tile of shared buffer `src` that starts at the
    logical element `indices`: start address, `leading_bytes` and `stride_bytes` (the ISA's
    leading and stride dimension byte offsets, multiples of 16) and the buffer's `swizzle` width.

        %d = "tile.wgmma_desc"(%A_s, %s, %c0, %k) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64,
                                                   swizzle = 128 : i64}
            : (memref<3x128x64xbf16, "shared">, index, index, index) -> i64
    """

    src: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]
    leading_bytes: ir.IntegerAttr
    stride_bytes: ir.IntegerAttr
    swizzle: ir.IntegerAttr
    result: Result[ir.IntegerType]

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        src = operands[0].type
        if memory_space(src) != SHARED:
            return f"src must be a shared buffer, got {src}"
        if len(operands) - 1 != src.rank:
            return f"expects {src.rank} indices (rank of src), got {len(operands) - 1}"
        for label in ("leading_bytes", "stride_bytes"):
            value = _int_attr(self, label)
            if value is None or value <= 0 or value % 16 or value >= DESCRIPTOR_FIELD_LIMIT:
                return f"'{label}' must be a positive multiple of 16 below {DESCRIPTOR_FIELD_LIMIT}, got {value}"
        if _int_attr(self, "swizzle") not in DESCRIPTOR_SWIZZLES:
            return f"'swizzle' must be 32, 64 or 128 (bytes), got {_int_attr(self, 'swizzle')}"
        if str(self.operation.results[0].type) != "i64":
            return f"the result must be i64, got {self.operation.results[0].type}"
        return _launch_problem(self)


class WgmmaOp(Tile.Operation, name="wgmma"):
    """`wgmma.mma_async.sync.aligned.m64n{n}k{K}.f32.{operand_type}.{b_type}` of the warpgroup:
    the 64 x n block of C its 128 threads hold, `n / 2` f32 registers of `c` at `c_offset` per thread,
    plus A (64 x K, descriptor `a_desc`) times B (K x n, descriptor `b_desc`); K = `wgmma_k` (16, or
    32 for fp8, whose operands are K-major: `trans_a = trans_b = false`). `b_type`, only where B's
    type differs from A's (fp8 only). Asynchronous: the registers are C's again only after a
    `tile.wgmma_wait` retires the batch.

        "tile.wgmma"(%da, %db, %C_f) {n = 128 : i64, operand_type = "bf16", c_offset = 64 : i64,
                                     trans_a = false, trans_b = true}
            : (i64, i64, memref<128xf32, "local">) -> ()
    """

    a_desc: Operand[ir.IntegerType]
    b_desc: Operand[ir.IntegerType]
    c: Operand[ir.MemRefType]
    n: ir.IntegerAttr
    operand_type: ir.StringAttr
    c_offset: ir.IntegerAttr
    trans_a: Any  # BoolAttrs; checked below
    trans_b: Any

    @_checked
    def verify_invariants(self):
        a, b, c = (v.type for v in self.operation.operands)
        if str(a) != "i64" or str(b) != "i64":
            return f"a_desc and b_desc must be i64 descriptors, got {a} and {b}"
        n = _int_attr(self, "n")
        problem = wgmma_n_problem(n)
        if problem:
            return problem
        operand_type = ir.StringAttr(self.operation.attributes["operand_type"]).value
        if operand_type not in WGMMA_OPERAND_TYPES:
            return f"operand_type must be one of {', '.join(WGMMA_OPERAND_TYPES)}, got '{operand_type}'"
        for label in ("trans_a", "trans_b"):
            if _bool_attr(self, label) is None:
                return f"'{label}' must be a boolean"
        problem = _fp8_problem(self.operation, operand_type)
        if problem:
            return problem
        if memory_space(c) != LOCAL or c.rank != 1 or str(c.element_type) != "f32":
            return f"c must be a rank-1 \"local\" f32 register array, got {c}"
        offset = _int_attr(self, "c_offset")
        if offset is None or offset < 0 or offset + n // 2 > c.shape[0]:
            return f"c slice [{offset}, {offset + n // 2 if offset is not None else '?'}) leaves the " \
                   f"{c.shape[0]}-element array"
        return _launch_problem(self)


def wgmma_b_type(op: ir.Operation) -> str:
    """The ISA type of a tile.wgmma's B: its `b_type`, else its `operand_type`."""
    attrs = op.attributes
    return ir.StringAttr(attrs[B_TYPE_ATTR if B_TYPE_ATTR in attrs else "operand_type"]).value


def _fp8_problem(op: ir.Operation, a_type: str) -> str | None:
    if B_TYPE_ATTR in op.attributes and not isinstance(op.attributes[B_TYPE_ATTR], ir.StringAttr):
        return f"'{B_TYPE_ATTR}' must be a string"
    b_type = wgmma_b_type(op)
    if b_type != a_type and not (a_type in WGMMA_FP8_TYPES and b_type in WGMMA_FP8_TYPES):
        return f"A and B types may differ only among the fp8 types {', '.join(WGMMA_FP8_TYPES)}, got '{a_type}' and " \
               f"'{b_type}'"
    if a_type in WGMMA_FP8_TYPES and (_bool_attr(op, "trans_a") or _bool_attr(op, "trans_b")):
        return "fp8 operands are K-major only: trans_a and trans_b must be false"
    return None


class WgmmaFenceOp(Tile.Operation, name="wgmma_fence"):
    """`wgmma.fence.sync.aligned`: the warpgroup's prior register and shared accesses are ordered
    before its following wgmmas (needed before a batch whose accumulators other code touched).

        "tile.wgmma_fence"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        return _launch_problem(self)


class WgmmaCommitOp(Tile.Operation, name="wgmma_commit"):
    """`wgmma.commit_group.sync.aligned`: close the warpgroup's batch of wgmmas issued since its last commit.

        "tile.wgmma_commit"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        return _launch_problem(self)


MAX_WGMMA_PENDING = 7


class WgmmaWaitOp(Tile.Operation, name="wgmma_wait"):
    """`wgmma.wait_group.sync.aligned pending`: wait until at most `pending` of the warpgroup's
    committed batches are in flight.

        "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
    """

    pending: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        return _int_range_problem(self, "pending", 0, MAX_WGMMA_PENDING) or _launch_problem(self)


class FenceProxyAsyncOp(Tile.Operation, name="fence_proxy_async"):
    """`fence.proxy.async.shared::cta`: the thread's shared-memory accesses through the generic proxy
    (stores, cp.async) are ordered with those through the async proxy (wgmma operands, TMA).

        "tile.fence_proxy_async"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        return _launch_problem(self)


WARP_ROLES = "tile.warp_roles"  # on warp-specialize's role split (an scf.if): the consumer thread count
ENTRY_REGISTERS = "tile.entry_registers"  # on a gpu.launch with setmaxnreg: the per-thread registers it starts with
NAMED_BARRIERS = 16  # barrier 0 is __syncthreads()'s


class NamedBarrierOp(Tile.Operation, name="named_barrier"):
    """`bar.sync id, threads`: the `threads` threads (whole warps) that reach barrier `id` wait for each other.

        "tile.named_barrier"() {id = 1 : i64, threads = 256 : i64} : () -> ()
    """

    id: ir.IntegerAttr
    threads: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        barrier, threads = _int_attr(self, "id"), _int_attr(self, "threads")
        if barrier is None or not 1 <= barrier < NAMED_BARRIERS:
            return f"'id' must be an integer in 1..{NAMED_BARRIERS - 1} (0 is __syncthreads()'s), got " \
                   f"{self.operation.attributes['id']}"
        if threads is None or threads < 32 or threads % 32:
            return f"'threads' must be a positive multiple of 32 (whole warps), got {self.operation.attributes['threads']}"
        return _launch_problem(self)


def named_barrier(barrier: int, threads: int, *, loc=None, ip=None) -> NamedBarrierOp:
    return NamedBarrierOp(_i64(barrier), _i64(threads), loc=loc, ip=ip)


SETMAXNREG_ACTIONS = ("inc", "dec")
SETMAXNREG_RANGE = (24, 256)


class SetMaxNRegOp(Tile.Operation, name="setmaxnreg"):
    """`setmaxnreg.{action}.sync.aligned.u32 count`: the executing warpgroup's per-thread register maximum
    becomes `count` (`inc` takes registers from the block's pool, waiting until it has them; `dec` returns them).

        "tile.setmaxnreg"() {action = "dec", count = 40 : i64} : () -> ()
    """

    action: ir.StringAttr
    count: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        action = self.operation.attributes["action"]
        if not isinstance(action, ir.StringAttr) or action.value not in SETMAXNREG_ACTIONS:
            return f"'action' must be one of {', '.join(SETMAXNREG_ACTIONS)}, got {action}"
        count = _int_attr(self, "count")
        low, high = SETMAXNREG_RANGE
        if count is None or count % 8 or not low <= count <= high:
            return f"'count' must be a multiple of 8 in {low}..{high}, got {self.operation.attributes['count']}"
        return _launch_problem(self)


def setmaxnreg(action: str, count: int, *, loc=None, ip=None) -> SetMaxNRegOp:
    return SetMaxNRegOp(ir.StringAttr.get(action), _i64(count), loc=loc, ip=ip)


def wgmma_desc(src, indices, leading_bytes: int, stride_bytes: int, swizzle: int, *, loc=None,
               ip=None) -> ir.Value:
    op = WgmmaDescOp(src, list(indices), _i64(leading_bytes), _i64(stride_bytes), _i64(swizzle),
                     ir.IntegerType.get_signless(64), loc=loc, ip=ip)
    return _without_segments(op).result


def wgmma(a_desc, b_desc, c, n: int, operand_type: str, c_offset: int, trans_a: bool, trans_b: bool,
          b_type: str | None = None, *, loc=None, ip=None) -> WgmmaOp:
    # The DSL rejects a falsy attribute value at construction, so the booleans are set after.
    true = ir.BoolAttr.get(True)
    op = WgmmaOp(a_desc, b_desc, c, _i64(n), ir.StringAttr.get(operand_type), _i64(c_offset), true, true,
                 loc=loc, ip=ip)
    op.operation.attributes["trans_a"] = ir.BoolAttr.get(trans_a)
    op.operation.attributes["trans_b"] = ir.BoolAttr.get(trans_b)
    if b_type is not None and b_type != operand_type:
        op.operation.attributes[B_TYPE_ATTR] = ir.StringAttr.get(b_type)
    return op


def wgmma_fence(*, loc=None, ip=None) -> WgmmaFenceOp:
    return WgmmaFenceOp(loc=loc, ip=ip)


def wgmma_commit(*, loc=None, ip=None) -> WgmmaCommitOp:
    return WgmmaCommitOp(loc=loc, ip=ip)


def wgmma_wait(pending: int, *, loc=None, ip=None) -> WgmmaWaitOp:
    return WgmmaWaitOp(_i64(pending), loc=loc, ip=ip)


def fence_proxy_async(*, loc=None, ip=None) -> FenceProxyAsyncOp:
    return FenceProxyAsyncOp(loc=loc, ip=ip)


WARPGROUP_OPS = ("tile.wgmma_desc", "tile.wgmma", "tile.wgmma_fence", "tile.wgmma_commit", "tile.wgmma_wait",
                 "tile.fence_proxy_async", "tile.setmaxnreg")
