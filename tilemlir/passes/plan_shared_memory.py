"""plan-shared-memory: every shared buffer of a kernel gets its offset in the one dynamic shared buffer.

Takes thread-level IR (`gpu.launch` with shared `memref.alloca`s). Gives the same IR with
`tile.smem_offset = bytes` on every shared alloca, which the CUDA emitter places in its one
`extern __shared__` buffer (aligned 1024 bytes when a buffer needs it); the emitter gives the
end of the last buffer to the runtime as the kernel's dynamic shared bytes, and the runtime raises
the kernel's limit at load past 48 KiB:

- a buffer lives from its first to its last use in program order, a use inside a loop (of the
  launch body) counting as the whole outermost such loop: what one iteration leaves, the next reads;
- two buffers may share bytes only when one's life ends before the other's starts with a
  `gpu.barrier` of the launch body (not inside any branch or loop) between them: no thread can
  then still touch the old one while another writes the new one;
- buffers are placed in the order they are allocated at the lowest offset that overlaps no buffer
  placed before that it may not share with (first fit), aligned as `shared_layouts.buffer_alignment` says:
  8W bytes for a `tile.swizzle = W` buffer a `tile.wgmma_desc` reads or a TMA box writes or reads, 1024 for any
  other 128-byte swizzle (the address bits the pattern XORs are then those of the offset, as TMA and wgmma read
  them), 128 for an unswizzled buffer TMA writes or reads, else 16;
- with the `arch` option, more than `arch` lets one block use (`tilemlir.hardware.max_shared_bytes`)
  is a CompileError at the kernel naming its largest buffers. The compile pipeline runs it without
  (it does not know the target); the CUDA emitter checks the planned offsets against the compile's
  arch (`emit_cuda/memory.check_shared_limit`), located at the first buffer that ends past the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis.shared_layouts import alloca_alignment
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.hardware import format_bytes, max_shared_bytes
from tilemlir.ir_util import operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

OFFSET_ATTR = "tile.smem_offset"
_LOOPS = ("scf.for", "scf.while", "scf.parallel")


@dataclass(frozen=True)
class SharedPlanOptions:
    arch: str = ""  # "": no limit check here (the CUDA emitter checks the plan against the compile's arch)


@dataclass
class _Buffer:
    alloca: ir.Operation
    size: int
    align: int
    start: int
    end: int
    offset: int = -1

    @property
    def name(self) -> str:
        attrs = self.alloca.attributes
        return ir.StringAttr(attrs["name"]).value if "name" in attrs else "shared buffer"


@register_pass("plan-shared-memory", "offsets of the shared buffers in the one dynamic shared buffer (liveness, "
                                     "first fit, alignment; over the arch's limit is an error)", SharedPlanOptions)
def run(module: ir.Operation, options: SharedPlanOptions) -> None:
    module = operation(module)
    with module.context, module.location:
        for launch in ops_named(module, "gpu.launch"):
            _plan(launch, options.arch)


def _plan(launch: ir.Operation, arch: str) -> None:
    positions, spans = _program_order(launch)
    placed: list[_Buffer] = []
    for alloca in ops_named(launch, "memref.alloca"):
        type_ = alloca.results[0].type
        if memory_space(type_) != SHARED:
            continue
        start, end = _live_range(alloca, positions, spans)
        placed.append(_Buffer(alloca, _bytes(type_), alloca_alignment(alloca), start, end))
    barriers = sorted(positions[op] for op in _children(launch) if op.name == "gpu.barrier")
    for index, buffer in enumerate(placed):
        buffer.offset = _first_fit(buffer, [p for p in placed[:index] if not _apart(p, buffer, barriers)])
    total = max((b.offset + b.size for b in placed), default=0)
    _check_limit(launch, placed, total, arch)
    i64 = ir.IntegerType.get_signless(64)
    for buffer in placed:
        buffer.alloca.attributes[OFFSET_ATTR] = ir.IntegerAttr.get(i64, buffer.offset)


def _program_order(launch: ir.Operation):
    """Pre-order positions of the launch's ops, and for each op the span of positions it encloses."""
    positions: dict[ir.Operation, int] = {}
    spans: dict[ir.Operation, tuple[int, int]] = {}
    order: list[ir.Operation] = []

    def visit(op):
        positions[op] = len(order)
        order.append(op)
        return ir.WalkResult.ADVANCE

    launch.walk(visit, ir.WalkOrder.PRE_ORDER)

    def close(op):
        last = max((spans[o][1] for o in _children(op)), default=positions[op])
        spans[op] = (positions[op], last)
        return ir.WalkResult.ADVANCE

    launch.walk(close, ir.WalkOrder.POST_ORDER)
    return positions, spans


def _children(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield operation(inner)


def _live_range(alloca: ir.Operation, positions, spans) -> tuple[int, int]:
    start = end = positions[alloca]
    uses = [operation(use.owner) for use in alloca.results[0].uses]
    points = []
    for user in uses:
        outermost = None
        current = operation(user.parent)
        while current.name != "gpu.launch":
            if current.name in _LOOPS:
                outermost = current
            current = operation(current.parent)
        points.append(spans[outermost] if outermost is not None else (positions[user], positions[user]))
    if points:
        start = min(p[0] for p in points)
        end = max(p[1] for p in points)
    return start, end


def _apart(one: _Buffer, other: _Buffer, barriers: list[int]) -> bool:
    """Whether two buffers may share bytes: one's life ends before the other's starts, with a barrier of
    the whole block between (else a thread could still touch the old buffer while another writes the new)."""
    first, second = sorted((one, other), key=lambda b: b.start)
    return any(first.end < position < second.start for position in barriers)


def _first_fit(buffer: _Buffer, live: list[_Buffer]) -> int:
    offset = 0
    for other in sorted(live, key=lambda b: b.offset):
        offset = -(-offset // buffer.align) * buffer.align
        if offset + buffer.size <= other.offset:
            break
        offset = max(offset, other.offset + other.size)
    return -(-offset // buffer.align) * buffer.align


def _check_limit(launch: ir.Operation, placed: list[_Buffer], total: int, arch: str) -> None:
    limit = max_shared_bytes(arch) if arch else None
    if limit is None or total <= limit:
        return
    largest = sorted(placed, key=lambda b: -b.size)[:3]
    listed = ", ".join(f"'{b.name}' {format_bytes(b.size)}" for b in largest)
    notes = [diag.note(b.alloca, f"'{b.name}' takes {format_bytes(b.size)}") for b in largest]
    raise diag.error(launch, f"the block needs {format_bytes(total)} of shared memory, more than the "
                             f"{format_bytes(limit)} one block may use on {arch}; the largest buffers: {listed} "
                             "(fewer pipeline stages or smaller tiles need less)", notes)


def _bytes(type_: ir.MemRefType) -> int:
    count = 1
    for dim in type_.shape:
        count *= dim
    return count * -(-type_.element_type.width // 8)
