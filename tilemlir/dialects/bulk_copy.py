"""Thread-level TMA and mbarrier ops of the `tile` dialect (Hopper; docs/tensor_cores.md, stage B).

An mbarrier (PTX ISA 9.7.13.15) is a 64-bit word in shared memory counting arrivals and transaction
bytes of its current phase; a phase completes when both reach zero, and a wait names the parity of
the phase it waits for. The ops take a shared `i64` array of barriers and an index into it:

- `tile.mbarrier_init(bars, i) {count}`: barrier i expects `count` arrivals a phase;
- `tile.mbarrier_arrive_expect_tx(bars, i) {bytes}`: one arrival, and `bytes` more transaction bytes
  this phase (what the TMA copies completing on it will deliver);
- `tile.mbarrier_arrive(bars, i)`: one arrival;
- `tile.mbarrier_wait(bars, i, parity)`: until the phase of parity `parity` (0 or 1) has completed;
- `tile.fence_mbarrier_init()`: the initializations are visible to the async proxy (TMA) before the
  barrier that follows it lets another thread use them.

`tile.tma_load(dst, bars, dst_indices..., i, coords...) {map}` is one thread's
`cp.async.bulk.tensor` of the box of tensor map `map` whose first element is at `coords` (the global
tensor's dims, outermost first) into the tile of shared buffer `dst` starting at `dst_indices`
(logical, as a `memref.store`'s), completing `box bytes` of transactions on barrier i. Elements
outside the tensor arrive as zeros and count as bytes all the same. Tensor maps are declared on the
kernel function: `tile.tensor_maps = {A_map = {tensor = 0 : i64, box = [128, 64], swizzle = 128 : i64}}`
(the kernel argument it describes, the box in elements per dim outermost first, the swizzle in
bytes); the runtime encodes each per launch (a `__grid_constant__ CUtensorMap` parameter).

The other direction (PTX ISA 9.7.9.25.5, `.global.shared::cta.bulk_group`) is tracked per thread in bulk
async-groups, not on an mbarrier:

- `tile.tma_store(src, src_indices..., coords...) {map}`: one thread's `cp.async.bulk.tensor` of the tile
  of shared buffer `src` at `src_indices` (logical) into the box of tensor map `map` at `coords`; elements
  of the box outside the tensor are not written. The shared tile is read asynchronously: the writes that
  filled it must be fenced to the async proxy (`tile.fence_proxy_async` by each writer before the barrier
  the issuing thread passes), and nothing may write it again before the issuing thread's wait;
- `tile.bulk_commit_group()`: the thread's bulk stores issued since its last commit form a group;
- `tile.bulk_wait_group_read() {pending}`: until at most `pending` of the thread's committed groups still
  read their shared source (the global writes may still be in flight; they are visible when the kernel ends).
"""

from collections.abc import Sequence

from tilemlir.dialects.tile import (SHARED, Tile, _checked, _i64, _int_attr, _int_range_problem, _without_segments,
                                    memory_space)
from tilemlir.dialects.warpgroup import _launch_problem
from tilemlir.ir_util import enclosing, walk_ops
from tilemlir.mlir import ext, ir

Operand = ext.Operand

TENSOR_MAPS_ATTR = "tile.tensor_maps"
TMA_SWIZZLES = (0, 32, 64, 128)
TMA_MAX_BOX = 256
TMA_MAX_RANK = 5
MAX_TRANSACTION_BYTES = (1 << 20) - 1  # the tx-count's range


def _barriers_problem(type_: ir.Type) -> str | None:
    if not isinstance(type_, ir.MemRefType) or memory_space(type_) != SHARED or type_.rank != 1 \
            or str(type_.element_type) != "i64":
        return f"bars must be a rank-1 shared array of i64 mbarriers, got {type_}"
    return None


class MbarrierInitOp(Tile.Operation, name="mbarrier_init"):
    """`mbarrier.init.shared::cta.b64`: barrier `index` of `bars` expects `count` arrivals a phase.

        "tile.mbarrier_init"(%full, %i) {count = 1 : i64} : (memref<3xi64, "shared">, index) -> ()
    """

    bars: Operand[ir.MemRefType]
    index: Operand[ir.IndexType]
    count: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        count = _int_attr(self, "count")
        if count is None or not 1 <= count < (1 << 20):
            return f"'count' must be an arrival count in 1..{(1 << 20) - 1}, got {count}"
        return _barriers_problem(self.operation.operands[0].type) or _launch_problem(self)


class MbarrierArriveExpectTxOp(Tile.Operation, name="mbarrier_arrive_expect_tx"):
    """`mbarrier.arrive.expect_tx.shared::cta.b64`: one arrival on barrier `index`, expecting `bytes` more
    transaction bytes in its current phase.

        "tile.mbarrier_arrive_expect_tx"(%full, %s) {bytes = 32768 : i64} : (memref<3xi64, "shared">, index) -> ()
    """

    bars: Operand[ir.MemRefType]
    index: Operand[ir.IndexType]
    bytes: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        size = _int_attr(self, "bytes")
        if size is None or not 0 < size <= MAX_TRANSACTION_BYTES:
            return f"'bytes' must be in 1..{MAX_TRANSACTION_BYTES}, got {size}"
        return _barriers_problem(self.operation.operands[0].type) or _launch_problem(self)


class MbarrierArriveOp(Tile.Operation, name="mbarrier_arrive"):
    """`mbarrier.arrive.shared::cta.b64`: one arrival on barrier `index`.

        "tile.mbarrier_arrive"(%empty, %s) : (memref<3xi64, "shared">, index) -> ()
    """

    bars: Operand[ir.MemRefType]
    index: Operand[ir.IndexType]

    @_checked
    def verify_invariants(self):
        return _barriers_problem(self.operation.operands[0].type) or _launch_problem(self)


class MbarrierWaitOp(Tile.Operation, name="mbarrier_wait"):
    """`mbarrier.try_wait.parity.shared::cta.b64` in a loop: until barrier `index`'s phase of parity
    `parity` (an index, 0 or 1) has completed.

        "tile.mbarrier_wait"(%full, %s, %p) : (memref<3xi64, "shared">, index, index) -> ()
    """

    bars: Operand[ir.MemRefType]
    index: Operand[ir.IndexType]
    parity: Operand[ir.IndexType]

    @_checked
    def verify_invariants(self):
        return _barriers_problem(self.operation.operands[0].type) or _launch_problem(self)


class FenceMbarrierInitOp(Tile.Operation, name="fence_mbarrier_init"):
    """`fence.mbarrier_init.release.cluster`: the thread's mbarrier initializations are visible to the
    async proxy (TMA's completions) before what follows.

        "tile.fence_mbarrier_init"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        return _launch_problem(self)


class TmaLoadOp(Tile.Operation, name="tma_load"):
    """One thread's `cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes`:
    the box of tensor map `map` at `coords` into the tile of `dst` at `dst_indices`, completing on
    barrier `bar_index` of `bars`.

        "tile.tma_load"(%A_s, %full, %s, %c0, %c0, %s, %row, %col) {map = "A_map"}
            : (memref<3x128x64xbf16, "shared">, memref<3xi64, "shared">, index, index, index, index, index,
               index) -> ()
    """

    dst: Operand[ir.MemRefType]
    bars: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]
    map: ir.StringAttr

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        dst, bars = operands[0].type, operands[1].type
        if memory_space(dst) != SHARED:
            return f"dst must be a shared buffer, got {dst}"
        return _barriers_problem(bars) or _launch_problem(self) or _box_problem(self.operation, "dst", dst,
                                                                                   len(operands) - 2, True)


def _box_problem(op: ir.Operation, label: str, buffer: ir.MemRefType, index_operands: int,
                 barrier: bool) -> str | None:
    """A TMA op's map is declared, its index operands are the buffer's indices (a barrier index) and the map's
    coordinates, and the buffer holds the map's element type."""
    name = ir.StringAttr(op.attributes["map"]).value
    declared = tensor_map(op, name)
    if isinstance(declared, str):
        return declared
    rank = len(declared.box)
    if index_operands != buffer.rank + int(barrier) + rank:
        indices = f"{buffer.rank} {label} indices, a barrier index and" if barrier else f"{buffer.rank} {label} indices and"
        return (f"expects {indices} {rank} coordinates (the rank of tensor map '{name}'), got {index_operands} index "
                "operands")
    if str(buffer.element_type) != declared.element_type:
        return f"{label} holds {buffer.element_type} but tensor map '{name}' describes {declared.element_type}"
    return None


class TmaStoreOp(Tile.Operation, name="tma_store"):
    """One thread's `cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group`: the tile of `src` at
    `src_indices` into the box of tensor map `map` at `coords` (outermost first); the box's elements outside
    the tensor are dropped.

        "tile.tma_store"(%C_s, %c0, %c0, %row, %col) {map = "C_map"}
            : (memref<128x64xbf16, "shared">, index, index, index, index) -> ()
    """

    src: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]
    map: ir.StringAttr

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        src = operands[0].type
        if memory_space(src) != SHARED:
            return f"src must be a shared buffer, got {src}"
        return _launch_problem(self) or _box_problem(self.operation, "src", src, len(operands) - 1, False)


class BulkCommitGroupOp(Tile.Operation, name="bulk_commit_group"):
    """`cp.async.bulk.commit_group`: the thread's bulk stores since its last commit become one group.

        "tile.bulk_commit_group"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        return _launch_problem(self)


MAX_BULK_PENDING = 63


class BulkWaitGroupReadOp(Tile.Operation, name="bulk_wait_group_read"):
    """`cp.async.bulk.wait_group.read pending`: until at most `pending` of the thread's committed bulk groups
    still read their shared sources.

        "tile.bulk_wait_group_read"() {pending = 0 : i64} : () -> ()
    """

    pending: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        return _int_range_problem(self, "pending", 0, MAX_BULK_PENDING) or _launch_problem(self)


class TensorMap:
    """A `tile.tensor_maps` entry of the kernel function: the argument it describes, its box and swizzle."""

    def __init__(self, name: str, tensor: int, box: list[int], swizzle: int, element_type: str):
        self.name, self.tensor, self.box, self.swizzle, self.element_type = name, tensor, box, swizzle, element_type

    @property
    def box_bytes(self) -> int:
        size = _ELEMENT_BYTES.get(self.element_type, 0)
        for extent in self.box:
            size *= extent
        return size


_ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f8E4M3FN": 1, "f8E5M2": 1, "i8": 1, "i32": 4, "f64": 8}


def tensor_map(op: ir.Operation, name: str) -> "TensorMap | str":
    """The tensor map `name` declared on `op`'s function, or why there is none."""
    func = enclosing(op, "func.func")
    if func is None or TENSOR_MAPS_ATTR not in func.attributes:
        return f"tensor map '{name}' is not declared in the function's '{TENSOR_MAPS_ATTR}'"
    maps = ir.DictAttr(func.attributes[TENSOR_MAPS_ATTR])
    if name not in maps:
        return f"tensor map '{name}' is not declared in the function's '{TENSOR_MAPS_ATTR}'"
    return _parse_map(func, name, ir.DictAttr(maps[name]))


def _parse_map(func: ir.Operation, name: str, entry: ir.DictAttr) -> "TensorMap | str":
    where = f"tensor map '{name}'"
    try:
        tensor = ir.IntegerAttr(entry["tensor"]).value
        box = [ir.IntegerAttr(v).value for v in ir.ArrayAttr(entry["box"])]
        swizzle = ir.IntegerAttr(entry["swizzle"]).value
    except (KeyError, ValueError, TypeError):
        return f"{where} must be {{tensor = i64, box = [i64...], swizzle = i64}}"
    arguments = func.regions[0].blocks[0].arguments
    if not 0 <= tensor < len(arguments) or not isinstance(arguments[tensor].type, ir.MemRefType) \
            or memory_space(arguments[tensor].type) is not None:
        return f"{where}: 'tensor' = {tensor} is not a global tensor argument of the function"
    type_ = arguments[tensor].type
    if len(box) != type_.rank or not 1 <= len(box) <= TMA_MAX_RANK:
        return f"{where}: the box has {len(box)} dims, its tensor {type_.rank} (1..{TMA_MAX_RANK})"
    if any(not 1 <= extent <= TMA_MAX_BOX for extent in box):
        return f"{where}: box dims must be in 1..{TMA_MAX_BOX}, got {box}"
    if swizzle not in TMA_SWIZZLES:
        return f"{where}: swizzle must be 0, 32, 64 or 128 (bytes), got {swizzle}"
    element = str(type_.element_type)
    inner_bytes = box[-1] * _ELEMENT_BYTES.get(element, 0)
    if inner_bytes % 16 or (swizzle and inner_bytes > swizzle):
        return (f"{where}: the box's inner dim is {inner_bytes} bytes: it must be a multiple of 16 and, "
                f"swizzled, at most the {swizzle}-byte swizzle")
    return TensorMap(name, tensor, box, swizzle, element)


def stored_tensors(function: ir.Operation) -> set[int]:
    """The argument numbers of the tensors `function`'s TMA stores write (through a map, not an operand)."""
    stored = set()
    for op in walk_ops(function):
        if op.name == "tile.tma_store":
            declared = tensor_map(op, ir.StringAttr(op.attributes["map"]).value)
            if isinstance(declared, TensorMap):
                stored.add(declared.tensor)
    return stored


def tensor_map_attr(tensor: int, box: Sequence[int], swizzle: int) -> ir.DictAttr:
    return ir.DictAttr.get({"tensor": _i64(tensor), "box": ir.ArrayAttr.get([_i64(b) for b in box]),
                            "swizzle": _i64(swizzle)})


def mbarrier_init(bars, index, count: int, *, loc=None, ip=None) -> MbarrierInitOp:
    return MbarrierInitOp(bars, index, _i64(count), loc=loc, ip=ip)


def mbarrier_arrive_expect_tx(bars, index, size: int, *, loc=None, ip=None) -> MbarrierArriveExpectTxOp:
    return MbarrierArriveExpectTxOp(bars, index, _i64(size), loc=loc, ip=ip)


def mbarrier_arrive(bars, index, *, loc=None, ip=None) -> MbarrierArriveOp:
    return MbarrierArriveOp(bars, index, loc=loc, ip=ip)


def mbarrier_wait(bars, index, parity, *, loc=None, ip=None) -> MbarrierWaitOp:
    return MbarrierWaitOp(bars, index, parity, loc=loc, ip=ip)


def fence_mbarrier_init(*, loc=None, ip=None) -> FenceMbarrierInitOp:
    return FenceMbarrierInitOp(loc=loc, ip=ip)


def tma_load(dst, bars, dst_indices, bar_index, coords, map_name: str, *, loc=None, ip=None) -> TmaLoadOp:
    op = TmaLoadOp(dst, bars, [*dst_indices, bar_index, *coords], ir.StringAttr.get(map_name), loc=loc, ip=ip)
    return _without_segments(op)


def tma_store(src, src_indices, coords, map_name: str, *, loc=None, ip=None) -> TmaStoreOp:
    op = TmaStoreOp(src, [*src_indices, *coords], ir.StringAttr.get(map_name), loc=loc, ip=ip)
    return _without_segments(op)


def bulk_commit_group(*, loc=None, ip=None) -> BulkCommitGroupOp:
    return BulkCommitGroupOp(loc=loc, ip=ip)


def bulk_wait_group_read(pending: int = 0, *, loc=None, ip=None) -> BulkWaitGroupReadOp:
    return BulkWaitGroupReadOp(_i64(pending), loc=loc, ip=ip)


BULK_COPY_OPS = ("tile.mbarrier_init", "tile.mbarrier_arrive_expect_tx", "tile.mbarrier_arrive",
                 "tile.mbarrier_wait", "tile.fence_mbarrier_init", "tile.tma_load", "tile.tma_store",
                 "tile.bulk_commit_group", "tile.bulk_wait_group_read")
